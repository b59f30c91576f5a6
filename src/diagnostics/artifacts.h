// The files of a run directory: writing a RunModel (and its Analysis) into them, and reading a
// model back from them (`chiprt report`). File names and which switch writes which file are
// fixed here (chiprt/diagnostics.h lists them for users).
//
// Errors: chiprt::Error(DiagnosticsError) naming the file and what is wrong with it. Writers
// stream (a million-task run writes hundreds of MB without holding the text in memory), and their
// lookups (a task's node, blocks, producers, consumers, arguments) are sorted index arrays over
// the model's rows, a few bytes per row.
//
// Layouts (times in ns from the run start unless said; a CSV time left empty was not recorded):
//   run.json            always: variant, config switches, shape (with kernel_threads), kernels,
//                       clock_hz, anchors, wall_ns, host_load (1-minute load average at start and
//                       end, hardware threads), host spans, have_edges, records received/dropped,
//                       drop reason, notes, counters_note, error (with the stall sub-class), files
//                       written.
//   trace.json          swimlane_level > 0: {"displayTimeUnit","otherData","traceEvents"}, ts/dur
//                       in us with 3 decimals (exact ns). pid 1 host, pid 2 AICPU (tid = thread),
//                       pid 3+c cluster c (tid 0 AIC, 1 AIV0, 2 AIV1). Block slices: ph X, cat
//                       "task", args task/block/core/func_id/scope_depth[/tensors][/state
//                       "stuck"|"running" for a block without an end, drawn to wall_ns]; cat
//                       "thread" X spans and cat "sched" instants on pid 2; flows s/f (cat "dep",
//                       id = edge index). One event per line (the reader relies on it for speed
//                       and falls back to parsing the whole document).
//   tasks.csv           task_timing: task,block,func_id,kernel,core_type,core,submit_ns (submit
//                       end),ready_ns,dispatch_ns,start_ns,end_ns,producers,consumers (space-
//                       separated ids), then submit_begin_ns,complete_ns; a row with an empty
//                       block is a task without a block record.
//   deps.json           dependency_graph: {"nodes":[{task,func_id,kernel,block_num,core_type,
//                       scope_depth,dependency_only,internal[,submit_begin_ns,submit_end_ns,
//                       ready_ns]}],"edges":[[producer,consumer,[kinds]]],"internal_edges":[...]},
//                       one element per line. "edges": the user's (RAW, WAW, WAR, after: every
//                       dependency the orchestration derived, the same on both variants and equal
//                       to Worker::export_graph's edges between user tasks); "internal_edges":
//                       host_build_graph's to and from its scope fences (scope_fence, heap_reuse).
//                       The reader also takes [producer,consumer] (kinds unknown).
//   critical_path.md/.json  dependency_graph: the Analysis (steps, waits, cores, kernels, verdict).
//   scope_stats.jsonl   scope_stats (ring variant or scopes recorded): one ScopeStat per line,
//                       waits/wait_ns by ring, "recommendation" naming rings.* / CHIPRT_RING_*.
//   args.json, args.bin args_dump_level > 0: {"bin_file","bin_bytes","records":[...],
//                       "left_out":[{task,index,phase,wanted_bytes}]}; args.bin = ArgsData bytes.
//   counters.csv        hardware_counters: "#" comment lines (what "valid" means, counters_note),
//                       then task,block,core,instructions,cycles,cpu_ns,valid (names measured).
//   report.html         always: write_report_html (a large run's timeline sampled).
// Files are written as NAME.tmp and renamed into place.
//
// Threading: one call per directory at a time.
#pragma once

#include <string>
#include <vector>

#include "diagnostics/analysis.h"
#include "diagnostics/run_model.h"

namespace chiprt::diagnostics {

inline constexpr const char* kTraceFile = "trace.json";
inline constexpr const char* kTasksFile = "tasks.csv";
inline constexpr const char* kDepsFile = "deps.json";
inline constexpr const char* kCriticalPathMdFile = "critical_path.md";
inline constexpr const char* kCriticalPathJsonFile = "critical_path.json";
inline constexpr const char* kScopeStatsFile = "scope_stats.jsonl";
inline constexpr const char* kArgsJsonFile = "args.json";
inline constexpr const char* kArgsBinFile = "args.bin";
inline constexpr const char* kCountersFile = "counters.csv";
inline constexpr const char* kRunFile = "run.json";
inline constexpr const char* kReportFile = "report.html";

// Creates output_dir (and parents) when missing and a fresh run-NNNN in it (one above the
// highest present; created exclusively, so two runs never share one). Returns its path and sets
// *number.
std::string create_run_directory(const std::string& output_dir, uint32_t* number);

// Whether `name` is a run directory's name ("run-" and decimal digits); sets *number.
bool parse_run_directory_name(const std::string& name, uint32_t* number);

// The data bytes of args.bin (levels 2-3), in the order TensorArgRecord offsets refer to.
struct ArgsData {
  std::vector<unsigned char> bytes;
};

// Writes every file the model's switches call for, report.html included; returns the paths.
std::vector<std::string> write_run_directory(const std::string& run_dir, const RunModel& model,
                                             const ArgsData& data);

// Rebuilds the model from the files of run_dir (run.json is required; the others as the switches
// say). Args data is not loaded.
RunModel read_run_directory(const std::string& run_dir);

}  // namespace chiprt::diagnostics
