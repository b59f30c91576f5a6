// Side-by-side benchmarks of the `chiprt bench` suite (tools/perf): every workload (independent,
// chain, fan 1->1000->1, wavefront (tasks/100) x 100, random DAG) on every column: chiprt's
// variants and the peer runtimes found at configure time (OpenMP depend, oneTBB flow graph,
// StarPU). Named BM_Suite/<workload>/<column>/tasks:N. A peer that was not built is skipped with
// the reason. Worker threads: CHIPRT_BENCH_THREADS, default the host's hardware threads.
// The reported time is the manual time of one graph build + execution; ns_per_task is a counter,
// and the chiprt columns add their phase split (build_ns_per_task, exec_ns_per_task,
// total_ns_per_task; bench_support.h).
//   chiprt_bench --benchmark_filter=BM_Suite --benchmark_format=json
// The real-kernel rows (bgemm, paged_attention: the examples' `bench` case) are
// BM_KernelSuite/<workload>/<chiprt column>, timed by the run's wall time, with efficiency
// ((kernel CPU time / host threads used) / wall) and kernel_ns as counters.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bench_support.h"
#include "chiprt_runner.h"
#include "kernel_workloads.h"
#include "runners.h"
#include "workloads.h"

namespace {

using namespace chiprt::perf;
using chiprt::bench::bench_threads;
using chiprt::bench::PhaseCounters;
using chiprt::bench::suite_workload;

constexpr uint64_t kMaxSuiteTasks = 100000;

// Created on first use and kept for the whole process (each peer runtime starts once, at its
// first case).
std::vector<RunnerColumn>& suite_columns() {
  static std::vector<RunnerColumn> columns = make_runners({bench_threads(), kMaxSuiteTasks, true});
  return columns;
}

void BM_Suite(benchmark::State& state, Shape shape, std::size_t column) {
  RunnerColumn& c = suite_columns()[column];
  if (c.runner == nullptr && c.start != nullptr) {
    // A peer starts on its first case and then stays up (its cases are registered together).
    try {
      c.runner = c.start(bench_threads());
    } catch (const std::exception& e) {
      c.note = std::string("failed to start: ") + e.what();
      c.start = nullptr;
    }
  }
  if (c.runner == nullptr) {
    state.SkipWithError((c.id + " not run: " + c.note).c_str());
    return;
  }
  const Workload& workload = suite_workload(shape, static_cast<uint64_t>(state.range(0)));
  double ns_per_task = 0;
  // chiprt columns also report their phase split.
  const auto* chiprt = dynamic_cast<const ChiprtRunner*>(c.runner.get());
  PhaseCounters phases;
  try {
    c.runner->prepare(workload);
    for (auto _ : state) {
      const RunResult r = c.runner->run(workload);
      state.SetIterationTime(static_cast<double>(r.wall_ns) * 1e-9);
      ns_per_task +=
          static_cast<double>(r.wall_ns) / static_cast<double>(std::max<uint64_t>(r.tasks, 1));
      if (chiprt != nullptr) phases.add(chiprt->last_report(), chiprt->config().runtime);
    }
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  state.counters["ns_per_task"] =
      benchmark::Counter(ns_per_task, benchmark::Counter::kAvgIterations);
  if (chiprt != nullptr) phases.set(state);
  state.counters["tasks"] = static_cast<double>(workload.tasks);
  state.counters["threads"] = static_cast<double>(bench_threads());
}

void BM_KernelSuite(benchmark::State& state, KernelWorkload workload, std::string column_id) {
  const std::optional<chiprt::CallConfig> config = kernel_column_config(column_id);
  if (!config.has_value()) {
    state.SkipWithError(("no real-kernel configuration for column " + column_id).c_str());
    return;
  }
  // One chip for every real-kernel case, created on first use.
  static KernelBenchDevice device(bench_threads());
  const double threads_used = config->serial ? 1.0 : static_cast<double>(bench_threads());
  double efficiency = 0;
  double kernel_ns = 0;
  try {
    device.run(workload, *config);  // warm-up: loads the chip objects
    for (auto _ : state) {
      const KernelRunResult r = device.run(workload, *config);
      const double wall = static_cast<double>(std::max<uint64_t>(r.wall_ns, 1));
      state.SetIterationTime(wall * 1e-9);
      efficiency += static_cast<double>(r.kernel_ns) / threads_used / wall;
      kernel_ns += static_cast<double>(r.kernel_ns);
    }
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  state.counters["efficiency"] = benchmark::Counter(efficiency, benchmark::Counter::kAvgIterations);
  state.counters["kernel_ns"] = benchmark::Counter(kernel_ns, benchmark::Counter::kAvgIterations);
  state.counters["threads"] = threads_used;
}

const bool kRegistered = [] {
  const std::vector<std::string> ids = column_ids();
  // Column-major: a column's cases run together, before the next runtime starts.
  for (std::size_t column = 0; column < ids.size(); ++column) {
    for (const Shape shape : kAllShapes) {
      const std::string name = "BM_Suite/" + std::string(shape_name(shape)) + "/" + ids[column];
      benchmark::RegisterBenchmark(name.c_str(), BM_Suite, shape, column)
          ->ArgName("tasks")
          ->Arg(10000)
          ->Arg(static_cast<int64_t>(kMaxSuiteTasks))
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond);
    }
  }
  for (const std::string& id : ids) {
    if (!kernel_column_config(id).has_value()) continue;  // peers: chiprt only
    for (const KernelWorkload workload : kAllKernelWorkloads) {
      const std::string name =
          "BM_KernelSuite/" + std::string(kernel_workload_name(workload)) + "/" + id;
      benchmark::RegisterBenchmark(name.c_str(), BM_KernelSuite, workload, id)
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond);
    }
  }
  return true;
}();

}  // namespace
