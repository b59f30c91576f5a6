// TensorMap: derives task dependencies from the tensor regions tasks write and read.
//
// The map is keyed by buffer address (Tensor::buffer.addr). Each buffer holds region entries of
// two kinds, writer entries and reader entries: the task and the view geometry (start offset,
// shape, strides, element size) with its byte extent. `lookup` reports the writers whose region
// may overlap a tensor (what a reading task waits for); `lookup_write` reports the writers and
// the readers (what a writing task waits for), except a writer that a reported reader read all
// of after it was recorded: that reader waited for the writer, so the edge would be redundant.
// `record_write` makes a task the writer of a region, dropping the entries of both kinds the new
// region fully covers: every later task that overlaps a dropped entry overlaps the new write too,
// so it waits for the new writer, which waited for the dropped entry's task. A chain of INOUT tasks
// on one tensor thus keeps one entry per buffer, and a write covering a tile drops all the tile's
// readers; rewriting the identical view keeps that writer entry (same id) and gives it the new
// writer. `record_read` adds a reader and drops nothing: readers are concurrent, so a reader orders
// no one and every reader of a region stays until writes cover it (or, in the ring variant, its
// task retires). A reader entry is also dropped when several later writes, none covering it alone,
// together overwrite all of it (e.g. a task reading a whole vector, then one task per element
// writing it): each of those writes waited for its readers, and every later access overlaps one of
// them. Only writes whose bytes lie inside the entry and overlap no newer write are counted, so the
// count never exceeds the bytes really overwritten; the entry then takes no further readers.
// Readers of the identical view share one reader entry (up to kEntryReaders of them, then a new
// entry of the same view): a region written once and read by several tasks costs one entry, not one
// per read.
//
// Index: a buffer is seen as rows of a pitch (the outer byte stride of its first 2-D record, e.g.
// a matrix row; 1 byte for 1-D use) and each entry as a rectangle of rows x byte columns that
// holds all its bytes. A buffer's entries are grouped by kind and size (the height and width of
// their rectangles rounded up to powers of two); each group is a hash grid whose cells have that
// size, and an entry sits in the list of the cell holding its rectangle's origin. An operation
// visits, per group of the kinds it wants, the cells whose entries can reach the query's rectangle
// (just the cells the query covers while no entry of the group crosses a cell border), or the
// group's whole list when that is shorter: the cost follows the number of nearby entries, not the
// buffer's entry count, and a reading task's lookup never visits reader entries. Tiles of one
// matrix cost one cell and O(1) candidates each, however many tiles there are. A region whose
// bytes are exactly its rectangle (tiles, rows, 1-D runs) is marked, so two such regions overlap
// exactly when their rectangles meet, without the index search below.
//
// Hazards tracked (by the orchestrator using this map):
//   - read-after-write: In arguments and predicate flags depend on the overlapping writers;
//   - write-after-write and write-after-read: InOut / OutputExisting depend on the overlapping
//     earlier writers and readers (In arguments, predicate flags; an InOut's own read is covered
//     by its writer entry). Out arguments name fresh memory and look nothing up.
// Not tracked:
//   - arguments the orchestrator does not record (NoDep, tasks of manual scopes);
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
// Lifetime/threading: one map per graph build, used by one thread; no internal locking (lookup
// too updates internal state: a one-entry buffer cache and the stats). Storage grows
// geometrically and is reused (free lists, a cell table that never shrinks), so steady-state
// operations do not allocate.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "chiprt/tensor.h"
#include "chiprt/types.h"

namespace chiprt::orchestrator {

// The geometry of a view, relative to its buffer start (shape/strides past ndim are copied from
// the Tensor and never read). `lo`/`hi` is the byte extent [lo, hi) covering every element;
// empty regions have lo == hi == 0. `bounded` is false when the extent
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

// Bytes a vector's storage holds (its capacity), for the retained-storage accounting.
template <class T>
uint64_t capacity_bytes(const std::vector<T>& v) noexcept {
  return static_cast<uint64_t>(v.capacity()) * sizeof(T);
}

class TensorMap {
 public:
  TensorMap();

  class Prepared;

