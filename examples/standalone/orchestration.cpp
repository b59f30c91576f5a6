// c = (a + b) + b: two tasks; the second waits for the first because it reads its output.
#include <chiprt/orchestration.h>

extern "C" __attribute__((visibility("default"))) void chiprt_orchestration(
    chiprt::Orchestration& orch, const chiprt::TaskArgs& args) {
  const chiprt::Tensor& a = args.tensor(0);
  const chiprt::Tensor& b = args.tensor(1);
  const chiprt::Tensor& c = args.tensor(2);
  chiprt::Scope scope(orch);  // frees the intermediate when it ends
  chiprt::TaskArgs first;
  first.in(a).in(b).out({a.numel()}, chiprt::DataType::F32).scalar(a.numel());
  orch.submit(/*func_id=*/0, chiprt::CoreType::AIV, first);
  chiprt::TaskArgs second;
  second.in(first.output(0)).in(b).output_existing(c).scalar(a.numel());
  orch.submit(0, chiprt::CoreType::AIV, second);
}
