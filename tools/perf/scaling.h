// `chiprt bench --scaling`: ns per task of the graph workloads at several graph sizes (default 10k,
// 100k and 1M tasks) on every column of the suite, the growth from the smallest size to the
// largest (flat cost: about 1; super-linear structure: above kGrowthFlag), and for the chiprt
// columns the memory held per in-flight task at each size.
//
// What the memory figures count (CellMemory): each chiprt cell runs on a simulated chip of its own,
// created for that cell, so the device bytes and the RSS growth are that cell's alone.
// - device bytes: Worker::device_bytes_in_use() after the cell's runs minus before its first run
//   (the runtime's arenas, staging buffers and loaded chip objects; the suite's data buffer is
//   allocated before and excluded), less the output-heap arena, divided by the tasks in flight:
//   host_build_graph has the whole graph in flight (image and per-task shared state), so per graph
//   task; tensormap_ringbuffer holds at most its task windows, so per task-window slot (all scope
//   depths).
// - peak RSS: the process's peak resident set during the cell (VmHWM, reset before the cell through
//   /proc/self/clear_refs) minus its resident set before it, per graph task: host-side graph
//   building, images and the simulated device memory the runs touched.
//
// ScalingCell is the one measurement of a cell, shared by run_scaling() and chiprt_bench's
// BM_Scaling. run_scaling() is synchronous; peers start only for their own column, as in the suite.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runners.h"
#include "suite.h"
#include "workloads.h"

namespace chiprt::perf {

inline constexpr double kGrowthFlag = 1.5;  // growth above this is flagged as super-linear
// Largest size accepted (the simulated chip's 4 GiB must hold the graph and the data buffer).
inline constexpr uint64_t kMaxScalingTasks = 1ull << 24;

struct ScalingOptions {
  unsigned threads = 0;                                    // 0 = host hardware threads
  std::vector<uint64_t> sizes = {10000, 100000, 1000000};  // requested tasks, ascending, distinct
  int repetitions = 3;  // timed runs per cell, fewer where the budget runs out
  // A cell stops repeating once it has spent this long (warm-up included, after one timed run), so
  // the 1M-task cells of slow runtimes get fewer runs; a size whose single run is projected beyond
  // it is skipped. 15 s keeps the default report (3 sizes, 9 columns) near 8 minutes on 2 cores.
  double cell_budget_s = 15.0;
  bool peers = true;
  bool quick = false;  // recorded in the result only; the caller picks the sizes
  std::vector<Shape> shapes = {std::begin(kAllShapes), std::end(kAllShapes)};
};

struct CellMemory {
  bool measured = false;           // chiprt columns only
  bool ring = false;               // in_flight counts task-window slots (else graph tasks)
  uint64_t device_bytes = 0;       // runtime device bytes in use after the runs, less before them
  uint64_t output_heap_bytes = 0;  // of which the output-heap arena
  uint64_t in_flight = 0;          // graph tasks (host_build_graph) or window slots (ring)
  double device_bytes_per_in_flight = 0;  // (device_bytes - output_heap_bytes) / in_flight
  uint64_t peak_rss_bytes = 0;            // peak RSS during the cell minus RSS before it
  double peak_rss_bytes_per_task = 0;
  // False when /proc/self/clear_refs refused the peak reset: peak_rss_bytes is then the growth of
  // getrusage's ru_maxrss, a lower bound (0 when an earlier cell peaked higher).
  bool peak_rss_reset = false;
};

// One cell: a column on one workload. Construct, warm_up() once, run() per timed repetition, then
// memory().
class ScalingCell {
 public:
  // A chiprt column: a new simulated chip for this cell (bench_worker_options(threads)).
  ScalingCell(ChiprtMode mode, unsigned threads, const Workload& workload);
  // A peer column's runner (time only; memory() is not measured).
  ScalingCell(Runner& runner, const Workload& workload);
  ~ScalingCell();
  ScalingCell(const ScalingCell&) = delete;
  ScalingCell& operator=(const ScalingCell&) = delete;

  void warm_up();
  RunResult run();
  CellMemory memory();

 private:
  void start_memory_accounting();

  const Workload& workload_;
  std::unique_ptr<Runner> owned_;  // chiprt: the cell's runner (and through it its chip)
  Runner* runner_;
  bool ring_ = false;
  uint64_t device_bytes_before_ = 0;
  uint64_t rss_before_ = 0;
  bool peak_reset_ = false;
};

struct ScalingPoint {
  uint64_t requested_tasks = 0;
  Cell timing;  // ns per task (median, min, max, samples), tasks, error
  CellMemory memory;
  // Set when the cell was not run: one run projected from the previous size (linearly, so a lower
  // bound) would take longer than the cell budget. Not an error.
  std::string skipped;
};

struct ScalingRow {
  std::string workload;
  std::size_t column = 0;            // index into ScalingResult::columns
  std::vector<ScalingPoint> points;  // one per size
  // Median at the largest measured size / at the smallest; 0 when fewer than two were measured.
  double growth = 0;
  uint64_t growth_to = 0;  // the requested size growth was taken at (below the largest: skipped)
  bool flagged = false;    // growth > kGrowthFlag
  // chiprt columns, from the smallest and the largest size: device bytes and peak RSS bytes per
  // task added to the graph (the fixed part cancels out). host_build_graph: the cost of one more
  // task in flight; tensormap_ringbuffer: about 0 (its memory does not grow with the graph).
  bool memory_slope_measured = false;
  double device_bytes_per_added_task = 0;
  double peak_rss_bytes_per_added_task = 0;
};

struct ScalingResult {
  ScalingOptions options;
  unsigned hardware_threads = 0;
  HostLoad host_load;  // load average when the report started and ended
  std::vector<ColumnInfo> columns;
  std::vector<ScalingRow> rows;  // workload-major, columns in suite order
};

// Parses "10000,100000,1000000": decimals in [1, kMaxScalingTasks], at least two distinct ones;
// the result is sorted and deduplicated. Returns false with `error` naming the bad value.
bool parse_scaling_sizes(const std::vector<std::string>& values, std::vector<uint64_t>* sizes,
                         std::string* error);

ScalingResult run_scaling(const ScalingOptions& options, std::FILE* progress);
bool all_scaling_cells_measured(const ScalingResult& result);
std::string format_scaling_table(const ScalingResult& result);
nlohmann::json scaling_to_json(const ScalingResult& result);

}  // namespace chiprt::perf
