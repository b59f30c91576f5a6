// Real-kernel rows of `chiprt bench`: the bgemm and paged_attention examples (examples/example.h)
// run through Example::run on chiprt's variants, with CallConfig::measure_kernel_time on, and on
// the peer runtimes, whose executor runs the graph Worker::export_graph gives for the example's
// call (kernel_graph.h: the same tasks, kernels and dependencies). A row reports wall time and
// efficiency = (summed kernel CPU time / host threads used) / wall time. The example checks its
// result every run; a wrong result throws (an error cell).
//
// A KernelBenchDevice owns one simulated chip (its own Worker) and is used from one thread; its
// chip threads live until it is destroyed.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "chiprt/call_config.h"
#include "chiprt/sim_options.h"

namespace chiprt {
class Worker;
}

namespace chiprt::perf {

class DagRunner;

enum class KernelWorkload : uint8_t { Bgemm, PagedAttention };
inline constexpr KernelWorkload kAllKernelWorkloads[] = {KernelWorkload::Bgemm,
                                                         KernelWorkload::PagedAttention};

// "bgemm", "paged_attention": the row name and the example's name.
std::string_view kernel_workload_name(KernelWorkload workload) noexcept;
bool parse_kernel_workload(std::string_view name, KernelWorkload* out) noexcept;
// The example case the row runs: "bench", sized so that kernels take tens of microseconds or more
// and dominate the runtime's per-task cost.
inline constexpr std::string_view kKernelBenchCase = "bench";

// The CallConfig of a chiprt column of the suite (runners.h ids: "host_build_graph",
// "host_build_graph_serial", "host_build_graph_replay", "tensormap_ringbuffer",
// "tensormap_ringbuffer_serial"), with measure_kernel_time on; nullopt for any other id.
std::optional<CallConfig> kernel_column_config(std::string_view column_id);

struct KernelRunResult {
  uint64_t tasks = 0;    // tasks the run executed (RunReport::task_count)
  uint64_t wall_ns = 0;  // RunReport::host_total_ns: Worker::run entry to return
  // RunReport::device_wall_ns: launch to the chip reporting completion (0 on a peer).
  uint64_t device_wall_ns = 0;
  uint64_t kernel_ns = 0;        // RunReport::kernel_ns: kernel CPU time summed over all cores
  bool replayed = false;         // host_build_graph replayed a cached graph (no GraphBuild phase)
  uint64_t records_dropped = 0;  // RunReport::diagnostics_records_dropped
};

class KernelBenchDevice {
 public:
  // `threads`: SimOptions::host_threads of the chip, the suite's worker-thread count; `isolation`:
  // SimOptions::isolation.
  explicit KernelBenchDevice(unsigned threads, SimIsolation isolation = SimIsolation::Default);
  ~KernelBenchDevice();
  KernelBenchDevice(const KernelBenchDevice&) = delete;
  KernelBenchDevice& operator=(const KernelBenchDevice&) = delete;

  // Runs the workload's example case once under `config` and checks its result. Throws
  // chiprt::Error when the run fails or the result is wrong (naming the first bad element), or
  // when the kernel time was not measured.
  KernelRunResult run(KernelWorkload workload, const CallConfig& config);
  // Runs the workload's example case once with `peer` as its executor: the graph is exported
  // untimed, then `peer` builds and runs it (wall_ns: its graph construction to its last task's
  // completion). Throws like run(), and chiprt::Error when the graph cannot run on a peer.
  KernelRunResult run_on_peer(KernelWorkload workload, DagRunner& peer);
  // Worker::flush_diagnostics: waits for run directories written in the background.
  void flush_diagnostics();

 private:
  std::unique_ptr<Worker> worker_;
};

}  // namespace chiprt::perf
