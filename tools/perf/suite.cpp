#include "suite.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <thread>

#include "chiprt_options.h"
#include "chiprt_runner.h"
#include "runners.h"

namespace chiprt::perf {

namespace {

Cell measure(Runner& runner, const Workload& workload, const SuiteOptions& options) {
  return time_cell([&] { runner.prepare(workload); }, [&] { return runner.run(workload); },
                   options.repetitions, options.cell_budget_s);
}

// One real-kernel cell: an untimed warm-up run (loads the chip objects; records the graph for the
// replay column; starts the peer's threads), then the timed runs. Summarised like a graph cell
// (ns per task) plus wall time, kernel time and efficiency, each the median of the repetitions.
Cell measure_kernels(const std::function<KernelRunResult()>& run_once, unsigned threads_used,
                     const SuiteOptions& options) {
  std::vector<double> wall_ns, kernel_ns, efficiency;
  uint64_t replayed_runs = 0;
  Cell cell =
      time_cell([&] { run_once(); },
                [&] {
                  const KernelRunResult r = run_once();
                  const double wall = static_cast<double>(std::max<uint64_t>(r.wall_ns, 1));
                  if (r.replayed) ++replayed_runs;
                  wall_ns.push_back(wall);
                  kernel_ns.push_back(static_cast<double>(r.kernel_ns));
                  efficiency.push_back(static_cast<double>(r.kernel_ns) / threads_used / wall);
                  return RunResult{r.tasks, r.wall_ns};
                },
                options.repetitions, options.cell_budget_s);
  cell.threads = threads_used;
  cell.replayed_runs = replayed_runs;
  cell.wall_ns_median = median_of(wall_ns);
  cell.kernel_ns_median = median_of(kernel_ns);
  cell.efficiency_median = median_of(efficiency);
  cell.wall_ns = std::move(wall_ns);
  cell.kernel_ns = std::move(kernel_ns);
  cell.efficiency = std::move(efficiency);
  return cell;
}

// How the real-kernel rows reach a peer column (the graph rows' runners are gone by then).
struct KernelPeer {
  std::unique_ptr<Runner> (*start)(unsigned threads) = nullptr;
  std::string not_run;  // RunnerColumn::kernel_rows_note
};

void report_kernel_cell(std::FILE* progress, const Row& row, const ColumnInfo& column,
                        const Cell& cell) {
  if (progress == nullptr) return;
  char text[96];
  std::snprintf(text, sizeof(text), "%.2f ms, efficiency %.0f%% (%u threads)",
                cell.wall_ns_median / 1e6, cell.efficiency_median * 100, cell.threads);
  std::fprintf(progress, "bench: %-12s %-28s %s\n", row.workload.c_str(), column.id.c_str(),
               !cell.not_run.empty() ? ("not run: " + cell.not_run).c_str()
               : cell.measured       ? text
                                     : ("error: " + cell.error).c_str());
  std::fflush(progress);
}

// The real-kernel rows, after the graph rows (no peer is running any more), column by column: a
// peer is started only while its own cells are measured, as in the graph rows.
void run_kernel_rows(const std::vector<ColumnInfo>& columns, const std::vector<KernelPeer>& peers,
                     const SuiteOptions& options, std::FILE* progress, std::vector<Row>* rows) {
  if (options.kernel_workloads.empty()) return;
  KernelBenchDevice device(options.threads, options.isolation);
  const std::size_t first_row = rows->size();
  for (const KernelWorkload workload : options.kernel_workloads) {
    Row row;
    row.workload = std::string(kernel_workload_name(workload));
    row.real_kernels = true;
    row.example_case = std::string(kKernelBenchCase);
    row.cells.resize(columns.size());
    rows->push_back(std::move(row));
  }
  for (std::size_t c = 0; c < columns.size(); ++c) {
    const ColumnInfo& column = columns[c];
    if (!column.available) continue;
    std::unique_ptr<Runner> started;
    DagRunner* peer = nullptr;
    std::string peer_error;
    if (!column.chiprt && peers[c].not_run.empty()) {
      try {
        started = peers[c].start(options.threads);
        peer = dynamic_cast<DagRunner*>(started.get());
        if (peer == nullptr) {
          peer_error = "peer column '" + column.id +
                       "' does not run task DAGs (tools/perf/runners.h DagRunner); give it a "
                       "kernel_rows_note in tools/perf/runners.cpp";
        }
      } catch (const std::exception& e) {
        peer_error = std::string("failed to start: ") + e.what();
      }
    }
    for (std::size_t k = 0; k < options.kernel_workloads.size(); ++k) {
      const KernelWorkload workload = options.kernel_workloads[k];
      Row& row = (*rows)[first_row + k];
      Cell& cell = row.cells[c];
      if (column.chiprt) {
        const std::optional<CallConfig> config = kernel_column_config(column.id);
        if (!config.has_value()) {
          cell.error = "chiprt column '" + column.id +
                       "' has no real-kernel configuration (tools/perf/kernel_workloads.cpp)";
        } else {
          cell = measure_kernels([&] { return device.run(workload, *config); },
                                 config->serial ? 1u : chiprt_kernel_threads(options.threads),
                                 options);
        }
        if (cell.measured && row.tasks == 0) row.tasks = cell.tasks;
      } else if (!peers[c].not_run.empty()) {
        cell.not_run = peers[c].not_run;
      } else if (peer == nullptr) {
        cell.error = peer_error;
      } else {
        cell = measure_kernels([&] { return device.run_on_peer(workload, *peer); }, options.threads,
                               options);
      }
      report_kernel_cell(progress, row, column, cell);
    }
  }
}

}  // namespace

std::string layout_table(const std::vector<std::vector<std::string>>& grid, std::size_t left) {
  std::vector<std::size_t> widths(grid.front().size(), 0);
  for (const auto& texts : grid) {
    for (std::size_t i = 0; i < texts.size(); ++i) widths[i] = std::max(widths[i], texts[i].size());
  }
  std::string out;
  for (const auto& texts : grid) {
    std::string line;
    for (std::size_t i = 0; i < texts.size(); ++i) {
      const std::string pad(widths[i] - texts[i].size(), ' ');
      line += i < left ? texts[i] + pad : pad + texts[i];
      if (i + 1 < texts.size()) line += "  ";
    }
    out += line + "\n";
  }
  return out;
}

unsigned begin_session(unsigned* threads, HostLoad* load) {
  const unsigned hardware_threads = std::max(1u, std::thread::hardware_concurrency());
  if (*threads == 0) *threads = hardware_threads;
  load->hardware_threads = hardware_threads;
  load->start = read_load_average();
  return hardware_threads;
}

std::vector<Workload> make_workloads(const std::vector<Shape>& shapes, uint64_t tasks,
                                     uint64_t* max_tasks) {
  std::vector<Workload> workloads;
  *max_tasks = 1;
  for (const Shape shape : shapes) {
    workloads.push_back(make_workload(shape, tasks));
    *max_tasks = std::max(*max_tasks, workloads.back().tasks);
  }
  return workloads;
}

double median_of(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2.0;
}

void run_interleaved_pair(int repetitions, const std::function<void(int side, bool timed)>& run) {
  for (int side = 0; side < 2; ++side) run(side, /*timed=*/false);
  for (int rep = 0; rep < repetitions; ++rep) {
    for (int k = 0; k < 2; ++k) run((rep + k) % 2, /*timed=*/true);
  }
}

nlohmann::json session_json(unsigned threads, unsigned hardware_threads, const HostLoad& load) {
  return {{"worker_threads", threads},
          {"hardware_threads", hardware_threads},
          {"host_load", load.to_json()}};
}

nlohmann::json columns_to_json(const std::vector<ColumnInfo>& columns) {
  nlohmann::json out = nlohmann::json::array();
  for (const ColumnInfo& c : columns) {
    out.push_back({{"id", c.id},
                   {"label", c.label},
                   {"kind", c.chiprt ? "chiprt" : "peer"},
                   {"description", c.description},
                   {"available", c.available},
                   {"note", c.note}});
  }
  return out;
}

nlohmann::json measured_cell_json(const Cell& cell) {
  return {{"status", "measured"}, {"tasks", cell.tasks}, {"median", cell.median},
          {"min", cell.min},      {"max", cell.max},     {"samples", cell.ns_per_task}};
}

std::string format_ns(double ns) {
  char text[32];
  std::snprintf(text, sizeof(text), ns >= 100 ? "%.0f" : "%.1f", ns);
  return text;
}

Cell time_cell(const std::function<void()>& warm_up, const std::function<RunResult()>& run,
               int repetitions, double budget_s) {
  Cell cell;
  try {
    const auto start = std::chrono::steady_clock::now();
    warm_up();
    for (int rep = 0; rep < repetitions; ++rep) {
      const RunResult r = run();
      cell.tasks = r.tasks;
      cell.ns_per_task.push_back(static_cast<double>(r.wall_ns) /
                                 static_cast<double>(std::max<uint64_t>(r.tasks, 1)));
      const std::chrono::duration<double> spent = std::chrono::steady_clock::now() - start;
      if (spent.count() > budget_s) break;
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

SuiteResult run_suite(const SuiteOptions& requested, std::FILE* progress) {
  SuiteResult result;
  result.options = requested;
  result.hardware_threads = begin_session(&result.options.threads, &result.host_load);
  const SuiteOptions& options = result.options;

  uint64_t max_tasks = 1;
  const std::vector<Workload> workloads = make_workloads(options.shapes, options.tasks, &max_tasks);
  std::vector<RunnerColumn> runners =
      make_runners({options.threads, max_tasks, options.peers, true, options.isolation});
  for (const Workload& workload : workloads) {
    Row row;
    row.workload = std::string(shape_name(workload.shape));
    row.tasks = workload.tasks;
    row.given_edges = given_edges(workload);
    row.cells.resize(runners.size());
    result.rows.push_back(std::move(row));
  }
  // The edges of chiprt's graph, from the chip the chiprt columns share (not timed).
  for (const RunnerColumn& column : runners) {
    auto* chiprt = dynamic_cast<ChiprtRunner*>(column.runner.get());
    if (chiprt == nullptr) continue;
    for (std::size_t w = 0; w < workloads.size(); ++w) {
      result.rows[w].edges = chiprt->device().dependency_edges(workloads[w]);
    }
    break;
  }

  // Column by column: a peer's threads exist only while its own column runs (some peers keep
  // idle workers polling, which would steal the host's cores from every other column).
  for (std::size_t c = 0; c < runners.size(); ++c) {
    RunnerColumn& column = runners[c];
    std::unique_ptr<Runner> started;
    if (column.runner == nullptr && column.start != nullptr && !workloads.empty()) {
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
  std::vector<KernelPeer> kernel_peers;
  for (const RunnerColumn& r : runners) {
    result.columns.push_back({r.id, r.label, r.chiprt, r.description, r.available(), r.note});
    kernel_peers.push_back({r.start, r.kernel_rows_note});
  }
  // The graph rows' chip and any peer go before the real-kernel rows get their own chip.
  runners.clear();
  run_kernel_rows(result.columns, kernel_peers, options, progress, &result.rows);

  const std::vector<ColumnInfo>& columns = result.columns;
  for (Row& row : result.rows) {
    // Graph rows compare ns per task; real-kernel rows wall time (a peer may count its tasks
    // differently from chiprt, the work is the same).
    const auto key = [&row](const Cell& cell) {
      return row.real_kernels ? cell.wall_ns_median : cell.median;
    };
    for (std::size_t c = 0; c < columns.size(); ++c) {
      const Cell& cell = row.cells[c];
      if (cell.measured && columns[c].chiprt &&
          (row.best_chiprt < 0 || key(cell) < key(row.cells[row.best_chiprt]))) {
        row.best_chiprt = static_cast<int>(c);
      }
    }
    if (row.best_chiprt >= 0) {
      const double best = key(row.cells[row.best_chiprt]);
      for (std::size_t c = 0; c < columns.size(); ++c) {
        Cell& cell = row.cells[c];
        if (!columns[c].chiprt && cell.measured && best > 0) {
          cell.ratio_to_best_chiprt = key(cell) / best;
        }
      }
    }
  }
  result.host_load.end = read_load_average();
  return result;
}

std::string workload_names() {
  std::string text;
  for (const Shape shape : kAllShapes)
    text += std::string(text.empty() ? "" : ", ") + std::string(shape_name(shape));
  for (const KernelWorkload w : kAllKernelWorkloads)
    text += ", " + std::string(kernel_workload_name(w));
  return text;
}

bool select_workloads(const std::vector<std::string>& names, SuiteOptions* options,
                      std::string* error) {
  std::vector<Shape> shapes;
  std::vector<KernelWorkload> kernel_workloads;
  for (const std::string& name : names) {
    Shape shape;
    KernelWorkload kernel_workload;
    if (parse_shape(name, &shape)) {
      shapes.push_back(shape);
    } else if (parse_kernel_workload(name, &kernel_workload)) {
      kernel_workloads.push_back(kernel_workload);
    } else {
      *error = "unknown workload '" + name + "' (workloads: " + workload_names() + ")";
      return false;
    }
  }
  // Suite order, each once.
  options->shapes.clear();
  for (const Shape shape : kAllShapes) {
    if (std::find(shapes.begin(), shapes.end(), shape) != shapes.end())
      options->shapes.push_back(shape);
  }
  options->kernel_workloads.clear();
  for (const KernelWorkload w : kAllKernelWorkloads) {
    if (std::find(kernel_workloads.begin(), kernel_workloads.end(), w) != kernel_workloads.end()) {
      options->kernel_workloads.push_back(w);
    }
  }
  return true;
}

bool all_cells_measured(const SuiteResult& result) {
  for (const Row& row : result.rows) {
    for (std::size_t c = 0; c < result.columns.size(); ++c) {
      const Cell& cell = row.cells[c];
      if (result.columns[c].available && !cell.measured && cell.not_run.empty()) return false;
    }
  }
  return true;
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
  out += describe_chiprt_threads(o.threads) + "; serial columns: 1 thread; chip " +
         describe_sim_isolation(o.isolation) + "\n";
  out += result.host_load.describe();
  out +=
      "peer cells end with their ratio to the best chiprt cell of the row (x > 1: chiprt "
      "faster); * marks that best cell; edges: the dependency edges chiprt derived from the "
      "tensor regions / the edges the peers are given by hand\n\n";

  // Cell texts first, then column widths.
  std::vector<std::vector<std::string>> grid;
  std::vector<std::string> heading = {"workload", "tasks", "edges"};
  for (const ColumnInfo& c : result.columns) heading.push_back(c.label);
  grid.push_back(heading);
  for (const Row& row : result.rows) {
    std::vector<std::string> texts = {
        row.workload, std::to_string(row.tasks),
        row.real_kernels ? "" : std::to_string(row.edges) + "/" + std::to_string(row.given_edges)};
    for (std::size_t c = 0; c < result.columns.size(); ++c) {
      const Cell& cell = row.cells[c];
      std::string text;
      if (!result.columns[c].available || !cell.not_run.empty()) {
        text = "n/a";
      } else if (!cell.measured) {
        text = "error";
      } else if (row.real_kernels) {
        char wall[48];
        std::snprintf(wall, sizeof(wall), "%.1f ms %.0f%%", cell.wall_ns_median / 1e6,
                      cell.efficiency_median * 100);
        text = wall;
        if (static_cast<int>(c) == row.best_chiprt) text += "*";
        if (!result.columns[c].chiprt && cell.ratio_to_best_chiprt > 0) {
          char ratio[32];
          std::snprintf(ratio, sizeof(ratio), " %.1fx", cell.ratio_to_best_chiprt);
          text += ratio;
        }
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
  out += layout_table(grid, 2);
  bool any_real_kernels = false;
  for (const Row& row : result.rows) any_real_kernels = any_real_kernels || row.real_kernels;
  if (any_real_kernels) {
    out += "\nreal-kernel rows (";
    bool first = true;
    for (const Row& row : result.rows) {
      if (!row.real_kernels) continue;
      out += (first ? "" : ", ") + row.workload + "/" + row.example_case;
      first = false;
    }
    out +=
        "): wall time (median) and efficiency = (sum of kernel CPU time / host threads used) / "
        "wall time; host threads used = " +
        std::to_string(chiprt_kernel_threads(o.threads)) + " threaded, 1 serial, " +
        std::to_string(o.threads) +
        " for peers; peers run the graph Worker::export_graph gives for the same call (same "
        "tasks, kernels, arguments and dependencies; exporting it is not timed) and the example "
        "checks their result; peer ratios compare wall times\n";
    for (std::size_t c = 0; c < result.columns.size(); ++c) {
      for (const Row& row : result.rows) {
        if (row.real_kernels && !row.cells[c].not_run.empty()) {
          out +=
              result.columns[c].label + " n/a on real-kernel rows: " + row.cells[c].not_run + "\n";
          break;
        }
      }
    }
    std::string not_replayed;
    for (const Row& row : result.rows) {
      for (std::size_t c = 0; c < result.columns.size(); ++c) {
        const Cell& cell = row.cells[c];
        if (row.real_kernels && result.columns[c].id == "host_build_graph_replay" &&
            cell.measured && cell.replayed_runs < cell.wall_ns.size()) {
          not_replayed += std::string(not_replayed.empty() ? "" : ", ") + row.workload + " " +
                          std::to_string(cell.wall_ns.size() - cell.replayed_runs) + " of " +
                          std::to_string(cell.wall_ns.size());
        }
      }
    }
    if (!not_replayed.empty()) {
      out += "hbg/replay built the graph instead of replaying it in timed runs of " + not_replayed +
             " (each example run uploads its callable and buffers anew, so the cached graph "
             "matches only when they land at the same addresses; an orchestration that reads "
             "tensor data is never cached)\n";
    }
  }
  out += "\ncolumns:\n";
  for (const ColumnInfo& c : result.columns) {
    out += "  " + c.label + std::string(c.label.size() < 10 ? 10 - c.label.size() : 0, ' ') + " " +
           c.description + (c.available ? "" : " -- not run: " + c.note) + "\n";
  }
  for (const Row& row : result.rows) {
    for (std::size_t c = 0; c < result.columns.size(); ++c) {
      if (result.columns[c].available && !row.cells[c].measured && row.cells[c].not_run.empty()) {
        out += "error: " + row.workload + " on " + result.columns[c].id + ": " +
               row.cells[c].error + "\n";
      }
    }
  }
  return out;
}

nlohmann::json to_json(const SuiteResult& result) {
  const SuiteOptions& o = result.options;
  nlohmann::json j = session_json(o.threads, result.hardware_threads, result.host_load);
  j["requested_tasks"] = o.tasks;
  j["repetitions"] = o.repetitions;
  j["quick"] = o.quick;
  j["unit"] = "ns_per_task";
  j["chiprt_threads"] = describe_chiprt_threads(o.threads);
  j["sim_isolation"] = std::string(
      sim_isolation_name(resolve_sim_isolation(bench_worker_options(o.threads, o.isolation).sim)));
  j["columns"] = columns_to_json(result.columns);
  j["rows"] = nlohmann::json::array();
  for (const Row& row : result.rows) {
    nlohmann::json r;
    r["workload"] = row.workload;
    r["tasks"] = row.tasks;
    r["kind"] = row.real_kernels ? "real_kernels" : "graph";
    if (!row.real_kernels) r["edges"] = {{"chiprt", row.edges}, {"given", row.given_edges}};
    if (row.real_kernels) r["case"] = row.example_case;
    r["best_chiprt"] = row.best_chiprt >= 0 ? nlohmann::json(result.columns[row.best_chiprt].id)
                                            : nlohmann::json(nullptr);
    r["cells"] = nlohmann::json::object();
    for (std::size_t c = 0; c < result.columns.size(); ++c) {
      const ColumnInfo& column = result.columns[c];
      const Cell& cell = row.cells[c];
      nlohmann::json v;
      if (!column.available) {
        v = {{"status", "unavailable"}};
      } else if (!cell.not_run.empty()) {
        v = {{"status", "unavailable"}, {"note", cell.not_run}};
      } else if (!cell.measured) {
        v = {{"status", "error"}, {"error", cell.error}};
      } else {
        v = measured_cell_json(cell);
        if (row.real_kernels) {
          v["wall_ns"] = cell.wall_ns_median;
          v["kernel_ns"] = cell.kernel_ns_median;
          v["efficiency"] = cell.efficiency_median;
          v["threads"] = cell.threads;
          v["wall_ns_samples"] = cell.wall_ns;
          v["kernel_ns_samples"] = cell.kernel_ns;
          v["efficiency_samples"] = cell.efficiency;
          if (column.id == "host_build_graph_replay") v["replayed_runs"] = cell.replayed_runs;
        }
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
