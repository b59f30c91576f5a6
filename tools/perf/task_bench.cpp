#include "task_bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <functional>
#include <memory>
#include <optional>

#include "chiprt_options.h"
#include "runners.h"
#include "task_bench_chiprt.h"
#include "task_bench_kernel.h"
#include "task_dag.h"

namespace chiprt::perf {

namespace {

constexpr double kThreshold = 0.5;

// A peer's task body: spin the iterations its context points at.
void spin_body(void* context, uint64_t) noexcept {
  const double sink = tb_spin(*static_cast<const uint64_t*>(context));
  asm volatile("" : : "x"(sink));
}

// How one column runs a graph once: returns the wall time in ns.
using RunGraph = std::function<uint64_t(const TbGraph& graph, uint64_t iterations)>;

TbGraph make_graph(TbPattern pattern, uint64_t width, double task_ns, unsigned threads,
                   const TaskBenchOptions& o) {
  TbGraph graph;
  graph.pattern = pattern;
  graph.width = width;
  const double wanted =
      std::ceil(o.target_run_s * 1e9 * threads / (width * std::max(task_ns, 1.0)));
  const uint64_t most = std::max<uint64_t>(o.max_tasks / width, 1);
  graph.height =
      std::min<uint64_t>(std::max<uint64_t>(static_cast<uint64_t>(wanted), 2 * width), most);
  return graph;
}

void report_point(std::FILE* progress, const TbPatternResult& r, const ColumnInfo& column,
                  const TbPoint& p) {
  if (progress == nullptr) return;
  char text[160];
  if (p.measured) {
    std::snprintf(text, sizeof(text), "%.0f%% efficiency (%llu tasks, %.3f s)", p.efficiency * 100,
                  static_cast<unsigned long long>(p.tasks), p.wall_ns / 1e9);
  } else {
    std::snprintf(text, sizeof(text), "%s",
                  p.skipped ? "skipped (below 50% already)" : ("error: " + p.error).c_str());
  }
  std::fprintf(progress, "bench: task-bench %-19s w=%-3llu %-27s %7.1f us  %s\n",
               std::string(tb_pattern_name(r.pattern)).c_str(),
               static_cast<unsigned long long>(r.width), column.id.c_str(), p.granularity_us, text);
  std::fflush(progress);
}

// One column's curves for every pattern and width.
void run_column(std::size_t c, const ColumnInfo& column, unsigned threads_used,
                const RunGraph& run_graph, bool warm_up_same_graph, const TaskBenchResult& result,
                std::FILE* progress, std::vector<TbPatternResult>* results) {
  const TaskBenchOptions& o = result.options;
  for (TbPatternResult& r : *results) {
    TbCurve& curve = r.curves[c];
    curve.threads = threads_used;
    int below = 0;
    for (const double us : o.granularities_us) {
      TbPoint p;
      p.granularity_us = us;
      p.iterations = std::max<uint64_t>(1, std::llround(us * 1e3 / result.ns_per_iteration));
      p.task_ns = static_cast<double>(p.iterations) * result.ns_per_iteration;
      const TbGraph graph = make_graph(r.pattern, r.width, p.task_ns, threads_used, o);
      p.height = graph.height;
      p.tasks = graph.tasks();
      if (below >= o.below_threshold_points) {
        p.skipped = true;
        curve.points.push_back(std::move(p));
        continue;
      }
      try {
        TbGraph warm = graph;
        if (!warm_up_same_graph) warm.height = std::min<uint64_t>(graph.height, 4 * r.width);
        run_graph(warm, p.iterations);
        for (int rep = 0; rep < o.repetitions; ++rep) {
          p.wall_ns_samples.push_back(static_cast<double>(run_graph(graph, p.iterations)));
        }
        p.wall_ns = std::max(median_of(p.wall_ns_samples), 1.0);
        p.efficiency = static_cast<double>(p.tasks) * p.task_ns / (p.wall_ns * threads_used);
        p.measured = true;
        below = p.efficiency < kThreshold ? below + 1 : 0;
      } catch (const std::exception& e) {
        p.error = e.what();
      }
      report_point(progress, r, column, p);
      curve.points.push_back(std::move(p));
    }
    curve.metg = compute_metg(curve.points);
  }
}

}  // namespace

TaskBenchOptions quick_task_bench_options() {
  TaskBenchOptions o;
  o.quick = true;
  o.repetitions = 1;
  o.patterns = {TbPattern::Trivial, TbPattern::Stencil1d, TbPattern::Fft};
  o.granularities_us = {256, 32, 4, 1};
  o.width_factors = {1};
  o.target_run_s = 0.05;
  o.max_tasks = 50000;
  return o;
}

bool select_tb_patterns(const std::vector<std::string>& names, TaskBenchOptions* options,
                        std::string* error) {
  std::vector<TbPattern> chosen;
  for (const std::string& name : names) {
    TbPattern pattern;
    if (!parse_tb_pattern(name, &pattern)) {
      *error = "unknown task bench pattern '" + name + "' (patterns: " + tb_pattern_names() + ")";
      return false;
    }
    chosen.push_back(pattern);
  }
  options->patterns.clear();
  for (const TbPattern p : kAllTbPatterns) {
    if (std::find(chosen.begin(), chosen.end(), p) != chosen.end()) options->patterns.push_back(p);
  }
  return true;
}

TbMetg compute_metg(const std::vector<TbPoint>& points) {
  TbMetg metg;
  int above = -1;  // smallest granularity at or above the threshold
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (points[i].measured && points[i].efficiency >= kThreshold &&
        (above < 0 || points[i].task_ns < points[above].task_ns)) {
      above = static_cast<int>(i);
    }
  }
  if (above < 0) return metg;
  const TbPoint& a = points[above];
  metg.reached = true;
  metg.us = a.task_ns / 1e3;
  // The largest measured granularity below it that fell under the threshold.
  const TbPoint* b = nullptr;
  for (const TbPoint& p : points) {
    if (p.measured && p.task_ns < a.task_ns && p.efficiency < kThreshold &&
        (b == nullptr || p.task_ns > b->task_ns)) {
      b = &p;
    }
  }
  if (b != nullptr && a.efficiency > b->efficiency) {
    const double f = (a.efficiency - kThreshold) / (a.efficiency - b->efficiency);
    metg.us =
        std::exp(std::log(a.task_ns) + f * (std::log(b->task_ns) - std::log(a.task_ns))) / 1e3;
    metg.interpolated = true;
  }
  return metg;
}

