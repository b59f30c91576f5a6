// Task-engine benchmarks on the simulated chip: graphs of empty in-process kernels, so the figures
// are the runtime's own cost per task. Every graph runs on both runtime variants (ring=0:
// host_build_graph, ring=1: tensormap_ringbuffer), threaded and serial.
//
//   independent  N tasks reading one shared tensor (no dependencies)
//   chain        N tasks each INOUT on one tensor (a single dependency chain)
//   fan          1 -> 16 -> 1 repeated: a source writes X, 16 tasks read X[i] and write Y[i], a
//                sink reads Y and writes X
//   wavefront    R x C tiles of one buffer, each tile INOUT, reading its left and upper neighbour
//                tiles as IN views (dependencies only from overlapping views)
//   scoped       N/2 scopes, each a producer with a runtime output and a consumer reading it (the
//                output heap and scope retirement of the ring variant; scope fences of the other)
// None of the first four allocates runtime outputs, so their tasks hold no scope reference and the
// ring variant streams them through its default window without scopes.
//
// BM_RingWindow sweeps the task window of tensormap_ringbuffer (16 .. 4096 slots per depth, the
// dependency pool 4 x window by default) on a 10k-task chain and wavefront: small windows make the
// orchestrator wait for retirement (back-pressure), which shows as ns per task.
//
// BM_Replay runs host_build_graph with CallConfig::replay_graph: one untimed run builds and caches
// the image, every timed run replays it (no orchestration on the host, the image stays resident).
//
// BM_Scaling (independent, chain: 10k, 100k, 1M tasks; wavefront: 10k, 100k tiles) checks that ns
// per task stays flat with the graph size. The 1M points take minutes on a small machine, so the
// family is registered only when --benchmark_filter names it:
//   chiprt_bench --benchmark_filter='BM_Scaling' --benchmark_min_time=0.05
//
// Counters: build_ns_per_task (host_build_graph: the GraphBuild phase; tensormap_ringbuffer: the
// on-chip Orchestration phase, which overlaps execution), exec_ns_per_task (device wall / tasks),
// total_ns_per_task (Worker::run entry to return / tasks, comparable across variants). The
// reported time is the manual time Worker::run took (RunReport.host_total_ns).
// Quick run: chiprt_bench --benchmark_min_time=0.05
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>
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

// The bench callable; one registration serves both runtime variants.
constexpr int32_t kBenchCallable = 1;
constexpr int32_t kEmptyFunc = 1;
constexpr uint64_t kFanWidth = 16;
constexpr uint64_t kTile = 4;                     // wavefront tile edge, elements
constexpr uint64_t kBufferElements = 2ull << 20;  // 8 MiB of f32: a 100k-tile wavefront fits
constexpr uint64_t kScopedOutputElements = 16;

enum class GraphShape : uint64_t { Independent = 0, Chain, Fan, Wavefront, Scoped };

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
    case GraphShape::Scoped: {
      TaskArgs consumer;
      for (uint64_t i = 0; i < tasks / 2; ++i) {
        Scope scope(orch);
        task.clear();
        task.out({kScopedOutputElements}, DataType::F32);
        orch.submit(kEmptyFunc, CoreType::AIV, task);
        if (orch.failed()) return;
        consumer.clear();
        consumer.in(task.output(0));
        orch.submit(kEmptyFunc, CoreType::AIV, consumer);
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
    const std::vector<uint8_t> container =
        CallableBuilder()
            .orchestration_function(bench_orchestration, ArgSignature{})
            .kernel_function(kEmptyFunc, CoreType::AIV, empty_kernel, ArgSignature{})
            .build();
    worker.register_callable(kBenchCallable, container);
    buffer = worker.malloc(kBufferElements * sizeof(float));
    worker.memset(buffer, 0, kBufferElements * sizeof(float));
  }
};

BenchDevice& bench_device() {
  static BenchDevice device;
  return device;
}

