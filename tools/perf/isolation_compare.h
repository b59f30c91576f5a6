// `chiprt bench --isolation both`: the isolated simulated chip (SimIsolation::Process: the chip in
// a device process) against the in-process one (SimIsolation::None), in one session and
// interleaved, so both see the same host load. Every row is a chiprt column on one workload:
//   - the graph workloads (workloads.h) on every chiprt column: ns per task;
//   - the real-kernel rows (kernel_workloads.h: bgemm, paged_attention) on every chiprt column:
//     ns per task and wall time;
//   - the empty-run launch latency: a run of one empty task, on every chiprt column: Worker::run's
//     wall time (RunReport::host_total_ns).
// Each repetition runs the row once on each platform, alternating which goes first, after an
// untimed warm-up run on each; a row reports both medians and their ratio (isolated /
// in-process).
//
// run_isolation_comparison() is synchronous and single-threaded from the caller's view; it holds
// two chips (one per platform) of bench_worker_options(threads) for its duration. The result is a
// plain value.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "host_load.h"
#include "kernel_workloads.h"
#include "workloads.h"

namespace chiprt::perf {

struct IsolationOptions {
  unsigned threads = 0;     // 0 = host hardware threads
  uint64_t tasks = 100000;  // requested tasks per graph workload
  int repetitions = 5;      // timed runs per row and platform
  int latency_runs = 200;   // timed empty runs per latency row and platform
  std::vector<Shape> shapes = {std::begin(kAllShapes), std::end(kAllShapes)};
  std::vector<KernelWorkload> kernel_workloads = {std::begin(kAllKernelWorkloads),
                                                  std::end(kAllKernelWorkloads)};
};

enum class IsolationRowKind : uint8_t { Graph, RealKernels, EmptyRunLatency };

struct IsolationRow {
  IsolationRowKind kind = IsolationRowKind::Graph;
  std::string workload;  // "chain", "bgemm", "empty run", ...
  std::string column;    // chiprt column id (runners.h)
  uint64_t tasks = 0;
  std::string error;  // set when a run failed (then no medians)
  // One value per timed run: ns per task (graph and real-kernel rows) or ns per run (latency).
  std::vector<double> in_process;
  std::vector<double> isolated;
  double in_process_median = 0;
  double isolated_median = 0;
  double ratio = 0;  // isolated_median / in_process_median
  // Real-kernel rows: the medians of the wall times, ns.
  double in_process_wall_ns = 0;
  double isolated_wall_ns = 0;
};

struct IsolationResult {
  IsolationOptions options;
  unsigned hardware_threads = 0;
  HostLoad host_load;
  std::vector<IsolationRow> rows;
};

// Runs the comparison; `progress` (may be null) gets one line per row as it completes.
IsolationResult run_isolation_comparison(const IsolationOptions& options, std::FILE* progress);
// True when every row was measured on both platforms.
bool all_isolation_rows_measured(const IsolationResult& result);

std::string format_isolation_table(const IsolationResult& result);
nlohmann::json isolation_to_json(const IsolationResult& result);

}  // namespace chiprt::perf
