#include "orchestrator/tensor_map.h"

#include <algorithm>

namespace chiprt::orchestrator {
namespace {

using i128 = __int128;

i128 floor_div(i128 a, i128 b) noexcept {  // b > 0
  const i128 q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}
i128 ceil_div(i128 a, i128 b) noexcept {  // b > 0
  const i128 q = a / b;
  return (a % b != 0 && a > 0) ? q + 1 : q;
}

// Decides whether integers z_k in [lo_k, hi_k] exist with sum(coef_k * z_k) in a target interval.
// Terms with equal coefficients are merged (the sum of two integer intervals is an integer
// interval), so two views with the same strides become one term per dimension. The search walks
// the terms from the largest coefficient down, pruning with the reachable range of the remaining
// terms; it gives up after a fixed number of nodes, which callers treat as "unknown".
class IndexSolver {
 public:
  enum class Result { Found, NotFound, GaveUp };

  void add(i128 coef, i128 lo, i128 hi) noexcept {
    if (coef == 0 || (lo == 0 && hi == 0)) return;
    for (int i = 0; i < count_; ++i) {
      if (terms_[i].coef == coef) {
        terms_[i].lo += lo;
        terms_[i].hi += hi;
        return;
      }
    }
    terms_[count_++] = Term{coef, lo, hi};
  }

  Result solve(i128 target_lo, i128 target_hi) noexcept {
    std::sort(terms_, terms_ + count_,
              [](const Term& x, const Term& y) { return x.coef > y.coef; });
    rest_lo_[count_] = 0;
    rest_hi_[count_] = 0;
    for (int k = count_; k-- > 0;) {
      rest_lo_[k] = rest_lo_[k + 1] + terms_[k].coef * terms_[k].lo;
      rest_hi_[k] = rest_hi_[k + 1] + terms_[k].coef * terms_[k].hi;
    }
    budget_ = kNodeBudget;
    return search(0, target_lo, target_hi);
  }

 private:
  static constexpr int kMaxTerms = 2 * kMaxTensorDims;
  static constexpr int kNodeBudget = 4096;
  struct Term {
    i128 coef;  // > 0
    i128 lo;
    i128 hi;
  };

  Result search(int k, i128 target_lo, i128 target_hi) noexcept {
    if (k == count_) return (target_lo <= 0 && 0 <= target_hi) ? Result::Found : Result::NotFound;
    const Term& t = terms_[k];
    const i128 z_min = std::max(t.lo, ceil_div(target_lo - rest_hi_[k + 1], t.coef));
    const i128 z_max = std::min(t.hi, floor_div(target_hi - rest_lo_[k + 1], t.coef));
    // The last term alone must land in the target: any z in [z_min, z_max] does.
    if (k + 1 == count_) return z_min <= z_max ? Result::Found : Result::NotFound;
    for (i128 z = z_min; z <= z_max; ++z) {
      if (--budget_ < 0) return Result::GaveUp;
      const Result r = search(k + 1, target_lo - z * t.coef, target_hi - z * t.coef);
      if (r != Result::NotFound) return r;
    }
    return Result::NotFound;
  }

