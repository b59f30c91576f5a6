// KernelDag: a Worker::export_graph graph (chiprt/graph_export.h) prepared for a peer runtime, so
// that the real-kernel rows' peers run the very same tasks, kernels and dependencies as chiprt.
// Its TaskDag (task_dag.h) has the graph's dependencies as predecessor lists and a body that does
// for a task what a simulated core does (src/aicore/core_executor.cpp): it calls the kernel entry
// `void(int64_t*)` with the task's argument block (GraphExport::kernel_args: the task context with
// block_idx and block_num before the arguments, the views in the GraphExport), once per SPMD block
// (the blocks of one task run one after another inside its peer task), with CLOCK_THREAD_CPUTIME_ID
// around each call as CallConfig::measure_kernel_time does. Dependency-only (dummy) tasks call
// nothing; a predicated task calls its kernel only when its predicate is non-zero when the task
// starts, after its producers finished, as the chip's dispatcher decides. MIX tasks are rejected: a
// peer has no AIC + 2 AIV core group to run their parts together.
//
// Built before timing starts (converting the consumer lists is part of the graph's description,
// as a Workload's lists are). The GraphExport must outlive the KernelDag, and the Worker that
// exported it must stay as it was (kernels registered, buffers allocated) while it runs. The body
// is called concurrently from the peer's threads; counters are atomic. One run at a time.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "chiprt/graph_export.h"
#include "chiprt/run_report.h"
#include "runners.h"
#include "task_dag.h"

namespace chiprt::perf {

class KernelDag {
 public:
  // Checks every task and edge; throws chiprt::Error naming the task: UnsupportedFeature for a
  // MIX task, UnknownFuncId for a kernel task without a kernel entry, InvalidArgument for too many
  // arguments, a bad predicate size or address, or a consumer that is not after its producer.
  explicit KernelDag(const GraphExport& graph);
  KernelDag(const KernelDag&) = delete;
  KernelDag& operator=(const KernelDag&) = delete;

  // The view a DagRunner runs; valid while this KernelDag lives.
  TaskDag dag() noexcept;

  // Since construction or the last reset_counters().
  uint64_t kernel_ns() const noexcept { return kernel_ns_.load(std::memory_order_relaxed); }
  uint64_t kernel_calls() const noexcept { return kernel_calls_.load(std::memory_order_relaxed); }
  uint64_t skipped_tasks() const noexcept { return skipped_.load(std::memory_order_relaxed); }
  void reset_counters() noexcept;
  // Throws Error(KernelFault) naming the first kernel that threw during the runs counted.
  void throw_if_faulted() const;

 private:
  static void run_task(void* self, uint64_t task) noexcept;
  void record_fault(uint64_t task) noexcept;

  const GraphExport& graph_;
  std::vector<uint64_t> offsets_;
  std::vector<uint64_t> preds_;
  std::atomic<uint64_t> kernel_ns_{0};
  std::atomic<uint64_t> kernel_calls_{0};
  std::atomic<uint64_t> skipped_{0};
  std::atomic<bool> faulted_{false};
  mutable std::mutex fault_mutex_;
  std::string fault_;
};

// Runs `graph` once on `runner` and reports it as Worker::run would: task_count = the graph's
// tasks, host_total_ns = the runner's wall time (graph construction to last completion),
// kernel_ns = the kernels' summed thread CPU time (kernel_time_measured set). Throws chiprt::Error
// for a graph KernelDag rejects or a kernel that threw.
RunReport run_graph_export(DagRunner& runner, const GraphExport& graph);

}  // namespace chiprt::perf
