// The chiprt side of `chiprt bench --task-bench`: one simulated chip whose orchestration function
// submits a Task Bench graph (task_bench_patterns.h) as tensor regions, and a kernel that spins the
// given iterations (task_bench_kernel.h).
//
// The cells live in one device buffer, one f32 per (timestep, point), row-major: task (t, x) writes
// its own cell (output_existing) and reads the cells of its dependencies in row t - 1 (one `in`
// view per contiguous range), so chiprt infers every edge from the regions. The orchestration gets
// the pattern, width, height and iterations as scalars and computes the dependencies itself while
// it submits: nothing it reads lives outside the call, so an isolated chip works too.
//
// Used from one thread; the chip's threads live until the device is destroyed.
#pragma once

#include <cstdint>

#include "chiprt/run_report.h"
#include "chiprt/worker.h"
#include "runners.h"
#include "task_bench_patterns.h"

namespace chiprt::perf {

class TbChiprtDevice {
 public:
  // `threads`: bench_worker_options(threads); the buffer holds `max_cells` cells (width x height of
  // the largest graph).
  TbChiprtDevice(unsigned threads, uint64_t max_cells);
  TbChiprtDevice(const TbChiprtDevice&) = delete;
  TbChiprtDevice& operator=(const TbChiprtDevice&) = delete;

  // Runs `graph` once with every task spinning `iterations`, in the column's mode. Throws
  // chiprt::Error when the run fails or the graph has more cells than the buffer.
  RunReport run(const TbGraph& graph, uint64_t iterations, ChiprtMode mode);

 private:
  Worker worker_;
  uint64_t max_cells_;
  DeviceBuffer buffer_;
};

}  // namespace chiprt::perf
