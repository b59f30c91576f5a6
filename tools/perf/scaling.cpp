#include "scaling.h"

#include <malloc.h>
#include <sys/resource.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <exception>
#include <fstream>
#include <map>
#include <thread>
#include <utility>

#include "chiprt_options.h"
#include "chiprt_runner.h"

namespace chiprt::perf {

namespace {

// A field of /proc/self/status in bytes ("VmRSS:     1616 kB"), 0 when absent.
uint64_t proc_status_bytes(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, field.size(), field) != 0 || line.size() <= field.size() ||
        line[field.size()] != ':') {
      continue;
    }
    const std::size_t digits = line.find_first_of("0123456789");
    if (digits == std::string::npos) return 0;
    uint64_t kib = 0;
    std::from_chars(line.data() + digits, line.data() + line.size(), kib);
    return kib * 1024;
  }
  return 0;
}

uint64_t max_rss_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<uint64_t>(usage.ru_maxrss) * 1024;  // Linux: KiB
}

// Resets the process's peak RSS (VmHWM) to its current RSS; false when the kernel refuses.
bool reset_peak_rss() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

bool is_ring(ChiprtMode mode) {
  return mode == ChiprtMode::Ringbuffer || mode == ChiprtMode::RingbufferSerial;
}

std::string format_bytes(double bytes) {
  char text[32];
  if (std::abs(bytes) >= 100 || bytes == 0) {
    std::snprintf(text, sizeof(text), "%.0f", bytes);
  } else {
    std::snprintf(text, sizeof(text), "%.1f", bytes);
  }
  return text;
}

}  // namespace

ScalingCell::ScalingCell(ChiprtMode mode, unsigned threads, const Workload& workload)
    : workload_(workload), ring_(is_ring(mode)) {
  // Freed heap pages of earlier cells go back to the system first, so this cell's RSS growth is
  // what it touches, not what it reuses.
  malloc_trim(0);
  auto runner = std::make_unique<ChiprtRunner>(make_chiprt_device(threads, workload.tasks),
                                               chiprt_mode_config(mode));
  device_bytes_before_ = runner->device().memory().bytes_in_use;
  runner_ = runner.get();
  owned_ = std::move(runner);
  start_memory_accounting();
}

ScalingCell::ScalingCell(Runner& runner, const Workload& workload)
    : workload_(workload), runner_(&runner) {}

ScalingCell::~ScalingCell() = default;

void ScalingCell::start_memory_accounting() {
  peak_reset_ = reset_peak_rss();
  rss_before_ = peak_reset_ ? proc_status_bytes("VmRSS") : max_rss_bytes();
}

void ScalingCell::warm_up() {
  runner_->prepare(workload_);
}

RunResult ScalingCell::run() {
  return runner_->run(workload_);
}

CellMemory ScalingCell::memory() {
  CellMemory m;
  auto* chiprt = dynamic_cast<ChiprtRunner*>(owned_.get());
  if (chiprt == nullptr) return m;
  const ChiprtDeviceMemory device = chiprt->device().memory();
  m.measured = true;
  m.ring = ring_;
  m.device_bytes = device.bytes_in_use - std::min(device.bytes_in_use, device_bytes_before_);
  m.output_heap_bytes = device.output_heap_bytes;
  m.in_flight = ring_ ? device.ring_slots : chiprt->last_report().task_count;
  if (m.in_flight > 0) {
    m.device_bytes_per_in_flight =
        static_cast<double>(m.device_bytes - std::min(m.device_bytes, m.output_heap_bytes)) /
        static_cast<double>(m.in_flight);
  }
  m.peak_rss_reset = peak_reset_;
  const uint64_t peak = peak_reset_ ? proc_status_bytes("VmHWM") : max_rss_bytes();
  m.peak_rss_bytes = peak - std::min(peak, rss_before_);
  m.peak_rss_bytes_per_task = static_cast<double>(m.peak_rss_bytes) /
                              static_cast<double>(std::max<uint64_t>(workload_.tasks, 1));
  return m;
}

