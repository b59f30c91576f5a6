#include "diagnostics_cost.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <system_error>

#include "chiprt/call_config.h"
#include "chiprt/diagnostics.h"
#include "chiprt/sim_options.h"
#include "chiprt/status.h"
#include "chiprt_options.h"
#include "chiprt_runner.h"
#include "runners.h"
#include "suite.h"

namespace chiprt::perf {

namespace {

namespace fs = std::filesystem;

// The session's output directory: a fresh directory under the temporary directory, emptied after
// every run that wrote into it and removed with everything in it on destruction.
class SessionDirectory {
 public:
  SessionDirectory() {
    std::random_device seed;
    for (int attempt = 0; attempt < 100; ++attempt) {
      path_ = fs::temp_directory_path() / ("chiprt-bench-diagnostics-" + std::to_string(getpid()) +
                                           "-" + std::to_string(seed()));
      // create_directory is false when the name exists: another session's, pick another.
      if (fs::create_directory(path_)) return;
    }
    throw Error(StatusCode::InternalError,
                "cannot create a fresh directory for the diagnostics under " +
                    fs::temp_directory_path().string());
  }
  ~SessionDirectory() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  SessionDirectory(const SessionDirectory&) = delete;
  SessionDirectory& operator=(const SessionDirectory&) = delete;

  std::string path() const { return path_.string(); }
  // Deletes the run directories written so far, so that disk use stays at one run's files.
  void clear() const {
    for (const fs::directory_entry& entry : fs::directory_iterator(path_)) {
      fs::remove_all(entry.path());
    }
  }

 private:
  fs::path path_;
};

// The DiagnosticsConfig of a switch group checked by check_diagnostics_switches.
DiagnosticsConfig diagnostics_config_of(const std::string& switches, const std::string& dir) {
  DiagnosticsConfig config;
  config.output_dir = dir;
  config.background_write = true;  // measured apart: TimedRun::files_ns
  std::string error;
  if (!parse_diagnostics_list(switches, &config, &error)) {
    throw Error(StatusCode::InvalidArgument, "diagnostics switch " + error);
  }
  return config;
}

struct TimedRun {
  uint64_t tasks = 0;
  uint64_t wall_ns = 0;          // RunReport::host_total_ns
  uint64_t device_ns = 0;        // RunReport::device_wall_ns
  uint64_t files_ns = 0;         // Worker::flush_diagnostics after the run
  uint64_t records_dropped = 0;  // RunReport::diagnostics_records_dropped
};

// Times `flush` (the Worker's flush_diagnostics) into run.files_ns.
template <class Flush>
TimedRun with_flush(TimedRun run, Flush&& flush) {
  const auto begin = std::chrono::steady_clock::now();
  flush();
  run.files_ns = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - begin)
          .count());
  return run;
}
// One run of a row with the given diagnostics (off: nothing on).
using RunWith = std::function<TimedRun(const DiagnosticsConfig&)>;

void summarise(uint64_t tasks, DiagnosticsCostSide* side) {
  const double per_task = static_cast<double>(std::max<uint64_t>(tasks, 1));
  side->wall_ns_median = median_of(side->wall_ns);
  side->device_ns_median = median_of(side->device_ns);
  side->files_ns_median = median_of(side->files_ns);
  side->wall_ns_per_task = side->wall_ns_median / per_task;
  side->device_ns_per_task = side->device_ns_median / per_task;
}

