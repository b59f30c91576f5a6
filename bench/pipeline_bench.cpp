// Pipelined runs (Worker::submit) against runs one after the other (Worker::run):
//
//   BM_PipelineHostHeavy/<mode>/busy_us:N
//       a stream of 200 runs of one task each, whose host_build_graph orchestration keeps the
//       host busy N us and whose kernel keeps its core busy N us (host prepare about equal to
//       device time). mode 0: Worker::run one after the other; 1: Worker::submit with two in
//       flight, run N+1 orchestrated while run N executes. Counter runs_per_s; compare the two
//       modes of one session (at most 2x apart: the overlap can hide one of the two halves).
//
// The whole table with the examples' rows: chiprt bench --pipeline.
// Quick run: chiprt_bench --benchmark_filter='BM_Pipeline' --benchmark_min_time=0.05
#include <benchmark/benchmark.h>

#include <cstdint>

#include "bench_support.h"
#include "chiprt/worker.h"
#include "chiprt_options.h"
#include "pipeline_bench.h"

namespace {

using namespace chiprt;

constexpr int32_t kCallable = 0;
constexpr int kRuns = 200;

void BM_PipelineHostHeavy(benchmark::State& state) {
  const bool pipelined = state.range(0) != 0;
  const auto busy_us = static_cast<uint64_t>(state.range(1));
  Worker worker;
  worker.init(perf::bench_worker_options(bench::bench_threads()));
  perf::register_host_heavy(worker, kCallable);
  const TaskArgs args = perf::host_heavy_args(busy_us);
  CallConfig config;
  config.runtime = RuntimeVariant::HostBuildGraph;
  double rate = 0;
  for (auto _ : state) {
    rate = perf::time_pipeline_stream(worker, kRuns, pipelined, kCallable, args, config);
  }
  state.counters["runs_per_s"] = rate;
  state.SetItemsProcessed(state.iterations() * kRuns);
}
BENCHMARK(BM_PipelineHostHeavy)
    ->ArgNames({"mode", "busy_us"})
    ->ArgsProduct({{0, 1}, {200, 500}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
