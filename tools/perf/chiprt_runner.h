// The chiprt side of the `chiprt bench` suite: one simulated chip (ChiprtDevice) that runs the
// suite's workloads through an in-process orchestration function with an empty kernel, and the
// Runner of a chiprt column (ChiprtRunner), which keeps the last run's RunReport for benchmarks
// that report phase splits.
//
// A ChiprtDevice owns one Worker; it is used from one thread at a time and shared by the runners
// made for it (std::shared_ptr). Destroying the last owner closes the Worker and frees its device
// memory.
#pragma once

#include <cstdint>
#include <memory>

#include "chiprt/call_config.h"
#include "chiprt/run_report.h"
#include "chiprt/worker.h"
#include "runners.h"

namespace chiprt::perf {

// Device memory the runtime holds for its runs, as the Worker and the last RunReport state it
// (not computed).
struct ChiprtDeviceMemory {
  uint64_t bytes_in_use = 0;  // Worker::device_bytes_in_use(): every live device allocation
  // Of which the output-heap arena (RunReport::output_heap_committed_bytes of the last run).
  uint64_t output_heap_bytes = 0;
  // Task-window slots of every scope depth of the last run (RunReport::rings); 0 unless it was a
  // tensormap_ringbuffer run.
  uint64_t ring_slots = 0;
};

class ChiprtDevice {
 public:
  // `threads`, `isolation`: bench_worker_options(threads, isolation); the data buffer fits every
  // workload of up to `max_tasks` tasks, and host_build_graph runs accept graphs of that many
  // tasks.
  ChiprtDevice(unsigned threads, uint64_t max_tasks,
               SimIsolation isolation = SimIsolation::Default);
  ChiprtDevice(const ChiprtDevice&) = delete;
  ChiprtDevice& operator=(const ChiprtDevice&) = delete;

  RunReport run(const Workload& workload, const CallConfig& config);
  // The dependency edges chiprt derives for the workload's graph (Worker::export_graph: the
  // graph the scheduler runs, redundant edges pruned), each producer-consumer pair once.
  uint64_t dependency_edges(const Workload& workload);
  uint64_t max_tasks() const noexcept { return max_tasks_; }
  ChiprtDeviceMemory memory();
  // Worker::flush_diagnostics: waits for run directories written in the background.
  void flush_diagnostics() { worker_.flush_diagnostics(); }

 private:
  TaskArgs arguments(const Workload& workload) const;

  Worker worker_;
  uint64_t max_tasks_;
  uint64_t elements_;
  DeviceBuffer buffer_;
  RunReport last_report_;  // of the last run(), for memory()
};

// The run configuration of a suite column.
CallConfig chiprt_mode_config(ChiprtMode mode);

class ChiprtRunner final : public Runner {
 public:
  // `config.max_tasks` 0 is raised to the device's max_tasks when that is above the default.
  ChiprtRunner(std::shared_ptr<ChiprtDevice> device, const CallConfig& config);

  RunResult run(const Workload& workload) override;
  const RunReport& last_report() const noexcept { return last_report_; }
  const CallConfig& config() const noexcept { return config_; }
  ChiprtDevice& device() noexcept { return *device_; }

 private:
  std::shared_ptr<ChiprtDevice> device_;
  CallConfig config_;
  RunReport last_report_;
};

}  // namespace chiprt::perf