bool parse_scaling_sizes(const std::vector<std::string>& values, std::vector<uint64_t>* sizes,
                         std::string* error) {
  std::vector<uint64_t> parsed;
  for (const std::string& text : values) {
    uint64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value == 0 ||
        value > kMaxScalingTasks) {
      *error = "size '" + text + "' is not a task count in [1, " +
               std::to_string(kMaxScalingTasks) + "] (e.g. --scaling-sizes 10000,100000,1000000)";
      return false;
    }
    parsed.push_back(value);
  }
  std::sort(parsed.begin(), parsed.end());
  parsed.erase(std::unique(parsed.begin(), parsed.end()), parsed.end());
  if (parsed.size() < 2) {
    *error = "needs at least two different sizes to compare (got " + std::to_string(parsed.size()) +
             "; e.g. --scaling-sizes 10000,100000)";
    return false;
  }
  *sizes = std::move(parsed);
  return true;
}

ScalingResult run_scaling(const ScalingOptions& requested, std::FILE* progress) {
  ScalingResult result;
  result.options = requested;
  result.hardware_threads = begin_session(&result.options.threads, &result.host_load);
  const ScalingOptions& options = result.options;

  // The graphs, made once (the random DAG's predecessor lists are the expensive part).
  std::map<std::pair<Shape, uint64_t>, Workload> workloads;
  for (const Shape shape : options.shapes) {
    for (const uint64_t size : options.sizes) {
      workloads.emplace(std::pair{shape, size}, make_workload(shape, size));
    }
  }

  // Columns: chiprt first (each cell makes its own chip), then the peers (one runtime per column).
  for (const ChiprtColumnSpec& c : chiprt_columns()) {
    result.columns.push_back({c.id, c.label, true, c.description, true, ""});
  }
  std::vector<RunnerColumn> peers =
      make_runners({options.threads, 1, options.peers, /*chiprt=*/false});
  for (const RunnerColumn& p : peers) {
    result.columns.push_back({p.id, p.label, false, p.description, p.available(), p.note});
  }
  const std::size_t chiprt_count = chiprt_columns().size();
  for (const Shape shape : options.shapes) {
    for (std::size_t c = 0; c < result.columns.size(); ++c) {
      ScalingRow row;
      row.workload = std::string(shape_name(shape));
      row.column = c;
      for (const uint64_t size : options.sizes) row.points.push_back({size, {}, {}, {}});
      result.rows.push_back(std::move(row));
    }
  }
  auto row_of = [&](std::size_t shape_index, std::size_t column) -> ScalingRow& {
    return result.rows[shape_index * result.columns.size() + column];
  };

  // Whether point `i` of `row` is skipped (sets its note): a slow runtime's largest graphs would
  // otherwise take minutes per run.
  auto skip_point = [&](ScalingRow& row, std::size_t i, const Workload& workload) {
    if (i == 0) return false;
    const ScalingPoint& previous = row.points[i - 1];
    ScalingPoint& point = row.points[i];
    if (!previous.skipped.empty()) {
      point.skipped = "a smaller size was skipped";
    } else if (previous.timing.measured) {
      const double projected_s =
          previous.timing.median * static_cast<double>(workload.tasks) * 1e-9;
      if (projected_s > options.cell_budget_s) {
        char text[200];
        std::snprintf(text, sizeof(text),
                      "one run projected at %.0f s (%s ns/task at %llu tasks) exceeds the cell "
                      "budget of %.0f s",
                      projected_s, format_ns(previous.timing.median).c_str(),
                      static_cast<unsigned long long>(previous.timing.tasks),
                      options.cell_budget_s);
        point.skipped = text;
      }
    }
    return !point.skipped.empty();
  };
  auto measure_point = [&](ScalingCell& cell, ScalingPoint& point) {
    point.timing = time_cell([&] { cell.warm_up(); }, [&] { return cell.run(); },
                             options.repetitions, options.cell_budget_s);
    if (point.timing.measured) point.memory = cell.memory();
  };
  auto report = [&](const ScalingRow& row, const ScalingPoint& point) {
    if (progress == nullptr) return;
    const Cell& t = point.timing;
    std::string text = !point.skipped.empty() ? "skipped: " + point.skipped
                       : t.measured           ? format_ns(t.median) + " ns/task"
                                              : "error: " + t.error;
    if (point.memory.measured) {
      text += ", " + format_bytes(point.memory.device_bytes_per_in_flight) + " device B per " +
              (point.memory.ring ? "window slot" : "task") + ", peak RSS +" +
              format_bytes(point.memory.peak_rss_bytes_per_task) + " B/task";
    }
    std::fprintf(progress, "bench --scaling: %-12s %-28s %8llu tasks  %s\n", row.workload.c_str(),
                 result.columns[row.column].id.c_str(),
                 static_cast<unsigned long long>(t.measured ? t.tasks : point.requested_tasks),
                 text.c_str());
    std::fflush(progress);
  };

  for (std::size_t c = 0; c < chiprt_count; ++c) {
    const ChiprtMode mode = chiprt_columns()[c].mode;
    for (std::size_t s = 0; s < options.shapes.size(); ++s) {
      ScalingRow& row = row_of(s, c);
      for (std::size_t i = 0; i < row.points.size(); ++i) {
        ScalingPoint& point = row.points[i];
        const Workload& workload = workloads.at({options.shapes[s], point.requested_tasks});
        if (skip_point(row, i, workload)) {
          report(row, point);
          continue;
        }
        try {
          ScalingCell cell(mode, options.threads, workload);
          measure_point(cell, point);
        } catch (const std::exception& e) {
          point.timing.error = e.what();  // the chip could not be made for this size
        }
        report(row, point);
      }
    }
  }
  for (std::size_t p = 0; p < peers.size(); ++p) {
    RunnerColumn& column = peers[p];
    const std::size_t c = chiprt_count + p;
    if (column.start == nullptr || options.shapes.empty()) continue;
    std::unique_ptr<Runner> runner;
    try {
      runner = column.start(options.threads);
    } catch (const std::exception& e) {
      result.columns[c].available = false;
      result.columns[c].note = std::string("failed to start: ") + e.what();
      continue;
    }
    for (std::size_t s = 0; s < options.shapes.size(); ++s) {
      ScalingRow& row = row_of(s, c);
      for (std::size_t i = 0; i < row.points.size(); ++i) {
        ScalingPoint& point = row.points[i];
        const Workload& workload = workloads.at({options.shapes[s], point.requested_tasks});
        if (!skip_point(row, i, workload)) {
          ScalingCell cell(*runner, workload);
          measure_point(cell, point);
        }
        report(row, point);
      }
    }
  }

  for (ScalingRow& row : result.rows) {
    const ScalingPoint& first = row.points.front();
    const auto last_measured =
        std::find_if(row.points.rbegin(), row.points.rend(),
                     [](const ScalingPoint& p) { return p.timing.measured; });
    if (first.timing.measured && last_measured != row.points.rend() && &*last_measured != &first &&
        first.timing.median > 0) {
      row.growth = last_measured->timing.median / first.timing.median;
      row.growth_to = last_measured->requested_tasks;
      row.flagged = row.growth > kGrowthFlag;
    }
    const ScalingPoint& last = row.points.back();
    if (first.memory.measured && last.memory.measured && last.timing.tasks > first.timing.tasks) {
      const double added = static_cast<double>(last.timing.tasks - first.timing.tasks);
      row.memory_slope_measured = true;
      row.device_bytes_per_added_task = (static_cast<double>(last.memory.device_bytes) -
                                         static_cast<double>(first.memory.device_bytes)) /
                                        added;
      row.peak_rss_bytes_per_added_task = (static_cast<double>(last.memory.peak_rss_bytes) -
                                           static_cast<double>(first.memory.peak_rss_bytes)) /
                                          added;
    }
  }
  result.host_load.end = read_load_average();
  return result;
}