  // Calls `on_task(TaskId)` for every recorded writer whose region may overlap `tensor`: what a
  // task reading `tensor` depends on. A task may be reported more than once (callers deduplicate
  // edges). Every lookup also accepts `on_task(TaskId, bool reader)`: `reader` says whether the
  // entry naming the task is a reader entry (else a writer entry).
  template <class OnTask>
  void lookup(const Tensor& tensor, OnTask&& on_task) const {
    lookup_impl<false, false>(tensor, on_task, nullptr);
  }
  // The same, also describing `tensor` into `prepared` (overwriting what it held) for a
  // record_read of the same tensor that follows, so the tensor is described once for both.
  template <class OnTask>
  void lookup(const Tensor& tensor, OnTask&& on_task, Prepared* prepared) const {
    lookup_impl<true, false>(tensor, on_task, prepared);
  }
  // Calls `on_task(TaskId)` for every recorded writer and reader whose region may overlap
  // `tensor`: what a task writing `tensor` (InOut, OutputExisting) depends on.
  template <class OnTask>
  void lookup_write(const Tensor& tensor, OnTask&& on_task) const {
    lookup_impl<false, true>(tensor, on_task, nullptr);
  }
  // The same, also describing `tensor` into `prepared` for the record_write that follows.
  template <class OnTask>
  void lookup_write(const Tensor& tensor, OnTask&& on_task, Prepared* prepared) const {
    lookup_impl<true, true>(tensor, on_task, prepared);
  }

  // Marks "no entry" (a record of an empty region).
  static constexpr uint32_t kNoEntry = UINT32_MAX;

  // Makes `writer` the last writer of `tensor`'s region; drops the writer and reader entries the
  // region covers. Returns the id of the entry now naming `writer` (kNoEntry for an empty
  // region), for erase_entry; a writer entry of the identical view is reused, so its earlier
  // writer's erase_entry becomes a no-op.
  uint32_t record_write(const Tensor& tensor, TaskId writer);
  // record_write(tensor, writer) for the tensor `prepared` was filled for by a lookup. A Prepared
  // goes stale when a buffer index is created, released or re-indexed after it was filled; a
  // stale one is detected and the tensor described anew, so any Prepared of that tensor is safe.
  uint32_t record_write(const Tensor& tensor, TaskId writer, const Prepared& prepared);
  // Records `reader` as a reader of `tensor`'s region (nothing is dropped: readers do not order
  // each other): appended to a recent reader entry of the identical view that has room (the task
  // is not added twice when it was the entry's last reader), else in a new reader entry. Returns
  // the entry's id (kNoEntry for an empty region), for erase_entry.
  uint32_t record_read(const Tensor& tensor, TaskId reader);
  // record_read(tensor, reader) for the tensor `prepared` was filled for by a lookup.
  uint32_t record_read(const Tensor& tensor, TaskId reader, const Prepared& prepared);
  // Removes `task` from entry `entry` (of either kind) if the entry still names it (it may have
  // been covered by a later write and reused for other tasks since); the entry goes with the last
  // task it names, and a buffer left without entries is forgotten. Lets a ring orchestrator clean
  // the entries of a retired task without walking the map. Returns whether `task` was removed.
  // Does not allocate.
  bool erase_entry(uint32_t entry, TaskId task) noexcept;
  // Drops every entry of the buffer starting at `buffer_addr` (its memory was released).
  void erase_buffer(uint64_t buffer_addr) noexcept;
  void clear() noexcept;

  std::size_t entry_count() const noexcept { return live_entries_; }  // both kinds
  // Reader entries, and the readers they hold (an entry holds 1..kEntryReaders).
  std::size_t reader_entry_count() const noexcept { return live_reader_entries_; }
  std::size_t reader_count() const noexcept { return live_readers_; }
  // Readers one reader entry holds.
  static constexpr uint32_t kEntryReaders = 4;
  // Bytes of storage the map holds (capacities of its tables), kept across clear().
  uint64_t retained_bytes() const noexcept;
  std::size_t buffer_count() const noexcept { return live_buffers_; }
  // Entries of both kinds recorded for one buffer (tests and diagnostics).
  std::size_t entries_of(uint64_t buffer_addr) const noexcept;
  const TensorMapStats& stats() const noexcept { return stats_; }
  void reset_stats() noexcept { stats_ = TensorMapStats{}; }