// run_interleaved_pair over off (side 0) and on (side 1).
void measure_row(const RunWith& run, const DiagnosticsConfig& on_config,
                 const SessionDirectory& dir, int repetitions, DiagnosticsCostRow* row) {
  const DiagnosticsConfig off_config;
  try {
    run_interleaved_pair(repetitions, [&](int side, bool timed) {
      const bool on = side == 1;
      const TimedRun r = run(on ? on_config : off_config);
      if (on) dir.clear();
      if (!timed) return;
      row->tasks = r.tasks;
      DiagnosticsCostSide& target = on ? row->on : row->off;
      target.wall_ns.push_back(static_cast<double>(r.wall_ns));
      target.device_ns.push_back(static_cast<double>(r.device_ns));
      target.files_ns.push_back(static_cast<double>(r.files_ns));
      if (on) row->records_dropped += r.records_dropped;
    });
  } catch (const std::exception& e) {
    row->error = e.what();
    return;
  }
  summarise(row->tasks, &row->off);
  summarise(row->tasks, &row->on);
  row->overhead_ns_per_task = row->on.wall_ns_per_task - row->off.wall_ns_per_task;
  row->ratio = row->off.wall_ns_median > 0 ? row->on.wall_ns_median / row->off.wall_ns_median : 0;
  row->device_ratio =
      row->off.device_ns_median > 0 ? row->on.device_ns_median / row->off.device_ns_median : 0;
  row->written_ratio =
      row->off.wall_ns_median > 0
          ? (row->on.wall_ns_median + row->on.files_ns_median) / row->off.wall_ns_median
          : 0;
  row->above_bound =
      row->kind == DiagnosticsCostRowKind::RealKernels && row->ratio > kKernelRowsRatioBound;
}

void report_row(std::FILE* progress, const DiagnosticsCostRow& row) {
  if (progress == nullptr) return;
  if (!row.error.empty()) {
    std::fprintf(progress, "bench: %-16s %-22s %-11s error: %s\n", row.workload.c_str(),
                 row.column.c_str(), row.switches.c_str(), row.error.c_str());
  } else {
    std::fprintf(progress, "bench: %-16s %-22s %-11s off %s ns/task, on %s ns/task, x%.2f\n",
                 row.workload.c_str(), row.column.c_str(), row.switches.c_str(),
                 format_ns(row.off.wall_ns_per_task).c_str(),
                 format_ns(row.on.wall_ns_per_task).c_str(), row.ratio);
  }
  std::fflush(progress);
}

const char* kind_name(DiagnosticsCostRowKind kind) {
  return kind == DiagnosticsCostRowKind::Graph ? "graph" : "real_kernels";
}

// The threaded columns of both runtime variants: the switches differ per variant (scope stats,
// submit spans and edges exist on tensormap_ringbuffer only).
bool measured_column(const ChiprtColumnSpec& column) {
  return column.mode == ChiprtMode::HostBuildGraph || column.mode == ChiprtMode::Ringbuffer;
}

std::string signed_ns(double ns) {
  return (ns >= 0 ? "+" : "-") + format_ns(ns >= 0 ? ns : -ns);
}

std::string ms(double ns) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f ms", ns / 1e6);
  return text;
}

nlohmann::json side_json(const DiagnosticsCostSide& side) {
  return {{"wall_ns", {{"median", side.wall_ns_median}, {"samples", side.wall_ns}}},
          {"device_ns", {{"median", side.device_ns_median}, {"samples", side.device_ns}}},
          {"files_ns", {{"median", side.files_ns_median}, {"samples", side.files_ns}}},
          {"wall_ns_per_task", side.wall_ns_per_task},
          {"device_ns_per_task", side.device_ns_per_task}};
}

}  // namespace

bool check_diagnostics_switches(const std::vector<std::string>& switches, std::string* error) {
  if (switches.empty()) {
    *error = "no switch given";
    return false;
  }
  for (const std::string& item : switches) {
    DiagnosticsConfig config;
    std::string why;
    if (item.find(',') != std::string::npos) {
      why = "'" + item + "' names more than one switch; give one per item";
    } else if (parse_diagnostics_list(item, &config, &why)) {
      continue;
    }
    *error = why.empty() ? "'" + item + "' is not a diagnostics switch" : why;
    return false;
  }
  return true;
}

