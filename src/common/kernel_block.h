// The argument block of one task as it lies in task argument storage (a graph image's args[], a
// ring slot's argument words): the layout chiprt/kernel.h describes to kernels, written by the
// orchestrators and completed by the core that runs the task.
//
//   [TaskContext: kContextWords] [tensor addresses] [scalars] [TensorView: kViewWords each]
//                                ^ args_begin (TaskRecord), args[0] of the kernel
//
// In storage the context holds the counts and block_num; block_idx is 0 and views_addr is the
// device address of the views where the storage's address is known when it is written (a ring
// slot, which a single-block task's kernel is handed in place), 0 in a graph image (position
// independent: replays copy it anywhere). A core that copies a block for a kernel (an SPMD block,
// an image task) copies the context and the arguments, never the views, and sets block_idx,
// block_num and views_addr in its copy (complete_context).
//
// Threading: pure functions over caller storage.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "chiprt/kernel.h"
#include "chiprt/task_args.h"
#include "chiprt/tensor.h"

namespace chiprt::common {

// A kernel's arguments: tensors, then scalars.
inline constexpr uint32_t kMaxKernelArgs = kMaxTaskTensors + kMaxTaskScalars;
inline constexpr uint32_t kContextWords = kernel::kTaskContextWords;
inline constexpr uint32_t kViewWords = kernel::kTensorViewWords;
static_assert(kernel::kMaxViewDims == kMaxTensorDims);
static_assert(kMaxTaskTensors <= UINT16_MAX && kMaxTaskScalars <= UINT16_MAX);

// Words of the block of a task with `tensors` tensor arguments and `scalars` scalars.
constexpr uint64_t kernel_block_words(uint64_t tensors, uint64_t scalars) {
  return kContextWords + tensors + scalars + tensors * kViewWords;
}
inline constexpr uint32_t kMaxKernelBlockWords =
    static_cast<uint32_t>(kernel_block_words(kMaxTaskTensors, kMaxTaskScalars));
// Words a core copies for a kernel: the context and the arguments.
inline constexpr uint32_t kMaxKernelCallWords = kContextWords + kMaxKernelArgs;

// The view descriptor of `t`, passed as `tag`, into `view` (kViewWords words); only its ndim
// dimensions are written, and the others cleared when `clear_unused_dims`. The tag tells the
// chip's diagnostics (args dump) how the task uses the view.
inline void encode_view(const Tensor& t, ArgTag tag, int64_t* view,
                        bool clear_unused_dims = false) noexcept {
  static_assert(offsetof(kernel::TensorView, dims) == 3 * sizeof(int64_t));
  const uint64_t fixed[3] = {t.buffer.addr, t.start_offset,
                             uint64_t{static_cast<uint8_t>(t.dtype)} | uint64_t{t.ndim} << 8 |
                                 uint64_t{static_cast<uint8_t>(t.element_bytes())} << 16 |
                                 uint64_t{static_cast<uint8_t>(tag)} << 24};
  static_assert(
      offsetof(kernel::TensorView, dtype) == 16 && offsetof(kernel::TensorView, ndim) == 17 &&
      offsetof(kernel::TensorView, element_bytes) == 18 && offsetof(kernel::TensorView, tag) == 19);
  std::memcpy(view, fixed, sizeof(fixed));
  int64_t* dims = view + 3;
  // A fixed-size clear (a few vector stores), not one sized by ndim (a library call).
  if (clear_unused_dims) std::memset(dims, 0, 2 * kMaxTensorDims * sizeof(int64_t));
  for (uint32_t d = 0; d < t.ndim; ++d) {
    std::memcpy(dims + 2 * d, &t.shape[d], sizeof(uint64_t));
    std::memcpy(dims + 2 * d + 1, &t.strides[d], sizeof(uint64_t));
  }
}

// Writes the context of a block whose args[0] is `args` (block_idx 0).
inline void write_context(int64_t* args, uint32_t tensor_count, uint32_t scalar_count,
                          uint32_t block_num, uint64_t views_addr) noexcept {
  kernel::TaskContext context{};
  context.views_addr = views_addr;
  context.block_num = block_num;
  context.tensor_count = static_cast<uint16_t>(tensor_count);
  context.scalar_count = static_cast<uint16_t>(scalar_count);
  std::memcpy(args - kContextWords, &context, sizeof(context));
}

// Writes the block of a task into storage whose args[0] is `args`: its context (kContextWords
// words before `args`), the data addresses of `tensors`, the scalars of `task_args`, the views.
// `views_addr`: the device address of args + tensor_count + scalar_count, or 0 (see above).
// `clear_unused_dims`: see encode_view.
inline void write_kernel_block(int64_t* args, Tensor* const* tensors, int tensor_count,
                               const TaskArgs& task_args, uint32_t block_num, uint64_t views_addr,
                               bool clear_unused_dims = false) noexcept {
  const int scalar_count = task_args.scalar_count();
  write_context(args, static_cast<uint32_t>(tensor_count), static_cast<uint32_t>(scalar_count),
                block_num, views_addr);
  for (int i = 0; i < tensor_count; ++i) args[i] = static_cast<int64_t>(tensors[i]->data_addr());
  int64_t* scalars = args + tensor_count;
  for (int i = 0; i < scalar_count; ++i)
    scalars[i] = static_cast<int64_t>(task_args.scalar_bits(i));
  int64_t* views = scalars + scalar_count;
  for (int i = 0; i < tensor_count; ++i) {
    encode_view(*tensors[i], task_args.tag(i), views + i * kViewWords, clear_unused_dims);
  }
}

// The context a stored block's kernel gets for SPMD block `block_idx` of `block_num`, in a copy
// of the block's context and arguments whose stored arguments (args[0]) lie at `stored_args`
// and number `arg_count` (the views stay there).
inline void complete_context(int64_t* copied_args, uint64_t stored_args, uint32_t arg_count,
                             uint32_t block_idx, uint32_t block_num) noexcept {
  kernel::TaskContext context;
  std::memcpy(&context, copied_args - kContextWords, sizeof(context));
  context.views_addr = stored_args + uint64_t{arg_count} * sizeof(int64_t);
  context.block_idx = block_idx;
  context.block_num = block_num;
  std::memcpy(copied_args - kContextWords, &context, sizeof(context));
}

}  // namespace chiprt::common
