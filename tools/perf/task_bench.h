// `chiprt bench --task-bench`: the Task Bench dependence patterns (task_bench_patterns.h) on every
// chiprt column and every in-process peer, swept over task granularity, summarised per pattern and
// column as METG(50%): the smallest task duration at which the run still reaches 50% efficiency.
//
// One cell is a (pattern, width, column, granularity) run: width points per timestep (the thread
// count, and 4x it), enough timesteps for a run of at least target_run_s when the tasks did nothing
// but compute (capped at max_tasks tasks), each task spinning the calibrated iterations of one
// granularity. efficiency = tasks x calibrated task duration / (wall time x host threads the column
// uses). METG: log-linear interpolation between the smallest granularity at or above 50% and the
// next smaller one measured; when no smaller one was measured (all above 50%), that smallest one,
// as an upper bound; "not reached" when no granularity reached 50%.
//
// run_task_bench() is synchronous; the result is a plain value.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "host_load.h"
#include "suite.h"
#include "task_bench_patterns.h"

namespace chiprt::perf {

struct TaskBenchOptions {
  unsigned threads = 0;  // 0 = host hardware threads
  bool quick = false;    // recorded only; the caller picks the sizes
  bool peers = true;
  int repetitions = 3;  // timed runs per cell (median)
  std::vector<TbPattern> patterns = {std::begin(kAllTbPatterns), std::end(kAllTbPatterns)};
  // Task durations to run, in microseconds, largest first.
  std::vector<double> granularities_us = {1024, 256, 64, 16, 4, 1};
  std::vector<unsigned> width_factors = {1, 4};  // width = factor x threads
  double target_run_s = 0.2;
  uint64_t max_tasks = 200000;
  // Stop a curve after this many consecutive granularities below 50% (the rest: "skipped").
  int below_threshold_points = 2;
};

// The defaults of --quick: trivial, stencil_1d, fft at width = threads, four granularities, runs
// of at least 0.05 s, one timed run per cell.
TaskBenchOptions quick_task_bench_options();

// Restricts options->patterns to the named ones (in Task Bench order). False with `error` naming
// the unknown name and the valid ones.
bool select_tb_patterns(const std::vector<std::string>& names, TaskBenchOptions* options,
                        std::string* error);

struct TbPoint {
  double granularity_us = 0;  // requested task duration
  uint64_t iterations = 0;
  double task_ns = 0;  // iterations x calibrated ns per iteration
  uint64_t height = 0;
  uint64_t tasks = 0;
  bool measured = false;
  bool skipped = false;  // not run: the curve was already below 50% (TaskBenchOptions)
  std::string error;
  double wall_ns = 0;     // median of the timed runs
  double efficiency = 0;  // of the median wall time
  std::vector<double> wall_ns_samples;
};

struct TbMetg {
  bool reached = false;  // some granularity reached 50%
  double us = 0;
  bool interpolated = false;  // false: the smallest measured granularity, an upper bound
};

struct TbCurve {
  unsigned threads = 0;  // host threads the column uses (the efficiency's divisor)
  std::string not_run;   // set when the column does not run task bench (why)
  std::vector<TbPoint> points;
  TbMetg metg;
};

struct TbPatternResult {
  TbPattern pattern = TbPattern::Trivial;
  uint64_t width = 0;
  std::vector<TbCurve> curves;  // one per column
  int best = -1;                // column with the smallest reached METG, -1 if none
};

struct TaskBenchResult {
  TaskBenchOptions options;
  unsigned hardware_threads = 0;
  HostLoad host_load;
  double ns_per_iteration = 0;  // calibrated once per bench run
  std::vector<ColumnInfo> columns;
  std::vector<TbPatternResult> results;  // pattern-major, then width
};

// METG(50%) of a curve whose points are in decreasing granularity.
TbMetg compute_metg(const std::vector<TbPoint>& points);

TaskBenchResult run_task_bench(const TaskBenchOptions& options, std::FILE* progress);
// True when every point of every available column was measured or skipped.
bool all_task_bench_cells_measured(const TaskBenchResult& result);

// task_bench_report.cpp
std::string format_task_bench_table(const TaskBenchResult& result);
nlohmann::json task_bench_to_json(const TaskBenchResult& result);
// Efficiency against granularity (log x), one panel per pattern and width, one line per column.
std::string task_bench_svg(const TaskBenchResult& result);

}  // namespace chiprt::perf
