// Side-by-side benchmarks of the `chiprt bench` suite (tools/perf): every workload (independent,
// chain, fan 1->1000->1, wavefront (tasks/100) x 100, random DAG) on every column: chiprt's
// variants and the peer runtimes found at configure time (OpenMP depend, oneTBB flow graph,
// StarPU). Named BM_Suite/<workload>/<column>/tasks:N. A peer that was not built is skipped with
// the reason. Worker threads: CHIPRT_BENCH_THREADS, default the host's hardware threads.
// The reported time is the manual time of one graph build + execution; ns_per_task is a counter.
//   chiprt_bench --benchmark_filter=BM_Suite --benchmark_format=json
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "runners.h"
#include "workloads.h"

namespace {

using namespace chiprt::perf;

constexpr uint64_t kMaxSuiteTasks = 100000;

unsigned suite_threads() {
  const char* env = std::getenv("CHIPRT_BENCH_THREADS");
  const long requested = env != nullptr ? std::strtol(env, nullptr, 10) : 0;
  if (requested > 0) return static_cast<unsigned>(requested);
  return std::max(1u, std::thread::hardware_concurrency());
}

// Created on first use and kept for the whole process (each peer runtime starts once, at its
// first case).
std::vector<RunnerColumn>& suite_columns() {
  static std::vector<RunnerColumn> columns = make_runners({suite_threads(), kMaxSuiteTasks, true});
  return columns;
}

const Workload& suite_workload(Shape shape, uint64_t tasks) {
  static std::map<std::pair<Shape, uint64_t>, Workload> cache;
  auto it = cache.find({shape, tasks});
  if (it == cache.end())
    it = cache.emplace(std::pair{shape, tasks}, make_workload(shape, tasks)).first;
  return it->second;
}

void BM_Suite(benchmark::State& state, Shape shape, std::size_t column) {
  RunnerColumn& c = suite_columns()[column];
  if (c.runner == nullptr && c.start != nullptr) {
    // A peer starts on its first case and then stays up (its cases are registered together).
    try {
      c.runner = c.start(suite_threads());
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
  try {
    c.runner->prepare(workload);
    for (auto _ : state) {
      const RunResult r = c.runner->run(workload);
      state.SetIterationTime(static_cast<double>(r.wall_ns) * 1e-9);
      ns_per_task +=
          static_cast<double>(r.wall_ns) / static_cast<double>(std::max<uint64_t>(r.tasks, 1));
    }
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  state.counters["ns_per_task"] =
      benchmark::Counter(ns_per_task, benchmark::Counter::kAvgIterations);
  state.counters["tasks"] = static_cast<double>(workload.tasks);
  state.counters["threads"] = static_cast<double>(suite_threads());
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
  return true;
}();

}  // namespace
