#include "task_bench_chiprt.h"

#include <string>

#include "chiprt/call_config.h"
#include "chiprt/callable.h"
#include "chiprt/kernel.h"
#include "chiprt/orchestration.h"
#include "chiprt/status.h"
#include "chiprt/task_args.h"
#include "chiprt/tensor.h"
#include "chiprt_options.h"
#include "chiprt_runner.h"
#include "task_bench_kernel.h"

namespace chiprt::perf {

namespace {

constexpr int32_t kTaskBenchCallable = 1;
constexpr int32_t kSpinFunc = 1;

// Scalar 0 (after the tensors): iterations.
void spin_kernel(int64_t* args) {
  const auto iterations = kernel::scalar_arg<uint64_t>(args, kernel::tensor_count(args));
  const double sink = tb_spin(iterations);
  asm volatile("" : : "x"(sink));
}

// Scalars: [0] pattern, [1] width, [2] height, [3] iterations. Tensor 0: the cell buffer.
void task_bench_orchestration(Orchestration& orch, const TaskArgs& args) {
  TbGraph graph;
  graph.pattern = static_cast<TbPattern>(args.scalar_bits(0));
  graph.width = args.scalar_bits(1);
  graph.height = args.scalar_bits(2);
  const uint64_t iterations = args.scalar_bits(3);
  const uint64_t w = graph.width;
  const Tensor cells = args.tensor(0).view({w * graph.height}, {0});
  TaskArgs task;
  TbRange ranges[kTbMaxRanges];
  for (uint64_t t = 0; t < graph.height; ++t) {
    const uint64_t lo = graph.offset_at(t);
    for (uint64_t x = lo; x < lo + graph.width_at(t); ++x) {
      task.clear();
      task.output_existing(cells.view({1}, {t * w + x}));
      const int n = graph.dependency_ranges(t, x, ranges);
      for (int i = 0; i < n; ++i) {
        task.in(
            cells.view({ranges[i].last - ranges[i].first + 1}, {(t - 1) * w + ranges[i].first}));
      }
      task.scalar(iterations);
      orch.submit(kSpinFunc, CoreType::AIV, task);
    }
  }
}

}  // namespace

TbChiprtDevice::TbChiprtDevice(unsigned threads, uint64_t max_cells) : max_cells_(max_cells) {
  worker_.init(bench_worker_options(threads));
  worker_.register_callable(
      kTaskBenchCallable,
      CallableBuilder()
          .orchestration_function(task_bench_orchestration, ArgSignature{})
          .kernel_function(kSpinFunc, CoreType::AIV, spin_kernel, ArgSignature{})
          .build());
  buffer_ = worker_.malloc(max_cells_ * sizeof(float));
  worker_.memset(buffer_, 0, max_cells_ * sizeof(float));
}

RunReport TbChiprtDevice::run(const TbGraph& graph, uint64_t iterations, ChiprtMode mode) {
  if (graph.width * graph.height > max_cells_) {
    throw Error(StatusCode::InvalidArgument, "task bench graph of " + std::to_string(graph.width) +
                                                 " x " + std::to_string(graph.height) +
                                                 " cells exceeds the device buffer's " +
                                                 std::to_string(max_cells_) + " cells");
  }
  TaskArgs args;
  args.in(Tensor::make(buffer_, {max_cells_}, DataType::F32));
  args.scalar(static_cast<uint64_t>(graph.pattern))
      .scalar(graph.width)
      .scalar(graph.height)
      .scalar(iterations);
  CallConfig config = chiprt_mode_config(mode);
  const uint64_t tasks = graph.tasks();
  if (tasks > CallConfig::kDefaultMaxTasks) config.max_tasks = tasks;
  return worker_.run(kTaskBenchCallable, args, config);
}

}  // namespace chiprt::perf
