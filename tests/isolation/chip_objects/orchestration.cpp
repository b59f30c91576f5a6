// The isolation suite's normal run (normal_run.h) as an orchestration chip object: run arguments x
// (In) and y (OutputExisting); y = (x + 1) + 2 with the callable's kernel func_id 0.
#include <chiprt/orchestration.h>

#include "normal_run.h"

extern "C" __attribute__((visibility("default"))) void chiprt_orchestration(
    chiprt::Orchestration& o, const chiprt::TaskArgs& run) {
  chiprt::isolation_test::submit_normal_run(o, run.tensor(0), run.tensor(1));
}
