// The `chiprt bench` suite: every workload of workloads.h on every runner column of runners.h,
// N timed repetitions each (after one untimed warm-up run), summarised as ns per task (median,
// min, max) with each peer's ratio to the best chiprt column of the row. Then the real-kernel rows
// (kernel_workloads.h: bgemm, paged_attention) on the chiprt columns and on the in-process peers
// (which run the graph chiprt exports for the same call, kernel_graph.h), summarised as wall time
// and efficiency = (summed kernel CPU time / host threads used) / wall time, each peer with its
// wall time's ratio to the best chiprt column of the row.
//
// run_suite() is synchronous and single-threaded from the caller's view (runtimes start their own
// workers); the result is a plain value.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "host_load.h"
#include "kernel_workloads.h"
#include "runners.h"
#include "workloads.h"

namespace chiprt::perf {

struct SuiteOptions {
  unsigned threads = 0;         // 0 = host hardware threads
  uint64_t tasks = 100000;      // requested tasks per workload
  int repetitions = 5;          // timed runs per cell
  double cell_budget_s = 30.0;  // stop repeating a cell (after one timed run) past this wall time
  bool peers = true;
  bool quick = false;  // recorded in the result only; the caller picks the sizes
  // Where the chiprt columns' chip lives (SimOptions::isolation; Default: CHIPRT_SIM_ISOLATION).
  SimIsolation isolation = SimIsolation::Default;
  std::vector<Shape> shapes = {std::begin(kAllShapes), std::end(kAllShapes)};
  std::vector<KernelWorkload> kernel_workloads = {std::begin(kAllKernelWorkloads),
                                                  std::end(kAllKernelWorkloads)};
};

struct ColumnInfo {
  std::string id;
  std::string label;
  bool chiprt = false;
  std::string description;
  bool available = false;
  std::string note;  // why an unavailable column is empty
};

struct Cell {
  bool measured = false;
  std::string error;                // set when the runtime failed on this workload
  std::vector<double> ns_per_task;  // one per timed repetition
  uint64_t tasks = 0;
  double median = 0;
  double min = 0;
  double max = 0;
  // Peers only: median / best chiprt median of the row (real-kernel rows: of the wall times).
  double ratio_to_best_chiprt = 0;
  // Set when the column is available but does not run this row (the libomp peer on real-kernel
  // rows).
  std::string not_run;
  // Real-kernel rows: one value per timed repetition, medians, and the host threads the
  // efficiency divides by (chiprt_kernel_threads() threaded, 1 for serial columns, the suite's
  // thread count for peers).
  std::vector<double> wall_ns;
  std::vector<double> kernel_ns;
  std::vector<double> efficiency;
  double wall_ns_median = 0;
  double kernel_ns_median = 0;
  double efficiency_median = 0;
  unsigned threads = 0;
  std::size_t replayed_runs = 0;  // host_build_graph_replay: timed runs that replayed a graph
};

struct Row {
  std::string workload;
  bool real_kernels = false;  // a kernel_workloads.h row (cells: wall time and efficiency)
  std::string example_case;   // real-kernel rows: the example case run
  uint64_t tasks = 0;
  // Graph rows: the dependency edges chiprt derives from the tensor regions (0 when no chiprt
  // column ran) and the edges the peers are given by hand (given_edges).
  uint64_t edges = 0;
  uint64_t given_edges = 0;
  // Column index of the lowest chiprt median (real-kernel rows: wall time), -1 if none measured.
  int best_chiprt = -1;
  std::vector<Cell> cells;  // one per column
};

struct SuiteResult {
  SuiteOptions options;
  unsigned hardware_threads = 0;
  HostLoad host_load;  // load average when the suite started and ended
  std::vector<ColumnInfo> columns;
  std::vector<Row> rows;
};

// Restricts `options` to the named rows (graph workloads and real-kernel rows, in suite order).
// Returns false with `error` naming the unknown name and the valid ones.
bool select_workloads(const std::vector<std::string>& names, SuiteOptions* options,
                      std::string* error);
// "independent, chain, ..., bgemm, paged_attention".
std::string workload_names();

// Runs the suite; `progress` (may be null) gets one line per cell as it completes.
SuiteResult run_suite(const SuiteOptions& options, std::FILE* progress);

// True when every cell of an available column was measured (cells a column does not run, such as
// the libomp peer's on real-kernel rows, excepted).
bool all_cells_measured(const SuiteResult& result);

std::string format_table(const SuiteResult& result);
nlohmann::json to_json(const SuiteResult& result);

// Shared with the scaling report (scaling.h) and the isolation comparison (isolation_compare.h).
// Times one cell: warm_up() untimed, then up to `repetitions` runs, stopping once the cell has
// spent `budget_s` (warm-up included, after at least one timed run); an exception becomes the
// cell's error. Fills ns_per_task, tasks, median, min, max.
Cell time_cell(const std::function<void()>& warm_up, const std::function<RunResult()>& run,
               int repetitions, double budget_s);
double median_of(std::vector<double> values);  // 0 for none
// The two-sided comparisons (isolation_compare.h, diagnostics_cost.h): `run(side, timed)` runs
// side 0 or 1 once. One untimed run of each side first (warm-up), then `repetitions` rounds of one
// timed run of each, alternating which side goes first so that neither always runs right after
// the other's caches or wake-ups. Exceptions from `run` propagate.
void run_interleaved_pair(int repetitions, const std::function<void(int side, bool timed)>& run);
// Lays out `grid` (first row: headings) as lines of text: the first `left` columns left-aligned,
// the others right-aligned, two spaces apart.
std::string layout_table(const std::vector<std::vector<std::string>>& grid, std::size_t left);
// A report's start: returns the host's hardware threads (at least 1), replaces a `*threads` of 0 by
// them, and records them and the load average now in `*load`.
unsigned begin_session(unsigned* threads, HostLoad* load);
// The workloads of `shapes` at `tasks` requested tasks each; `*max_tasks` gets the largest task
// count (at least 1).
std::vector<Workload> make_workloads(const std::vector<Shape>& shapes, uint64_t tasks,
                                     uint64_t* max_tasks);
std::string format_ns(double ns);  // "1234", "56.7"
// What every report's JSON says of its session: worker_threads, hardware_threads, host_load.
nlohmann::json session_json(unsigned threads, unsigned hardware_threads, const HostLoad& load);
// The table's columns as the JSON array both reports write (id, label, kind, description,
// available, note).
nlohmann::json columns_to_json(const std::vector<ColumnInfo>& columns);
// A measured cell's timing as both reports write it (status, tasks, median, min, max, samples).
nlohmann::json measured_cell_json(const Cell& cell);

}  // namespace chiprt::perf
