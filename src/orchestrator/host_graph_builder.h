// HostGraphBuilder: the host_build_graph orchestrator.
//
// Runs the user's orchestration function on the host. Submissions go through the TaskFront
// (task_front.h: checks, scope rules, records, the error latch); the builder keeps the
// orchestration-time bookkeeping: dependencies from tensor regions (TensorMap) plus explicit
// ones, scopes and their fence tasks, what tasks touched (for get/set_tensor_data). Runtime
// outputs are placed by OutputHeap (output_heap.h: a ring allocator over the heap that reuses
// memory of ended scopes oldest first, behind fence tasks; only addresses are computed), and the
// graph is laid out by GraphImageWriter (graph_image_writer.h) as a position-independent image
// (common/graph_image.h). get/set_tensor_data copy through an injected TensorMemory. One builder
// per run, used by one thread.
//
// Errors latch (see Orchestration): a failing call records its error and returns kNoTask, later
// calls are no-ops, and build() throws the first error.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "chiprt/callable.h"
#include "chiprt/graph_export.h"
#include "chiprt/orchestration.h"
#include "chiprt/task_args.h"
#include "chiprt/types.h"
#include "orchestrator/task_checks.h"
#include "orchestrator/tensor_memory.h"

namespace chiprt::orchestrator {

struct BuilderLimits {
  uint64_t max_tasks = 1ull << 20;
  uint32_t clusters = 8;
  // Also lay out the kind of every edge (take_edge_kinds): for Worker::export_graph and the
  // diagnostics' deps.json.
  bool edge_kinds = false;
};

class BuilderScratch;

class HostGraphBuilder final : public Orchestration {
 public:
  // `heap` is the device region runtime outputs are carved from (64-byte aligned pieces).
  // `scratch`, when given, lends its storage for the builder's lifetime (see BuilderScratch).
  // `tensor_memory` serves get/set_tensor_data (without it they fail with UnsupportedFeature).
  HostGraphBuilder(const KernelTable& kernels, DeviceBuffer heap, const BuilderLimits& limits,
                   BuilderScratch* scratch = nullptr, TensorMemory* tensor_memory = nullptr);
  ~HostGraphBuilder() override;

  // Runs `entry(*this, args)` and closes the graph. Throws chiprt::Error: the first latched error,
  // the user's own exception or an open scope, as the TaskFront maps them. `run` non-zero is the
  // run's number (see RunMemory): its runtime outputs carry it, and task tensors must lie in
  // `args`' buffers or the heap; 0 (orchestrator tests) bounds nothing. `user_data` is what the
  // function's user_data() returns (the caller's aligned copy, alive during the call).
  void build(OrchestrationEntry entry, const TaskArgs& args, uint32_t run = 0,
             std::span<const std::byte> user_data = {});

  // The finished image; valid after build().
  const std::vector<uint8_t>& image() const noexcept { return image_; }
  // Moves the finished image out (the builder's copy is left empty): a graph of a million tasks
  // is tens of megabytes, so the runner takes it instead of copying it.
  std::vector<uint8_t> take_image() noexcept { return std::move(image_); }
  // With BuilderLimits::edge_kinds, the DependencyKinds of every edge in the image's fan-out order
  // (parallel to its fanout section), moved out; empty otherwise.
  std::vector<DependencyKinds> take_edge_kinds() noexcept { return std::move(edge_kinds_); }
  // The highest heap offset any output reached. Released memory is reused only once the
  // allocator has gone round the heap, so this grows to the heap size before any reuse.
  uint64_t heap_high_water() const noexcept;
  // Whether the function read or wrote tensor data (get/set_tensor_data): such a graph has side
  // effects at build time, so replaying its image without running the function would skip them.
  bool accessed_tensor_data() const noexcept;

  // Orchestration
  using Orchestration::scope_begin;
  using Orchestration::submit;
  TaskId submit(const TaskSpec& spec, TaskArgs& args) override;
  TaskId submit_dummy(TaskArgs& args) override;
  TaskId allocate(TaskArgs& outputs) override;
  void scope_begin(ScopeMode mode) override;
  void scope_end() override;
  // Only tensors no task of this run writes (get) / reads or writes (set) so far: the graph runs
  // after it is built, so there is nothing to wait for; others are UnsupportedFeature.
  void get_tensor_data(const Tensor& tensor, void* dst, uint64_t bytes) override;
  void set_tensor_data(const Tensor& tensor, const void* src, uint64_t bytes) override;
  bool failed() const override;
  Status error() const override;
  uint64_t task_count() const override;
  uint32_t cluster_count() const override { return limits_.clusters; }
  std::span<const std::byte> user_data() const override;

 private:
  template <class Body>
  auto guarded(Body&& body) -> decltype(body());
  TensorMemory& device_memory(const char* call) const;

  friend class BuilderScratch;
  struct State;
  const KernelTable& kernels_;
  BuilderLimits limits_;
  std::vector<uint8_t> image_;
  std::vector<DependencyKinds> edge_kinds_;
  BuilderScratch* scratch_ = nullptr;
  TensorMemory* tensor_memory_ = nullptr;
  std::unique_ptr<State> state_;  // pimpl keeps the tensor map out of this header
};

// A builder's working storage (task records, edges, arguments, tensor map), kept between builds
// by its owner (one per DeviceRunner) so that each build writes into memory the previous one
// already faulted in instead of growing fresh allocations: at 100k tasks the page faults of new
// allocations cost several times the submits themselves. A builder given a scratch takes the
// storage and returns it when destroyed; one builder at a time, not thread-safe.
//
// The image a builder produces is moved out to its caller (take_image). A caller done with it
// hands it back with recycle_image, and the next builder lays its image out in that storage:
// a million-task image is over 100 MB, whose fresh pages would otherwise be faulted in anew by
// every build.
//
// Storage is kept under common/retention.h's rule: the working state is released when it holds
// more than 64 MiB and a build had fewer than a quarter of the tasks of the largest build it
// served; the image storage when it holds more than 64 MiB and an image used less than a quarter
// of it. So after one very large graph, a much smaller one gives the memory back.
class BuilderScratch {
 public:
  BuilderScratch();
  ~BuilderScratch();
  BuilderScratch(const BuilderScratch&) = delete;
  BuilderScratch& operator=(const BuilderScratch&) = delete;

  // Keeps `image`'s storage for the next build, unless the retention rule releases it.
  void recycle_image(std::vector<uint8_t>&& image) noexcept;
  // Bytes of host storage kept for the next build (working state and image capacities).
  uint64_t retained_bytes() const noexcept;

 private:
  friend class HostGraphBuilder;
  // A builder hands its state back when it is destroyed.
  void take_back(std::unique_ptr<HostGraphBuilder::State> state) noexcept;

  std::unique_ptr<HostGraphBuilder::State> state_;
  // The most tasks a build had since state_ was created (what its storage is sized for).
  uint64_t served_tasks_ = 0;
  std::vector<uint8_t> spare_image_;
};

}  // namespace chiprt::orchestrator
