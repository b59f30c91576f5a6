#include "isolation_compare.h"

#include <algorithm>
#include <exception>
#include <functional>
#include <memory>
#include <optional>

#include "chiprt/sim_options.h"
#include "chiprt_options.h"
#include "chiprt_runner.h"
#include "runners.h"
#include "suite.h"

namespace chiprt::perf {

namespace {

constexpr SimIsolation kPlatforms[] = {SimIsolation::None, SimIsolation::Process};

// One timed run of a row on one platform: {tasks, ns} (the row divides as its kind says).
using TimedRun = std::function<RunResult(SimIsolation)>;

// run_interleaved_pair over the two platforms. `per_task`: the values are ns per task, else ns per
// run.
void measure_interleaved(const TimedRun& run, int repetitions, bool per_task, IsolationRow* row) {
  try {
    run_interleaved_pair(repetitions, [&](int side, bool timed) {
      const SimIsolation platform = kPlatforms[side];
      const RunResult r = run(platform);
      if (!timed) return;
      row->tasks = r.tasks;
      const double value = per_task ? static_cast<double>(r.wall_ns) /
                                          static_cast<double>(std::max<uint64_t>(r.tasks, 1))
                                    : static_cast<double>(r.wall_ns);
      (platform == SimIsolation::None ? row->in_process : row->isolated).push_back(value);
    });
  } catch (const std::exception& e) {
    row->error = e.what();
    return;
  }
  row->in_process_median = median_of(row->in_process);
  row->isolated_median = median_of(row->isolated);
  row->ratio = row->in_process_median > 0 ? row->isolated_median / row->in_process_median : 0;
}

void report_row(std::FILE* progress, const IsolationRow& row) {
  if (progress == nullptr) return;
  if (!row.error.empty()) {
    std::fprintf(progress, "bench: %-16s %-28s error: %s\n", row.workload.c_str(),
                 row.column.c_str(), row.error.c_str());
  } else {
    std::fprintf(progress, "bench: %-16s %-28s in process %s ns, isolated %s ns, x%.2f\n",
                 row.workload.c_str(), row.column.c_str(), format_ns(row.in_process_median).c_str(),
                 format_ns(row.isolated_median).c_str(), row.ratio);
  }
  std::fflush(progress);
}

const char* kind_name(IsolationRowKind kind) {
  switch (kind) {
    case IsolationRowKind::Graph:
      return "graph";
    case IsolationRowKind::RealKernels:
      return "real_kernels";
    case IsolationRowKind::EmptyRunLatency:
      return "empty_run_latency";
  }
  return "?";
}

}  // namespace

IsolationResult run_isolation_comparison(const IsolationOptions& requested, std::FILE* progress) {
  IsolationResult result;
  result.options = requested;
  result.hardware_threads = begin_session(&result.options.threads, &result.host_load);
  const IsolationOptions& options = result.options;

  // The workloads exist before the isolated chip's device process is forked: the ring
  // orchestration function reads them there.
  uint64_t max_tasks = 1;
  const std::vector<Workload> workloads = make_workloads(options.shapes, options.tasks, &max_tasks);
  const Workload empty_run = make_workload(Shape::Independent, 1);

  {
    const std::shared_ptr<ChiprtDevice> devices[] = {
        make_chiprt_device(options.threads, max_tasks, SimIsolation::None),
        make_chiprt_device(options.threads, max_tasks, SimIsolation::Process)};
    for (const ChiprtColumnSpec& column : chiprt_columns()) {
      std::unique_ptr<Runner> runners[2] = {make_chiprt_runner(devices[0], column.mode),
                                            make_chiprt_runner(devices[1], column.mode)};
      const auto runner_of = [&runners](SimIsolation platform) -> Runner& {
        return *runners[platform == SimIsolation::None ? 0 : 1];
      };
      for (const Workload& workload : workloads) {
        IsolationRow row;
        row.workload = std::string(shape_name(workload.shape));
        row.column = column.id;
        measure_interleaved([&](SimIsolation p) { return runner_of(p).run(workload); },
                            options.repetitions, /*per_task=*/true, &row);
        report_row(progress, row);
        result.rows.push_back(std::move(row));
      }
      IsolationRow latency;
      latency.kind = IsolationRowKind::EmptyRunLatency;
      latency.workload = "empty run";
      latency.column = column.id;
      measure_interleaved([&](SimIsolation p) { return runner_of(p).run(empty_run); },
                          options.latency_runs, /*per_task=*/false, &latency);
      report_row(progress, latency);
      result.rows.push_back(std::move(latency));
    }
  }

  if (!options.kernel_workloads.empty()) {
    KernelBenchDevice none(options.threads, SimIsolation::None);
    KernelBenchDevice process(options.threads, SimIsolation::Process);
    for (const KernelWorkload workload : options.kernel_workloads) {
      for (const ChiprtColumnSpec& column : chiprt_columns()) {
        IsolationRow row;
        row.kind = IsolationRowKind::RealKernels;
        row.workload = std::string(kernel_workload_name(workload));
        row.column = column.id;
        const std::optional<CallConfig> config = kernel_column_config(column.id);
        if (!config.has_value()) {
          row.error = "chiprt column '" + row.column +
                      "' has no real-kernel configuration (tools/perf/kernel_workloads.cpp)";
        } else {
          measure_interleaved(
              [&](SimIsolation p) {
                const KernelRunResult r =
                    (p == SimIsolation::None ? none : process).run(workload, *config);
                return RunResult{r.tasks, r.wall_ns};
              },
              options.repetitions, /*per_task=*/true, &row);
        }
        // Every run executes the same tasks: the median wall time is the median per task times
        // the tasks.
        row.in_process_wall_ns = row.in_process_median * static_cast<double>(row.tasks);
        row.isolated_wall_ns = row.isolated_median * static_cast<double>(row.tasks);
        report_row(progress, row);
        result.rows.push_back(std::move(row));
      }
    }
  }
  result.host_load.end = read_load_average();
  return result;
}

bool all_isolation_rows_measured(const IsolationResult& result) {
  return std::all_of(result.rows.begin(), result.rows.end(),
                     [](const IsolationRow& row) { return row.error.empty(); });
}

std::string format_isolation_table(const IsolationResult& result) {
  const IsolationOptions& o = result.options;
  std::string out;
  char line[512];
  std::snprintf(line, sizeof(line),
                "chiprt bench --isolation both: the isolated chip (a device process) against the "
                "in-process chip, interleaved; median of %d run(s) per platform after a warm-up "
                "(empty run: %d); %u worker threads (host has %u hardware threads); %llu tasks "
                "requested per graph workload\n",
                o.repetitions, o.latency_runs, o.threads, result.hardware_threads,
                static_cast<unsigned long long>(o.tasks));
  out += line;
  out += describe_chiprt_threads(o.threads) + "\n";
  out += result.host_load.describe();
  out +=
      "ratio = isolated / in process (goal: within 1.10 per task, within 2 for the empty run's "
      "latency)\n\n";
  std::vector<std::vector<std::string>> grid = {
      {"workload", "column", "tasks", "unit", "in process", "isolated", "ratio"}};
  for (const IsolationRow& row : result.rows) {
    const bool latency = row.kind == IsolationRowKind::EmptyRunLatency;
    std::vector<std::string> texts = {row.workload, row.column, std::to_string(row.tasks),
                                      latency ? "ns/run" : "ns/task"};
    if (!row.error.empty()) {
      texts.insert(texts.end(), {"error", "error", "-"});
    } else {
      std::string in_process = format_ns(row.in_process_median);
      std::string isolated = format_ns(row.isolated_median);
      if (row.kind == IsolationRowKind::RealKernels) {
        char wall[48];
        std::snprintf(wall, sizeof(wall), " (%.1f ms)", row.in_process_wall_ns / 1e6);
        in_process += wall;
        std::snprintf(wall, sizeof(wall), " (%.1f ms)", row.isolated_wall_ns / 1e6);
        isolated += wall;
      }
      char ratio[32];
      std::snprintf(ratio, sizeof(ratio), "%.2f", row.ratio);
      texts.insert(texts.end(), {in_process, isolated, ratio});
    }
    grid.push_back(std::move(texts));
  }
  out += layout_table(grid, 2);
  out +=
      "\nreal-kernel rows: ns per task (wall time); empty run: Worker::run of one empty task, "
      "entry to return\n";
  for (const IsolationRow& row : result.rows) {
    if (!row.error.empty()) {
      out += "error: " + row.workload + " on " + row.column + ": " + row.error + "\n";
    }
  }
  return out;
}

nlohmann::json isolation_to_json(const IsolationResult& result) {
  const IsolationOptions& o = result.options;
  nlohmann::json j = session_json(o.threads, result.hardware_threads, result.host_load);
  j["comparison"] = "isolation";
  j["requested_tasks"] = o.tasks;
  j["repetitions"] = o.repetitions;
  j["latency_runs"] = o.latency_runs;
  j["chiprt_threads"] = describe_chiprt_threads(o.threads);
  j["rows"] = nlohmann::json::array();
  for (const IsolationRow& row : result.rows) {
    nlohmann::json r = {
        {"kind", kind_name(row.kind)},
        {"workload", row.workload},
        {"column", row.column},
        {"tasks", row.tasks},
        {"unit", row.kind == IsolationRowKind::EmptyRunLatency ? "ns_per_run" : "ns_per_task"}};
    if (!row.error.empty()) {
      r["status"] = "error";
      r["error"] = row.error;
    } else {
      r["status"] = "measured";
      r["in_process"] = {{"median", row.in_process_median}, {"samples", row.in_process}};
      r["isolated"] = {{"median", row.isolated_median}, {"samples", row.isolated}};
      r["ratio"] = row.ratio;
      if (row.kind == IsolationRowKind::RealKernels) {
        r["in_process"]["wall_ns"] = row.in_process_wall_ns;
        r["isolated"]["wall_ns"] = row.isolated_wall_ns;
      }
    }
    j["rows"].push_back(std::move(r));
  }
  return j;
}

}  // namespace chiprt::perf
