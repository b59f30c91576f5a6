// The `chiprt bench` suite: every workload of workloads.h on every runner column of runners.h,
// N timed repetitions each (after one untimed warm-up run), summarised as ns per task (median,
// min, max) with each peer's ratio to the best chiprt column of the row.
//
// run_suite() is synchronous and single-threaded from the caller's view (runtimes start their own
// workers); the result is a plain value.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "workloads.h"

namespace chiprt::perf {

struct SuiteOptions {
  unsigned threads = 0;         // 0 = host hardware threads
  uint64_t tasks = 100000;      // requested tasks per workload
  int repetitions = 5;          // timed runs per cell
  double cell_budget_s = 30.0;  // stop repeating a cell (after one timed run) past this wall time
  bool peers = true;
  bool quick = false;  // recorded in the result only; the caller picks the sizes
  std::vector<Shape> shapes = {std::begin(kAllShapes), std::end(kAllShapes)};
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
  double ratio_to_best_chiprt = 0;  // peers only: median / best chiprt median of the row
};

struct Row {
  std::string workload;
  uint64_t tasks = 0;
  int best_chiprt = -1;     // column index of the lowest chiprt median, -1 if none measured
  std::vector<Cell> cells;  // one per column
};

struct SuiteResult {
  SuiteOptions options;
  unsigned hardware_threads = 0;
  std::vector<ColumnInfo> columns;
  std::vector<Row> rows;
};

// Runs the suite; `progress` (may be null) gets one line per cell as it completes.
SuiteResult run_suite(const SuiteOptions& options, std::FILE* progress);

std::string format_table(const SuiteResult& result);
nlohmann::json to_json(const SuiteResult& result);

}  // namespace chiprt::perf