 private:
  static constexpr uint32_t kNil = UINT32_MAX;
  // Size groups per buffer and entry kind. Uniform tiles need one; when a buffer has more distinct
  // sizes, the extra entries join the group whose cells fit them best (correct for any size, see
  // Group). Writer entries use groups [0, kGroups), reader entries [kGroups, 2 * kGroups).
  static constexpr uint32_t kGroups = 8;
  static constexpr uint32_t kKindGroups = 2 * kGroups;
  static constexpr uint32_t kWriterGroupMask = (1u << kGroups) - 1;
  static constexpr uint32_t kWriterKind = 0;
  static constexpr uint32_t kReaderKind = 1;

  // Where a region's bytes can lie when the buffer is seen as rows of `pitch` bytes: rows
  // [row0, row_last] and, within every row, byte columns [col0, col_end) (the whole row when
  // that cannot be bounded). Regions sharing a byte always have intersecting rectangles.
  struct Rect {
    uint64_t row0 = 0;
    uint64_t row_last = 0;
    uint64_t col0 = 0;
    uint64_t col_end = 0;
  };
  // What an operation needs of a view: its byte extent (as in TensorRegion), its rectangle, and
  // whether its bytes are exactly the rectangle's bytes (two such views overlap iff their
  // rectangles intersect). Computed in one pass over the dimensions.
  struct Query {
    uint64_t lo = 0;
    uint64_t hi = 0;
    Rect rect;
    bool bounded = true;
    bool empty = false;
    bool exact = false;
  };
  static Query query_of(const Tensor& tensor, uint64_t pitch) noexcept;

 public:
  // What lookup learned about one tensor: its buffer index and query under the buffer's pitch,
  // stamped with the layout epoch they are valid in. Filled only by lookup; trivially copyable.
  class Prepared {
   private:
    friend class TensorMap;
    uint64_t epoch = 0;     // layout_epoch_ when filled; 0: never filled (the epoch starts at 1)
    uint64_t recorded = 0;  // recorded_ when filled
    uint32_t buffer = kNil;
    // A lookup_write met no bounded entry (of either kind) of the tensor's region. While nothing
    // was recorded since (recorded == recorded_; entries only appear through records), the write
    // has no entry to drop or reuse, so it skips that search. A read lookup leaves it false.
    bool met_none = false;
    Query query;
  };

 private:
  static Query query_of(const TensorRegion& region, uint64_t pitch) noexcept;
  // The row pitch a buffer is indexed with when `region` is its first 2-D write (1 otherwise).
  static uint64_t pitch_of(const TensorRegion& region) noexcept;

