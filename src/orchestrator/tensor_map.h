// TensorMap: derives task dependencies from the tensor regions tasks write and read.
//
// The map is keyed by buffer address (Tensor::buffer.addr). Each buffer holds region entries,
// one per write still relevant: the writer task and the view geometry (start offset, shape,
// strides, element size) with its byte extent. `lookup` reports every recorded writer whose
// region may overlap a tensor; `record_write` makes a task the writer of a region, dropping
// entries the new region fully covers, so a chain of INOUT tasks on one tensor keeps one entry
// per buffer.
//
// Index: a buffer is seen as rows of a pitch (the outer byte stride of its first 2-D write, e.g.
// a matrix row; 1 byte for 1-D use) and each entry as a rectangle of rows x byte columns that
// holds all its bytes. Entries are ordered by (size class, first row, first column), so an
// operation examines only entries whose rectangle origin lies in a small window around the
// query: the cost follows the number of nearby entries (plus log n), not the buffer's entry
// count. Tiles of one matrix cost O(1) candidates each, however many tiles there are.
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

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <memory_resource>
#include <set>
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

// Operation counters for tests and diagnostics: "candidates" are index entries a lookup or
// record_write examined (the cost of one operation), whether or not they overlapped.
struct TensorMapStats {
  uint64_t operations = 0;
  uint64_t candidates = 0;
  uint64_t max_candidates = 0;  // in one operation
};

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
    const uint32_t buffer = slots_[static_cast<std::size_t>(slot)].buffer;
    const BufferIndex& index = buffers_[buffer];
    for (uint32_t e = index.unbounded_head; e != kNil; e = entries_[e].next) {
      on_writer(entries_[e].writer);
    }
    const uint64_t examined = for_each_candidate(buffer, region, [&](uint32_t e) {
      if (regions_may_overlap(regions_[e], region)) on_writer(entries_[e].writer);
    });
    note_operation(examined);
  }

  // Marks "no entry" (record_write of an empty region).
  static constexpr uint32_t kNoEntry = UINT32_MAX;

  // Makes `writer` the last writer of `tensor`'s region; drops entries the region covers. Returns
  // the id of the new entry (kNoEntry for an empty region), for erase_entry.
  uint32_t record_write(const Tensor& tensor, TaskId writer);
  // Drops entry `entry` if it still names `writer` (it may have been covered by a later write and
  // reused for another writer since); a buffer left without entries is forgotten. Lets a ring
  // orchestrator clean the entries of a retired task without walking the map. Returns whether
  // an entry was dropped. Does not allocate.
  bool erase_entry(uint32_t entry, TaskId writer) noexcept;
  // Drops every entry of the buffer starting at `buffer_addr` (its memory was released).
  void erase_buffer(uint64_t buffer_addr) noexcept;
  void clear() noexcept;

  std::size_t entry_count() const noexcept { return live_entries_; }
  std::size_t buffer_count() const noexcept { return live_buffers_; }
  // Entries recorded for one buffer (tests and diagnostics).
  std::size_t entries_of(uint64_t buffer_addr) const noexcept;
  const TensorMapStats& stats() const noexcept { return stats_; }
  void reset_stats() noexcept { stats_ = TensorMapStats{}; }

 private:
  static constexpr uint32_t kNil = UINT32_MAX;
  // Size classes of an entry's row span (factor 8 apart; the last one takes everything larger).
  // A query scans each non-empty class from its row minus the class's largest span, so a few
  // huge entries do not widen the scan over the many small ones.
  static constexpr uint32_t kClasses = 8;

  // Where a region's bytes can lie when the buffer is seen as rows of `pitch` bytes: rows
  // [row0, row_last] and, within every row, byte columns [col0, col_end) (the whole row when
  // that cannot be bounded). Regions sharing a byte always have intersecting rectangles.
  struct Rect {
    uint64_t row0 = 0;
    uint64_t row_last = 0;
    uint64_t col0 = 0;
    uint64_t col_end = 0;
  };
  static Rect rect_of(const TensorRegion& region, uint64_t pitch) noexcept;
  // The row pitch a buffer is indexed with when `region` is its first 2-D write (1 otherwise).
  static uint64_t pitch_of(const TensorRegion& region) noexcept;
  static uint32_t class_of(const Rect& rect) noexcept;

  struct Entry {
    uint64_t lo = 0;
    uint64_t hi = 0;
    Rect rect;
    TaskId writer = kNoTask;
    uint32_t next = kNil;  // free list, or the buffer's list of unbounded entries
    uint32_t buffer = kNil;
    uint32_t cls = 0;
    bool bounded = true;
  };
  // Ordered index over the bounded entries of all buffers: by buffer, class, then rectangle
  // origin, so one class of one buffer is a contiguous range scanned row by row.
  struct IndexKey {
    uint32_t buffer;
    uint32_t cls;
    uint64_t row0;
    uint64_t col0;
    uint32_t entry;
    bool operator<(const IndexKey& o) const noexcept {
      if (buffer != o.buffer) return buffer < o.buffer;
      if (cls != o.cls) return cls < o.cls;
      if (row0 != o.row0) return row0 < o.row0;
      if (col0 != o.col0) return col0 < o.col0;
      return entry < o.entry;
    }
  };
  struct ClassStats {
    uint64_t max_rows = 0;  // largest row_last - row0
    uint64_t max_cols = 0;  // largest col_end - col0
    uint32_t count = 0;
  };
  struct BufferIndex {
    uint64_t addr = 0;  // the key (buffer address), for erase_entry
    uint64_t pitch = 1;
    uint32_t entries = 0;
    uint32_t unbounded_head = kNil;
    uint32_t class_mask = 0;
    std::array<ClassStats, kClasses> classes{};
  };
  // Open addressing with linear probing; buffer == kNil marks a free slot.
  struct Slot {
    uint64_t key = 0;
    uint32_t buffer = kNil;
  };
  using Index = std::pmr::set<IndexKey>;

  // Calls fn(entry) for each bounded entry of `buffer` whose rectangle and byte extent meet
  // `region`'s (every entry when `region` is unbounded); returns the entries examined. fn may
  // remove the entry it is given.
  template <class Fn>
  uint64_t for_each_candidate(uint32_t buffer, const TensorRegion& region, Fn&& fn) const {
    uint64_t examined = 0;
    const BufferIndex& index = buffers_[buffer];
    if (!region.bounded) {
      for (auto it = index_.lower_bound(IndexKey{buffer, 0, 0, 0, 0});
           it != index_.end() && it->buffer == buffer;) {
        ++examined;
        fn((it++)->entry);
      }
      return examined;
    }
    const Rect q = rect_of(region, index.pitch);
    for (uint32_t mask = index.class_mask; mask != 0; mask &= mask - 1) {
      const auto cls = static_cast<uint32_t>(__builtin_ctz(mask));
      const ClassStats& stats = index.classes[cls];
      const uint64_t row_min = q.row0 > stats.max_rows ? q.row0 - stats.max_rows : 0;
      const uint64_t col_min = q.col0 > stats.max_cols ? q.col0 - stats.max_cols : 0;
      auto it = index_.lower_bound(IndexKey{buffer, cls, row_min, col_min, 0});
      while (it != index_.end() && it->buffer == buffer && it->cls == cls &&
             it->row0 <= q.row_last) {
        if (it->col0 < col_min) {  // a new row, left of the window
          it = index_.lower_bound(IndexKey{buffer, cls, it->row0, col_min, 0});
          continue;
        }
        if (it->col0 >= q.col_end) {  // right of the window: skip to the next row
          if (it->row0 == q.row_last) break;
          it = index_.lower_bound(IndexKey{buffer, cls, it->row0 + 1, col_min, 0});
          continue;
        }
        ++examined;
        const uint32_t e = (it++)->entry;
        const Entry& entry = entries_[e];
        if (entry.rect.row_last >= q.row0 && entry.rect.col_end > q.col0 && entry.hi > region.lo &&
            entry.lo < region.hi) {
          fn(e);
        }
      }
    }
    return examined;
  }

  void note_operation(uint64_t examined) const noexcept {
    ++stats_.operations;
    stats_.candidates += examined;
    stats_.max_candidates = std::max(stats_.max_candidates, examined);
  }

  int64_t find_slot(uint64_t key) const noexcept;
  std::size_t insert_slot(uint64_t key, bool* inserted);
  void erase_slot(std::size_t slot) noexcept;
  void grow_slots();
  uint32_t new_entry();
  void free_entry(uint32_t e) noexcept;
  std::size_t home_of(uint64_t key) const noexcept;
  uint32_t new_buffer(uint64_t pitch);
  void index_entry(uint32_t e, uint32_t buffer, const Rect& rect);
  void unindex_entry(uint32_t e) noexcept;
  void repitch(uint32_t buffer, uint64_t pitch);

  std::vector<Slot> slots_;  // power-of-two size
  std::vector<Entry> entries_;
  std::vector<TensorRegion> regions_;  // parallel to entries_
  std::vector<BufferIndex> buffers_;
  std::vector<uint32_t> free_buffers_;
  std::vector<uint32_t> scratch_;  // repitch
  // Index nodes come from a pool that keeps freed nodes, so steady state does not allocate;
  // held by pointer so the map stays movable.
  std::unique_ptr<std::pmr::unsynchronized_pool_resource> pool_;
  Index index_;
  uint32_t free_entries_ = kNil;
  std::size_t live_entries_ = 0;
  std::size_t live_buffers_ = 0;
  mutable TensorMapStats stats_;
};

}  // namespace chiprt::orchestrator
