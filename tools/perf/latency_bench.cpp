#include "latency_bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <memory>

#include "chiprt/sim_options.h"
#include "chiprt_options.h"
#include "runners.h"
#include "suite.h"
#include "workloads.h"

namespace chiprt::perf {

namespace {

// Untimed runs of each cell before its first timed one.
constexpr int kWarmUpRuns = 5;
constexpr SimIsolation kPlatforms[] = {SimIsolation::None, SimIsolation::Process};

// One cell: a column's runner on one platform and the run it times.
struct CellRun {
  std::size_t row = 0;
  int platform = 0;  // index into kPlatforms
  Runner* runner = nullptr;
  const Workload* workload = nullptr;
};

LatencyCell& cell_of(LatencyRow& row, int platform) {
  return platform == 0 ? row.in_process : row.isolated;
}

void summarise(LatencyCell* cell) {
  cell->p50 = percentile_of(cell->samples, 0.50);
  cell->p99 = percentile_of(cell->samples, 0.99);
  cell->ratio = cell->p50 > 0 ? cell->p99 / cell->p50 : 0;
}

std::string format_us(double ns) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f", ns / 1000.0);
  return text;
}

std::string format_ratio(double ratio) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f", ratio);
  return text;
}

const char* run_name(uint64_t tasks) {
  return tasks == 0 ? "empty" : "1 task";
}

nlohmann::json cell_json(const LatencyCell& cell) {
  return {{"p50_ns", cell.p50},
          {"p99_ns", cell.p99},
          {"p99_over_p50", cell.ratio},
          {"samples", cell.samples}};
}

}  // namespace

double percentile_of(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(values.size())));
  return values[std::clamp<std::size_t>(rank, 1, values.size()) - 1];
}

LatencyResult run_latency_bench(const LatencyOptions& requested, std::FILE* progress) {
  LatencyResult result;
  result.options = requested;
  result.options.runs = std::max(result.options.runs, 1);
  result.options.batch = std::clamp(result.options.batch, 1, result.options.runs);
  result.hardware_threads = begin_session(&result.options.threads, &result.host_load);
  const LatencyOptions& options = result.options;

  // Both workloads exist before the isolated chip's device process is forked.
  Workload empty;
  empty.shape = Shape::Independent;
  empty.tasks = 0;
  const Workload one_task = make_workload(Shape::Independent, 1);
  const Workload* workloads[] = {&empty, &one_task};

  const std::shared_ptr<ChiprtDevice> devices[] = {
      make_chiprt_device(options.threads, 1, kPlatforms[0]),
      make_chiprt_device(options.threads, 1, kPlatforms[1])};
  std::vector<std::unique_ptr<Runner>> runners;
  std::vector<CellRun> cells;
  for (const ChiprtColumnSpec& column : chiprt_columns()) {
    const std::size_t first_runner = runners.size();
    for (const std::shared_ptr<ChiprtDevice>& device : devices) {
      runners.push_back(make_chiprt_runner(device, column.mode));
    }
    for (const Workload* workload : workloads) {
      LatencyRow row;
      row.column = column.id;
      row.label = column.label;
      row.tasks = workload->tasks;
      row.in_process.samples.reserve(static_cast<std::size_t>(options.runs));
      row.isolated.samples.reserve(static_cast<std::size_t>(options.runs));
      result.rows.push_back(std::move(row));
      for (int platform = 0; platform < 2; ++platform) {
        cells.push_back({result.rows.size() - 1, platform,
                         runners[first_runner + static_cast<std::size_t>(platform)].get(),
                         workload});
      }
    }
  }

  const auto failed = [&](const CellRun& cell, const std::exception& e) {
    LatencyRow& row = result.rows[cell.row];
    if (row.error.empty()) row.error = e.what();
  };
  for (const CellRun& cell : cells) {
    try {
      for (int i = 0; i < kWarmUpRuns; ++i) cell.runner->run(*cell.workload);
    } catch (const std::exception& e) {
      failed(cell, e);
    }
  }
  // Round-robin: each round gives every cell one batch, starting one cell later than the round
  // before, so no cell always runs right after the same other one.
  const int rounds = (options.runs + options.batch - 1) / options.batch;
  for (int round = 0; round < rounds; ++round) {
    const int runs = std::min(options.batch, options.runs - round * options.batch);
    for (std::size_t k = 0; k < cells.size(); ++k) {
      const CellRun& cell = cells[(k + static_cast<std::size_t>(round)) % cells.size()];
      LatencyRow& row = result.rows[cell.row];
      if (!row.error.empty()) continue;
      std::vector<double>& samples = cell_of(row, cell.platform).samples;
      try {
        for (int i = 0; i < runs; ++i) {
          const auto start = std::chrono::steady_clock::now();
          cell.runner->run(*cell.workload);
          const auto end = std::chrono::steady_clock::now();
          samples.push_back(static_cast<double>(
              std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count()));
        }
      } catch (const std::exception& e) {
        failed(cell, e);
      }
    }
  }
  for (LatencyRow& row : result.rows) {
    if (!row.error.empty()) {
      if (progress != nullptr) {
        std::fprintf(progress, "bench: %-28s %-7s error: %s\n", row.column.c_str(),
                     run_name(row.tasks), row.error.c_str());
      }
      continue;
    }
    summarise(&row.in_process);
    summarise(&row.isolated);
    if (progress != nullptr) {
      std::fprintf(progress,
                   "bench: %-28s %-7s in process p50 %s us p99 %s us, isolated p50 %s us p99 %s "
                   "us\n",
                   row.column.c_str(), run_name(row.tasks), format_us(row.in_process.p50).c_str(),
                   format_us(row.in_process.p99).c_str(), format_us(row.isolated.p50).c_str(),
                   format_us(row.isolated.p99).c_str());
    }
  }
  if (progress != nullptr) std::fflush(progress);
  result.host_load.end = read_load_average();
  return result;
}