DiagnosticsCostResult run_diagnostics_cost(const DiagnosticsCostOptions& requested,
                                           std::FILE* progress) {
  DiagnosticsCostResult result;
  result.options = requested;
  result.hardware_threads = begin_session(&result.options.threads, &result.host_load);
  const DiagnosticsCostOptions& options = result.options;
  const SessionDirectory dir;

  uint64_t max_tasks = 1;
  const std::vector<Workload> workloads = make_workloads(options.shapes, options.tasks, &max_tasks);
  if (!workloads.empty()) {
    const std::shared_ptr<ChiprtDevice> device =
        make_chiprt_device(options.threads, max_tasks, SimIsolation::None);
    for (const ChiprtColumnSpec& column : chiprt_columns()) {
      if (!measured_column(column)) continue;
      const CallConfig column_config = chiprt_mode_config(column.mode);
      for (const Workload& workload : workloads) {
        for (const std::string& switches : options.switches) {
          DiagnosticsCostRow row;
          row.workload = std::string(shape_name(workload.shape));
          row.column = column.id;
          row.switches = switches;
          const DiagnosticsConfig on_config = diagnostics_config_of(switches, dir.path());
          measure_row(
              [&](const DiagnosticsConfig& diagnostics) {
                CallConfig config = column_config;
                config.diagnostics = diagnostics;
                ChiprtRunner runner(device, config);
                runner.run(workload);
                const RunReport& report = runner.last_report();
                return with_flush(
                    TimedRun{report.task_count, report.host_total_ns, report.device_wall_ns, 0,
                             report.diagnostics_records_dropped},
                    [&] { device->flush_diagnostics(); });
              },
              on_config, dir, options.repetitions, &row);
          report_row(progress, row);
          result.rows.push_back(std::move(row));
        }
      }
    }
  }

  if (!options.kernel_workloads.empty()) {
    KernelBenchDevice device(options.threads, SimIsolation::None);
    const DiagnosticsConfig on_config = diagnostics_config_of(kKernelRowsSwitches, dir.path());
    for (const KernelWorkload workload : options.kernel_workloads) {
      for (const ChiprtColumnSpec& column : chiprt_columns()) {
        if (!measured_column(column)) continue;
        DiagnosticsCostRow row;
        row.kind = DiagnosticsCostRowKind::RealKernels;
        row.workload = std::string(kernel_workload_name(workload));
        row.column = column.id;
        row.switches = kKernelRowsSwitches;
        const std::optional<CallConfig> column_config = kernel_column_config(column.id);
        if (!column_config.has_value()) {
          row.error = "chiprt column '" + row.column +
                      "' has no real-kernel configuration (tools/perf/kernel_workloads.cpp)";
        } else {
          measure_row(
              [&](const DiagnosticsConfig& diagnostics) {
                CallConfig config = *column_config;
                config.diagnostics = diagnostics;
                const KernelRunResult r = device.run(workload, config);
                return with_flush(
                    TimedRun{r.tasks, r.wall_ns, r.device_wall_ns, 0, r.records_dropped},
                    [&] { device.flush_diagnostics(); });
              },
              on_config, dir, options.repetitions, &row);
        }
        report_row(progress, row);
        result.rows.push_back(std::move(row));
      }
    }
  }
  result.host_load.end = read_load_average();
  return result;
}

bool all_diagnostics_rows_measured(const DiagnosticsCostResult& result) {
  return std::all_of(result.rows.begin(), result.rows.end(),
                     [](const DiagnosticsCostRow& row) { return row.error.empty(); });
}

