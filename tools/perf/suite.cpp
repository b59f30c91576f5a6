#include "suite.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <thread>

#include "runners.h"

namespace chiprt::perf {

namespace {

double median_of(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2.0;
}

Cell measure(Runner& runner, const Workload& workload, const SuiteOptions& options) {
  Cell cell;
  try {
    const auto start = std::chrono::steady_clock::now();
    runner.prepare(workload);
    for (int rep = 0; rep < options.repetitions; ++rep) {
      const RunResult r = runner.run(workload);
      cell.tasks = r.tasks;
      cell.ns_per_task.push_back(static_cast<double>(r.wall_ns) /
                                 static_cast<double>(std::max<uint64_t>(r.tasks, 1)));
      const std::chrono::duration<double> spent = std::chrono::steady_clock::now() - start;
      if (spent.count() > options.cell_budget_s) break;
    }
  } catch (const std::exception& e) {
    cell.error = e.what();
    return cell;
  }
  cell.measured = true;
  cell.median = median_of(cell.ns_per_task);
  const auto [lo, hi] = std::minmax_element(cell.ns_per_task.begin(), cell.ns_per_task.end());
  cell.min = *lo;
  cell.max = *hi;
  return cell;
}

std::string format_ns(double ns) {
  char text[32];
  std::snprintf(text, sizeof(text), ns >= 100 ? "%.0f" : "%.1f", ns);
  return text;
}

}  // namespace

SuiteResult run_suite(const SuiteOptions& requested, std::FILE* progress) {
  SuiteResult result;
  result.options = requested;
  result.hardware_threads = std::max(1u, std::thread::hardware_concurrency());
  if (result.options.threads == 0) result.options.threads = result.hardware_threads;
  const SuiteOptions& options = result.options;

  std::vector<Workload> workloads;
  uint64_t max_tasks = 1;
  for (const Shape shape : options.shapes) {
    workloads.push_back(make_workload(shape, options.tasks));
    max_tasks = std::max(max_tasks, workloads.back().tasks);
  }
  std::vector<RunnerColumn> runners = make_runners({options.threads, max_tasks, options.peers});
  for (const Workload& workload : workloads) {
    Row row;
    row.workload = std::string(shape_name(workload.shape));
    row.tasks = workload.tasks;
    row.cells.resize(runners.size());
    result.rows.push_back(std::move(row));
  }

  // Column by column: a peer's threads exist only while its own column runs (some peers keep
  // idle workers polling, which would steal the host's cores from every other column).
  for (std::size_t c = 0; c < runners.size(); ++c) {
    RunnerColumn& column = runners[c];
    std::unique_ptr<Runner> started;
    if (column.runner == nullptr && column.start != nullptr) {
      try {
        started = column.start(options.threads);
      } catch (const std::exception& e) {
        column.note = std::string("failed to start: ") + e.what();
        column.start = nullptr;
      }
    }
    Runner* runner = column.runner != nullptr ? column.runner.get() : started.get();
    if (runner == nullptr) continue;
    for (std::size_t w = 0; w < workloads.size(); ++w) {
      Row& row = result.rows[w];
      row.cells[c] = measure(*runner, workloads[w], options);
      const Cell& cell = row.cells[c];
      if (progress != nullptr) {
        std::fprintf(progress, "bench: %-12s %-28s %s\n", row.workload.c_str(), column.id.c_str(),
                     cell.measured ? (format_ns(cell.median) + " ns/task").c_str()
                                   : ("error: " + cell.error).c_str());
        std::fflush(progress);
      }
    }
  }
  for (const RunnerColumn& r : runners) {
    result.columns.push_back({r.id, r.label, r.chiprt, r.description, r.available(), r.note});
  }

  for (Row& row : result.rows) {
    for (std::size_t c = 0; c < runners.size(); ++c) {
      const Cell& cell = row.cells[c];
      if (cell.measured && runners[c].chiprt &&
          (row.best_chiprt < 0 || cell.median < row.cells[row.best_chiprt].median)) {
        row.best_chiprt = static_cast<int>(c);
      }
    }
    if (row.best_chiprt >= 0) {
      const double best = row.cells[row.best_chiprt].median;
      for (std::size_t c = 0; c < runners.size(); ++c) {
        Cell& cell = row.cells[c];
        if (!runners[c].chiprt && cell.measured && best > 0) {
          cell.ratio_to_best_chiprt = cell.median / best;
        }
      }
    }
  }
  return result;
}

std::string format_table(const SuiteResult& result) {
  const SuiteOptions& o = result.options;
  std::string out;
  char line[512];
  std::snprintf(line, sizeof(line),
                "chiprt bench: ns per task, median (min-max) of %d run(s) after a warm-up; %u "
                "worker threads for every runtime (host has %u hardware threads); %llu tasks "
                "requested per workload\n",
                o.repetitions, o.threads, result.hardware_threads,
                static_cast<unsigned long long>(o.tasks));
  out += line;
  out +=
      "peer cells end with their ratio to the best chiprt cell of the row (x > 1: chiprt "
      "faster); * marks that best cell\n\n";

  // Cell texts first, then column widths.
  std::vector<std::vector<std::string>> grid;
  std::vector<std::string> heading = {"workload", "tasks"};
  for (const ColumnInfo& c : result.columns) heading.push_back(c.label);
  grid.push_back(heading);
  for (const Row& row : result.rows) {
    std::vector<std::string> texts = {row.workload, std::to_string(row.tasks)};
    for (std::size_t c = 0; c < result.columns.size(); ++c) {
      const Cell& cell = row.cells[c];
      std::string text;
      if (!result.columns[c].available) {
        text = "n/a";
      } else if (!cell.measured) {
        text = "error";
      } else {
        text =
            format_ns(cell.median) + " (" + format_ns(cell.min) + "-" + format_ns(cell.max) + ")";
        if (static_cast<int>(c) == row.best_chiprt) text += "*";
        if (!result.columns[c].chiprt && cell.ratio_to_best_chiprt > 0) {
          char ratio[32];
          std::snprintf(ratio, sizeof(ratio), " %.1fx", cell.ratio_to_best_chiprt);
          text += ratio;
        }
      }
      texts.push_back(std::move(text));
    }
    grid.push_back(std::move(texts));
  }
  std::vector<std::size_t> widths(grid.front().size(), 0);
  for (const auto& texts : grid) {
    for (std::size_t i = 0; i < texts.size(); ++i) widths[i] = std::max(widths[i], texts[i].size());
  }
  for (const auto& texts : grid) {
    std::string text_line;
    for (std::size_t i = 0; i < texts.size(); ++i) {
      const std::size_t pad = widths[i] - texts[i].size();
      if (i < 2) {
        text_line += texts[i] + std::string(pad, ' ');
      } else {
        text_line += std::string(pad, ' ') + texts[i];
      }
      text_line += i + 1 < texts.size() ? "  " : "";
    }
    out += text_line + "\n";
  }
  out += "\ncolumns:\n";
  for (const ColumnInfo& c : result.columns) {
    out += "  " + c.label + std::string(c.label.size() < 10 ? 10 - c.label.size() : 0, ' ') + " " +
           c.description + (c.available ? "" : " -- not run: " + c.note) + "\n";
  }
  for (const Row& row : result.rows) {
    for (std::size_t c = 0; c < result.columns.size(); ++c) {
      if (result.columns[c].available && !row.cells[c].measured) {
        out += "error: " + row.workload + " on " + result.columns[c].id + ": " +
               row.cells[c].error + "\n";
      }
    }
  }
  return out;
}

nlohmann::json to_json(const SuiteResult& result) {
  const SuiteOptions& o = result.options;
  nlohmann::json j;
  j["worker_threads"] = o.threads;
  j["hardware_threads"] = result.hardware_threads;
  j["requested_tasks"] = o.tasks;
  j["repetitions"] = o.repetitions;
  j["quick"] = o.quick;
  j["unit"] = "ns_per_task";
  j["columns"] = nlohmann::json::array();
  for (const ColumnInfo& c : result.columns) {
    j["columns"].push_back({{"id", c.id},
                            {"label", c.label},
                            {"kind", c.chiprt ? "chiprt" : "peer"},
                            {"description", c.description},
                            {"available", c.available},
                            {"note", c.note}});
  }
  j["rows"] = nlohmann::json::array();
  for (const Row& row : result.rows) {
    nlohmann::json r;
    r["workload"] = row.workload;
    r["tasks"] = row.tasks;
    r["best_chiprt"] = row.best_chiprt >= 0 ? nlohmann::json(result.columns[row.best_chiprt].id)
                                            : nlohmann::json(nullptr);
    r["cells"] = nlohmann::json::object();
    for (std::size_t c = 0; c < result.columns.size(); ++c) {
      const ColumnInfo& column = result.columns[c];
      const Cell& cell = row.cells[c];
      nlohmann::json v;
      if (!column.available) {
        v = {{"status", "unavailable"}};
      } else if (!cell.measured) {
        v = {{"status", "error"}, {"error", cell.error}};
      } else {
        v = {{"status", "measured"}, {"median", cell.median},       {"min", cell.min},
             {"max", cell.max},      {"samples", cell.ns_per_task}, {"tasks", cell.tasks}};
        if (!column.chiprt) {
          v["ratio_to_best_chiprt"] = cell.ratio_to_best_chiprt > 0
                                          ? nlohmann::json(cell.ratio_to_best_chiprt)
                                          : nlohmann::json(nullptr);
        }
      }
      r["cells"][column.id] = std::move(v);
    }
    j["rows"].push_back(std::move(r));
  }
  return j;
}

}  // namespace chiprt::perf