bool all_latency_rows_measured(const LatencyResult& result) {
  return std::all_of(result.rows.begin(), result.rows.end(),
                     [](const LatencyRow& row) { return row.error.empty(); });
}

std::string format_latency_table(const LatencyResult& result) {
  const LatencyOptions& o = result.options;
  std::string out;
  char line[512];
  std::snprintf(line, sizeof(line),
                "chiprt bench --latency: Worker::run of a small run as its caller times it, %d "
                "run(s) per cell after %d untimed, cells round-robin in batches of %d; %u worker "
                "threads (host has %u hardware threads)\n",
                o.runs, kWarmUpRuns, o.batch, o.threads, result.hardware_threads);
  out += line;
  out += describe_chiprt_threads(o.threads) + "\n";
  out += result.host_load.describe();
  out +=
      "empty: the orchestration function submits nothing (host_build_graph launches nothing); "
      "1 task: one task of an empty kernel; us per run; p99/p50 goal: within 3 on an idle host\n\n";
  std::vector<std::vector<std::string>> grid = {
      {"column", "run", "in process p50", "p99", "p99/p50", "isolated p50", "p99", "p99/p50"}};
  for (const LatencyRow& row : result.rows) {
    std::vector<std::string> texts = {row.label, run_name(row.tasks)};
    if (!row.error.empty()) {
      texts.insert(texts.end(), {"error", "-", "-", "error", "-", "-"});
    } else {
      for (const LatencyCell* cell : {&row.in_process, &row.isolated}) {
        texts.insert(texts.end(),
                     {format_us(cell->p50), format_us(cell->p99), format_ratio(cell->ratio)});
      }
    }
    grid.push_back(std::move(texts));
  }
  out += layout_table(grid, 2);
  for (const LatencyRow& row : result.rows) {
    if (!row.error.empty()) {
      out += "error: " + row.column + " " + run_name(row.tasks) + ": " + row.error + "\n";
    }
  }
  return out;
}

nlohmann::json latency_to_json(const LatencyResult& result) {
  const LatencyOptions& o = result.options;
  nlohmann::json j = session_json(o.threads, result.hardware_threads, result.host_load);
  j["comparison"] = "latency";
  j["runs"] = o.runs;
  j["batch"] = o.batch;
  j["warm_up_runs"] = kWarmUpRuns;
  j["chiprt_threads"] = describe_chiprt_threads(o.threads);
  j["unit"] = "ns_per_run";
  j["rows"] = nlohmann::json::array();
  for (const LatencyRow& row : result.rows) {
    nlohmann::json r = {{"column", row.column},
                        {"label", row.label},
                        {"run", row.tasks == 0 ? "empty" : "one_task"},
                        {"tasks", row.tasks}};
    if (!row.error.empty()) {
      r["status"] = "error";
      r["error"] = row.error;
    } else {
      r["status"] = "measured";
      r["in_process"] = cell_json(row.in_process);
      r["isolated"] = cell_json(row.isolated);
    }
    j["rows"].push_back(std::move(r));
  }
  return j;
}

}  // namespace chiprt::perf
