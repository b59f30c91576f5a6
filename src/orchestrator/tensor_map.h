// TensorMap: derives task dependencies from the tensor regions tasks write and read.
//
// The map is keyed by buffer address (Tensor::buffer.addr). Each buffer holds a short list of
// region entries, one per write still relevant: the writer task and the view geometry (start
// offset, shape, strides, element size) with its byte extent. `lookup` reports every recorded
// writer whose region may overlap a tensor; `record_write` makes a task the writer of a region,
// dropping entries the new region fully covers, so a chain of INOUT tasks on one tensor keeps
// one entry per buffer (O(1) per task).
//
// Hazards tracked (by the orchestrator using this map):
//   - read-after-write: In / InOut depend on the overlapping writers;
//   - write-after-write: InOut / OutputExisting depend on the overlapping earlier writers.
// Not tracked:
//   - write-after-read: the map keeps writers only. Recording every reader would make each
//     writer depend on an unbounded reader list and the lists could never be pruned by a later
//     read; a task that overwrites a region other tasks still read must name those readers with
//     TaskArgs::after.
//   - aliasing across different buffer addresses: two DeviceBuffers that overlap in memory but
//     start at different addresses are independent keys; views of one buffer (view, slice,
//     transpose, ...) keep its address and are tracked.
//   - empty tensors (no elements) touch no bytes, so they neither create nor satisfy
//     dependencies; order them with TaskArgs::after.
//
// Overlap: two regions whose byte extents are disjoint never overlap. Otherwise the decision is
// exact when a bounded integer search over the index vectors of both views finishes (always the
// case for two views with the same strides and element size whose strides nest, e.g. tiles,
// rows, columns or interleaved slices of one tensor, and also for transposes of each other); when
// the search would be too long the regions are assumed to overlap (conservative).
//
// Lifetime/threading: one map per graph build, used by one thread; no internal locking. Storage
// grows geometrically and is reused (free lists), so steady-state operations do not allocate.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "chiprt/tensor.h"
#include "chiprt/types.h"

namespace chiprt::orchestrator {

// The geometry of a view, relative to its buffer start. `lo`/`hi` is the byte extent [lo, hi)
// covering every element; empty regions have lo == hi == 0. `bounded` is false when the extent
// overflows 64-bit arithmetic (a hand-made Tensor); such a region overlaps everything non-empty.
struct TensorRegion {
  uint64_t start_offset = 0;  // elements
  uint32_t ndim = 0;
  uint32_t element_bytes = 0;
  std::array<uint64_t, kMaxTensorDims> shape{};
  std::array<uint64_t, kMaxTensorDims> strides{};  // elements
  uint64_t lo = 0;
  uint64_t hi = 0;
  bool bounded = true;

  static TensorRegion of(const Tensor& tensor) noexcept;
  bool empty() const noexcept { return bounded && lo >= hi; }
};

// Whether two regions of the same buffer may share a byte (false only when proved disjoint).
bool regions_may_overlap(const TensorRegion& a, const TensorRegion& b) noexcept;
// Whether every byte of `inner` is a byte of `outer` (true only when proved).
bool region_covers(const TensorRegion& outer, const TensorRegion& inner) noexcept;

class TensorMap {
 public:
  TensorMap();

  // Calls `on_writer(TaskId)` for every recorded writer whose region may overlap `tensor`.
  // A writer may be reported more than once (callers deduplicate edges).
  template <class OnWriter>
  void lookup(const Tensor& tensor, OnWriter&& on_writer) const {
    const TensorRegion region = TensorRegion::of(tensor);
    if (region.empty()) return;
    const int64_t slot = find_slot(tensor.buffer.addr);
    if (slot < 0) return;
    for (uint32_t e = slots_[static_cast<std::size_t>(slot)].head; e != kNil;
         e = entries_[e].next) {
      const Entry& entry = entries_[e];
      // Disjoint extents are the common case (other tiles of the buffer): decided on the compact
      // entry without touching the full geometry.
      if (entry.bounded && region.bounded && (entry.hi <= region.lo || region.hi <= entry.lo)) {
        continue;
      }
      if (regions_may_overlap(regions_[e], region)) on_writer(entry.writer);
    }
  }

  // Makes `writer` the last writer of `tensor`'s region; drops entries the region covers.
  void record_write(const Tensor& tensor, TaskId writer);
  // Drops every entry of the buffer starting at `buffer_addr` (its memory was released).
  void erase_buffer(uint64_t buffer_addr) noexcept;
  void clear() noexcept;

  std::size_t entry_count() const noexcept { return live_entries_; }
  std::size_t buffer_count() const noexcept { return live_buffers_; }
  // Entries recorded for one buffer (tests and diagnostics).
  std::size_t entries_of(uint64_t buffer_addr) const noexcept;

 private:
  static constexpr uint32_t kNil = UINT32_MAX;
  // The list node keeps the extent so walks stay in a few cache lines; the full geometry lives
  // in regions_ at the same index.
  struct Entry {
    uint64_t lo = 0;
    uint64_t hi = 0;
    TaskId writer = kNoTask;
    uint32_t next = kNil;
    bool bounded = true;
  };
  // Open addressing with linear probing; head == kNil marks a free slot.
  struct Slot {
    uint64_t key = 0;
    uint32_t head = kNil;
  };

  int64_t find_slot(uint64_t key) const noexcept;
  std::size_t insert_slot(uint64_t key);
  void erase_slot(std::size_t slot) noexcept;
  void grow_slots();
  uint32_t new_entry();
  void free_entry(uint32_t e) noexcept;
  std::size_t home_of(uint64_t key) const noexcept;

  std::vector<Slot> slots_;  // power-of-two size
  std::vector<Entry> entries_;
  std::vector<TensorRegion> regions_;  // parallel to entries_
  uint32_t free_entries_ = kNil;
  std::size_t live_entries_ = 0;
  std::size_t live_buffers_ = 0;
};

}  // namespace chiprt::orchestrator