// Runs `shape` of `tasks` tasks under `config` for every iteration and sets the counters.
void run_graph(benchmark::State& state, GraphShape shape, uint64_t tasks,
               const CallConfig& config) {
  const bool ring = config.runtime == RuntimeVariant::TensormapRingbuffer;
  double build_ns_per_task = 0;
  double exec_ns_per_task = 0;
  double total_ns_per_task = 0;
  uint64_t task_count = 0;
  try {
    BenchDevice& device = bench_device();
    TaskArgs args;
    args.in(Tensor::make(device.buffer, {kBufferElements}, DataType::F32));
    args.scalar(static_cast<uint64_t>(shape)).scalar(tasks);
    for (auto _ : state) {
      const RunReport report = device.worker.run(kBenchCallable, args, config);
      state.SetIterationTime(static_cast<double>(report.host_total_ns) * 1e-9);
      task_count = report.task_count;
      const double n = static_cast<double>(report.task_count == 0 ? 1 : report.task_count);
      const Phase build = ring ? Phase::Orchestration : Phase::GraphBuild;
      build_ns_per_task += static_cast<double>(report.phase(build).span_ns) / n;
      exec_ns_per_task += static_cast<double>(report.device_wall_ns) / n;
      total_ns_per_task += static_cast<double>(report.host_total_ns) / n;
    }
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  state.counters["build_ns_per_task"] =
      benchmark::Counter(build_ns_per_task, benchmark::Counter::kAvgIterations);
  state.counters["exec_ns_per_task"] =
      benchmark::Counter(exec_ns_per_task, benchmark::Counter::kAvgIterations);
  state.counters["total_ns_per_task"] =
      benchmark::Counter(total_ns_per_task, benchmark::Counter::kAvgIterations);
  state.counters["tasks"] = static_cast<double>(task_count);
}

// Args: tasks, serial (0/1), ring (0: host_build_graph, 1: tensormap_ringbuffer).
void BM_Graph(benchmark::State& state, GraphShape shape) {
  CallConfig config;
  config.serial = state.range(1) != 0;
  config.runtime =
      state.range(2) != 0 ? RuntimeVariant::TensormapRingbuffer : RuntimeVariant::HostBuildGraph;
  run_graph(state, shape, static_cast<uint64_t>(state.range(0)), config);
}

// Args: tasks, serial (0/1); host_build_graph replaying the image cached by an untimed first run.
void BM_Replay(benchmark::State& state, GraphShape shape) {
  CallConfig config;
  config.serial = state.range(1) != 0;
  config.runtime = RuntimeVariant::HostBuildGraph;
  config.replay_graph = true;
  const uint64_t tasks = static_cast<uint64_t>(state.range(0));
  try {
    TaskArgs args;
    args.in(Tensor::make(bench_device().buffer, {kBufferElements}, DataType::F32));
    args.scalar(static_cast<uint64_t>(shape)).scalar(tasks);
    bench_device().worker.run(kBenchCallable, args, config);  // builds and caches the image
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  run_graph(state, shape, tasks, config);
}

// Args: task window (slots per depth), serial (0/1); tensormap_ringbuffer, 10k tasks.
constexpr uint64_t kSweepTasks = 10000;
void BM_RingWindow(benchmark::State& state, GraphShape shape) {
  CallConfig config;
  config.runtime = RuntimeVariant::TensormapRingbuffer;
  config.rings.task_window = {static_cast<uint64_t>(state.range(0))};
  config.serial = state.range(1) != 0;
  run_graph(state, shape, kSweepTasks, config);
}

void configure(benchmark::internal::Benchmark* b, std::vector<int64_t> task_counts) {
  b->ArgsProduct({std::move(task_counts), {0, 1}, {0, 1}})
      ->ArgNames({"tasks", "serial", "ring"})
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
void replay_sizes(benchmark::internal::Benchmark* b) {
  b->ArgsProduct({{10000, 100000}, {0, 1}})
      ->ArgNames({"tasks", "serial"})
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
}
void window_sweep(benchmark::internal::Benchmark* b) {
  b->ArgsProduct({benchmark::CreateRange(16, 4096, 4), {0, 1}})
      ->ArgNames({"window", "serial"})
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
}

BENCHMARK_CAPTURE(BM_Graph, independent, GraphShape::Independent)->Apply(up_to_100k);
BENCHMARK_CAPTURE(BM_Graph, chain, GraphShape::Chain)->Apply(up_to_100k);
BENCHMARK_CAPTURE(BM_Graph, fan, GraphShape::Fan)->Apply(up_to_100k);
BENCHMARK_CAPTURE(BM_Graph, wavefront, GraphShape::Wavefront)->Apply(up_to_10k);
BENCHMARK_CAPTURE(BM_Graph, scoped, GraphShape::Scoped)->Apply(up_to_100k);
BENCHMARK_CAPTURE(BM_Replay, independent, GraphShape::Independent)->Apply(replay_sizes);
BENCHMARK_CAPTURE(BM_Replay, wavefront, GraphShape::Wavefront)->Apply(replay_sizes);
BENCHMARK_CAPTURE(BM_RingWindow, chain, GraphShape::Chain)->Apply(window_sweep);
BENCHMARK_CAPTURE(BM_RingWindow, wavefront, GraphShape::Wavefront)->Apply(window_sweep);

void register_scaling() {
  const std::pair<const char*, GraphShape> million[] = {
      {"BM_Scaling/independent", GraphShape::Independent}, {"BM_Scaling/chain", GraphShape::Chain}};
  for (const auto& [name, shape] : million) {
    configure(benchmark::RegisterBenchmark(name, BM_Graph, shape), {10000, 100000, 1000000});
  }
  // 1M tiles would not fit the bench buffer (64 bytes each); 100k already shows the slope.
  configure(benchmark::RegisterBenchmark("BM_Scaling/wavefront", BM_Graph, GraphShape::Wavefront),
            {10000, 100000});
}

bool filter_names_scaling(int argc, char** argv) {
  constexpr std::string_view kFilter = "--benchmark_filter=";
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg(argv[i]);
    if (arg.starts_with(kFilter) && arg.find("Scaling") != std::string_view::npos) return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  if (filter_names_scaling(argc, argv)) register_scaling();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