std::string format_diagnostics_table(const DiagnosticsCostResult& result) {
  const DiagnosticsCostOptions& o = result.options;
  std::string out;
  char line[512];
  std::snprintf(line, sizeof(line),
                "chiprt bench --diagnostics: each diagnostics switch on against diagnostics off, "
                "interleaved; median of %d run(s) per side after a warm-up; %u worker threads "
                "(host has %u hardware threads); %llu tasks requested per graph workload; chip in "
                "process\n",
                o.repetitions, o.threads, result.hardware_threads,
                static_cast<unsigned long long>(o.tasks));
  out += line;
  out += describe_chiprt_threads(o.threads) + "\n";
  out += result.host_load.describe();
  std::snprintf(line, sizeof(line),
                "wall = Worker::run entry to return (the run directory is written in the "
                "background); files = the wait for it after the run (outside wall); written = "
                "(on wall + files) / off wall; device = launch to completion; overhead = on - off "
                "per task (wall); ratio = on / off (wall); real-kernel rows with everything on: * "
                "marks a ratio above %.2f\n\n",
                kKernelRowsRatioBound);
  out += line;
  std::vector<std::vector<std::string>> grid = {
      {"workload", "column", "switch", "tasks", "unit", "off", "on", "overhead ns/task", "ratio",
       "files", "written", "device off", "device on", "device ratio"}};
  for (const DiagnosticsCostRow& row : result.rows) {
    const bool kernels = row.kind == DiagnosticsCostRowKind::RealKernels;
    std::vector<std::string> texts = {row.workload, row.column, row.switches,
                                      std::to_string(row.tasks), kernels ? "wall" : "ns/task"};
    if (!row.error.empty()) {
      texts.insert(texts.end(), {"error", "error", "-", "-", "-", "-", "-", "-", "-"});
    } else {
      char ratio[32];
      std::snprintf(ratio, sizeof(ratio), "%.2f%s", row.ratio, row.above_bound ? " *" : "");
      char device_ratio[32];
      std::snprintf(device_ratio, sizeof(device_ratio), "%.2f", row.device_ratio);
      char written[32];
      std::snprintf(written, sizeof(written), "%.2f", row.written_ratio);
      if (kernels) {
        texts.insert(
            texts.end(),
            {ms(row.off.wall_ns_median), ms(row.on.wall_ns_median),
             signed_ns(row.overhead_ns_per_task), ratio, ms(row.on.files_ns_median), written,
             ms(row.off.device_ns_median), ms(row.on.device_ns_median), device_ratio});
      } else {
        texts.insert(texts.end(),
                     {format_ns(row.off.wall_ns_per_task), format_ns(row.on.wall_ns_per_task),
                      signed_ns(row.overhead_ns_per_task), ratio, ms(row.on.files_ns_median),
                      written, format_ns(row.off.device_ns_per_task),
                      format_ns(row.on.device_ns_per_task), device_ratio});
      }
    }
    grid.push_back(std::move(texts));
  }
  out += layout_table(grid, 3);
  // The chip drops a record only when a ring stayed full for kDiagFullWaitMs: say so per row.
  bool any_dropped = false;
  for (const DiagnosticsCostRow& row : result.rows) {
    if (row.records_dropped == 0) continue;
    any_dropped = true;
    out += "records dropped: " + std::to_string(row.records_dropped) + " by " + row.workload +
           " on " + row.column + " with " + row.switches + " (summed over its timed runs)\n";
  }
  if (!any_dropped && !result.rows.empty()) out += "records dropped: none\n";
  for (const DiagnosticsCostRow& row : result.rows) {
    if (!row.error.empty()) {
      out += "error: " + row.workload + " on " + row.column + " with " + row.switches + ": " +
             row.error + "\n";
    }
  }
  return out;
}

nlohmann::json diagnostics_to_json(const DiagnosticsCostResult& result) {
  const DiagnosticsCostOptions& o = result.options;
  nlohmann::json j = session_json(o.threads, result.hardware_threads, result.host_load);
  j["comparison"] = "diagnostics";
  j["requested_tasks"] = o.tasks;
  j["repetitions"] = o.repetitions;
  j["switches"] = o.switches;
  j["kernel_rows_switches"] = kKernelRowsSwitches;
  j["kernel_rows_ratio_bound"] = kKernelRowsRatioBound;
  j["chiprt_threads"] = describe_chiprt_threads(o.threads);
  j["rows"] = nlohmann::json::array();
  for (const DiagnosticsCostRow& row : result.rows) {
    nlohmann::json r = {{"kind", kind_name(row.kind)},
                        {"workload", row.workload},
                        {"column", row.column},
                        {"switch", row.switches},
                        {"tasks", row.tasks}};
    if (!row.error.empty()) {
      r["status"] = "error";
      r["error"] = row.error;
    } else {
      r["status"] = "measured";
      r["off"] = side_json(row.off);
      r["on"] = side_json(row.on);
      r["overhead_ns_per_task"] = row.overhead_ns_per_task;
      r["ratio"] = row.ratio;
      r["device_ratio"] = row.device_ratio;
      r["written_ratio"] = row.written_ratio;
      r["records_dropped"] = row.records_dropped;
      if (row.kind == DiagnosticsCostRowKind::RealKernels) r["above_bound"] = row.above_bound;
    }
    j["rows"].push_back(std::move(r));
  }
  return j;
}

}  // namespace chiprt::perf
