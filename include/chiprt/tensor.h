// Tensor: a typed, strided view over one device buffer.
//
// A Tensor names a device buffer, a start offset and up to kMaxTensorDims dimensions, each with a
// shape and a stride counted in elements. It is plain data (trivially copyable, no ownership): the
// buffer belongs to whoever allocated it (the user through Worker::malloc, or the runtime for
// outputs of tasks). `owner_task`, `version` and `owner_run` are filled in by the orchestrator for
// outputs: a runtime output is valid only in the run that produced it, and a task of a later run
// that names one is refused (InvalidDevicePointer) by its owner_run.
// Every view is bounds-checked when constructed and throws chiprt::Error(ViewOutOfBounds) naming
// the dimension; a Tensor that exists is always inside its buffer. Methods are const and
// thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>

#include "chiprt/types.h"

namespace chiprt {

inline constexpr int kMaxTensorDims = 5;

struct Tensor {
  DeviceBuffer buffer;
  uint64_t start_offset = 0;  // elements from buffer.addr to element [0,...,0]
  uint32_t ndim = 0;
  DataType dtype = DataType::F32;
  std::array<uint64_t, kMaxTensorDims> shape{};
  std::array<uint64_t, kMaxTensorDims> strides{};  // elements; 0 allowed (broadcast)
  TaskId owner_task = kNoTask;  // task that produced it (runtime outputs), else kNoTask
  uint32_t version = 0;
  // Run that produced it (runtime outputs: a number no other run of the process has), else 0.
  uint32_t owner_run = 0;

  // A contiguous row-major tensor over `buffer` starting at element `start_offset`.
  // Throws ViewOutOfBounds if it does not fit, InvalidArgument for a bad rank or dtype.
  static Tensor make(DeviceBuffer buffer, std::span<const uint64_t> shape, DataType dtype,
                     uint64_t start_offset = 0);
  static Tensor make(DeviceBuffer buffer, std::initializer_list<uint64_t> shape, DataType dtype,
                     uint64_t start_offset = 0) {
    return make(buffer, std::span<const uint64_t>(shape.begin(), shape.size()), dtype,
                start_offset);
  }

  // Sub-block of the same rank: `shape` elements per dim starting at `offsets`.
  Tensor view(std::span<const uint64_t> shape, std::span<const uint64_t> offsets) const;
  Tensor view(std::initializer_list<uint64_t> shape,
              std::initializer_list<uint64_t> offsets) const {
    return view(std::span<const uint64_t>(shape.begin(), shape.size()),
                std::span<const uint64_t>(offsets.begin(), offsets.size()));
  }
  // Elements start, start+step, ... < end of dimension `dim`.
  Tensor slice(uint32_t dim, uint64_t start, uint64_t end, uint64_t step = 1) const;
  // New shape with the same element count; requires a contiguous tensor.
  Tensor reshape(std::span<const uint64_t> shape) const;
  Tensor reshape(std::initializer_list<uint64_t> shape) const {
    return reshape(std::span<const uint64_t>(shape.begin(), shape.size()));
  }
  Tensor transpose(uint32_t dim_a, uint32_t dim_b) const;
  // `order` is a permutation of [0, ndim).
  Tensor permute(std::span<const uint32_t> order) const;

  uint64_t numel() const noexcept;
  std::size_t element_bytes() const noexcept { return element_size(dtype); }
  bool is_contiguous() const noexcept;
  // Device address of element [0,...,0].
  uint64_t data_addr() const noexcept { return buffer.addr + start_offset * element_bytes(); }
  // Smallest byte range [lo, hi) relative to buffer.addr that covers every element; {0,0} if empty.
  void byte_extent(uint64_t* lo, uint64_t* hi) const noexcept;
  std::string to_string() const;
};

}  // namespace chiprt
