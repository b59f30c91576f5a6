// The table and JSON of `chiprt bench --task-bench` (task_bench.h).
#include <cstdio>
#include <string>

#include "chiprt_options.h"
#include "task_bench.h"

namespace chiprt::perf {

namespace {

std::string format_us(double us) {
  char text[32];
  std::snprintf(text, sizeof(text), us >= 100 ? "%.0f" : us >= 10 ? "%.1f" : "%.2f", us);
  return text;
}

std::string row_name(const TbPatternResult& r) {
  return std::string(tb_pattern_name(r.pattern)) + " w=" + std::to_string(r.width);
}

nlohmann::json metg_json(const TbCurve& curve) {
  if (!curve.metg.reached) return {{"reached", false}, {"us", nullptr}, {"method", nullptr}};
  return {{"reached", true},
          {"us", curve.metg.us},
          {"method", curve.metg.interpolated ? "interpolated" : "smallest_measured_upper_bound"}};
}

}  // namespace

std::string format_task_bench_table(const TaskBenchResult& result) {
  const TaskBenchOptions& o = result.options;
  std::string out;
  char line[640];
  std::snprintf(line, sizeof(line),
                "chiprt bench --task-bench: METG(50%%) in us per pattern and column: the smallest "
                "task duration still at >= 50%% efficiency; %u worker threads (host has %u "
                "hardware threads); kernel %.3f ns per iteration; runs of >= %.2f s (at most "
                "%llu tasks), median of %d run(s) after a warm-up\n",
                o.threads, result.hardware_threads, result.ns_per_iteration, o.target_run_s,
                static_cast<unsigned long long>(o.max_tasks), o.repetitions);
  out += line;
  out += describe_chiprt_threads(o.threads) + "; serial columns: 1 thread\n";
  out += result.host_load.describe();
  out +=
      "efficiency = tasks x calibrated task duration / (wall time x host threads the column "
      "uses); METG interpolated log-linearly between the measured granularities around 50%; "
      "<=X: still >= 50% at the smallest granularity X; -: 50% not reached; * the smallest of the "
      "row\n\n";
  std::vector<std::vector<std::string>> grid;
  std::vector<std::string> heading = {"pattern"};
  for (const ColumnInfo& c : result.columns) heading.push_back(c.label);
  grid.push_back(heading);
  for (const TbPatternResult& r : result.results) {
    std::vector<std::string> texts = {row_name(r)};
    for (std::size_t c = 0; c < result.columns.size(); ++c) {
      const TbCurve& curve = r.curves[c];
      std::string text;
      if (!result.columns[c].available || !curve.not_run.empty()) {
        text = "n/a";
      } else if (curve.metg.reached) {
        text = (curve.metg.interpolated ? "" : "<=") + format_us(curve.metg.us);
        if (static_cast<int>(c) == r.best) text += "*";
      } else {
        bool any = false;
        for (const TbPoint& p : curve.points) any = any || p.measured;
        text = any ? "-" : "error";
      }
      texts.push_back(std::move(text));
    }
    grid.push_back(std::move(texts));
  }
  out += layout_table(grid, 1);
  out += "\ngranularities (us): ";
  for (std::size_t i = 0; i < o.granularities_us.size(); ++i)
    out += (i == 0 ? "" : ", ") + format_us(o.granularities_us[i]);
  out += "\ncolumns:\n";
  for (std::size_t c = 0; c < result.columns.size(); ++c) {
    const ColumnInfo& col = result.columns[c];
    std::string note = col.available ? "" : " -- not run: " + col.note;
    if (col.available && !result.results.empty() && !result.results[0].curves[c].not_run.empty())
      note = " -- n/a: " + result.results[0].curves[c].not_run;
    out += "  " + col.label + std::string(col.label.size() < 10 ? 10 - col.label.size() : 0, ' ') +
           " " + col.description + note + "\n";
  }
  for (const TbPatternResult& r : result.results) {
    for (std::size_t c = 0; c < result.columns.size(); ++c) {
      for (const TbPoint& p : r.curves[c].points) {
        if (!p.error.empty()) {
          out += "error: " + row_name(r) + " on " + result.columns[c].id + " at " +
                 format_us(p.granularity_us) + " us: " + p.error + "\n";
          break;
        }
      }
    }
  }
  return out;
}

nlohmann::json task_bench_to_json(const TaskBenchResult& result) {
  const TaskBenchOptions& o = result.options;
  nlohmann::json j = session_json(o.threads, result.hardware_threads, result.host_load);
  j["quick"] = o.quick;
  j["repetitions"] = o.repetitions;
  j["ns_per_iteration"] = result.ns_per_iteration;
  j["target_run_s"] = o.target_run_s;
  j["max_tasks"] = o.max_tasks;
  j["granularities_us"] = o.granularities_us;
  j["threshold"] = 0.5;
  j["chiprt_threads"] = describe_chiprt_threads(o.threads);
  j["columns"] = columns_to_json(result.columns);
  j["patterns"] = nlohmann::json::array();
  for (const TbPatternResult& r : result.results) {
    nlohmann::json row;
    row["pattern"] = std::string(tb_pattern_name(r.pattern));
    row["width"] = r.width;
    row["best"] = r.best >= 0 ? nlohmann::json(result.columns[r.best].id) : nlohmann::json(nullptr);
    row["cells"] = nlohmann::json::object();
    for (std::size_t c = 0; c < result.columns.size(); ++c) {
      const TbCurve& curve = r.curves[c];
      nlohmann::json cell;
      if (!result.columns[c].available) {
        cell = {{"status", "unavailable"}};
      } else if (!curve.not_run.empty()) {
        cell = {{"status", "unavailable"}, {"note", curve.not_run}};
      } else {
        cell["status"] = "measured";
        cell["threads"] = curve.threads;
        cell["metg"] = metg_json(curve);
        cell["points"] = nlohmann::json::array();
        for (const TbPoint& p : curve.points) {
          nlohmann::json point = {{"granularity_us", p.granularity_us},
                                  {"iterations", p.iterations},
                                  {"task_ns", p.task_ns},
                                  {"height", p.height},
                                  {"tasks", p.tasks}};
          if (p.measured) {
            point["status"] = "measured";
            point["wall_ns"] = p.wall_ns;
            point["efficiency"] = p.efficiency;
            point["wall_ns_samples"] = p.wall_ns_samples;
          } else if (p.skipped) {
            point["status"] = "skipped";
          } else {
            point["status"] = "error";
            point["error"] = p.error;
          }
          cell["points"].push_back(std::move(point));
        }
      }
      row["cells"][result.columns[c].id] = std::move(cell);
    }
    j["patterns"].push_back(std::move(row));
  }
  return j;
}

}  // namespace chiprt::perf
