// `chiprt bench --latency`: the latency of a small run, as the caller of Worker::run sees it, on
// every chiprt column, on the in-process chip and on the isolated one (a device process), each as
// p50 and p99 over many runs. Two runs per column: an empty one (the orchestration function
// submits nothing: host_build_graph then launches nothing, tensormap_ringbuffer still starts the
// chip to run the orchestration function) and one of a single task with an empty kernel.
//
// The cells (column x run x platform) are measured round-robin in batches, the starting cell
// rotating from one round to the next, so load on a shared host hits every cell alike; each cell
// gets a few untimed runs first (a replay column records its graph there).
//
// run_latency_bench() is synchronous and single-threaded from the caller's view; it holds two
// chips of bench_worker_options(threads) (one per platform) for its duration. The result is a
// plain value.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "host_load.h"

namespace chiprt::perf {

struct LatencyOptions {
  unsigned threads = 0;  // 0 = host hardware threads
  int runs = 1000;       // timed runs per cell
  int batch = 50;        // runs of one cell before the next cell's turn
};

// p50 / p99 of one cell's timed runs (nearest rank), in ns.
struct LatencyCell {
  std::vector<double> samples;  // ns per run, in the order measured
  double p50 = 0;
  double p99 = 0;
  double ratio = 0;  // p99 / p50
};

struct LatencyRow {
  std::string column;  // chiprt column id (runners.h)
  std::string label;   // its table heading ("hbg", ...)
  uint64_t tasks = 0;  // 0: the empty run; 1: one task
  std::string error;   // set when a run failed (then no percentiles)
  LatencyCell in_process;
  LatencyCell isolated;
};

struct LatencyResult {
  LatencyOptions options;
  unsigned hardware_threads = 0;
  HostLoad host_load;
  std::vector<LatencyRow> rows;
};

// Runs the measurement; `progress` (may be null) gets one line per row once all are measured.
LatencyResult run_latency_bench(const LatencyOptions& options, std::FILE* progress);
// True when every row was measured on both platforms.
bool all_latency_rows_measured(const LatencyResult& result);
// The nearest-rank percentile `p` (0 < p <= 1) of `values`; 0 for none.
double percentile_of(std::vector<double> values, double p);

std::string format_latency_table(const LatencyResult& result);
nlohmann::json latency_to_json(const LatencyResult& result);

}  // namespace chiprt::perf
