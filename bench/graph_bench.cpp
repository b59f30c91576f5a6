// Task-engine benchmarks on the simulated chip that the side-by-side suite (peer_bench.cpp:
// BM_Suite, every workload on every column) does not cover. They run the suite's workloads
// (tools/perf/workloads.h) through its chiprt runners (tools/perf/chiprt_runner.h), with empty
// in-process kernels, so the figures are the runtime's own cost per task. Worker threads:
// CHIPRT_BENCH_THREADS, default the host's hardware threads.
//
//   BM_Scoped/<column>/tasks:N   N/2 scopes, each a producer with a runtime-allocated output and a
//                                consumer reading it (the ring variant's output heap and scope
//                                retirement; host_build_graph's scope fences). The suite's graphs
//                                allocate no runtime outputs.
//   BM_Replay/<workload>/tasks:N/serial:S
//                                host_build_graph replaying the graph cached by an untimed first
//                                run, threaded and serial (the suite's hbg/replay is threaded only)
//   BM_RingWindow/<workload>/window:W/serial:S
//                                tensormap_ringbuffer with a task window of W slots per depth (16
//                                .. 4096, dependency pool 4 x W) on the 10k-task chain and
//                                wavefront: small windows make the orchestrator wait for retirement
//   BM_Scaling/<workload>/<column>/tasks:N
//                                the measurement of `chiprt bench --scaling` (tools/perf/scaling.h,
//                                one ScalingCell per case: chiprt columns on a chip of their own)
//                                at 10k, 100k and 1M tasks, with the memory counters
//                                device_bytes_per_in_flight and peak_rss_bytes_per_task. The 1M
//                                points take seconds each, so the family is registered only when
//                                --benchmark_filter names it:
//                                  chiprt_bench --benchmark_filter='BM_Scaling/chain/tensormap'
//
// Counters of the chiprt cases (bench_support.h): build_ns_per_task, exec_ns_per_task,
// total_ns_per_task. The reported time is the manual time of one run (Worker::run entry to return
// for chiprt). Quick run: chiprt_bench --benchmark_filter='BM_(Scoped|Replay|RingWindow)'
// --benchmark_min_time=0.05
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bench_support.h"
#include "chiprt/callable.h"
#include "chiprt/orchestration.h"
#include "chiprt/run_report.h"
#include "chiprt/task_args.h"
#include "chiprt/tensor.h"
#include "chiprt/worker.h"
#include "chiprt_options.h"
#include "chiprt_runner.h"
#include "runners.h"
#include "scaling.h"
#include "workloads.h"

