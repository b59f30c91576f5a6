// The lifetime rule of runtime outputs (orchestration.h: an output's memory is reused only after
// every task that used it finished), in the shape paged_attention relies on: per group a scope
// allocates an accumulator (allocation-only task), nested block scopes produce intermediates that
// are folded into it (InOut), and a final task reads it. The final task's producer is the last
// fold, not the allocating task, so the accumulator must stay alive through the final task even
// after the allocating task completed and its scope's other tasks retired. Small heaps make the
// ring variant reuse memory quickly; serial mode makes the order deterministic.
#include <gtest/gtest.h>

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "chiprt/callable.h"
#include "chiprt/kernel.h"
#include "chiprt/orchestration.h"
#include "chiprt/worker.h"
#include "host/device_runner.h"
#include "host/worker_access.h"

namespace {

using namespace chiprt;

constexpr uint64_t kGroups = 8;
constexpr uint64_t kBlocks = 6;
constexpr uint64_t kElements = 256;
constexpr int32_t kFill = 0, kIncrement = 1, kFold = 2, kFinal = 3;

// out x; scalars n, value: x[k] = value.
void fill_kernel(int64_t* args) {
  float* x = kernel::tensor_arg<float>(args, 0);
  const auto n = kernel::scalar_arg<int64_t>(args, 1);
  const auto value = static_cast<float>(kernel::scalar_arg<int64_t>(args, 2));
  for (int64_t k = 0; k < n; ++k) x[k] = value;
}
// in x, out y; scalar n: y = x + 1.
void increment_kernel(int64_t* args) {
  const float* x = kernel::tensor_arg<const float>(args, 0);
  float* y = kernel::tensor_arg<float>(args, 1);
  const auto n = kernel::scalar_arg<int64_t>(args, 2);
  for (int64_t k = 0; k < n; ++k) y[k] = x[k] + 1.0f;
}
// in y, inout acc; scalars n, first: acc = (first ? 0 : acc) + y.
void fold_kernel(int64_t* args) {
  const float* y = kernel::tensor_arg<const float>(args, 0);
  float* acc = kernel::tensor_arg<float>(args, 1);
  const auto n = kernel::scalar_arg<int64_t>(args, 2);
  const bool first = kernel::scalar_arg<int64_t>(args, 3) != 0;
  for (int64_t k = 0; k < n; ++k) acc[k] = (first ? 0.0f : acc[k]) + y[k];
}
// in acc, output_existing result[2]; scalar n: the first and last element.
void final_kernel(int64_t* args) {
  const float* acc = kernel::tensor_arg<const float>(args, 0);
  float* result = kernel::tensor_arg<float>(args, 1);
  const auto n = kernel::scalar_arg<int64_t>(args, 2);
  result[0] = acc[0];
  result[1] = acc[n - 1];
}

// Tensor 0: result [2 * kGroups]; scalar 0: scope mode (0 auto, 1 manual with explicit after).
void accumulate_groups(Orchestration& orch, const TaskArgs& args) {
  const Tensor& result = args.tensor(0);
  const bool manual = args.scalar_bits(0) != 0;
  const ScopeMode mode = manual ? ScopeMode::Manual : ScopeMode::Auto;
  const auto n = static_cast<int64_t>(kElements);
  for (uint64_t g = 0; g < kGroups; ++g) {
    Scope group_scope(orch, mode);
    TaskArgs state;
    state.out({kElements}, DataType::F32);
    TaskId last_fold = orch.allocate(state);
    if (orch.failed()) return;
    for (uint64_t j = 0; j < kBlocks; ++j) {
      Scope block_scope(orch, mode);
      TaskArgs fill;
      fill.out({kElements}, DataType::F32).scalar(n).scalar(static_cast<int64_t>(g + j));
      const TaskId fill_id = orch.submit(kFill, CoreType::AIC, fill);
      if (orch.failed()) return;
      TaskArgs increment;
      increment.in(fill.output(0)).out({kElements}, DataType::F32).scalar(n);
      if (manual) increment.after(fill_id);
      const TaskId increment_id = orch.submit(kIncrement, CoreType::AIV, increment);
      if (orch.failed()) return;
      TaskArgs fold;
      fold.in(increment.output(0))
          .inout(state.output(0))
          .scalar(n)
          .scalar(static_cast<int64_t>(j == 0 ? 1 : 0));
      if (manual) fold.after(increment_id).after(last_fold);
      last_fold = orch.submit(kFold, CoreType::AIV, fold);
      if (orch.failed()) return;
    }
    TaskArgs final_task;
    final_task.in(state.output(0)).output_existing(result.view({2}, {2 * g})).scalar(n);
    if (manual) final_task.after(last_fold);
    orch.submit(kFinal, CoreType::AIV, final_task);
  }
}

struct LifetimeParam {
  RuntimeVariant runtime;
  bool serial;
  bool manual;
};

void PrintTo(const LifetimeParam& p, std::ostream* os) {
  *os << runtime_variant_name(p.runtime) << (p.serial ? ", serial" : ", parallel")
      << (p.manual ? ", manual scopes" : ", automatic scopes");
}

std::string lifetime_name(const testing::TestParamInfo<LifetimeParam>& info) {
  return std::string(runtime_variant_name(info.param.runtime)) +
         (info.param.serial ? "_serial" : "_parallel") + (info.param.manual ? "_manual" : "_auto");
}

class OutputLifetimeScene : public testing::TestWithParam<LifetimeParam> {};

TEST_P(OutputLifetimeScene, AccumulatorOutlivesItsAllocatingTaskUntilTheLastReader) {
  const LifetimeParam& p = GetParam();
  Worker worker;
  WorkerOptions options;
  options.sim.clusters = 2;
  worker.init(options);
  const std::vector<uint8_t> container =
      CallableBuilder()
          .orchestration_function(accumulate_groups, ArgSignature{})
          .kernel_function(kFill, CoreType::AIC, fill_kernel, ArgSignature{})
          .kernel_function(kIncrement, CoreType::AIV, increment_kernel, ArgSignature{})
          .kernel_function(kFold, CoreType::AIV, fold_kernel, ArgSignature{})
          .kernel_function(kFinal, CoreType::AIV, final_kernel, ArgSignature{})
          .build();
  host::runner_of(worker).register_callable(0, container, p.runtime);
  const DeviceBuffer result = worker.malloc(2 * kGroups * sizeof(float));
  worker.memset(result, 0, 2 * kGroups * sizeof(float));
  TaskArgs args;
  args.output_existing(Tensor::make(result, {2 * kGroups}, DataType::F32))
      .scalar(static_cast<uint64_t>(p.manual ? 1 : 0));
  CallConfig config;
  config.runtime = p.runtime;
  config.serial = p.serial;
  // Depths 0 and 1 keep the default window; the block scopes (depth 2) get a heap of about four
  // blocks' intermediates (2 KiB each), so memory is reused many times per group.
  config.rings.heap_bytes = {1u << 20, 1u << 20, 8192};
  worker.run(0, args, config);

  std::vector<float> got(2 * kGroups);
  worker.copy_from(got.data(), result, got.size() * sizeof(float));
  for (uint64_t g = 0; g < kGroups; ++g) {
    float want = 0;
    for (uint64_t j = 0; j < kBlocks; ++j) want += static_cast<float>(g + j + 1);
    EXPECT_EQ(got[2 * g], want) << "group " << g << " (first element)";
    EXPECT_EQ(got[2 * g + 1], want) << "group " << g << " (last element)";
  }
  worker.free(result);
  worker.unregister_callable(0);
}

std::vector<LifetimeParam> lifetime_params() {
  std::vector<LifetimeParam> params;
  for (RuntimeVariant runtime :
       {RuntimeVariant::HostBuildGraph, RuntimeVariant::TensormapRingbuffer}) {
    for (bool serial : {true, false}) {
      for (bool manual : {false, true}) params.push_back({runtime, serial, manual});
    }
  }
  return params;
}

INSTANTIATE_TEST_SUITE_P(BothVariants, OutputLifetimeScene, testing::ValuesIn(lifetime_params()),
                         lifetime_name);

}  // namespace
