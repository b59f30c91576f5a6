// `chiprt bench --diagnostics`: what each diagnostics switch (chiprt/diagnostics.h) costs, each
// measured against diagnostics off in the same session and interleaved, so both see the same host
// load. Every row is one chiprt column (host_build_graph, tensormap_ringbuffer: threaded, in
// process) on one workload with one switch:
//   - the empty-task graph workloads (workloads.h; default independent and chain), once per switch
//     on alone (swimlane=1..4, tasks, deps, scopes, args=1, counters) and with `all`: ns per task
//     off and on, the overhead per task (on - off) and the ratio on / off;
//   - the real-kernel rows (kernel_workloads.h: bgemm, paged_attention) with `all`: wall time off
//     and on and their ratio (the bound: within 1.10; rows above it are marked, not
//     failed).
// The time is Worker::run's wall time (RunReport::host_total_ns): what a run's caller waits. The
// run directory is written in the background (DiagnosticsConfig::background_write), and the
// bench waits for it after the run (Worker::flush_diagnostics, not in the wall time, so that the
// writer never overlaps the next timed run); that wait is reported as `files`, and wall + files
// as the cost of a run that waits for its files. The device part (RunReport::device_wall_ns:
// launch to completion) is reported beside it. Each repetition runs the row once off and once on,
// alternating which goes first, after an untimed warm-up run of each; a row reports the medians.
//
// The run directories go into a temporary directory of the session (under
// std::filesystem::temp_directory_path()); each is deleted right after its run, so that disk use
// stays at one run's files, and the directory is removed at the end.
//
// run_diagnostics_cost() is synchronous and single-threaded from the caller's view; it holds one
// chip of bench_worker_options(threads) per row kind for its duration. The result is a plain
// value.
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

// A switch group as `chiprt run --diag` names it: one switch ("swimlane=2", "tasks") or "all".
inline const std::vector<std::string> kDefaultDiagnosticsSwitches = {
    "swimlane=1", "swimlane=2", "swimlane=3", "swimlane=4", "tasks",
    "deps",       "scopes",     "args=1",     "counters",   "all"};
// The switch group the real-kernel rows run with.
inline constexpr const char* kKernelRowsSwitches = "all";
// The real-kernel rows' bound on the wall-time ratio on / off (marked in the table when above).
inline constexpr double kKernelRowsRatioBound = 1.10;

struct DiagnosticsCostOptions {
  unsigned threads = 0;     // 0 = host hardware threads
  uint64_t tasks = 100000;  // requested tasks per graph workload
  int repetitions = 5;      // timed runs per row, off and on each
  std::vector<std::string> switches = kDefaultDiagnosticsSwitches;  // graph rows' switch groups
  std::vector<Shape> shapes = {Shape::Independent, Shape::Chain};
  std::vector<KernelWorkload> kernel_workloads = {std::begin(kAllKernelWorkloads),
                                                  std::end(kAllKernelWorkloads)};
};

// Checks `switches`: each must be "all" or one switch parse_diagnostics_list accepts (a single
// item: no comma). False with `error` naming the first bad item and the valid ones.
bool check_diagnostics_switches(const std::vector<std::string>& switches, std::string* error);

enum class DiagnosticsCostRowKind : uint8_t { Graph, RealKernels };

// One side of a row (diagnostics off or on): one value per timed run and their medians, ns.
struct DiagnosticsCostSide {
  std::vector<double> wall_ns;    // RunReport::host_total_ns
  std::vector<double> device_ns;  // RunReport::device_wall_ns
  std::vector<double> files_ns;   // the flush after the run (0 off)
  double wall_ns_median = 0;
  double device_ns_median = 0;
  double files_ns_median = 0;
  double wall_ns_per_task = 0;  // wall_ns_median / tasks
  double device_ns_per_task = 0;
};

struct DiagnosticsCostRow {
  DiagnosticsCostRowKind kind = DiagnosticsCostRowKind::Graph;
  std::string workload;  // "chain", "bgemm", ...
  std::string column;    // chiprt column id (runners.h)
  std::string switches;  // the switch group that is on: "swimlane=1", "all", ...
  uint64_t tasks = 0;
  std::string error;  // set when a run failed (then no medians)
  DiagnosticsCostSide off;
  DiagnosticsCostSide on;
  double overhead_ns_per_task = 0;  // on.wall_ns_per_task - off.wall_ns_per_task
  double ratio = 0;                 // on.wall_ns_median / off.wall_ns_median
  double device_ratio = 0;          // on.device_ns_median / off.device_ns_median
  // (on wall + files) / off wall, medians: the cost when the caller waits for the files too.
  double written_ratio = 0;
  // Real-kernel rows: ratio above kKernelRowsRatioBound.
  bool above_bound = false;
  // Diagnostics records the chip dropped (a ring full for kDiagFullWaitMs), summed over the timed
  // runs with the switch on; the streaming drain should keep it 0.
  uint64_t records_dropped = 0;
};

struct DiagnosticsCostResult {
  DiagnosticsCostOptions options;
  unsigned hardware_threads = 0;
  HostLoad host_load;
  std::vector<DiagnosticsCostRow> rows;
};

// Runs the measurement; `progress` (may be null) gets one line per row as it completes. Throws
// (chiprt::Error, std::filesystem::filesystem_error) when the session's output directory cannot
// be created.
DiagnosticsCostResult run_diagnostics_cost(const DiagnosticsCostOptions& options,
                                           std::FILE* progress);
// True when every row was measured off and on.
bool all_diagnostics_rows_measured(const DiagnosticsCostResult& result);

std::string format_diagnostics_table(const DiagnosticsCostResult& result);
nlohmann::json diagnostics_to_json(const DiagnosticsCostResult& result);

}  // namespace chiprt::perf
