// Diagnostics: what one run did, written as files into a directory of the caller's.
//
// DiagnosticsConfig (CallConfig::diagnostics) switches the collectors on per run: a swimlane of
// the chip (levels 1-4), per-task timing, the dependency graph, scope statistics of the ring
// variant, a dump of the tensor arguments (levels 1-3) and hardware counters. When any is on,
// every run writes one directory `output_dir/run-NNNN/` (NNNN one above the highest number found
// there, so the latest sorts last; RunReport::diagnostics_dir names it) with fixed file names:
//   trace.json          Chrome trace-event JSON (Perfetto, chrome://tracing)
//   tasks.csv           one row per task and SPMD block: ids, kernel, core, times, neighbours
//   deps.json           the graph the run executed: nodes, the user's edges with their kinds
//                       (equal to Worker::export_graph's), host_build_graph's internal edges
//   critical_path.md    the longest measured path, what each step waited for, the verdict
//   critical_path.json  the same as data
//   scope_stats.jsonl   tensormap_ringbuffer: per scope, ring occupancy and back-pressure waits
//   args.json, args.bin the tensor arguments of every task (and their data at levels 2-3)
//   counters.csv        per task instructions and cycles, or CPU time with the reason
//   run.json            what the run was (config, shape, time anchors, records dropped, the error)
//   report.html         one self-contained page (no network) of all of it (a large run's timeline
//                       sampled: every k-th block beyond 200,000, said on the page)
// Which files a run writes follows from the switches (the file table in
// docs/guide/diagnostics.md). A run that fails still writes what was collected up to the
// failure, and run.json carries the error.
//
// Lifetime and threading: DiagnosticsConfig is a plain value (copied by the run). The functions
// below read and write only the directory they are given; they are safe to call from any thread
// on different directories, and throw chiprt::Error (DiagnosticsError) naming the file that is
// missing or malformed.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace chiprt {

struct DiagnosticsConfig {
  // 0 off; 1 task start/end per core; 2 + the schedulers' dispatch and completion events;
  // 3 + scheduler loop phases; 4 + orchestrator submit spans.
  int swimlane_level = 0;
  bool task_timing = false;       // tasks.csv: submit, ready, dispatch, start, end per task
  bool dependency_graph = false;  // deps.json and critical_path.{md,json}
  bool scope_stats = false;       // scope_stats.jsonl (tensormap_ringbuffer)
  // 0 off; 1 tensor metadata; 2 + the data of inputs before the task ran; 3 + the data of outputs
  // after it ran.
  int args_dump_level = 0;
  // At most this many data bytes go into args.bin; what did not fit is listed in args.json.
  uint64_t args_dump_budget_bytes = kDefaultArgsDumpBudgetBytes;
  bool hardware_counters = false;  // counters.csv (perf_event_open where the host allows it)
  // Where the run directories go; created when missing. Required when anything is on.
  std::string output_dir;
  // Write the run directory on a background thread of the Worker, off the run's critical path:
  // run() returns once the chip's records are read, with RunReport::diagnostics_dir created and
  // named; its files appear as they are written (each under its final name only when complete,
  // run.json last). Worker::flush_diagnostics() waits for them and reports a failed write;
  // close() waits too. At most 4 directories wait: a run beyond that waits in run() for the
  // oldest. A run that fails writes its directory before it throws, whatever this says.
  bool background_write = false;

  static constexpr int kMaxSwimlaneLevel = 4;
  static constexpr int kMaxArgsDumpLevel = 3;
  static constexpr uint64_t kDefaultArgsDumpBudgetBytes = 64ull << 20;
  static constexpr uint64_t kMaxArgsDumpBudgetBytes = 4ull << 30;

  // Anything switched on (output_dir alone switches nothing on).
  bool any() const noexcept {
    return swimlane_level > 0 || task_timing || dependency_graph || scope_stats ||
           args_dump_level > 0 || hardware_counters;
  }
  // Every collector at its highest level, args at level 1 (metadata; data only when asked for).
  static DiagnosticsConfig all(std::string output_dir);
  // One message per invalid field (CallConfig::validate adds them to its own).
  std::vector<std::string> validate() const;
};

// Parses a switch list as `chiprt run --diag` takes it: "all", or a comma-separated list of
// swimlane[=1-4] (default 4), tasks, deps, scopes, args[=1-3] (default 1), counters. Switches on
// what it names in `out` (other fields untouched); false with `error` naming the bad item.
bool parse_diagnostics_list(std::string_view list, DiagnosticsConfig* out, std::string* error);

// The newest run directory under `output_dir` (the highest run-NNNN), "" when there is none.
std::string latest_diagnostics_run(const std::string& output_dir);

// The short summary `chiprt run --diag` prints after its timing table, recomputed from the files
// of `run_dir` (critical path, top kernels, per-core utilisation, the verdict, the directory).
std::string diagnostics_summary(const std::string& run_dir);

// Recomputes the analysis from the files of `run_dir` and rewrites its report.html; returns the
// path written.
std::string rewrite_diagnostics_report(const std::string& run_dir);

}  // namespace chiprt
