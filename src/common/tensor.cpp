#include "chiprt/tensor.h"

#include <limits>
#include <sstream>

#include "chiprt/status.h"

namespace chiprt {

// owner_run sits in what was padding after `version`: task arguments (TaskArgs, which the ring
// variant copies to the chip) keep their layout.
static_assert(sizeof(Tensor) == 128);

namespace {

constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();

uint64_t saturating_mul(uint64_t a, uint64_t b) noexcept {
  uint64_t r;
  return __builtin_mul_overflow(a, b, &r) ? kU64Max : r;
}
uint64_t saturating_add(uint64_t a, uint64_t b) noexcept {
  uint64_t r;
  return __builtin_add_overflow(a, b, &r) ? kU64Max : r;
}

// Loop bound for the noexcept accessors, which must stay inside the arrays for hand-made tensors.
constexpr uint32_t rank_bound(uint32_t ndim) noexcept {
  return ndim < static_cast<uint32_t>(kMaxTensorDims) ? ndim : kMaxTensorDims;
}

std::string format_dims(const uint64_t* dims, uint32_t n) {
  if (n > static_cast<uint32_t>(kMaxTensorDims)) n = kMaxTensorDims;
  std::string s = "[";
  for (uint32_t d = 0; d < n; ++d) {
    if (d) s += ", ";
    s += std::to_string(dims[d]);
  }
  s += ']';
  return s;
}

std::string format_dims(std::span<const uint64_t> dims) {
  return format_dims(dims.data(), static_cast<uint32_t>(dims.size()));
}

void check_rank(std::size_t rank, const char* what) {
  if (rank < 1 || rank > static_cast<std::size_t>(kMaxTensorDims)) {
    throw Error(StatusCode::InvalidArgument, std::string(what) + ": rank " + std::to_string(rank) +
                                                 " is outside [1, " +
                                                 std::to_string(kMaxTensorDims) + "]");
  }
}

void check_dtype(DataType dtype, const char* what) {
  if (element_size(dtype) == 0) {
    throw Error(StatusCode::InvalidArgument,
                std::string(what) + ": dtype value " + std::to_string(static_cast<int>(dtype)) +
                    " is not a DataType (valid: 0.." + std::to_string(kDataTypeCount - 1) + ")");
  }
}

// A Tensor is plain data and may have been filled in by hand; the view operations index the
// fixed-size shape/stride arrays by ndim, so validate it first.
void check_source(const Tensor& t, const char* what) {
  check_rank(t.ndim, what);
  check_dtype(t.dtype, what);
}

// Contiguous row-major strides for `shape`; returns false if the element count overflows.
bool contiguous_strides(const uint64_t* shape, uint32_t ndim, uint64_t* strides, uint64_t* numel) {
  uint64_t running = 1;
  bool overflow = false;
  for (uint32_t i = ndim; i-- > 0;) {
    strides[i] = running;
    overflow |= __builtin_mul_overflow(running, shape[i], &running);
  }
  *numel = running;
  return !overflow;
}

// Index (in elements from buffer.addr) one past the last element, or start_offset when empty.
// Returns false on overflow.
bool element_end(const Tensor& t, uint64_t* end) {
  uint64_t last = t.start_offset;
  for (uint32_t d = 0; d < t.ndim; ++d) {
    if (t.shape[d] == 0) {
      *end = t.start_offset;
      return true;
    }
  }
  for (uint32_t d = 0; d < t.ndim; ++d) {
    uint64_t span;
    if (__builtin_mul_overflow(t.shape[d] - 1, t.strides[d], &span) ||
        __builtin_add_overflow(last, span, &last)) {
      return false;
    }
  }
  return !__builtin_add_overflow(last, t.ndim ? 1 : 0, end);
}

// Throws ViewOutOfBounds unless every element of `t` lies inside its buffer. Views of a tensor
// without a buffer (an Out placeholder before submit) have nothing to check against; make() always
// checks, so a tensor over a null buffer must be empty.
void check_fits_buffer(const Tensor& t, const char* what, bool placeholder_ok = true) {
  if (placeholder_ok && t.buffer.empty()) return;
  uint64_t end = 0;
  uint64_t end_bytes = 0;
  if (!element_end(t, &end) || __builtin_mul_overflow(end, t.element_bytes(), &end_bytes)) {
    throw Error(StatusCode::ViewOutOfBounds,
                std::string(what) + ": tensor of shape " + format_dims(t.shape.data(), t.ndim) +
                    " at element offset " + std::to_string(t.start_offset) +
                    " overflows 64-bit addressing");
  }
  if (end_bytes > t.buffer.size) {
    throw Error(StatusCode::ViewOutOfBounds,
                std::string(what) + ": tensor of shape " + format_dims(t.shape.data(), t.ndim) +
                    " " + std::string(dtype_name(t.dtype)) + " at element offset " +
                    std::to_string(t.start_offset) + " needs " + std::to_string(end_bytes) +
                    " bytes but the buffer holds " + std::to_string(t.buffer.size));
  }
}

}  // namespace

Tensor Tensor::make(DeviceBuffer buffer, std::span<const uint64_t> shape, DataType dtype,
                    uint64_t start_offset) {
  check_rank(shape.size(), "Tensor::make");
  check_dtype(dtype, "Tensor::make");
  Tensor t;
  t.buffer = buffer;
  t.start_offset = start_offset;
  t.ndim = static_cast<uint32_t>(shape.size());
  t.dtype = dtype;
  for (uint32_t d = 0; d < t.ndim; ++d) t.shape[d] = shape[d];
  uint64_t numel = 0;
  uint64_t bytes = 0;
  if (!contiguous_strides(t.shape.data(), t.ndim, t.strides.data(), &numel) ||
      __builtin_mul_overflow(numel, t.element_bytes(), &bytes)) {
    throw Error(StatusCode::ViewOutOfBounds, "Tensor::make: shape " + format_dims(shape) +
                                                 " has more elements than 64-bit addressing");
  }
  check_fits_buffer(t, "Tensor::make", /*placeholder_ok=*/false);
  return t;
}

namespace {

// Tensor::view with every check in order, each failure throwing its own error. The fast path in
// Tensor::view falls back to it whenever any check might fail, so the errors are defined here.
[[gnu::noinline]] Tensor checked_view(const Tensor& t, std::span<const uint64_t> new_shape,
                                      std::span<const uint64_t> offsets) {
  const uint32_t ndim = t.ndim;
  const auto& shape = t.shape;
  const auto& strides = t.strides;
  check_source(t, "view");
  if (new_shape.size() != ndim || offsets.size() != ndim) {
    throw Error(StatusCode::InvalidArgument,
                "view: shape has " + std::to_string(new_shape.size()) + " dims and offsets " +
                    std::to_string(offsets.size()) + ", the tensor has rank " +
                    std::to_string(ndim) + " (a view keeps the rank; use reshape to change it)");
  }
  Tensor v = t;
  for (uint32_t d = 0; d < ndim; ++d) {
    uint64_t end;
    if (__builtin_add_overflow(offsets[d], new_shape[d], &end) || end > shape[d]) {
      throw Error(StatusCode::ViewOutOfBounds, "view dim " + std::to_string(d) + ": offset " +
                                                   std::to_string(offsets[d]) + " + size " +
                                                   std::to_string(new_shape[d]) +
                                                   " exceeds extent " + std::to_string(shape[d]));
    }
    uint64_t advance;
    if (__builtin_mul_overflow(offsets[d], strides[d], &advance) ||
        __builtin_add_overflow(v.start_offset, advance, &v.start_offset)) {
      throw Error(StatusCode::ViewOutOfBounds, "view dim " + std::to_string(d) + ": offset " +
                                                   std::to_string(offsets[d]) +
                                                   " overflows 64-bit addressing");
    }
    v.shape[d] = new_shape[d];
  }
  check_fits_buffer(v, "view");
  return v;
}

}  // namespace

Tensor Tensor::view(std::span<const uint64_t> new_shape, std::span<const uint64_t> offsets) const {
  // One pass accepting exactly the non-empty views of a buffer-backed tensor that checked_view
  // accepts, with the same result: the sizes fit the extents, and start + sum((size - 1) *
  // stride) + 1 elements fit the buffer without overflow (the same integers checked_view bounds).
  // Anything else (a failing check, an empty view, a placeholder) takes checked_view.
  // Every return names `v`, so it is built in place of the result (no copy on return).
  Tensor v = *this;
  const uint32_t n = ndim;
  const uint64_t eb = element_size(dtype);
  if (n - 1 < static_cast<uint32_t>(kMaxTensorDims) && eb != 0 && new_shape.size() == n &&
      offsets.size() == n && !buffer.empty()) {
    uint64_t start = start_offset;
    uint64_t reach = 0;  // sum over dims of (size - 1) * stride
    bool fallback = false;
    for (uint32_t d = 0; d < n; ++d) {
      const uint64_t size = new_shape[d];
      const uint64_t offset = offsets[d];
      uint64_t end;
      uint64_t advance;
      uint64_t span;
      fallback |= size == 0 || __builtin_add_overflow(offset, size, &end) || end > shape[d] ||
                  __builtin_mul_overflow(offset, strides[d], &advance) ||
                  __builtin_add_overflow(start, advance, &start) ||
                  __builtin_mul_overflow(size - 1, strides[d], &span) ||
                  __builtin_add_overflow(reach, span, &reach);
      v.shape[d] = size;
    }
    uint64_t end_bytes;
    if (!fallback && !__builtin_add_overflow(start, reach, &reach) &&
        !__builtin_add_overflow(reach, 1, &reach) &&
        !__builtin_mul_overflow(reach, eb, &end_bytes) && end_bytes <= buffer.size) {
      v.start_offset = start;
      return v;
    }
  }
  v = checked_view(*this, new_shape, offsets);
  return v;
}

Tensor Tensor::slice(uint32_t dim, uint64_t start, uint64_t end, uint64_t step) const {
  check_source(*this, "slice");
  if (dim >= ndim) {
    throw Error(StatusCode::InvalidArgument, "slice: dim " + std::to_string(dim) +
                                                 " does not exist in a tensor of rank " +
                                                 std::to_string(ndim));
  }
  if (step == 0) {
    throw Error(StatusCode::InvalidArgument,
                "slice dim " + std::to_string(dim) + ": step must be at least 1");
  }
  if (end > shape[dim]) {
    throw Error(StatusCode::ViewOutOfBounds, "slice dim " + std::to_string(dim) + ": end " +
                                                 std::to_string(end) + " exceeds extent " +
                                                 std::to_string(shape[dim]));
  }
  if (start > end) {
    throw Error(StatusCode::ViewOutOfBounds, "slice dim " + std::to_string(dim) + ": start " +
                                                 std::to_string(start) + " is after end " +
                                                 std::to_string(end));
  }
  Tensor v = *this;
  const uint64_t count = (end - start) / step + ((end - start) % step != 0);
  v.shape[dim] = count;
  // A dimension of at most one element never advances, so its stride is irrelevant; keeping the
  // old one avoids a spurious overflow from a step that would jump past the buffer.
  uint64_t advance = 0;
  if ((count > 1 && __builtin_mul_overflow(strides[dim], step, &v.strides[dim])) ||
      (count > 0 && (__builtin_mul_overflow(start, strides[dim], &advance) ||
                     __builtin_add_overflow(start_offset, advance, &v.start_offset)))) {
    throw Error(StatusCode::ViewOutOfBounds,
                "slice dim " + std::to_string(dim) + ": start " + std::to_string(start) + " step " +
                    std::to_string(step) + " overflows 64-bit addressing");
  }
  check_fits_buffer(v, "slice");
  return v;
}

Tensor Tensor::reshape(std::span<const uint64_t> new_shape) const {
  check_source(*this, "reshape");
  check_rank(new_shape.size(), "reshape");
  if (!is_contiguous()) {
    throw Error(StatusCode::InvalidArgument,
                "reshape of a non-contiguous tensor (shape " + format_dims(shape.data(), ndim) +
                    ", strides " + format_dims(strides.data(), ndim) +
                    "): copy it into a contiguous buffer first (a task with an Out argument)");
  }
  Tensor v = *this;
  v.ndim = static_cast<uint32_t>(new_shape.size());
  v.shape.fill(0);
  v.strides.fill(0);
  for (uint32_t d = 0; d < v.ndim; ++d) v.shape[d] = new_shape[d];
  uint64_t count = 0;
  const bool counted = contiguous_strides(v.shape.data(), v.ndim, v.strides.data(), &count);
  if (!counted || count != numel()) {
    throw Error(StatusCode::InvalidArgument,
                "reshape: shape " + format_dims(new_shape) + " has " +
                    (counted ? std::to_string(count) : std::string("more than 2^64")) +
                    " elements, the tensor " + format_dims(shape.data(), ndim) + " has " +
                    std::to_string(numel()) + "; the element count must not change");
  }
  return v;
}

Tensor Tensor::transpose(uint32_t dim_a, uint32_t dim_b) const {
  check_source(*this, "transpose");
  if (dim_a >= ndim || dim_b >= ndim) {
    throw Error(StatusCode::InvalidArgument, "transpose: dims " + std::to_string(dim_a) + " and " +
                                                 std::to_string(dim_b) + " must both be < rank " +
                                                 std::to_string(ndim));
  }
  Tensor v = *this;
  std::swap(v.shape[dim_a], v.shape[dim_b]);
  std::swap(v.strides[dim_a], v.strides[dim_b]);
  return v;
}

Tensor Tensor::permute(std::span<const uint32_t> order) const {
  check_source(*this, "permute");
  if (order.size() != ndim) {
    throw Error(StatusCode::InvalidArgument, "permute: order has " + std::to_string(order.size()) +
                                                 " entries, the tensor has rank " +
                                                 std::to_string(ndim));
  }
  bool seen[kMaxTensorDims] = {};
  Tensor v = *this;
  for (uint32_t i = 0; i < ndim; ++i) {
    const uint32_t src = order[i];
    if (src >= ndim || seen[src]) {
      throw Error(StatusCode::InvalidArgument,
                  "permute: order[" + std::to_string(i) + "]=" + std::to_string(src) +
                      (src >= ndim ? " is not < rank " + std::to_string(ndim)
                                   : std::string(" repeats a dimension")) +
                      "; order must be a permutation of [0, rank)");
    }
    seen[src] = true;
    v.shape[i] = shape[src];
    v.strides[i] = strides[src];
  }
  return v;
}

uint64_t Tensor::numel() const noexcept {
  if (ndim == 0) return 0;
  uint64_t n = 1;
  for (uint32_t d = 0; d < rank_bound(ndim); ++d) {
    n = saturating_mul(n, shape[d]);
  }
  return n;
}

bool Tensor::is_contiguous() const noexcept {
  uint64_t expected = 1;
  for (uint32_t i = rank_bound(ndim); i-- > 0;) {
    if (shape[i] == 0) return true;  // no elements: any layout is as good as packed
    if (shape[i] != 1 && strides[i] != expected) return false;
    expected = saturating_mul(expected, shape[i]);
  }
  return true;
}

void Tensor::byte_extent(uint64_t* lo, uint64_t* hi) const noexcept {
  *lo = 0;
  *hi = 0;
  if (numel() == 0) return;
  uint64_t last = start_offset;
  for (uint32_t d = 0; d < rank_bound(ndim); ++d) {
    last = saturating_add(last, saturating_mul(shape[d] - 1, strides[d]));
  }
  const uint64_t esize = element_bytes();
  *lo = saturating_mul(start_offset, esize);
  *hi = saturating_mul(saturating_add(last, 1), esize);
}

std::string Tensor::to_string() const {
  std::ostringstream os;
  os << "Tensor(" << dtype_name(dtype) << ", shape=" << format_dims(shape.data(), ndim)
     << ", strides=" << format_dims(strides.data(), ndim) << ", offset=" << start_offset
     << ", buffer=0x" << std::hex << buffer.addr << std::dec << "+" << buffer.size << "B";
  if (owner_task != kNoTask) os << ", owner_task=" << owner_task << ", version=" << version;
  if (owner_run != 0) os << ", run=#" << owner_run;
  os << ")";
  return os.str();
}

}  // namespace chiprt
