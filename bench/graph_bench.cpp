// Task-engine benchmarks on the simulated chip: graphs of empty in-process kernels, so the figures
// are the runtime's own cost per task.
//
//   independent  N tasks reading one shared tensor (no dependencies)
//   chain        N tasks each INOUT on one tensor (a single dependency chain)
//   fan          1 -> 16 -> 1 repeated: a source writes X, 16 tasks read X[i] and write Y[i], a
//   sink
//                reads Y and writes X
//   wavefront    R x C tiles of one buffer, each tile INOUT, reading its left and upper neighbour
//                tiles as IN views (dependencies only from overlapping views)
//
// Counters: build_ns_per_task (RunReport GraphBuild phase / tasks), exec_ns_per_task (device wall /
// tasks). The reported time is the manual time Worker::run took (RunReport.host_total_ns).
// Quick run: chiprt_bench --benchmark_min_time=0.05
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "chiprt/callable.h"
#include "chiprt/orchestration.h"
#include "chiprt/run_report.h"
#include "chiprt/task_args.h"
#include "chiprt/tensor.h"
#include "chiprt/worker.h"

namespace {

using namespace chiprt;

constexpr int32_t kCallableId = 1;
constexpr int32_t kEmptyFunc = 1;
constexpr uint64_t kFanWidth = 16;
constexpr uint64_t kTile = 4;                     // wavefront tile edge, elements
constexpr uint64_t kBufferElements = 2ull << 20;  // 8 MiB of f32: a 100k-tile wavefront fits

enum class GraphShape : uint64_t { Independent = 0, Chain, Fan, Wavefront };

void empty_kernel(int64_t*) {}

uint64_t wavefront_edge(uint64_t tasks) {
  return static_cast<uint64_t>(std::llround(std::sqrt(static_cast<double>(tasks))));
}

// Scalars: [0] GraphShape, [1] requested task count. Tensor 0: the whole buffer, 1-D f32.
void bench_orchestration(Orchestration& orch, const TaskArgs& args) {
  const auto shape = static_cast<GraphShape>(args.scalar_bits(0));
  const uint64_t tasks = args.scalar_bits(1);
  const Tensor& buffer = args.tensor(0);
  TaskArgs task;
  switch (shape) {
    case GraphShape::Independent: {
      const Tensor shared = buffer.view({64}, {0});
      for (uint64_t i = 0; i < tasks; ++i) {
        task.clear();
        task.in(shared);
        orch.submit(kEmptyFunc, CoreType::AIV, task);
      }
      break;
    }
    case GraphShape::Chain: {
      const Tensor carried = buffer.view({64}, {0});
      for (uint64_t i = 0; i < tasks; ++i) {
        task.clear();
        task.inout(carried);
        orch.submit(kEmptyFunc, CoreType::AIV, task);
      }
      break;
    }
    case GraphShape::Fan: {
      const Tensor x = buffer.view({kFanWidth}, {0});
      const Tensor y = buffer.view({kFanWidth}, {64});
      for (uint64_t stage = 0; stage < tasks / (kFanWidth + 2); ++stage) {
        task.clear();
        task.inout(x);
        orch.submit(kEmptyFunc, CoreType::AIV, task);
        for (uint64_t i = 0; i < kFanWidth; ++i) {
          task.clear();
          task.in(x.view({1}, {i})).output_existing(y.view({1}, {i}));
          orch.submit(kEmptyFunc, CoreType::AIV, task);
        }
        task.clear();
        task.in(y).inout(x);
        orch.submit(kEmptyFunc, CoreType::AIV, task);
      }
      break;
    }
    case GraphShape::Wavefront: {
      const uint64_t edge = wavefront_edge(tasks);
      const Tensor grid =
          buffer.view({edge * kTile * edge * kTile}, {0}).reshape({edge * kTile, edge * kTile});
      for (uint64_t r = 0; r < edge; ++r) {
        for (uint64_t c = 0; c < edge; ++c) {
          task.clear();
          task.inout(grid.view({kTile, kTile}, {r * kTile, c * kTile}));
          if (c > 0) task.in(grid.view({kTile, kTile}, {r * kTile, (c - 1) * kTile}));
          if (r > 0) task.in(grid.view({kTile, kTile}, {(r - 1) * kTile, c * kTile}));
          orch.submit(kEmptyFunc, CoreType::AIV, task);
        }
      }
      break;
    }
  }
}

// One Worker for the whole suite (created on first use), with the callable and one buffer.
struct BenchDevice {
  Worker worker;
  DeviceBuffer buffer;
  BenchDevice() {
    worker.init();
    worker.register_callable(
        kCallableId, CallableBuilder()
                         .orchestration_function(bench_orchestration, ArgSignature{})
                         .kernel_function(kEmptyFunc, CoreType::AIV, empty_kernel, ArgSignature{})
                         .build());
    buffer = worker.malloc(kBufferElements * sizeof(float));
    worker.memset(buffer, 0, kBufferElements * sizeof(float));
  }
};

BenchDevice& bench_device() {
  static BenchDevice device;
  return device;
}

void BM_Graph(benchmark::State& state, GraphShape shape) {
  const auto tasks = static_cast<uint64_t>(state.range(0));
  CallConfig config;
  config.serial = state.range(1) != 0;
  double build_ns_per_task = 0;
  double exec_ns_per_task = 0;
  uint64_t task_count = 0;
  try {
    BenchDevice& device = bench_device();
    TaskArgs args;
    args.in(Tensor::make(device.buffer, {kBufferElements}, DataType::F32));
    args.scalar(static_cast<uint64_t>(shape)).scalar(tasks);
    for (auto _ : state) {
      const RunReport report = device.worker.run(kCallableId, args, config);
      state.SetIterationTime(static_cast<double>(report.host_total_ns) * 1e-9);
      task_count = report.task_count;
      const double n = static_cast<double>(report.task_count == 0 ? 1 : report.task_count);
      build_ns_per_task += static_cast<double>(report.phase(Phase::GraphBuild).span_ns) / n;
      exec_ns_per_task += static_cast<double>(report.device_wall_ns) / n;
    }
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  state.counters["build_ns_per_task"] =
      benchmark::Counter(build_ns_per_task, benchmark::Counter::kAvgIterations);
  state.counters["exec_ns_per_task"] =
      benchmark::Counter(exec_ns_per_task, benchmark::Counter::kAvgIterations);
  state.counters["tasks"] = static_cast<double>(task_count);
}

void configure(benchmark::internal::Benchmark* b, std::vector<int64_t> task_counts) {
  b->ArgsProduct({std::move(task_counts), {0, 1}})
      ->ArgNames({"tasks", "serial"})
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
}
void up_to_100k(benchmark::internal::Benchmark* b) {
  configure(b, {1000, 10000, 100000});
}
// The wavefront's graph build grows quadratically with the tile count in the first baseline (about
// 2 ms per task at 100k tiles, over three minutes per run), so it stops at 10k to keep the suite
// short; raise it once the tensor map looks regions up in sub-linear time.
void up_to_10k(benchmark::internal::Benchmark* b) {
  configure(b, {1000, 10000});
}

BENCHMARK_CAPTURE(BM_Graph, independent, GraphShape::Independent)->Apply(up_to_100k);
BENCHMARK_CAPTURE(BM_Graph, chain, GraphShape::Chain)->Apply(up_to_100k);
BENCHMARK_CAPTURE(BM_Graph, fan, GraphShape::Fan)->Apply(up_to_100k);
BENCHMARK_CAPTURE(BM_Graph, wavefront, GraphShape::Wavefront)->Apply(up_to_10k);

}  // namespace
