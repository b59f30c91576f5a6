// Kernel side: what code running on a compute core sees of its task.
//
// A kernel is a function `void(int64_t* args)`, exported from a chip shared object as an
// `extern "C"` function with default visibility, under `kernel_entry` or under a symbol of its own
// that the callable names (CallableBuilder::kernel_object; one object may export several kernels),
// or handed to CallableBuilder::kernel_function in process. `args`
// holds the task's tensor arguments as device data addresses (in argument order, the predicate
// excluded), then its scalars as 64-bit patterns: tensor_arg / scalar_arg read them, as fast as a
// plain array access. The argument block around `args` tells the kernel the rest of its task,
// without it knowing its own arity:
//
//   args - kTaskContextWords   TaskContext: block index and count (TaskSpec::block_num), the
//                              tensor and scalar counts, the device address of the view table
//   args[0, tensors)           tensor data addresses (element [0,...,0] of each view)
//   args[tensors, +scalars)    scalars
//   view table                 TensorView[tensors]: dtype, rank, element bytes, argument tag,
//                              buffer address, start offset, shape and strides of each tensor
//                              argument's view
//
// so block_idx(args), block_num(args), tensor_count(args), scalar_count(args) and view(args, i)
// work for any arity, and one kernel may serve tasks of different arities under one func_id.
// The context always sits right before args[0]; the view table is wherever views_addr says (the
// runtime keeps it in the task's argument storage, after the scalars, and does not copy it per
// block). Only the first `ndim` entries of TensorView::dims are meaningful.
//
// On the simulated chip device addresses are host addresses, so a kernel (and only code that
// runs where a kernel runs, such as an executor of an exported graph, GraphExport::kernel_args)
// dereferences them; host code never does.
//
// Lifetime and threading: `args`, the argument block around it and the memory it points to are
// valid for the duration of the call; the kernel runs on one core (one thread) and may not call
// the Worker (ReentrantCall). The argument block is read-only to the kernel (the parts of a MIX
// task may share one). The helpers are stateless, header-only and
// include nothing but <cstdint>, so a kernel object links nothing of the host.
#pragma once

#include <cstdint>

namespace chiprt {

// Entry point of a kernel. `kernel_entry` is the symbol looked up when the callable names none.
using KernelEntry = void (*)(int64_t* args);
inline constexpr char kKernelSymbol[] = "kernel_entry";

}  // namespace chiprt

namespace chiprt::kernel {

// The index-th argument as a pointer to T (a tensor argument: its data address).
template <class T>
inline T* tensor_arg(int64_t* args, int index) {
  return reinterpret_cast<T*>(static_cast<uintptr_t>(args[index]));
}
// The index-th argument as a scalar of type T (at most 8 bytes, bit-cast as TaskArgs::scalar
// stored it).
template <class T>
inline T scalar_arg(int64_t* args, int index) {
  T value;
  static_assert(sizeof(T) <= 8);
  __builtin_memcpy(&value, &args[index], sizeof(T));
  return value;
}
// The task context, the kTaskContextWords 64-bit words right before args[0].
struct TaskContext {
  uint64_t views_addr;    // device address of TensorView[tensor_count]
  uint32_t block_idx;     // this call's SPMD block, in [0, block_num)
  uint32_t block_num;     // the task's blocks (TaskSpec::block_num, >= 1)
  uint16_t tensor_count;  // tensor arguments: args[0, tensor_count)
  uint16_t scalar_count;  // scalars: args[tensor_count, tensor_count + scalar_count)
  uint32_t reserved;      // 0
};
static_assert(sizeof(TaskContext) == 24 && alignof(TaskContext) == 8);
inline constexpr int kTaskContextWords = static_cast<int>(sizeof(TaskContext) / sizeof(int64_t));

// Dimensions a view descriptor holds (chiprt::kMaxTensorDims).
inline constexpr int kMaxViewDims = 5;

// The view of one tensor argument (chiprt::Tensor as the kernel sees it), 104 bytes. Element
// (i0, i1, ...) lies at byte buffer_addr + (start_offset + i0 * stride(0) + i1 * stride(1) + ...)
// * element_bytes; args[i] is the address of element [0,...,0].
struct TensorView {
  struct Dim {
    uint64_t shape;   // elements along the dimension
    uint64_t stride;  // elements between neighbours along it (0: broadcast)
  };
  uint64_t buffer_addr;   // device address of the buffer the view lies in
  uint64_t start_offset;  // elements from buffer_addr to element [0,...,0]
  uint8_t dtype;          // a chiprt::DataType value (chiprt/types.h)
  uint8_t ndim;           // dimensions, in [1, kMaxViewDims]
  uint8_t element_bytes;  // bytes per element
  uint8_t tag;            // how the task uses it: a chiprt::ArgTag value (chiprt/task_args.h)
  uint8_t reserved[4];
  Dim dims[kMaxViewDims];  // [0, ndim) meaningful, the rest unspecified