namespace {

using namespace chiprt;
using chiprt::bench::bench_threads;
using chiprt::bench::PhaseCounters;
using chiprt::bench::suite_workload;
using perf::Shape;

// ---- BM_Scoped: a graph of runtime-allocated outputs, which no suite workload has.

constexpr int32_t kScopedCallable = 1;
constexpr int32_t kEmptyFunc = 1;
constexpr uint64_t kScopedOutputElements = 16;

void empty_kernel(int64_t*) {}

// Scalar 0: requested tasks (two per scope).
void scoped_orchestration(Orchestration& orch, const TaskArgs& args) {
  const uint64_t tasks = args.scalar_bits(0);
  TaskArgs producer;
  TaskArgs consumer;
  for (uint64_t i = 0; i < tasks / 2; ++i) {
    Scope scope(orch);
    producer.clear();
    producer.out({kScopedOutputElements}, DataType::F32);
    orch.submit(kEmptyFunc, CoreType::AIV, producer);
    if (orch.failed()) return;
    consumer.clear();
    consumer.in(producer.output(0));
    orch.submit(kEmptyFunc, CoreType::AIV, consumer);
  }
}

Worker& scoped_worker() {
  static Worker* worker = [] {
    auto* w = new Worker;  // lives for the process, like the suite's chips
    w->init(perf::bench_worker_options(bench_threads()));
    w->register_callable(
        kScopedCallable,
        CallableBuilder()
            .orchestration_function(scoped_orchestration, ArgSignature{})
            .kernel_function(kEmptyFunc, CoreType::AIV, empty_kernel, ArgSignature{})
            .build());
    return w;
  }();
  return *worker;
}

void BM_Scoped(benchmark::State& state, perf::ChiprtMode mode) {
  const CallConfig config = perf::chiprt_mode_config(mode);
  PhaseCounters counters;
  uint64_t tasks = 0;
  try {
    TaskArgs args;
    args.scalar(static_cast<uint64_t>(state.range(0)));
    for (auto _ : state) {
      const RunReport report = scoped_worker().run(kScopedCallable, args, config);
      state.SetIterationTime(static_cast<double>(report.host_total_ns) * 1e-9);
      counters.add(report, config.runtime);
      tasks = report.task_count;
    }
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  counters.set(state);
  state.counters["tasks"] = static_cast<double>(tasks);
}

// ---- BM_Replay and BM_RingWindow: the suite's workloads under a run configuration of their own.

constexpr uint64_t kMaxTasks = 100000;
constexpr uint64_t kSweepTasks = 10000;

// One chip for these cases, created on first use.
std::shared_ptr<perf::ChiprtDevice> suite_device() {
  static const std::shared_ptr<perf::ChiprtDevice> device =
      perf::make_chiprt_device(bench_threads(), kMaxTasks);
  return device;
}

// Warm-up run (records the graph for a replay), then one run per iteration.
void run_suite_workload(benchmark::State& state, const perf::Workload& workload,
                        const CallConfig& config) {
  PhaseCounters counters;
  try {
    perf::ChiprtRunner runner(suite_device(), config);
    runner.prepare(workload);
    for (auto _ : state) {
      const perf::RunResult r = runner.run(workload);
      state.SetIterationTime(static_cast<double>(r.wall_ns) * 1e-9);
      counters.add(runner.last_report(), config.runtime);
    }
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  counters.set(state);
  state.counters["tasks"] = static_cast<double>(workload.tasks);
}

// Args: tasks, serial (0/1).
void BM_Replay(benchmark::State& state, Shape shape) {
  CallConfig config = perf::chiprt_mode_config(perf::ChiprtMode::HostBuildGraphReplay);
  config.serial = state.range(1) != 0;
  run_suite_workload(state, suite_workload(shape, static_cast<uint64_t>(state.range(0))), config);
}

// Args: task window (slots per depth), serial (0/1).
void BM_RingWindow(benchmark::State& state, Shape shape) {
  CallConfig config = perf::chiprt_mode_config(perf::ChiprtMode::Ringbuffer);
  config.rings.task_window = {static_cast<uint64_t>(state.range(0))};
  config.serial = state.range(1) != 0;
  run_suite_workload(state, suite_workload(shape, kSweepTasks), config);
}

// ---- BM_Scaling: one ScalingCell per case.

// A chiprt column (its mode) or a peer column (its factory; started for the case alone).
struct ScalingColumn {
  bool chiprt = false;
  perf::ChiprtMode mode = perf::ChiprtMode::HostBuildGraph;
  std::unique_ptr<perf::Runner> (*start)(unsigned threads) = nullptr;
  std::string note;  // why a peer is not available
};

void BM_Scaling(benchmark::State& state, Shape shape, ScalingColumn column) {
  const perf::Workload& workload = suite_workload(shape, static_cast<uint64_t>(state.range(0)));
  if (!column.chiprt && column.start == nullptr) {
    state.SkipWithError(("not run: " + column.note).c_str());
    return;
  }
  perf::CellMemory memory;
  double ns_per_task = 0;
  try {
    std::unique_ptr<perf::Runner> peer;
    std::unique_ptr<perf::ScalingCell> cell;
    if (column.chiprt) {
      cell = std::make_unique<perf::ScalingCell>(column.mode, bench_threads(), workload);
    } else {
      peer = column.start(bench_threads());
      cell = std::make_unique<perf::ScalingCell>(*peer, workload);
    }
    cell->warm_up();
    for (auto _ : state) {
      const perf::RunResult r = cell->run();
      state.SetIterationTime(static_cast<double>(r.wall_ns) * 1e-9);
      ns_per_task +=
          static_cast<double>(r.wall_ns) / static_cast<double>(std::max<uint64_t>(r.tasks, 1));
    }
    memory = cell->memory();
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  state.counters["ns_per_task"] =
      benchmark::Counter(ns_per_task, benchmark::Counter::kAvgIterations);
  state.counters["tasks"] = static_cast<double>(workload.tasks);
  if (memory.measured) {
    state.counters["device_bytes_per_in_flight"] = memory.device_bytes_per_in_flight;
    state.counters["in_flight"] = static_cast<double>(memory.in_flight);
    state.counters["peak_rss_bytes_per_task"] = memory.peak_rss_bytes_per_task;
  }
}

void register_scaling() {
  std::vector<std::pair<std::string, ScalingColumn>> columns;
  for (const perf::ChiprtColumnSpec& c : perf::chiprt_columns()) {
    columns.push_back({c.id, {true, c.mode, nullptr, ""}});
  }
  for (perf::RunnerColumn& p : perf::make_runners({bench_threads(), 1, true, false})) {
    columns.push_back({p.id, {false, perf::ChiprtMode::HostBuildGraph, p.start, p.note}});
  }
  const perf::ScalingOptions defaults;
  for (const Shape shape : perf::kAllShapes) {
    for (const auto& [id, column] : columns) {
      const std::string name = "BM_Scaling/" + std::string(perf::shape_name(shape)) + "/" + id;
      auto* b = benchmark::RegisterBenchmark(name.c_str(), BM_Scaling, shape, column);
      for (const uint64_t size : defaults.sizes) b->Arg(static_cast<int64_t>(size));
      b->ArgName("tasks")->UseManualTime()->Unit(benchmark::kMillisecond);
    }
  }
}

bool filter_names_scaling(int argc, char** argv) {
  constexpr std::string_view kFilter = "--benchmark_filter=";
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg(argv[i]);
    if (arg.starts_with(kFilter) && arg.find("Scaling") != std::string_view::npos) return true;
  }
  return false;
}

void replay_sizes(benchmark::internal::Benchmark* b) {
  b->ArgsProduct({{10000, static_cast<int64_t>(kMaxTasks)}, {0, 1}})
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
void scoped_sizes(benchmark::internal::Benchmark* b) {
  b->ArgName("tasks")
      ->Arg(1000)
      ->Arg(10000)
      ->Arg(static_cast<int64_t>(kMaxTasks))
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
}

const bool kRegistered = [] {
  for (const perf::ChiprtColumnSpec& c : perf::chiprt_columns()) {
    if (c.mode == perf::ChiprtMode::HostBuildGraphReplay) continue;  // replays: BM_Replay
    benchmark::RegisterBenchmark(("BM_Scoped/" + std::string(c.id)).c_str(), BM_Scoped, c.mode)
        ->Apply(scoped_sizes);
  }
  for (const Shape shape : perf::kAllShapes) {
    benchmark::RegisterBenchmark(("BM_Replay/" + std::string(perf::shape_name(shape))).c_str(),
                                 BM_Replay, shape)
        ->Apply(replay_sizes);
  }
  for (const Shape shape : {Shape::Chain, Shape::Wavefront}) {
    benchmark::RegisterBenchmark(("BM_RingWindow/" + std::string(perf::shape_name(shape))).c_str(),
                                 BM_RingWindow, shape)
        ->Apply(window_sweep);
  }
  return true;
}();

}  // namespace

int main(int argc, char** argv) {
  if (filter_names_scaling(argc, argv)) register_scaling();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