  struct Entry {
    uint64_t lo = 0;
    uint64_t hi = 0;
    Rect rect;
    uint32_t buffer = kNil;
    uint32_t cell_next = kNil;  // the list of the entry's cell
    uint32_t cell_prev = kNil;
    uint32_t cell = kNil;  // the cell's slot in cells_, kept up to date for the list's head
    // The group's list of entries; for unbounded entries the buffer's unbounded list; for a free
    // entry (buffer == kNil) the free list.
    uint32_t group_next = kNil;
    uint32_t group_prev = kNil;
    uint8_t group = 0;
    bool bounded = true;
    bool exact = false;
    bool reads = false;      // a reader entry
    uint8_t task_count = 0;  // tasks named: the writer, or 1..kEntryReaders readers
    // The writer (tasks[0]) or the readers, oldest first. After the index fields, which the
    // searches read.
    std::array<TaskId, kEntryReaders> tasks{};
    // recorded_ when the entry began naming its current tasks (a reused writer entry, a reader
    // joining a reader entry restart it): a writer entry with a larger seq records a write made
    // after every task of an entry with a smaller one.
    uint64_t seq = 0;
    // Reader entries: bytes of the region that later writes have overwritten, counted only for
    // writes inside the region that no writer entry newer than this entry overlapped (so the
    // counted writes are disjoint). At the region's size the entry is dropped (see record_at).
    uint64_t overwritten = 0;
  };
  // One size group of a buffer: a hash grid of cells of 2^row_shift rows x 2^col_shift columns
  // (an entry sits in the cell of its rectangle's origin) plus a list of all its entries.
  // `max_rows` / `max_cols` bound how far an entry reaches from its origin; the crossing counts
  // say whether any entry reaches past its own cell, so a query must look at the cells before it.
  struct Group {
    uint64_t max_rows = 0;  // largest row_last - row0
    uint64_t max_cols = 0;  // largest col_end - 1 - col0
    uint32_t count = 0;
    uint32_t crossing_rows = 0;
    uint32_t crossing_cols = 0;
    uint32_t head = kNil;  // oldest entry
    uint32_t tail = kNil;  // newest entry
    uint8_t row_shift = 0;
    uint8_t col_shift = 0;
  };
  struct BufferIndex {
    uint64_t addr = 0;  // the key (buffer address), for erase_entry
    uint64_t pitch = 1;
    uint32_t entries = 0;                                // both kinds
    std::array<uint32_t, 2> unbounded_head{kNil, kNil};  // per kind
    uint32_t group_mask = 0;                             // groups with entries
    std::array<uint32_t, 2> last_group{0, kGroups};  // per kind: the group the last entry joined
    std::array<Group, kKindGroups> groups{};
  };
  // Open addressing with linear probing; buffer == kNil marks a free slot.
  struct Slot {
    uint64_t key = 0;
    uint32_t buffer = kNil;
  };
  // A grid cell of one group (key = buffer * kGroups + group); head == kNil marks a free cell.
  // Open addressing with linear probing over all buffers' groups, at most 1/kCellLoadInverse
  // full: every lookup probes cells and every write and erase inserts or deletes one (deletion
  // shifts the run after it back), so short runs matter more than the table's size.
  static constexpr std::size_t kCellLoadInverse = 4;
  struct Cell {
    uint64_t row = 0;
    uint64_t col = 0;
    uint32_t key = 0;
    uint32_t head = kNil;
  };

  static std::size_t cell_hash(uint32_t key, uint64_t row, uint64_t col) noexcept {
    // Odd multipliers keep neighbouring cells apart in the low bits; the fold mixes in the rest.
    const uint64_t x = row * 0x9e3779b97f4a7c15ull ^ col * 0xc2b2ae3d27d4eb4full ^
                       uint64_t { key } * 0x165667b19e3779f9ull;
    return static_cast<std::size_t>(x ^ (x >> 32));
  }
  // The first entry of a cell's list, kNil when the cell is empty.
  uint32_t cell_head(uint32_t key, uint64_t row, uint64_t col) const noexcept {
    const std::size_t mask = cells_.size() - 1;
    for (std::size_t i = cell_hash(key, row, col) & mask;; i = (i + 1) & mask) {
      const Cell& cell = cells_[i];
      if (cell.head == kNil) return kNil;
      if (cell.row == row && cell.col == col && cell.key == key) return cell.head;
    }
  }
  // Whether `inner` lies inside `outer`.
  static bool rect_inside(const Rect& inner, const Rect& outer) noexcept {
    return outer.row0 <= inner.row0 && inner.row_last <= outer.row_last &&
           outer.col0 <= inner.col0 && inner.col_end <= outer.col_end;
  }
  // The bytes of an exact region's rectangle.
  static uint64_t rect_bytes(const Rect& r) noexcept {
    return (r.row_last - r.row0 + 1) * (r.col_end - r.col0);
  }
  static bool rects_meet(const Rect& a, const Rect& b) noexcept {
    return a.row0 <= b.row_last && b.row0 <= a.row_last && a.col0 < b.col_end && b.col0 < a.col_end;
  }