TaskBenchResult run_task_bench(const TaskBenchOptions& requested, std::FILE* progress) {
  TaskBenchResult result;
  result.options = requested;
  result.hardware_threads = begin_session(&result.options.threads, &result.host_load);
  const TaskBenchOptions& o = result.options;
  result.ns_per_iteration = tb_calibrate_ns_per_iteration();
  if (progress != nullptr) {
    std::fprintf(progress, "bench: task-bench kernel calibrated: %.3f ns per iteration\n",
                 result.ns_per_iteration);
  }

  // Columns: chiprt's, then the peers of make_runners (started one at a time below).
  for (const ChiprtColumnSpec& spec : chiprt_columns()) {
    result.columns.push_back({spec.id, spec.label, true, spec.description, true, ""});
  }
  std::vector<RunnerColumn> peers = make_runners({o.threads, 1, o.peers, false});
  for (const RunnerColumn& p : peers) {
    result.columns.push_back({p.id, p.label, false, p.description, p.available(), p.note});
  }
  for (const TbPattern pattern : o.patterns) {
    for (const unsigned factor : o.width_factors) {
      TbPatternResult r;
      r.pattern = pattern;
      r.width = uint64_t{factor} * o.threads;
      r.curves.resize(result.columns.size());
      result.results.push_back(std::move(r));
    }
  }

  uint64_t max_width = 1;
  for (const unsigned f : o.width_factors) max_width = std::max<uint64_t>(max_width, f * o.threads);
  {
    // Height is at least 2 x width (make_graph), so the buffer holds max_tasks or that.
    TbChiprtDevice device(o.threads, std::max(o.max_tasks, 2 * max_width * max_width) + max_width);
    const std::span<const ChiprtColumnSpec> specs = chiprt_columns();
    for (std::size_t c = 0; c < specs.size(); ++c) {
      const ChiprtMode mode = specs[c].mode;
      const bool serial =
          mode == ChiprtMode::HostBuildGraphSerial || mode == ChiprtMode::RingbufferSerial;
      const RunGraph run = [&device, mode](const TbGraph& graph, uint64_t iterations) {
        return device.run(graph, iterations, mode).host_total_ns;
      };
      run_column(c, result.columns[c], serial ? 1u : chiprt_kernel_threads(o.threads), run,
                 mode == ChiprtMode::HostBuildGraphReplay, result, progress, &result.results);
    }
  }

  // Peers one at a time: a peer's threads exist only while its own column runs.
  const std::size_t first_peer = chiprt_columns().size();
  for (std::size_t k = 0; k < peers.size(); ++k) {
    const std::size_t c = first_peer + k;
    ColumnInfo& column = result.columns[c];
    if (!column.available) continue;
    std::unique_ptr<Runner> started;
    try {
      started = peers[k].start(o.threads);
    } catch (const std::exception& e) {
      column.available = false;
      column.note = std::string("failed to start: ") + e.what();
      continue;
    }
    RunGraph run;
    if (auto* peer = dynamic_cast<DagRunner*>(started.get()); peer != nullptr) {
      // The predecessor lists are the graph's description (as a Workload's are): built untimed.
      run = [peer](const TbGraph& graph, uint64_t iterations) {
        const TbTaskLists lists = tb_task_lists(graph);
        TaskDag dag;
        dag.tasks = lists.offsets.size() - 1;
        dag.offsets = lists.offsets.data();
        dag.preds = lists.preds.data();
        dag.body = spin_body;
        dag.context = &iterations;
        return peer->run_dag(dag);
      };
    } else if (auto* child = dynamic_cast<TaskBenchGraphRunner*>(started.get()); child != nullptr) {
      run = [child](const TbGraph& graph, uint64_t iterations) {
        return child->run_task_bench(static_cast<uint8_t>(graph.pattern), graph.width, graph.height,
                                     iterations);
      };
    } else {
      for (TbPatternResult& r : result.results) {
        r.curves[c].not_run = "does not run task DAGs (tools/perf/runners.h DagRunner)";
      }
      continue;
    }
    run_column(c, column, o.threads, run, false, result, progress, &result.results);
  }

  for (TbPatternResult& r : result.results) {
    for (std::size_t c = 0; c < r.curves.size(); ++c) {
      const TbMetg& m = r.curves[c].metg;
      if (m.reached && (r.best < 0 || m.us < r.curves[r.best].metg.us))
        r.best = static_cast<int>(c);
    }
  }
  result.host_load.end = read_load_average();
  return result;
}

bool all_task_bench_cells_measured(const TaskBenchResult& result) {
  for (const TbPatternResult& r : result.results) {
    for (std::size_t c = 0; c < result.columns.size(); ++c) {
      if (!result.columns[c].available || !r.curves[c].not_run.empty()) continue;
      for (const TbPoint& p : r.curves[c].points) {
        if (!p.measured && !p.skipped) return false;
      }
    }
  }
  return true;
}

}  // namespace chiprt::perf