  Term terms_[kMaxTerms];
  int count_ = 0;
  i128 rest_lo_[kMaxTerms + 1];
  i128 rest_hi_[kMaxTerms + 1];
  int budget_ = 0;
};

// Every byte of the extent is an element byte: the dimensions that advance, ordered by stride,
// are packed row-major (broadcast dimensions with stride 0 repeat elements and change nothing).
bool is_dense(const TensorRegion& r) noexcept {
  uint64_t strides[kMaxTensorDims];
  uint64_t shapes[kMaxTensorDims];
  int n = 0;
  for (uint32_t d = 0; d < r.ndim; ++d) {
    if (r.shape[d] > 1 && r.strides[d] > 0) {
      int i = n++;
      while (i > 0 && strides[i - 1] > r.strides[d]) {
        strides[i] = strides[i - 1];
        shapes[i] = shapes[i - 1];
        --i;
      }
      strides[i] = r.strides[d];
      shapes[i] = r.shape[d];
    }
  }
  uint64_t expected = 1;
  for (int i = 0; i < n; ++i) {
    if (strides[i] != expected) return false;
    expected *= shapes[i];  // bounded by the extent, which did not overflow
  }
  return true;
}

uint64_t mix_hash(uint64_t x) noexcept {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

}  // namespace

TensorRegion TensorRegion::of(const Tensor& tensor) noexcept {
  TensorRegion r;
  r.start_offset = tensor.start_offset;
  r.ndim = std::min<uint32_t>(tensor.ndim, kMaxTensorDims);
  r.element_bytes = static_cast<uint32_t>(element_size(tensor.dtype));
  for (uint32_t d = 0; d < r.ndim; ++d) {
    r.shape[d] = tensor.shape[d];
    r.strides[d] = tensor.strides[d];
  }
  if (r.element_bytes == 0 || tensor.ndim > static_cast<uint32_t>(kMaxTensorDims)) {
    r.bounded = false;  // not a valid Tensor: nothing can be proved about it
    return r;
  }
  if (r.ndim == 0) return r;  // no elements
  for (uint32_t d = 0; d < r.ndim; ++d) {
    if (r.shape[d] == 0) return r;
  }
  uint64_t last = r.start_offset;
  for (uint32_t d = 0; d < r.ndim; ++d) {
    uint64_t span;
    if (__builtin_mul_overflow(r.shape[d] - 1, r.strides[d], &span) ||
        __builtin_add_overflow(last, span, &last)) {
      r.bounded = false;
      return r;
    }
  }
  if (__builtin_add_overflow(last, 1, &last) ||
      __builtin_mul_overflow(last, uint64_t{r.element_bytes}, &r.hi) ||
      __builtin_mul_overflow(r.start_offset, uint64_t{r.element_bytes}, &r.lo)) {
    r.bounded = false;
    r.lo = r.hi = 0;
  }
  return r;
}

bool regions_may_overlap(const TensorRegion& a, const TensorRegion& b) noexcept {
  if (a.empty() || b.empty()) return false;
  if (!a.bounded || !b.bounded) return true;
  if (a.hi <= b.lo || b.hi <= a.lo) return false;
  // Element x of a starts at byte a.lo + sum(x_i * sa_i * ea), element y of b at b.lo + sum(...).
  // They share a byte iff (b_start - a_start) is in [-(eb - 1), ea - 1].
  IndexSolver solver;
  for (uint32_t d = 0; d < b.ndim; ++d) {
    solver.add(i128(b.strides[d]) * b.element_bytes, 0, i128(b.shape[d]) - 1);
  }
  for (uint32_t d = 0; d < a.ndim; ++d) {
    solver.add(i128(a.strides[d]) * a.element_bytes, -(i128(a.shape[d]) - 1), 0);
  }
  const i128 base = i128(b.lo) - i128(a.lo);
  const auto r =
      solver.solve(-(i128(b.element_bytes) - 1) - base, (i128(a.element_bytes) - 1) - base);
  return r != IndexSolver::Result::NotFound;
}

bool region_covers(const TensorRegion& outer, const TensorRegion& inner) noexcept {
  if (inner.empty()) return true;
  if (outer.empty() || !outer.bounded || !inner.bounded) return false;
  if (inner.lo < outer.lo || inner.hi > outer.hi) return false;
  if (is_dense(outer)) return true;
  if (outer.element_bytes != inner.element_bytes || outer.ndim != inner.ndim) return false;
  // Same layout: inner is outer's box shifted by z with 0 <= z_i <= outer_i - inner_i.
  IndexSolver solver;
  for (uint32_t d = 0; d < outer.ndim; ++d) {
    if (inner.shape[d] > 1 &&
        (inner.strides[d] != outer.strides[d] || inner.shape[d] > outer.shape[d])) {
      return false;
    }
    solver.add(i128(outer.strides[d]) * outer.element_bytes, 0,
               i128(outer.shape[d]) - i128(inner.shape[d]));
  }
  const i128 shift = i128(inner.lo) - i128(outer.lo);
  return solver.solve(shift, shift) == IndexSolver::Result::Found;
}

TensorMap::TensorMap()
    : slots_(64),
      pool_(std::make_unique<std::pmr::unsynchronized_pool_resource>()),
      index_(pool_.get()) {}

uint64_t TensorMap::pitch_of(const TensorRegion& region) noexcept {
  if (!region.bounded || region.empty()) return 1;
  const uint64_t eb = region.element_bytes;
  uint64_t outer = 0;
  for (uint32_t d = 0; d < region.ndim; ++d) {
    if (region.shape[d] > 1) outer = std::max(outer, region.strides[d] * eb);  // <= extent
  }
  if (outer <= eb) return 1;  // 1-D contiguous (or a single element): plain byte rows
  const Rect r = rect_of(region, outer);
  // Useful only when a row holds part of the region, not all of every row.
  return r.col_end - r.col0 < outer ? outer : 1;
}

TensorMap::Rect TensorMap::rect_of(const TensorRegion& region, uint64_t pitch) noexcept {
  Rect r;
  r.row0 = region.lo / pitch;
  r.row_last = (region.hi - 1) / pitch;
  // A byte is lo + sum(x_d * stride_d * eb) + b (b < eb). Dimensions whose byte stride is a
  // multiple of the pitch only change the row, so the column (byte mod pitch) lies within the
  // span of the other dimensions from lo's column. Sums stay within the extent: no overflow.
  const uint64_t eb = region.element_bytes;
  uint64_t width = eb;
  for (uint32_t d = 0; d < region.ndim; ++d) {
    const uint64_t stride = region.strides[d] * eb;
    if (region.shape[d] > 1 && stride % pitch != 0) width += (region.shape[d] - 1) * stride;
  }
  r.col0 = region.lo % pitch;
  if (width >= pitch || r.col0 + width > pitch) {
    r.col0 = 0;  // wraps into the next row: any column
    r.col_end = pitch;
  } else {
    r.col_end = r.col0 + width;
  }
  return r;
}

uint32_t TensorMap::class_of(const Rect& rect) noexcept {
  const uint64_t span = rect.row_last - rect.row0;
  const auto bits = static_cast<uint32_t>(64 - (span == 0 ? 64 : __builtin_clzll(span)));
  return std::min((bits + 2) / 3, kClasses - 1);
}

std::size_t TensorMap::home_of(uint64_t key) const noexcept {
  return static_cast<std::size_t>(mix_hash(key)) & (slots_.size() - 1);
}

int64_t TensorMap::find_slot(uint64_t key) const noexcept {
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t i = home_of(key);; i = (i + 1) & mask) {
    if (slots_[i].buffer == kNil) return -1;
    if (slots_[i].key == key) return static_cast<int64_t>(i);
  }
}

void TensorMap::grow_slots() {
  std::vector<Slot> old(slots_.size() * 2);
  old.swap(slots_);
  const std::size_t mask = slots_.size() - 1;
  for (const Slot& s : old) {
    if (s.buffer == kNil) continue;
    std::size_t i = home_of(s.key);
    while (slots_[i].buffer != kNil) i = (i + 1) & mask;
    slots_[i] = s;
  }
}

std::size_t TensorMap::insert_slot(uint64_t key, bool* inserted) {
  const int64_t found = find_slot(key);
  *inserted = found < 0;
  if (found >= 0) return static_cast<std::size_t>(found);
  if ((live_buffers_ + 1) * 2 > slots_.size()) grow_slots();
  const std::size_t mask = slots_.size() - 1;
  std::size_t i = home_of(key);
  while (slots_[i].buffer != kNil) i = (i + 1) & mask;
  slots_[i].key = key;
  ++live_buffers_;
  return i;  // buffer stays kNil until the caller assigns one
}

void TensorMap::erase_slot(std::size_t slot) noexcept {
  // Backward-shift deletion keeps every probe chain unbroken without tombstones.
  const std::size_t mask = slots_.size() - 1;
  std::size_t hole = slot;
  for (std::size_t j = (hole + 1) & mask; slots_[j].buffer != kNil; j = (j + 1) & mask) {
    const std::size_t home = home_of(slots_[j].key);
    // j may move into the hole unless its home lies cyclically in (hole, j].
    const bool home_in_between =
        hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
    if (!home_in_between) {
      slots_[hole] = slots_[j];
      hole = j;
    }
  }
  slots_[hole] = Slot{};
  --live_buffers_;
}

uint32_t TensorMap::new_entry() {
  ++live_entries_;
  if (free_entries_ != kNil) {
    const uint32_t e = free_entries_;
    free_entries_ = entries_[e].next;
    return e;
  }
  entries_.emplace_back();
  regions_.emplace_back();
  return static_cast<uint32_t>(entries_.size() - 1);
}

void TensorMap::free_entry(uint32_t e) noexcept {
  entries_[e].buffer = kNil;
  entries_[e].writer = kNoTask;
  entries_[e].next = free_entries_;
  free_entries_ = e;
  --live_entries_;
}

uint32_t TensorMap::new_buffer(uint64_t pitch) {
  uint32_t b;
  if (!free_buffers_.empty()) {
    b = free_buffers_.back();
    free_buffers_.pop_back();
    buffers_[b] = BufferIndex{};
  } else {
    b = static_cast<uint32_t>(buffers_.size());
    buffers_.emplace_back();
    free_buffers_.reserve(buffers_.capacity());  // erase_buffer pushes without allocating
  }
  buffers_[b].pitch = pitch;
  return b;
}

void TensorMap::index_entry(uint32_t e, uint32_t buffer, const Rect& rect) {
  Entry& entry = entries_[e];
  entry.rect = rect;
  entry.cls = class_of(rect);
  index_.insert(IndexKey{buffer, entry.cls, rect.row0, rect.col0, e});
  BufferIndex& index = buffers_[buffer];
  ClassStats& stats = index.classes[entry.cls];
  stats.max_rows = std::max(stats.max_rows, rect.row_last - rect.row0);
  stats.max_cols = std::max(stats.max_cols, rect.col_end - rect.col0);
  ++stats.count;
  index.class_mask |= 1u << entry.cls;
}

void TensorMap::unindex_entry(uint32_t e) noexcept {
  const Entry& entry = entries_[e];
  index_.erase(IndexKey{entry.buffer, entry.cls, entry.rect.row0, entry.rect.col0, e});
  BufferIndex& index = buffers_[entry.buffer];
  ClassStats& stats = index.classes[entry.cls];
  if (--stats.count == 0) {  // the next entries of this class start a fresh window
    stats = ClassStats{};
    index.class_mask &= ~(1u << entry.cls);
  }
}

void TensorMap::repitch(uint32_t buffer, uint64_t pitch) {
  scratch_.clear();
  const auto first = index_.lower_bound(IndexKey{buffer, 0, 0, 0, 0});
  auto last = first;
  while (last != index_.end() && last->buffer == buffer) scratch_.push_back((last++)->entry);
  index_.erase(first, last);
  BufferIndex& index = buffers_[buffer];
  index.classes = {};
  index.class_mask = 0;
  index.pitch = pitch;
  for (const uint32_t e : scratch_) index_entry(e, buffer, rect_of(regions_[e], pitch));
}

uint32_t TensorMap::record_write(const Tensor& tensor, TaskId writer) {
  const TensorRegion region = TensorRegion::of(tensor);
  if (region.empty()) return kNoEntry;
  const uint32_t fresh = new_entry();
  bool inserted = false;
  const std::size_t slot = insert_slot(tensor.buffer.addr, &inserted);
  if (inserted) {
    slots_[slot].buffer = new_buffer(pitch_of(region));
    buffers_[slots_[slot].buffer].addr = tensor.buffer.addr;
  }
  const uint32_t buffer = slots_[slot].buffer;
  regions_[fresh] = region;
  Entry& entry = entries_[fresh];
  entry.lo = region.lo;
  entry.hi = region.hi;
  entry.bounded = region.bounded;
  entry.writer = writer;
  entry.buffer = buffer;
  entry.next = kNil;
  ++buffers_[buffer].entries;
  if (!region.bounded) {
    // Overlaps everything and covers nothing provably: kept aside, reported by every lookup.
    entry.next = buffers_[buffer].unbounded_head;
    buffers_[buffer].unbounded_head = fresh;
    note_operation(0);
    return fresh;
  }
  if (buffers_[buffer].pitch == 1) {
    const uint64_t pitch = pitch_of(region);
    if (pitch > 1) repitch(buffer, pitch);  // a 1-D start, now used as a matrix
  }
  const uint64_t examined = for_each_candidate(buffer, region, [&](uint32_t e) {
    const Entry& old = entries_[e];
    if (old.lo >= region.lo && old.hi <= region.hi && region_covers(region, regions_[e])) {
      unindex_entry(e);
      --buffers_[buffer].entries;
      free_entry(e);
    }
  });
  note_operation(examined);
  index_entry(fresh, buffer, rect_of(region, buffers_[buffer].pitch));
  return fresh;
}

bool TensorMap::erase_entry(uint32_t entry, TaskId writer) noexcept {
  // A free entry has buffer == kNil (free_entry clears it), so a stale id never matches a
  // freed entry even when the writer value repeats.
  if (entry >= entries_.size()) return false;
  Entry& e = entries_[entry];
  if (e.buffer == kNil || e.writer != writer) return false;
  const uint32_t buffer = e.buffer;
  BufferIndex& index = buffers_[buffer];
  if (e.bounded) {
    unindex_entry(entry);
  } else {
    // Unbounded entries sit on a short per-buffer list (hand-made tensors only).
    uint32_t* link = &index.unbounded_head;
    while (*link != entry) link = &entries_[*link].next;
    *link = e.next;
  }
  free_entry(entry);
  if (--index.entries == 0) {
    const int64_t slot = find_slot(index.addr);
    buffers_[buffer] = BufferIndex{};
    free_buffers_.push_back(buffer);  // capacity reserved by new_buffer: cannot throw
    erase_slot(static_cast<std::size_t>(slot));
  }
  return true;
}

void TensorMap::erase_buffer(uint64_t buffer_addr) noexcept {
  const int64_t slot = find_slot(buffer_addr);
  if (slot < 0) return;
  const uint32_t buffer = slots_[static_cast<std::size_t>(slot)].buffer;
  const auto first = index_.lower_bound(IndexKey{buffer, 0, 0, 0, 0});
  auto last = first;
  while (last != index_.end() && last->buffer == buffer) free_entry((last++)->entry);
  index_.erase(first, last);
  for (uint32_t e = buffers_[buffer].unbounded_head; e != kNil;) {
    const uint32_t next = entries_[e].next;
    free_entry(e);
    e = next;
  }
  buffers_[buffer] = BufferIndex{};
  free_buffers_.push_back(buffer);  // capacity reserved by new_buffer: cannot throw
  erase_slot(static_cast<std::size_t>(slot));
}

void TensorMap::clear() noexcept {
  for (Slot& s : slots_) s = Slot{};
  index_.clear();
  entries_.clear();
  regions_.clear();
  buffers_.clear();
  free_buffers_.clear();
  free_entries_ = kNil;
  live_entries_ = 0;
  live_buffers_ = 0;
}

std::size_t TensorMap::entries_of(uint64_t buffer_addr) const noexcept {
  const int64_t slot = find_slot(buffer_addr);
  if (slot < 0) return 0;
  return buffers_[slots_[static_cast<std::size_t>(slot)].buffer].entries;
}

}  // namespace chiprt::orchestrator