  // Calls fn(entry) for each bounded entry of `buffer`'s groups in `groups` (a mask) whose
  // rectangle and byte extent meet the query's (every bounded entry when the query is unbounded);
  // returns the entries examined. fn may remove the entry it is given.
  template <class Fn>
  uint64_t for_each_candidate(uint32_t buffer, const Query& query, uint32_t groups, Fn&& fn) const {
    uint64_t examined = 0;
    const BufferIndex& index = buffers_[buffer];
    const Rect& q = query.rect;
    for (uint32_t mask = groups; mask != 0; mask &= mask - 1) {
      const auto g = static_cast<uint32_t>(__builtin_ctz(mask));
      const Group& group = index.groups[g];
      if (!query.bounded) {
        for (uint32_t e = group.head; e != kNil;) {
          const uint32_t next = entries_[e].group_next;
          ++examined;
          fn(e);
          e = next;
        }
        continue;
      }
      // Cells whose entries can reach the query: origins in [row_from, row_last] x [col_from,
      // col_last]. Without crossing entries an overlapping entry lies in a cell the query covers.
      uint64_t r0 = q.row0 >> group.row_shift;
      uint64_t c0 = q.col0 >> group.col_shift;
      if ((group.crossing_rows | group.crossing_cols) != 0) {
        if (group.crossing_rows != 0) {
          r0 = (q.row0 > group.max_rows ? q.row0 - group.max_rows : 0) >> group.row_shift;
        }
        if (group.crossing_cols != 0) {
          c0 = (q.col0 > group.max_cols ? q.col0 - group.max_cols : 0) >> group.col_shift;
        }
      }
      const uint64_t r1 = q.row_last >> group.row_shift;
      const uint64_t c1 = (q.col_end - 1) >> group.col_shift;
      // Probing a cell costs about as much as examining two entries: walk the list instead when
      // it is no longer than twice the cell count (no overflow: both spans are below count).
      const uint64_t count = group.count;
      const uint64_t rows = r1 - r0;
      const uint64_t cols = c1 - c0;
      if ((rows | cols) == 0
              ? count <= 2
              : (rows >= count || cols >= count || 2 * (rows + 1) * (cols + 1) >= count)) {
        for (uint32_t e = group.head; e != kNil;) {
          const Entry& entry = entries_[e];
          const uint32_t next = entry.group_next;
          ++examined;
          if (rects_meet(entry.rect, q) && entry.hi > query.lo && entry.lo < query.hi) fn(e);
          e = next;
        }
        continue;
      }
      const uint32_t key = buffer * kKindGroups + g;
      for (uint64_t r = r0;; ++r) {
        for (uint64_t c = c0;; ++c) {
          for (uint32_t e = cell_head(key, r, c); e != kNil;) {
            const Entry& entry = entries_[e];
            const uint32_t next = entry.cell_next;
            ++examined;
            if (rects_meet(entry.rect, q) && entry.hi > query.lo && entry.lo < query.hi) fn(e);
            e = next;
          }
          if (c == c1) break;
        }
        if (r == r1) break;
      }
    }
    return examined;
  }

  // Calls on_task(task), or on_task(task, reader) when it takes the entry's kind too.
  template <class OnTask>
  static void emit(OnTask& on_task, TaskId task, bool reader) {
    if constexpr (std::is_invocable_v<OnTask&, TaskId, bool>) {
      on_task(task, reader);
    } else {
      on_task(task);
    }
  }
  // Calls on_task for every task `entry` names.
  template <class OnTask>
  static void report(const Entry& entry, OnTask& on_task) {
    for (uint32_t k = 0; k < entry.task_count; ++k) emit(on_task, entry.tasks[k], entry.reads);
  }

