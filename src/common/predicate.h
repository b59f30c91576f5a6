// The predicate test of a predicated task, for the chip's dispatcher (scheduler/task_engine.h).
// One definition: the public chiprt::kernel::predicate_holds (include/chiprt/kernel.h), which an
// executor of an exported graph uses too. Stateless; any thread.
#pragma once

#include "chiprt/kernel.h"

namespace chiprt::common {

using chiprt::kernel::predicate_holds;

}  // namespace chiprt::common
