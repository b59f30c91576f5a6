// The files of a run directory: writing a RunModel (and its Analysis) into them, and reading a
// model back from them (`chiprt report`). File names and which switch writes which file are
// fixed here (chiprt/diagnostics.h lists them for users).
//
// Errors: chiprt::Error(DiagnosticsError) naming the file and what is wrong with it. Writers
// stream (a million-task run writes hundreds of MB without holding the text in memory).
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