  // kPrepare: `prepared` is filled (not null); kWrite: readers are reported too. Compile-time
  // flags keep plain lookups lean.
  template <bool kPrepare, bool kWrite, class OnTask>
  void lookup_impl(const Tensor& tensor, OnTask& on_task, Prepared* prepared) const {
    const uint32_t buffer = buffer_of(tensor.buffer.addr);
    if (buffer == kNil) {
      // Overwritten in every case: a Prepared reused across tensors never keeps another's query.
      if constexpr (kPrepare) prepared->buffer = kNil;
      return;
    }
    const BufferIndex& index = buffers_[buffer];
    const Query query = query_of(tensor, index.pitch);
    if constexpr (kPrepare) {
      prepared->epoch = layout_epoch_;
      prepared->buffer = buffer;
      prepared->query = query;  // met_none is set below: record_at ignores it when empty
      if constexpr (!kWrite) prepared->met_none = false;
    }
    if (query.empty) return;
    for (uint32_t e = index.unbounded_head[kWriterKind]; e != kNil; e = entries_[e].group_next) {
      emit(on_task, entries_[e].tasks[0], false);
    }
    if constexpr (kWrite) {
      for (uint32_t e = index.unbounded_head[kReaderKind]; e != kNil; e = entries_[e].group_next) {
        report(entries_[e], on_task);
      }
    }
    [[maybe_unused]] bool met = false;
    const uint32_t groups = kWrite ? index.group_mask : index.group_mask & kWriterGroupMask;
    const uint64_t examined = for_each_candidate(buffer, query, groups, [&](uint32_t e) {
      const Entry& entry = entries_[e];
      if constexpr (kPrepare && kWrite) met = true;
      // Two exact regions whose rectangles meet overlap; other pairs take the full search.
      if ((query.exact && entry.exact) || may_overlap(e, tensor)) {
        if constexpr (kWrite) {
          if (entry.reads || !ordered_by_reader(buffer, query, tensor, e)) report(entry, on_task);
        } else {
          emit(on_task, entry.tasks[0], false);  // writer entries only
        }
      }
    });
    if constexpr (kPrepare && kWrite) {
      prepared->recorded = recorded_;
      prepared->met_none = !met;
    }
    note_operation(examined);
  }
  // Whether a write of `tensor` (described by `query`) that overlaps writer entry `writer` need
  // not wait for it: a reader entry the write also overlaps was recorded after the writer and
  // its region covers the writer's, so its readers waited for the writer and the write waits
  // for them.
  bool ordered_by_reader(uint32_t buffer, const Query& query, const Tensor& tensor,
                         uint32_t writer) const noexcept;
  // record_write once the tensor's buffer index exists, is indexed for the tensor's rank and
  // `query` describes the tensor under its pitch. `none_met`: no bounded entry meets the query's
  // rectangle and extent (known from a Prepared), so there is nothing to drop or reuse.
  uint32_t record_at(const Tensor& tensor, TaskId writer, uint32_t buffer, const Query& query,
                     bool none_met = false);
  // Reader entries a write may overwrite piece by piece, at most this many per write (more are
  // left alone: they keep their readers, which is never wrong).
  static constexpr uint32_t kMaxPieceReaders = 8;
  // After an exact write of rectangle `write` that lies inside the exact reader entries
  // `readers`: adds its bytes to each entry no writer entry newer than it overlapped
  // (`newest_writer`: the largest seq of the writer entries the write met) and drops the entries
  // now wholly overwritten.
  void count_overwritten(uint32_t buffer, const Rect& write, uint64_t newest_writer,
                         const uint32_t* readers, uint32_t count) noexcept;
  // record_read once the buffer index exists as for record_at.
  uint32_t record_read_at(const Tensor& tensor, TaskId reader, uint32_t buffer, const Query& query);
  // A reader entry of exactly `tensor`'s view (bounded, described by `query`) that can take
  // `reader`: it has room or `reader` is its last reader. Looks at the newest few entries of the
  // cell the view's entry would join; kNil when none (coalescing is an optimisation).
  uint32_t shared_reader_entry(const Tensor& tensor, TaskId reader, uint32_t buffer,
                               const Query& query) const noexcept;
  // Whether `prepared` still describes `tensor` for a record (else the record describes it anew).
  bool usable(const Prepared& prepared, const Tensor& tensor) const noexcept;
  // The buffer index a record of `tensor` goes to, created (the first record picks the pitch) or
  // re-indexed (a 1-D indexed buffer recorded as a matrix) as needed; kNil for an empty region
  // of a buffer without index.
  uint32_t index_for_record(const Tensor& tensor);
  // Appends a fresh entry of `tensor` (described by `query`) naming `task` to `buffer`'s index.
  uint32_t add_entry(const Tensor& tensor, TaskId task, uint32_t buffer, const Query& query,
                     bool reads);

  void note_operation(uint64_t examined) const noexcept {
    ++stats_.operations;
    stats_.candidates += examined;
    stats_.max_candidates = std::max(stats_.max_candidates, examined);
  }

