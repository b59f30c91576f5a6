// Part of the named-kernels test object (see named_kernels_arith.cpp): an orchestration in the
// same object as its kernels. One InOut tensor argument x; four tasks on it, in order, of func_ids
// 0, 1, 2, 3 (the callable maps them to the object's kernels: double, add one, negate, add one).
#include <chiprt/orchestration.h>

extern "C" __attribute__((visibility("default"))) void chiprt_orchestration(
    chiprt::Orchestration& orch, const chiprt::TaskArgs& args) {
  for (int32_t func_id = 0; func_id < 4; ++func_id) {
    chiprt::TaskArgs task;
    task.inout(args.tensor(0));
    orch.submit(func_id, chiprt::CoreType::AIV, task);
  }
}