bool all_scaling_cells_measured(const ScalingResult& result) {
  for (const ScalingRow& row : result.rows) {
    if (!result.columns[row.column].available) continue;
    for (const ScalingPoint& point : row.points) {
      if (!point.timing.measured && point.skipped.empty()) return false;
    }
  }
  return true;
}

std::string format_scaling_table(const ScalingResult& result) {
  const ScalingOptions& o = result.options;
  std::string out;
  char line[512];
  std::snprintf(line, sizeof(line),
                "chiprt bench --scaling: ns per task, median of %d timed run(s) after a warm-up, "
                "fewer once a cell has spent %.0f s (large graphs of slow runtimes); %u worker "
                "threads for every runtime (host has %u hardware threads)\n",
                o.repetitions, o.cell_budget_s, o.threads, result.hardware_threads);
  out += line;
  out += describe_chiprt_threads(o.threads) + "; serial columns: 1 thread\n";
  out += result.host_load.describe();
  std::snprintf(line, sizeof(line),
                "growth = ns per task at the largest size / at the smallest (flat: ~1); ! marks "
                "growth above %.1f\n\n",
                kGrowthFlag);
  out += line;

  std::vector<std::vector<std::string>> grid;
  bool any_skipped = false;
  std::vector<std::string> heading = {"workload", "column"};
  for (const uint64_t size : o.sizes) heading.push_back(std::to_string(size));
  heading.push_back("growth");
  grid.push_back(heading);
  for (const ScalingRow& row : result.rows) {
    const ColumnInfo& column = result.columns[row.column];
    if (!column.available) continue;  // listed under "columns" with the reason
    std::vector<std::string> texts = {row.workload, column.label};
    for (const ScalingPoint& point : row.points) {
      texts.push_back(!point.skipped.empty()  ? "skipped"
                      : point.timing.measured ? format_ns(point.timing.median)
                                              : "error");
      any_skipped = any_skipped || !point.skipped.empty();
    }
    std::string growth = "-";
    if (row.growth > 0) {
      char text[32];
      std::snprintf(text, sizeof(text), "%.2f%s", row.growth, row.flagged ? " !" : "");
      growth = text;
      if (row.growth_to != o.sizes.back()) growth += " (to " + std::to_string(row.growth_to) + ")";
    }
    texts.push_back(growth);
    grid.push_back(std::move(texts));
  }
  out += layout_table(grid, 2);
  if (any_skipped) {
    std::snprintf(line, sizeof(line),
                  "skipped: one run at that size, projected linearly from the previous size, "
                  "would exceed the cell budget of %.0f s (the JSON says by how much)\n",
                  o.cell_budget_s);
    out += line;
  }

  // Memory of the chiprt columns.
  std::vector<std::vector<std::string>> memory = {{"workload", "column", "in flight"}};
  for (const uint64_t size : o.sizes) memory.front().push_back("dev " + std::to_string(size));
  for (const uint64_t size : o.sizes) memory.front().push_back("rss " + std::to_string(size));
  memory.front().push_back("dev/added");
  memory.front().push_back("rss/added");
  uint64_t output_heap = 0;
  bool any_memory = false;
  bool rss_unreset = false;
  for (const ScalingRow& row : result.rows) {
    const ColumnInfo& column = result.columns[row.column];
    if (!column.chiprt) continue;
    std::vector<std::string> texts = {row.workload, column.label, "-"};
    std::vector<std::string> rss;
    for (const ScalingPoint& point : row.points) {
      const CellMemory& m = point.memory;
      if (!m.measured) {
        texts.push_back("-");
        rss.push_back("-");
        continue;
      }
      any_memory = true;
      output_heap = std::max(output_heap, m.output_heap_bytes);
      rss_unreset = rss_unreset || !m.peak_rss_reset;
      texts[2] = m.ring ? std::to_string(m.in_flight) + " slots" : "graph";
      texts.push_back(format_bytes(m.device_bytes_per_in_flight));
      rss.push_back(format_bytes(m.peak_rss_bytes_per_task));
    }
    texts.insert(texts.end(), rss.begin(), rss.end());
    texts.push_back(row.memory_slope_measured ? format_bytes(row.device_bytes_per_added_task)
                                              : "-");
    texts.push_back(row.memory_slope_measured ? format_bytes(row.peak_rss_bytes_per_added_task)
                                              : "-");
    memory.push_back(std::move(texts));
  }
  if (any_memory) {
    out +=
        "\nmemory per in-flight task, chiprt columns (each cell on a simulated chip of its own):\n";
    out +=
        "  dev = (device bytes in use after the cell's runs - before them - the output-heap "
        "arena) / tasks in flight;\n"
        "        in flight: host_build_graph = every task of the graph (\"graph\"), "
        "tensormap_ringbuffer = its task-window slots, all scope depths\n";
    out +=
        "  rss = (peak resident set during the cell - resident set before it) / tasks of the "
        "graph" +
        std::string(rss_unreset ? " (peak not resettable here: getrusage growth, a lower bound)"
                                : "") +
        "\n";
    out +=
        "  dev/added, rss/added = growth of those bytes from the smallest to the largest graph / "
        "tasks added (the fixed part cancels; ring: ~0)\n";
    out +=
        "  output-heap arena, outside dev (for runtime-allocated outputs; these graphs have "
        "none): " +
        chiprt::format_count(output_heap) + " bytes\n\n";
    out += layout_table(memory, 3);
  }

  out += "\ncolumns:\n";
  for (const ColumnInfo& c : result.columns) {
    out += "  " + c.label + std::string(c.label.size() < 10 ? 10 - c.label.size() : 0, ' ') + " " +
           c.description + (c.available ? "" : " -- not run: " + c.note) + "\n";
  }
  for (const ScalingRow& row : result.rows) {
    const ColumnInfo& column = result.columns[row.column];
    if (!column.available) continue;
    for (const ScalingPoint& point : row.points) {
      if (!point.timing.measured && point.skipped.empty()) {
        out += "error: " + row.workload + " on " + column.id + " at " +
               std::to_string(point.requested_tasks) + " tasks: " + point.timing.error + "\n";
      }
    }
  }
  return out;
}

