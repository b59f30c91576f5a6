// What the runtime knows about each func_id of the active callable: present, core type and
// argument signature. Both orchestrators validate submissions against it; for
// tensormap_ringbuffer the host copies one KernelTable into the launch's staging buffer, so it is
// part of the host-chip protocol: trivially copyable, fixed size, no pointers.
#pragma once

#include <array>
#include <type_traits>

#include "chiprt/callable.h"
#include "chiprt/types.h"

namespace chiprt::common {

struct KernelInfo {
  bool present = false;
  CoreType core = CoreType::AIC;
  ArgSignature signature;
};
using KernelTable = std::array<KernelInfo, kMaxFuncId>;
static_assert(std::is_trivially_copyable_v<KernelTable>);

}  // namespace chiprt::common