  uint64_t data_addr() const noexcept { return buffer_addr + start_offset * element_bytes; }
  uint64_t shape(int d) const noexcept { return dims[d].shape; }
  uint64_t stride(int d) const noexcept { return dims[d].stride; }
  uint64_t numel() const noexcept {
    uint64_t n = 1;
    for (int d = 0; d < ndim; ++d) n *= dims[d].shape;
    return n;
  }
  bool is_contiguous() const noexcept {  // row-major without gaps (ignores size-1 dimensions)
    uint64_t expected = 1;
    for (int d = ndim; d-- > 0;) {
      if (dims[d].shape != 1 && dims[d].stride != expected) return false;
      expected *= dims[d].shape;
    }
    return true;
  }
  // Element offset (from buffer_addr, in elements) of element (index...), leading dimensions
  // first; fewer indices than ndim address the first element of the remaining dimensions.
  template <class... Index>
  uint64_t element_offset(Index... index) const noexcept {
    static_assert(sizeof...(Index) <= kMaxViewDims);
    uint64_t offset = start_offset;
    int d = 0;
    ((offset += static_cast<uint64_t>(index) * dims[d++].stride), ...);
    return offset;
  }
  // Pointer to element (index...).
  template <class T, class... Index>
  T* element(Index... index) const noexcept {
    return reinterpret_cast<T*>(
        static_cast<uintptr_t>(buffer_addr + element_offset(index...) * element_bytes));
  }
};
static_assert(sizeof(TensorView) == 104 && alignof(TensorView) == 8);
inline constexpr int kTensorViewWords = static_cast<int>(sizeof(TensorView) / sizeof(int64_t));

// The context of the task `args` belongs to (a copy: 24 bytes, read without aliasing concerns).
inline TaskContext task_context(const int64_t* args) noexcept {
  TaskContext context;
  __builtin_memcpy(&context, args - kTaskContextWords, sizeof(context));
  return context;
}
inline uint32_t block_idx(const int64_t* args) noexcept {
  return task_context(args).block_idx;
}
inline uint32_t block_num(const int64_t* args) noexcept {
  return task_context(args).block_num;
}
inline int tensor_count(const int64_t* args) noexcept {
  return task_context(args).tensor_count;
}
inline int scalar_count(const int64_t* args) noexcept {
  return task_context(args).scalar_count;
}
// The view of tensor argument `index` (in [0, tensor_count(args))).
inline const TensorView& view(const int64_t* args, int index) noexcept {
  return reinterpret_cast<const TensorView*>(
      static_cast<uintptr_t>(task_context(args).views_addr))[index];
}

// The predicate test of a predicated task (TaskArgs::when): the first `bytes` (1, 2, 4 or 8) at
// device address `addr`, read as one unsigned integer, are not zero. The chip's dispatcher applies
// it when the task is dispatched, after its producers completed, and skips the kernel when it
// fails (zero-filling the task's runtime outputs); an executor of an exported graph
// (ExportedTask::predicate_addr / predicate_bytes, skip_fill_addr / skip_fill_bytes) applies the
// same test and fill to run the graph as the chip would.
inline bool predicate_holds(uint64_t addr, uint32_t bytes) noexcept {
  const auto* p = reinterpret_cast<const uint8_t*>(static_cast<uintptr_t>(addr));
  switch (bytes) {
    case 1:
      return *p != 0;
    case 2:
      return *reinterpret_cast<const uint16_t*>(p) != 0;
    case 4:
      return *reinterpret_cast<const uint32_t*>(p) != 0;
    default:
      return *reinterpret_cast<const uint64_t*>(p) != 0;
  }
}

}  // namespace chiprt::kernel