  // The buffer index of `addr`, kNil when it has no entries. Remembers the last answer, found or
  // not: an orchestrator's consecutive operations mostly name one buffer.
  uint32_t buffer_of(uint64_t addr) const noexcept {
    if (cache_valid_ && addr == cached_addr_) return cached_buffer_;
    const int64_t slot = find_slot(addr);
    cached_addr_ = addr;
    cached_buffer_ = slot < 0 ? kNil : slots_[static_cast<std::size_t>(slot)].buffer;
    cache_valid_ = true;
    return cached_buffer_;
  }
  // regions_may_overlap(entry's region, tensor's region), out of line (the rare path).
  bool may_overlap(uint32_t entry, const Tensor& tensor) const noexcept;
  int64_t find_slot(uint64_t key) const noexcept;
  std::size_t insert_slot(uint64_t key, bool* inserted);
  void erase_slot(std::size_t slot) noexcept;
  void grow_slots();
  std::size_t home_of(uint64_t key) const noexcept;
  // The slot of a cell, inserted (empty, head == kNil) when missing; may grow cells_.
  std::size_t cell_slot(uint32_t key, uint64_t row, uint64_t col);
  std::size_t find_cell(uint32_t key, uint64_t row, uint64_t col) const noexcept;
  void erase_cell(std::size_t cell) noexcept;
  void grow_cells();
  uint32_t new_entry();
  void free_entry(uint32_t e) noexcept;
  uint32_t new_buffer(uint64_t pitch);
  uint32_t group_for(const BufferIndex& index, uint32_t kind, uint32_t row_shift,
                     uint32_t col_shift) const noexcept;
  // The cell size (log2 rows, log2 columns) an entry of `rect` asks for.
  static std::pair<uint32_t, uint32_t> cell_shifts(const Rect& rect) noexcept {
    const uint64_t rows = rect.row_last - rect.row0;
    const uint64_t cols = rect.col_end - 1 - rect.col0;
    // Cells as large as the entry's rectangle rounded up to powers of two (at most 2^63).
    return {std::min<uint32_t>(static_cast<uint32_t>(std::bit_width(rows)), 63),
            std::min<uint32_t>(static_cast<uint32_t>(std::bit_width(cols)), 63)};
  }
  // The group an entry of kind `kind` and cell size (row_shift, col_shift) joins.
  uint32_t pick_group(const BufferIndex& index, uint32_t kind, uint32_t row_shift,
                      uint32_t col_shift) const noexcept {
    const uint32_t last_group = index.last_group[kind];
    const Group& last = index.groups[last_group];  // group_for's first guess, inline
    return last.count != 0 && last.row_shift == row_shift && last.col_shift == col_shift
               ? last_group
               : group_for(index, kind, row_shift, col_shift);
  }
  void index_entry(uint32_t e, uint32_t buffer);
  void unindex_entry(uint32_t e) noexcept;
  // Removes the cells of `buffer`'s bounded entries and empties its groups; the entries keep
  // their data and are listed in scratch_.
  void unindex_buffer(uint32_t buffer);
  void repitch(uint32_t buffer, uint64_t pitch);

  std::vector<Slot> slots_;  // power-of-two size
  std::vector<Cell> cells_;  // power-of-two size
  std::vector<Entry> entries_;
  std::vector<TensorRegion> regions_;  // parallel to entries_
  std::vector<BufferIndex> buffers_;
  std::vector<uint32_t> free_buffers_;
  std::vector<uint32_t> scratch_;  // repitch
  uint32_t free_entries_ = kNil;
  std::size_t live_entries_ = 0;
  std::size_t live_reader_entries_ = 0;
  std::size_t live_readers_ = 0;
  std::size_t live_buffers_ = 0;
  std::size_t live_cells_ = 0;
  // The most buffers and cells live at once since the last clear() (which sizes the tables by
  // them).
  std::size_t peak_buffers_ = 0;
  std::size_t peak_cells_ = 0;
  // buffer_of's last answer; invalidated whenever a buffer index is created or released.
  mutable uint64_t cached_addr_ = 0;
  mutable uint32_t cached_buffer_ = kNil;
  mutable bool cache_valid_ = false;
  // Bumped whenever a buffer index is created, released or re-pitched (Prepared's validity).
  uint64_t layout_epoch_ = 1;
  // Counts record_at and record_read_at calls (Prepared::met_none's validity).
  uint64_t recorded_ = 0;
  mutable TensorMapStats stats_;
};

}  // namespace chiprt::orchestrator
