#include "diagnostics/artifacts.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <filesystem>

#include "diagnostics/artifacts/files.h"
#include "diagnostics/report_html.h"

namespace chiprt::diagnostics {

// The files' writers and readers and their plumbing (artifacts/files.h).
using namespace artifact;

bool parse_run_directory_name(const std::string& name, uint32_t* number) {
  if (name.size() <= 4 || name.compare(0, 4, "run-") != 0) return false;
  uint32_t value = 0;
  const char* end = name.data() + name.size();
  auto [ptr, ec] = std::from_chars(name.data() + 4, end, value);
  if (ec != std::errc() || ptr != end || name[4] == '+' || name[4] == '-') return false;
  *number = value;
  return true;
}

std::string create_run_directory(const std::string& output_dir, uint32_t* number) {
  if (output_dir.empty()) fail("output_dir", "empty: name the directory the runs go into");
  const fs::path dir(output_dir);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) fail(output_dir, "cannot create the directory: " + ec.message());
  if (!fs::is_directory(dir, ec)) fail(output_dir, "exists and is not a directory");
  uint32_t highest = 0;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    uint32_t n = 0;
    if (parse_run_directory_name(it->path().filename().string(), &n))
      highest = std::max(highest, n);
  }
  if (ec) fail(output_dir, "cannot list the directory: " + ec.message());
  // Exclusive: mkdir fails on an existing name, so a concurrent run takes the next number.
  for (uint64_t candidate = uint64_t{highest} + 1; candidate <= UINT32_MAX; ++candidate) {
    char name[24];
    std::snprintf(name, sizeof name, "run-%04llu", static_cast<unsigned long long>(candidate));
    const fs::path run = dir / name;
    if (fs::create_directory(run, ec)) {
      if (number) *number = static_cast<uint32_t>(candidate);
      return run.string();
    }
    if (ec) fail(run.string(), "cannot create the run directory: " + ec.message());
    if (candidate > uint64_t{highest} + 1000) break;
  }
  fail(output_dir, "no free run-NNNN name");
}

std::vector<std::string> write_run_directory(const std::string& run_dir, const RunModel& model,
                                             const ArgsData& data) {
  const DiagnosticsConfig& c = model.config;
  const Analysis analysis = analyze(model);
  const Index index(model, true, c.args_dump_level > 0);
  std::vector<std::string> paths;
  std::vector<std::string> names;
  auto done = [&](OutFile& file, const char* name) {
    paths.push_back(file.commit());
    names.push_back(name);
  };
  if (c.swimlane_level > 0) {
    OutFile file(run_dir, kTraceFile);
    write_trace(file.out(), model, index);
    done(file, kTraceFile);
  }
  if (c.task_timing) {
    OutFile file(run_dir, kTasksFile);
    write_tasks(file.out(), model, index);
    done(file, kTasksFile);
  }
  if (c.dependency_graph) {
    {
      OutFile file(run_dir, kDepsFile);
      write_deps(file.out(), model);
      done(file, kDepsFile);
    }
    {
      OutFile file(run_dir, kCriticalPathMdFile);
      write_critical_path_md(file.out(), model, analysis);
      done(file, kCriticalPathMdFile);
    }
    OutFile file(run_dir, kCriticalPathJsonFile);
    write_critical_path_json(file.out(), model, analysis);
    done(file, kCriticalPathJsonFile);
  }
  if (c.scope_stats && (!model.scopes.empty() || model.variant == "tensormap_ringbuffer")) {
    OutFile file(run_dir, kScopeStatsFile);
    write_scope_stats(file.out(), model);
    done(file, kScopeStatsFile);
  }
  if (c.args_dump_level > 0) {
    {
      OutFile file(run_dir, kArgsJsonFile);
      write_args(file.out(), model, data);
      done(file, kArgsJsonFile);
    }
    OutFile file(run_dir, kArgsBinFile);
    file.out().write(reinterpret_cast<const char*>(data.bytes.data()), data.bytes.size());
    done(file, kArgsBinFile);
  }
  if (c.hardware_counters) {
    OutFile file(run_dir, kCountersFile);
    write_counters(file.out(), model);
    done(file, kCountersFile);
  }
  {
    OutFile file(run_dir, kReportFile);
    write_report_html(model, analysis, [&](std::string_view piece) { file.out() << piece; });
    done(file, kReportFile);
  }
  names.push_back(kRunFile);
  OutFile file(run_dir, kRunFile);
  file.out() << run_json(model, names).dump(2, ' ', false, json::error_handler_t::replace) << "\n";
  paths.push_back(file.commit());
  return paths;
}

RunModel read_run_directory(const std::string& run_dir) {
  RunModel model;
  read_run_json(file_path(run_dir, kRunFile), model);
  const DiagnosticsConfig& c = model.config;
  if (c.dependency_graph) read_deps(file_path(run_dir, kDepsFile), model);
  const bool have_tasks = c.task_timing;
  if (have_tasks) read_tasks(file_path(run_dir, kTasksFile), model);
  if (c.swimlane_level > 0) read_trace(file_path(run_dir, kTraceFile), model, !have_tasks);
  if (exists(run_dir, kScopeStatsFile))
    read_scope_stats(file_path(run_dir, kScopeStatsFile), model);
  if (c.args_dump_level > 0) read_args(file_path(run_dir, kArgsJsonFile), model);
  if (c.hardware_counters) read_counters(file_path(run_dir, kCountersFile), model);
  return model;
}

}  // namespace chiprt::diagnostics