nlohmann::json scaling_to_json(const ScalingResult& result) {
  const ScalingOptions& o = result.options;
  nlohmann::json j = session_json(o.threads, result.hardware_threads, result.host_load);
  j["mode"] = "scaling";
  j["sizes"] = o.sizes;
  j["repetitions"] = o.repetitions;
  j["cell_budget_s"] = o.cell_budget_s;
  j["quick"] = o.quick;
  j["unit"] = "ns_per_task";
  j["growth_flag_above"] = kGrowthFlag;
  j["columns"] = columns_to_json(result.columns);
  j["rows"] = nlohmann::json::array();
  for (const ScalingRow& row : result.rows) {
    const ColumnInfo& column = result.columns[row.column];
    nlohmann::json r;
    r["workload"] = row.workload;
    r["column"] = column.id;
    r["growth"] = row.growth > 0 ? nlohmann::json(row.growth) : nlohmann::json(nullptr);
    r["growth_flagged"] = row.flagged;
    r["growth_to_tasks"] = row.growth > 0 ? nlohmann::json(row.growth_to) : nlohmann::json(nullptr);
    if (row.memory_slope_measured) {
      r["device_bytes_per_added_task"] = row.device_bytes_per_added_task;
      r["peak_rss_bytes_per_added_task"] = row.peak_rss_bytes_per_added_task;
    }
    r["cells"] = nlohmann::json::array();
    for (const ScalingPoint& point : row.points) {
      const Cell& t = point.timing;
      nlohmann::json v = {{"requested_tasks", point.requested_tasks}};
      if (!column.available) {
        v["status"] = "unavailable";
      } else if (!point.skipped.empty()) {
        v["status"] = "skipped";
        v["note"] = point.skipped;
      } else if (!t.measured) {
        v["status"] = "error";
        v["error"] = t.error;
      } else {
        v.update(measured_cell_json(t));
      }
      const CellMemory& m = point.memory;
      if (m.measured) {
        v["memory"] = {{"in_flight", m.in_flight},
                       {"in_flight_unit", m.ring ? "window_slot" : "graph_task"},
                       {"device_bytes", m.device_bytes},
                       {"output_heap_bytes", m.output_heap_bytes},
                       {"device_bytes_per_in_flight", m.device_bytes_per_in_flight},
                       {"peak_rss_bytes", m.peak_rss_bytes},
                       {"peak_rss_bytes_per_task", m.peak_rss_bytes_per_task},
                       {"peak_rss_reset", m.peak_rss_reset}};
      }
      r["cells"].push_back(std::move(v));
    }
    j["rows"].push_back(std::move(r));
  }
  return j;
}

}  // namespace chiprt::perf
