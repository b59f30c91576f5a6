// GraphImageWriter: lays a host_build_graph graph out as a position-independent graph image
// (common/graph_image.h): header, task records, fan-out lists (the transpose of the per-consumer
// producer lists), kernel arguments, the initially ready tasks.
//
// Lifetime: owned by the builder's state; its temporaries keep their capacity between builds
// (a million-task graph's are tens of megabytes). One thread.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "chiprt/graph_export.h"
#include "chiprt/types.h"
#include "common/graph_image.h"

namespace chiprt::orchestrator {

class GraphImageWriter {
 public:
  // Writes the image of `records` (one per task, in task order; fanin_count, args_begin and the
  // task fields set, fan-out fields are written here) into `image` (its storage reused).
  // `producers` lists each task's fanin_count producers, grouped by consumer in consumer order;
  // `kernel_args` the argument words the records' args_begin index; `task_ids` the public TaskId
  // of each record (common::kScopeFenceId for a scope fence); `output_heap` the run's output heap
  // (the records' skip-fill ranges lie in it). Throws Error(CapacityExceeded) beyond UINT32_MAX
  // edges. With `fanout_kinds`, also lays out the edges' kinds (`producer_kinds`, parallel to
  // `producers`) in the image's fan-out order there: the image itself holds no kinds (the chip
  // does not need them), Worker::export_graph and the diagnostics do.
  void write(std::span<const common::TaskRecord> records, std::span<const uint32_t> producers,
             std::span<const int64_t> kernel_args, std::span<const int64_t> task_ids,
             DeviceBuffer output_heap, std::vector<uint8_t>& image,
             std::span<const DependencyKinds> producer_kinds = {},
             std::vector<DependencyKinds>* fanout_kinds = nullptr);

  uint64_t retained_bytes() const noexcept;

 private:
  std::vector<uint32_t> fanout_begin_;
  std::vector<uint32_t> cursor_;
  std::vector<uint32_t> fanout_;
};

}  // namespace chiprt::orchestrator
