// What the chiprt_bench cases share: the worker-thread count, the suite's workloads made once, and
// the per-task phase counters of chiprt runs: build_ns_per_task
// (host_build_graph: the host GraphBuild phase, 0 on a replay; tensormap_ringbuffer: the on-chip
// Orchestration phase, which overlaps execution), exec_ns_per_task (device wall / tasks) and
// total_ns_per_task (Worker::run entry to return / tasks), averaged over the iterations.
//
// bench_threads() and suite_workload() are called from the benchmark thread only; a
// PhaseCounters is used by one benchmark function at a time.
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <thread>
#include <utility>

#include "chiprt/call_config.h"
#include "chiprt/run_report.h"
#include "workloads.h"

namespace chiprt::bench {

// Worker threads of every runtime: CHIPRT_BENCH_THREADS, default the host's hardware threads.
inline unsigned bench_threads() {
  const char* env = std::getenv("CHIPRT_BENCH_THREADS");
  const long requested = env != nullptr ? std::strtol(env, nullptr, 10) : 0;
  if (requested > 0) return static_cast<unsigned>(requested);
  return std::max(1u, std::thread::hardware_concurrency());
}

// The suite's workload of `shape` for `tasks` requested tasks, made on first use and kept.
inline const perf::Workload& suite_workload(perf::Shape shape, uint64_t tasks) {
  static std::map<std::pair<perf::Shape, uint64_t>, perf::Workload> cache;
  auto it = cache.find({shape, tasks});
  if (it == cache.end()) {
    it = cache.emplace(std::pair{shape, tasks}, perf::make_workload(shape, tasks)).first;
  }
  return it->second;
}

class PhaseCounters {
 public:
  void add(const RunReport& report, RuntimeVariant variant) {
    const double n = static_cast<double>(report.task_count == 0 ? 1 : report.task_count);
    const Phase build =
        variant == RuntimeVariant::TensormapRingbuffer ? Phase::Orchestration : Phase::GraphBuild;
    build_ += static_cast<double>(report.phase(build).span_ns) / n;
    exec_ += static_cast<double>(report.device_wall_ns) / n;
    total_ += static_cast<double>(report.host_total_ns) / n;
  }

  void set(benchmark::State& state) const {
    state.counters["build_ns_per_task"] =
        benchmark::Counter(build_, benchmark::Counter::kAvgIterations);
    state.counters["exec_ns_per_task"] =
        benchmark::Counter(exec_, benchmark::Counter::kAvgIterations);
    state.counters["total_ns_per_task"] =
        benchmark::Counter(total_, benchmark::Counter::kAvgIterations);
  }

 private:
  double build_ = 0;
  double exec_ = 0;
  double total_ = 0;
};

}  // namespace chiprt::bench
