// One writer and one reader per file of the run directory (artifacts.h lists the layouts);
// write_run_directory and read_run_directory call them as the switches say.
#pragma once

#include <string>
#include <vector>

#include "diagnostics/analysis.h"
#include "diagnostics/artifacts.h"
#include "diagnostics/artifacts/file_io.h"
#include "diagnostics/artifacts/index.h"
#include "diagnostics/run_model.h"

namespace chiprt::diagnostics::artifact {

// run.json (run_json.cpp)
json run_json(const RunModel& model, const std::vector<std::string>& files);
// run.json's "error" (null when the run succeeded); report.html embeds the same object.
json run_error_json(const RunModel& model);
void read_run_json(const std::string& path, RunModel& model);

// trace.json (trace_json.cpp); the reader takes blocks (and nodes, when there are none yet) from
// the trace only when blocks_from_trace (no tasks.csv).
void write_trace(TextOut& out, const RunModel& model, const Index& index);
void read_trace(const std::string& path, RunModel& model, bool blocks_from_trace);

// tasks.csv (tasks_csv.cpp)
void write_tasks(TextOut& out, const RunModel& model, const Index& index);
void read_tasks(const std::string& path, RunModel& model);

// deps.json (deps_json.cpp)
void write_deps(TextOut& out, const RunModel& model);
void read_deps(const std::string& path, RunModel& model);

// critical_path.md / .json (critical_path.cpp): written, never read back (recomputed).
void write_critical_path_md(TextOut& out, const RunModel& model, const Analysis& a);
void write_critical_path_json(TextOut& out, const RunModel& model, const Analysis& a);

// scope_stats.jsonl (scope_stats.cpp)
void write_scope_stats(TextOut& out, const RunModel& model);
void read_scope_stats(const std::string& path, RunModel& model);

// args.json (args_json.cpp); args.bin is written as the data's bytes.
void write_args(TextOut& out, const RunModel& model, const ArgsData& data);
void read_args(const std::string& path, RunModel& model);

// counters.csv (counters_csv.cpp)
void write_counters(TextOut& out, const RunModel& model);
void read_counters(const std::string& path, RunModel& model);

}  // namespace chiprt::diagnostics::artifact
