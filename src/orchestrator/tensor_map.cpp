#include "orchestrator/tensor_map.h"

#include <algorithm>
#include <bit>
#include <optional>

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

// Same start, element size, shape and strides: the same bytes (and region_covers agrees).
bool same_view(const Tensor& t, uint64_t element_bytes, const TensorRegion& r) noexcept {
  if (t.start_offset != r.start_offset || t.ndim != r.ndim || element_bytes != r.element_bytes) {
    return false;
  }
  for (uint32_t d = 0; d < r.ndim; ++d) {
    if (t.shape[d] != r.shape[d] || t.strides[d] != r.strides[d]) return false;
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
  // Whole arrays: cheaper than a loop; dimensions past ndim are never read.
  r.shape = tensor.shape;
  r.strides = tensor.strides;
  if (r.element_bytes == 0 || tensor.ndim > static_cast<uint32_t>(kMaxTensorDims)) {
    r.bounded = false;  // not a valid Tensor: nothing can be proved about it
    return r;
  }
  if (r.ndim == 0) return r;  // no elements
  uint64_t last = r.start_offset;
  bool overflow = false;
  for (uint32_t d = 0; d < r.ndim; ++d) {
    if (r.shape[d] == 0) return r;  // no elements, whatever the other dimensions say
    uint64_t span;
    overflow |= __builtin_mul_overflow(r.shape[d] - 1, r.strides[d], &span) ||
                __builtin_add_overflow(last, span, &last);
  }
  if (overflow || __builtin_add_overflow(last, 1, &last) ||
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

TensorMap::TensorMap() : slots_(64), cells_(64) {}

uint64_t TensorMap::pitch_of(const TensorRegion& region) noexcept {
  if (!region.bounded || region.empty()) return 1;
  const uint64_t eb = region.element_bytes;
  uint64_t outer = 0;
  for (uint32_t d = 0; d < region.ndim; ++d) {
    if (region.shape[d] > 1) outer = std::max(outer, region.strides[d] * eb);  // <= extent
  }
  if (outer <= eb) return 1;  // 1-D contiguous (or a single element): plain byte rows
  const Rect r = query_of(region, outer).rect;
  // Useful only when a row holds part of the region, not all of every row.
  return r.col_end - r.col0 < outer ? outer : 1;
}

namespace {

// One pass over a view's dimensions (innermost first) computing TensorMap's Query: the byte
// extent exactly as TensorRegion::of does, the rectangle, and whether the view's bytes are the
// whole rectangle. `Query` is TensorMap::Query; `shape`/`strides` hold `ndim` dimensions.
// Kept out of line so that the fast path below stays small.
template <class Query>
[[gnu::noinline]] Query describe_general(uint64_t start_offset, uint32_t ndim,
                                         const uint64_t* shape, const uint64_t* strides,
                                         uint64_t eb, uint64_t pitch) noexcept {
  Query q;
  if (eb == 0 || ndim > static_cast<uint32_t>(kMaxTensorDims)) {
    q.bounded = false;  // not a valid Tensor: nothing can be proved about it
    return q;
  }
  // A byte is lo + sum(x_d * stride_d * eb) + b (b < eb). Dimensions whose byte stride is a
  // multiple of the pitch ("row" dimensions) only change the row, so the column (byte mod pitch)
  // lies within the span of the other ("column") dimensions from lo's column. The view is exactly
  // its rectangle when, innermost first, column dimensions pack elements densely and then row
  // dimensions step through consecutive rows (other orders are left to the exact search).
  uint64_t last = start_offset;  // element offset of the last element
  uint64_t width = eb;           // bytes a row of the view can span
  uint64_t next_col = eb;        // byte stride the next dense column dimension must have
  uint64_t next_row = 1;         // row stride the next dense row dimension must have
  bool in_rows = false;
  bool exact = true;
  bool overflow = false;
  bool empty = ndim == 0;
  for (uint32_t d = ndim; d-- > 0;) {
    const uint64_t n = shape[d];
    const uint64_t s = strides[d];
    if (n <= 1 || s == 0) {  // no extent, or a broadcast repeating elements
      empty |= n == 0;
      continue;
    }
    uint64_t span;
    if (__builtin_mul_overflow(n - 1, s, &span) || __builtin_add_overflow(last, span, &last)) {
      overflow = true;
      continue;
    }
    const uint64_t byte_stride = s * eb;  // wraps only when the extent overflows (checked below)
    const bool row_dim =
        pitch > 1 && (byte_stride == pitch || (byte_stride > pitch && byte_stride % pitch == 0));
    if (!row_dim) {
      width += (n - 1) * byte_stride;
      if (in_rows || byte_stride != next_col) {
        exact = false;
      } else {
        next_col = byte_stride * n;
      }
    } else {
      in_rows = true;
      if ((byte_stride == pitch ? 1 : byte_stride / pitch) != next_row) {
        exact = false;
      } else {
        next_row *= n;
      }
    }
  }
  if (empty) {
    q.empty = true;  // no elements: lo == hi == 0
    return q;
  }
  if (overflow || __builtin_add_overflow(last, 1, &last) ||
      __builtin_mul_overflow(last, eb, &q.hi) || __builtin_mul_overflow(start_offset, eb, &q.lo)) {
    q.bounded = false;
    q.lo = q.hi = 0;
    return q;
  }
  auto& r = q.rect;
  if (pitch == 1) {  // rows are bytes; exact when the bytes are dense
    r.row0 = q.lo;
    r.row_last = q.hi - 1;
    r.col_end = 1;
    q.exact = exact;
    return q;
  }
  r.row0 = q.lo / pitch;
  r.row_last = (q.hi - 1) / pitch;
  r.col0 = q.lo - r.row0 * pitch;
  if (width > pitch || r.col0 + width > pitch) {
    r.col0 = 0;  // wraps into the next row: any column
    r.col_end = pitch;
    return q;
  }
  r.col_end = r.col0 + width;
  q.exact = exact;
  return q;
}

// describe_general with a fast path for 1-D runs and 2-D views with a contiguous last dimension
// whose rows are one pitch apart (rows, tiles) or that form one run.
template <class Query>
Query describe_view(uint64_t start_offset, uint32_t ndim, const uint64_t* shape,
                    const uint64_t* strides, uint64_t eb, uint64_t pitch) noexcept {
  if (eb != 0 && (ndim == 1 || ndim == 2) && strides[ndim - 1] == 1) {
    Query q;
    const uint64_t cols = shape[ndim - 1];
    const uint64_t rows = ndim == 2 ? shape[0] : 1;
    const uint64_t row_stride = ndim == 2 ? strides[0] : 0;
    if (rows == 0 || cols == 0) {
      q.empty = true;
      return q;
    }
    const bool one_run = rows == 1 || row_stride == 0;
    uint64_t end;
    if (!__builtin_mul_overflow(rows - 1, row_stride, &end) &&
        !__builtin_add_overflow(end, start_offset, &end) &&
        !__builtin_add_overflow(end, cols, &end) && !__builtin_mul_overflow(end, eb, &end) &&
        (pitch == 1 || (eb < pitch && (one_run || row_stride * eb == pitch)))) {
      q.lo = start_offset * eb;  // below end
      q.hi = end;
      auto& r = q.rect;
      if (pitch == 1) {
        r.row0 = q.lo;
        r.row_last = q.hi - 1;
        r.col_end = 1;
        q.exact = one_run || row_stride == cols;
        return q;
      }
      const uint64_t width = cols * eb;
      // Tile grids often have power-of-two rows: a shift instead of a division.
      r.row0 = (pitch & (pitch - 1)) == 0 ? q.lo >> std::countr_zero(pitch) : q.lo / pitch;
      r.col0 = q.lo - r.row0 * pitch;
      if (width > pitch || r.col0 + width > pitch) {
        r.row_last = (q.hi - 1) / pitch;
        r.col0 = 0;
        r.col_end = pitch;
        return q;
      }
      // Each row fits in its pitch row, and rows are one pitch apart (or there is one run), so
      // the last byte, lo + (rows - 1) * pitch + width - 1, lies rows - 1 pitch rows below lo's.
      r.row_last = r.row0 + (one_run ? 0 : rows - 1);
      r.col_end = r.col0 + width;
      q.exact = true;
      return q;
    }
  }
  return describe_general<Query>(start_offset, ndim, shape, strides, eb, pitch);
}

}  // namespace

TensorMap::Query TensorMap::query_of(const Tensor& tensor, uint64_t pitch) noexcept {
  return describe_view<Query>(tensor.start_offset, tensor.ndim, tensor.shape.data(),
                              tensor.strides.data(), element_size(tensor.dtype), pitch);
}

TensorMap::Query TensorMap::query_of(const TensorRegion& region, uint64_t pitch) noexcept {
  if (!region.bounded) {
    Query q;
    q.bounded = false;
    return q;
  }
  return describe_view<Query>(region.start_offset, region.ndim, region.shape.data(),
                              region.strides.data(), region.element_bytes, pitch);
}

bool TensorMap::may_overlap(uint32_t entry, const Tensor& tensor) const noexcept {
  return regions_may_overlap(regions_[entry], TensorRegion::of(tensor));
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
  peak_buffers_ = std::max(peak_buffers_, live_buffers_);
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

std::size_t TensorMap::find_cell(uint32_t key, uint64_t row, uint64_t col) const noexcept {
  const std::size_t mask = cells_.size() - 1;
  for (std::size_t i = cell_hash(key, row, col) & mask;; i = (i + 1) & mask) {
    const Cell& cell = cells_[i];
    if (cell.head == kNil || (cell.row == row && cell.col == col && cell.key == key)) return i;
  }
}

void TensorMap::grow_cells() {
  std::vector<Cell> old(cells_.size() * 2);
  old.swap(cells_);
  const std::size_t mask = cells_.size() - 1;
  for (const Cell& c : old) {
    if (c.head == kNil) continue;
    std::size_t i = cell_hash(c.key, c.row, c.col) & mask;
    while (cells_[i].head != kNil) i = (i + 1) & mask;
    cells_[i] = c;
    entries_[c.head].cell = static_cast<uint32_t>(i);
  }
}

std::size_t TensorMap::cell_slot(uint32_t key, uint64_t row, uint64_t col) {
  std::size_t i = find_cell(key, row, col);
  if (cells_[i].head == kNil) {
    if ((live_cells_ + 1) * kCellLoadInverse > cells_.size()) {
      grow_cells();
      i = find_cell(key, row, col);
    }
    cells_[i].row = row;
    cells_[i].col = col;
    cells_[i].key = key;
    ++live_cells_;
    peak_cells_ = std::max(peak_cells_, live_cells_);
  }
  return i;
}

void TensorMap::erase_cell(std::size_t cell) noexcept {
  // Backward-shift deletion, as for the buffer slots.
  const std::size_t mask = cells_.size() - 1;
  std::size_t hole = cell;
  for (std::size_t j = (hole + 1) & mask; cells_[j].head != kNil; j = (j + 1) & mask) {
    const std::size_t home = cell_hash(cells_[j].key, cells_[j].row, cells_[j].col) & mask;
    const bool home_in_between =
        hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
    if (!home_in_between) {
      cells_[hole] = cells_[j];
      entries_[cells_[hole].head].cell = static_cast<uint32_t>(hole);
      hole = j;
    }
  }
  cells_[hole] = Cell{};
  --live_cells_;
}

uint32_t TensorMap::new_entry() {
  ++live_entries_;
  if (free_entries_ != kNil) {
    const uint32_t e = free_entries_;
    free_entries_ = entries_[e].group_next;
    return e;
  }
  entries_.emplace_back();
  regions_.emplace_back();
  return static_cast<uint32_t>(entries_.size() - 1);
}

void TensorMap::free_entry(uint32_t e) noexcept {
  Entry& entry = entries_[e];
  live_reader_entries_ -= entry.reads;
  live_readers_ -= entry.reads ? entry.task_count : 0;
  entry.buffer = kNil;
  entry.task_count = 0;
  entry.reads = false;
  entry.group_next = free_entries_;
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

uint32_t TensorMap::group_for(const BufferIndex& index, uint32_t kind, uint32_t row_shift,
                              uint32_t col_shift) const noexcept {
  const uint32_t last_group = index.last_group[kind];
  const Group& last = index.groups[last_group];
  if (last.count != 0 && last.row_shift == row_shift && last.col_shift == col_shift) {
    return last_group;
  }
  const uint32_t base = kind * kGroups;
  const uint32_t in_use = (index.group_mask >> base) & kWriterGroupMask;  // this kind's groups
  for (uint32_t mask = in_use; mask != 0; mask &= mask - 1) {
    const auto g = base + static_cast<uint32_t>(__builtin_ctz(mask));
    if (index.groups[g].row_shift == row_shift && index.groups[g].col_shift == col_shift) return g;
  }
  if (in_use != kWriterGroupMask) return base + static_cast<uint32_t>(__builtin_ctz(~in_use));
  // Every group is in use with another size: the smallest cells that hold the entry, else the
  // largest cells (the entry then crosses cell borders, which the group's window allows for).
  const uint32_t none = base + kGroups;
  uint32_t best = none;
  uint32_t largest = base;
  for (uint32_t g = base; g < base + kGroups; ++g) {
    const Group& group = index.groups[g];
    const uint32_t area = group.row_shift + group.col_shift;
    if (group.row_shift >= row_shift && group.col_shift >= col_shift &&
        (best == none ||
         area < uint32_t{index.groups[best].row_shift} + index.groups[best].col_shift)) {
      best = g;
    }
    if (area > uint32_t{index.groups[largest].row_shift} + index.groups[largest].col_shift) {
      largest = g;
    }
  }
  return best != none ? best : largest;
}

void TensorMap::index_entry(uint32_t e, uint32_t buffer) {
  Entry& entry = entries_[e];
  const Rect& rect = entry.rect;
  BufferIndex& index = buffers_[buffer];
  const uint64_t rows = rect.row_last - rect.row0;
  const uint64_t cols = rect.col_end - 1 - rect.col0;
  const auto [row_shift, col_shift] = cell_shifts(rect);
  const uint32_t kind = entry.reads ? kReaderKind : kWriterKind;
  const uint32_t g = pick_group(index, kind, row_shift, col_shift);
  index.last_group[kind] = g;
  Group& group = index.groups[g];
  if (group.count == 0) {
    group = Group{};
    group.row_shift = static_cast<uint8_t>(row_shift);
    group.col_shift = static_cast<uint8_t>(col_shift);
    index.group_mask |= 1u << g;
  }
  ++group.count;
  group.max_rows = std::max(group.max_rows, rows);
  group.max_cols = std::max(group.max_cols, cols);
  const uint64_t cell_row = rect.row0 >> group.row_shift;
  const uint64_t cell_col = rect.col0 >> group.col_shift;
  group.crossing_rows += (rect.row_last >> group.row_shift) != cell_row;
  group.crossing_cols += ((rect.col_end - 1) >> group.col_shift) != cell_col;
  entry.group = static_cast<uint8_t>(g);
  // Appended: a group lists its entries oldest first, so lookups that walk it report tasks in
  // submission order.
  entry.group_next = kNil;
  entry.group_prev = group.tail;
  if (group.tail != kNil) {
    entries_[group.tail].group_next = e;
  } else {
    group.head = e;
  }
  group.tail = e;
  const std::size_t cell = cell_slot(buffer * kKindGroups + g, cell_row, cell_col);
  Entry& linked = entries_[e];  // `entry` stays valid: cell_slot does not touch entries_' storage
  const uint32_t head = cells_[cell].head;
  linked.cell = static_cast<uint32_t>(cell);
  linked.cell_prev = kNil;
  linked.cell_next = head;
  if (head != kNil) entries_[head].cell_prev = e;
  cells_[cell].head = e;
}

void TensorMap::unindex_entry(uint32_t e) noexcept {
  const Entry& entry = entries_[e];
  BufferIndex& index = buffers_[entry.buffer];
  Group& group = index.groups[entry.group];
  if (entry.group_prev != kNil) {
    entries_[entry.group_prev].group_next = entry.group_next;
  } else {
    group.head = entry.group_next;
  }
  if (entry.group_next != kNil) {
    entries_[entry.group_next].group_prev = entry.group_prev;
  } else {
    group.tail = entry.group_prev;
  }
  const Rect& rect = entry.rect;
  const uint64_t cell_row = rect.row0 >> group.row_shift;
  const uint64_t cell_col = rect.col0 >> group.col_shift;
  if (entry.cell_prev != kNil) {
    entries_[entry.cell_prev].cell_next = entry.cell_next;
  } else if (entry.cell_next != kNil) {  // the cell's head: the next entry takes its place
    cells_[entry.cell].head = entry.cell_next;
    entries_[entry.cell_next].cell = entry.cell;
  } else {  // the cell's only entry
    erase_cell(entry.cell);
  }
  if (entry.cell_next != kNil) entries_[entry.cell_next].cell_prev = entry.cell_prev;
  group.crossing_rows -= (rect.row_last >> group.row_shift) != cell_row;
  group.crossing_cols -= ((rect.col_end - 1) >> group.col_shift) != cell_col;
  if (--group.count == 0) {  // the next entries of this group start afresh
    group = Group{};
    index.group_mask &= ~(1u << entry.group);
  }
}

void TensorMap::unindex_buffer(uint32_t buffer) {
  BufferIndex& index = buffers_[buffer];
  scratch_.clear();
  for (uint32_t mask = index.group_mask; mask != 0; mask &= mask - 1) {
    const auto g = static_cast<uint32_t>(__builtin_ctz(mask));
    const Group& group = index.groups[g];
    for (uint32_t e = group.head; e != kNil; e = entries_[e].group_next) {
      const Entry& entry = entries_[e];
      if (entry.cell_prev == kNil) erase_cell(entry.cell);  // one erase per cell
      scratch_.push_back(e);
    }
  }
  index.groups = {};
  index.group_mask = 0;
}

void TensorMap::repitch(uint32_t buffer, uint64_t pitch) {
  ++layout_epoch_;
  unindex_buffer(buffer);
  buffers_[buffer].pitch = pitch;
  for (const uint32_t e : scratch_) {
    const Query query = query_of(regions_[e], pitch);
    entries_[e].rect = query.rect;
    entries_[e].exact = query.exact;
    index_entry(e, buffer);
  }
}

uint32_t TensorMap::index_for_record(const Tensor& tensor) {
  uint32_t buffer = buffer_of(tensor.buffer.addr);
  if (buffer == kNil || (buffers_[buffer].pitch == 1 && tensor.ndim > 1)) {
    // The buffer's first record picks its pitch; a 1-D start used as a matrix is re-indexed.
    const TensorRegion region = TensorRegion::of(tensor);
    if (region.empty()) return buffer;
    if (buffer == kNil) {
      bool inserted = false;
      const std::size_t slot = insert_slot(tensor.buffer.addr, &inserted);
      buffer = new_buffer(pitch_of(region));
      slots_[slot].buffer = buffer;
      cache_valid_ = false;  // it may remember this address as absent
      ++layout_epoch_;
      buffers_[buffer].addr = tensor.buffer.addr;
    } else if (region.bounded) {
      const uint64_t pitch = pitch_of(region);
      if (pitch > 1) repitch(buffer, pitch);
    }
  }
  return buffer;
}

uint32_t TensorMap::record_write(const Tensor& tensor, TaskId writer) {
  const uint32_t buffer = index_for_record(tensor);
  if (buffer == kNil) return kNoEntry;
  return record_at(tensor, writer, buffer, query_of(tensor, buffers_[buffer].pitch));
}

bool TensorMap::usable(const Prepared& prepared, const Tensor& tensor) const noexcept {
  // Not stale, and not a 1-D indexed buffer that this record may re-pitch.
  return prepared.epoch == layout_epoch_ && prepared.buffer != kNil &&
         !(buffers_[prepared.buffer].pitch == 1 && tensor.ndim > 1);
}

uint32_t TensorMap::record_write(const Tensor& tensor, TaskId writer, const Prepared& prepared) {
  if (!usable(prepared, tensor)) return record_write(tensor, writer);
  return record_at(tensor, writer, prepared.buffer, prepared.query,
                   prepared.met_none && prepared.recorded == recorded_);
}

uint32_t TensorMap::record_read(const Tensor& tensor, TaskId reader) {
  const uint32_t buffer = index_for_record(tensor);
  if (buffer == kNil) return kNoEntry;
  return record_read_at(tensor, reader, buffer, query_of(tensor, buffers_[buffer].pitch));
}

uint32_t TensorMap::record_read(const Tensor& tensor, TaskId reader, const Prepared& prepared) {
  if (!usable(prepared, tensor)) return record_read(tensor, reader);
  return record_read_at(tensor, reader, prepared.buffer, prepared.query);
}

uint32_t TensorMap::record_read_at(const Tensor& tensor, TaskId reader, uint32_t buffer,
                                   const Query& query) {
  if (query.empty) return kNoEntry;
  ++recorded_;
  note_operation(0);  // nothing to search: readers drop nothing
  if (query.bounded) {
    const uint32_t shared = shared_reader_entry(tensor, reader, buffer, query);
    if (shared != kNil) {
      Entry& entry = entries_[shared];
      if (entry.tasks[entry.task_count - 1] != reader) {
        entry.tasks[entry.task_count++] = reader;
        entry.seq = recorded_;  // writes made before this reader do not count for it
        ++live_readers_;
      }
      return shared;
    }
  }
  return add_entry(tensor, reader, buffer, query, true);
}

uint32_t TensorMap::shared_reader_entry(const Tensor& tensor, TaskId reader, uint32_t buffer,
                                        const Query& query) const noexcept {
  // Identical views of a buffer have the same rectangle, so their entries share a cell (when
  // they joined the same group); a new entry goes to its cell's head, so the newest come first.
  constexpr int kProbed = 4;
  const BufferIndex& index = buffers_[buffer];
  const Rect& q = query.rect;
  const auto [row_shift, col_shift] = cell_shifts(q);
  const uint32_t g = pick_group(index, kReaderKind, row_shift, col_shift);
  const Group& group = index.groups[g];
  if (group.count == 0) return kNil;
  const uint64_t eb = element_size(tensor.dtype);
  uint32_t e =
      cell_head(buffer * kKindGroups + g, q.row0 >> group.row_shift, q.col0 >> group.col_shift);
  for (int probed = 0; e != kNil && probed < kProbed; ++probed) {
    const Entry& entry = entries_[e];
    if (entry.lo == query.lo && entry.hi == query.hi && entry.rect.row0 == q.row0 &&
        entry.rect.row_last == q.row_last && entry.rect.col0 == q.col0 &&
        entry.rect.col_end == q.col_end && same_view(tensor, eb, regions_[e])) {
      // The newest entry of the view: older ones are full (or were when it was made). One that
      // later writes partly overwrote takes no new reader (they did not wait for it).
      if (entry.tasks[entry.task_count - 1] == reader) return e;
      return entry.task_count < kEntryReaders && entry.overwritten == 0 ? e : kNil;
    }
    e = entry.cell_next;
  }
  return kNil;
}

uint32_t TensorMap::add_entry(const Tensor& tensor, TaskId task, uint32_t buffer,
                              const Query& query, bool reads) {
  const uint32_t fresh = new_entry();
  live_reader_entries_ += reads;
  live_readers_ += reads;
  entries_[fresh].tasks[0] = task;
  entries_[fresh].task_count = 1;
  entries_[fresh].seq = recorded_;
  entries_[fresh].overwritten = 0;
  ++buffers_[buffer].entries;
  if (!query.bounded) {
    // Overlaps everything and covers nothing provably: kept aside, reported by every lookup of
    // its kind.
    regions_[fresh] = TensorRegion::of(tensor);
    Entry& entry = entries_[fresh];
    uint32_t& head = buffers_[buffer].unbounded_head[reads ? kReaderKind : kWriterKind];
    entry.lo = entry.hi = 0;
    entry.bounded = false;
    entry.exact = false;
    entry.reads = reads;
    entry.buffer = buffer;
    entry.group_prev = kNil;
    entry.group_next = head;
    if (head != kNil) entries_[head].group_prev = fresh;
    head = fresh;
    return fresh;
  }
  TensorRegion& region = regions_[fresh];
  region.start_offset = tensor.start_offset;
  region.ndim = tensor.ndim;  // at most kMaxTensorDims: the view is bounded
  region.element_bytes = static_cast<uint32_t>(element_size(tensor.dtype));
  region.shape = tensor.shape;
  region.strides = tensor.strides;
  region.lo = query.lo;
  region.hi = query.hi;
  region.bounded = true;
  Entry& entry = entries_[fresh];
  entry.lo = query.lo;
  entry.hi = query.hi;
  entry.rect = query.rect;
  entry.bounded = true;
  entry.exact = query.exact;
  entry.reads = reads;
  entry.buffer = buffer;
  index_entry(fresh, buffer);
  return fresh;
}

uint32_t TensorMap::record_at(const Tensor& tensor, TaskId writer, uint32_t buffer,
                              const Query& query, bool none_met) {
  if (query.empty) return kNoEntry;  // only for a buffer already known: it keeps its entries
  ++recorded_;
  if (!query.bounded) {
    note_operation(0);
    return add_entry(tensor, writer, buffer, query, false);
  }
  const uint64_t eb = element_size(tensor.dtype);
  // A writer entry for the identical view is kept and takes the new writer: same place in the
  // index, no unlink and relink. Other entries (of both kinds) inside the extent are dropped when
  // region_covers proves it (it accepts anything inside a dense region's extent); the full region
  // is built only then.
  uint32_t same = kNil;
  if (none_met) {
    note_operation(0);
  } else {
    std::optional<TensorRegion> whole;  // the tensor's region, built on first need
    // Reader entries this exact write lies inside (they may be overwritten piece by piece), and
    // the newest writer entry the write may overlap.
    std::array<uint32_t, kMaxPieceReaders> containing;
    uint32_t containing_count = 0;
    uint64_t newest_writer = 0;
    const uint64_t examined =
        for_each_candidate(buffer, query, buffers_[buffer].group_mask, [&](uint32_t e) {
          const Entry& old = entries_[e];
          if (!old.reads) newest_writer = std::max(newest_writer, old.seq);
          if (old.lo < query.lo || old.hi > query.hi) {
            if (old.reads && query.exact && old.exact && rect_inside(query.rect, old.rect) &&
                containing_count < containing.size()) {
              containing[containing_count++] = e;
            }
            return;
          }
          const bool identical =
              old.lo == query.lo && old.hi == query.hi && same_view(tensor, eb, regions_[e]);
          if (identical && same == kNil && !old.reads) {
            same = e;
            return;
          }
          if (!identical && !whole) whole.emplace(TensorRegion::of(tensor));
          if (identical || region_covers(*whole, regions_[e])) {
            unindex_entry(e);
            --buffers_[buffer].entries;
            free_entry(e);
          }
        });
    note_operation(examined);
    if (buffers_[buffer].unbounded_head[kWriterKind] == kNil) {
      count_overwritten(buffer, query.rect, newest_writer, containing.data(), containing_count);
    }
  }
  if (same != kNil) {
    entries_[same].tasks[0] = writer;
    entries_[same].seq = recorded_;
    return same;
  }
  return add_entry(tensor, writer, buffer, query, false);
}

bool TensorMap::ordered_by_reader(uint32_t buffer, const Query& query, const Tensor& tensor,
                                  uint32_t writer) const noexcept {
  const uint32_t readers = buffers_[buffer].group_mask & ~kWriterGroupMask;
  if (readers == 0) return false;
  const Entry& w = entries_[writer];
  bool ordered = false;
  for_each_candidate(buffer, query, readers, [&](uint32_t r) {
    const Entry& reader = entries_[r];
    if (ordered || reader.seq <= w.seq || reader.lo > w.lo || reader.hi < w.hi) return;
    ordered = ((query.exact && reader.exact) || may_overlap(r, tensor)) &&
              region_covers(regions_[r], regions_[writer]);
  });
  return ordered;
}

void TensorMap::count_overwritten(uint32_t buffer, const Rect& write, uint64_t newest_writer,
                                  const uint32_t* readers, uint32_t count) noexcept {
  const uint64_t bytes = rect_bytes(write);
  for (uint32_t k = 0; k < count; ++k) {
    Entry& entry = entries_[readers[k]];
    // A writer entry made after the readers that this write may overlap: the bytes may have
    // been counted already.
    if (newest_writer > entry.seq) continue;
    entry.overwritten += bytes;
    if (entry.overwritten < rect_bytes(entry.rect)) continue;
    unindex_entry(readers[k]);
    --buffers_[buffer].entries;
    free_entry(readers[k]);
  }
}

bool TensorMap::erase_entry(uint32_t entry, TaskId task) noexcept {
  // A free entry has buffer == kNil (free_entry clears it), so a stale id never matches a
  // freed entry even when the task value repeats.
  if (entry >= entries_.size()) return false;
  Entry& e = entries_[entry];
  if (e.buffer == kNil) return false;
  uint32_t k = 0;
  while (k < e.task_count && e.tasks[k] != task) ++k;
  if (k == e.task_count) return false;
  if (e.task_count > 1) {  // a reader entry keeps its other readers, in order
    std::copy(e.tasks.begin() + k + 1, e.tasks.begin() + e.task_count, e.tasks.begin() + k);
    --e.task_count;
    --live_readers_;
    return true;
  }
  const uint32_t buffer = e.buffer;
  BufferIndex& index = buffers_[buffer];
  if (e.bounded) {
    unindex_entry(entry);
  } else {
    if (e.group_prev != kNil) {
      entries_[e.group_prev].group_next = e.group_next;
    } else {
      index.unbounded_head[e.reads ? kReaderKind : kWriterKind] = e.group_next;
    }
    if (e.group_next != kNil) entries_[e.group_next].group_prev = e.group_prev;
  }
  free_entry(entry);
  if (--index.entries == 0) {
    cache_valid_ = false;
    ++layout_epoch_;
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
  cache_valid_ = false;
  ++layout_epoch_;
  BufferIndex& index = buffers_[buffer];
  for (uint32_t mask = index.group_mask; mask != 0; mask &= mask - 1) {
    const auto g = static_cast<uint32_t>(__builtin_ctz(mask));
    const Group& group = index.groups[g];
    for (uint32_t e = group.head; e != kNil;) {
      const Entry& entry = entries_[e];
      const uint32_t next = entry.group_next;
      if (entry.cell_prev == kNil) erase_cell(entry.cell);  // one erase per cell
      free_entry(e);
      e = next;
    }
  }
  for (const uint32_t head : index.unbounded_head) {
    for (uint32_t e = head; e != kNil;) {
      const uint32_t next = entries_[e].group_next;
      free_entry(e);
      e = next;
    }
  }
  buffers_[buffer] = BufferIndex{};
  free_buffers_.push_back(buffer);  // capacity reserved by new_buffer: cannot throw
  erase_slot(static_cast<std::size_t>(slot));
}

namespace {

// The table size clear() keeps for a build that held at most `peak` items at `load_inverse` slots
// per item: the table as it is unless it is more than kShrinkFactor times what that build needed.
constexpr std::size_t kShrinkFactor = 8;
constexpr std::size_t kMinTableSize = 64;
std::size_t table_size_after(std::size_t size, std::size_t peak, std::size_t load_inverse) {
  const std::size_t needed = std::bit_ceil(std::max(kMinTableSize, (peak + 1) * load_inverse));
  return size > kShrinkFactor * needed ? needed : size;
}

}  // namespace

void TensorMap::clear() noexcept {
  // Clearing costs the tables' size, not the graph's: after one large graph, every later small
  // build would pay for it (a one-task build took ~0.5 ms after a 20k-task one). A table much
  // larger than the build that ends needed is cut down to that build's size (a smaller resize
  // keeps the capacity and allocates nothing); a larger build grows it again.
  slots_.resize(table_size_after(slots_.size(), peak_buffers_, 2));
  cells_.resize(table_size_after(cells_.size(), peak_cells_, kCellLoadInverse));
  peak_buffers_ = 0;
  peak_cells_ = 0;
  for (Slot& s : slots_) s = Slot{};
  for (Cell& c : cells_) c = Cell{};
  entries_.clear();
  regions_.clear();
  buffers_.clear();
  free_buffers_.clear();
  free_entries_ = kNil;
  live_entries_ = 0;
  live_reader_entries_ = 0;
  live_readers_ = 0;
  live_buffers_ = 0;
  live_cells_ = 0;
  cache_valid_ = false;
  ++layout_epoch_;
}

uint64_t TensorMap::retained_bytes() const noexcept {
  return capacity_bytes(slots_) + capacity_bytes(cells_) + capacity_bytes(entries_) +
         capacity_bytes(regions_) + capacity_bytes(buffers_) + capacity_bytes(free_buffers_) +
         capacity_bytes(scratch_);
}

std::size_t TensorMap::entries_of(uint64_t buffer_addr) const noexcept {
  const int64_t slot = find_slot(buffer_addr);
  if (slot < 0) return 0;
  return buffers_[slots_[static_cast<std::size_t>(slot)].buffer].entries;
}

}  // namespace chiprt::orchestrator
