// The argument block a kernel gets (chiprt/kernel.h, common/kernel_block.h): the task context
// right before args[0], the arguments, and one view descriptor per tensor argument after them.
#include "common/kernel_block.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "chiprt/kernel.h"
#include "chiprt/task_args.h"
#include "chiprt/tensor.h"

namespace chiprt {
namespace {

constexpr uint64_t kBufferAddr = 0x10000;  // never dereferenced

Tensor matrix(uint64_t rows, uint64_t cols, DataType dtype = DataType::F32) {
  return Tensor::make(DeviceBuffer{kBufferAddr, 1 << 20}, {rows, cols}, dtype);
}

void expect_view_of(const kernel::TensorView& v, const Tensor& t) {
  EXPECT_EQ(v.buffer_addr, t.buffer.addr);
  EXPECT_EQ(v.start_offset, t.start_offset);
  EXPECT_EQ(v.dtype, static_cast<uint8_t>(t.dtype));
  EXPECT_EQ(v.ndim, t.ndim);
  EXPECT_EQ(v.element_bytes, t.element_bytes());
  for (uint32_t d = 0; d < t.ndim; ++d) {
    EXPECT_EQ(v.shape(static_cast<int>(d)), t.shape[d]) << "dim " << d;
    EXPECT_EQ(v.stride(static_cast<int>(d)), t.strides[d]) << "dim " << d;
  }
  EXPECT_EQ(v.data_addr(), t.data_addr());
}

// A block laid out as an orchestrator writes it, read back through the kernel-side helpers.
struct Block {
  std::vector<int64_t> words;
  int64_t* args = nullptr;

  Block(TaskArgs& task, uint32_t block_num) {
    Tensor* tensors[kMaxTaskTensors];
    for (int i = 0; i < task.tensor_count(); ++i) tensors[i] = &task.tensor(i);
    words.assign(common::kernel_block_words(task.tensor_count(), task.scalar_count()), -1);
    args = words.data() + common::kContextWords;
    const int arg_count = task.tensor_count() + task.scalar_count();
    common::write_kernel_block(args, tensors, task.tensor_count(), task, block_num,
                               reinterpret_cast<uintptr_t>(args + arg_count));
  }
};

TEST(KernelBlock, LayoutSizesAreFixed) {
  EXPECT_EQ(sizeof(kernel::TaskContext), 24u);
  EXPECT_EQ(kernel::kTaskContextWords, 3);
  EXPECT_EQ(sizeof(kernel::TensorView), 104u);
  EXPECT_EQ(common::kernel_block_words(2, 1), 3u + 2 + 1 + 2 * 13);
  EXPECT_EQ(common::kMaxKernelBlockWords, 3u + 32 + 16 * 13);
}

TEST(KernelBlock, TheContextSitsRightBeforeTheArguments) {
  TaskArgs task;
  task.in(matrix(4, 8)).out({3}, DataType::I32).scalar(int64_t{42}).scalar(2.5f);
  Block b(task, 6);
  EXPECT_EQ(kernel::block_idx(b.args), 0u);
  EXPECT_EQ(kernel::block_num(b.args), 6u);
  EXPECT_EQ(kernel::tensor_count(b.args), 2);
  EXPECT_EQ(kernel::scalar_count(b.args), 2);
  const kernel::TaskContext c = kernel::task_context(b.args);
  EXPECT_EQ(c.views_addr, reinterpret_cast<uintptr_t>(b.args + 4));
  EXPECT_EQ(c.reserved, 0u);
  // The arguments are where they always were.
  EXPECT_EQ(static_cast<uint64_t>(b.args[0]), task.tensor(0).data_addr());
  EXPECT_EQ(kernel::scalar_arg<int64_t>(b.args, 2), 42);
  EXPECT_EQ(kernel::scalar_arg<float>(b.args, 3), 2.5f);
  expect_view_of(kernel::view(b.args, 0), task.tensor(0));
  EXPECT_EQ(kernel::view(b.args, 1).dtype, static_cast<uint8_t>(DataType::I32));
  EXPECT_EQ(kernel::view(b.args, 1).element_bytes, 4);
}

TEST(KernelBlock, ViewsDescribeStridedTransposedAndSlicedViews) {
  const Tensor base = matrix(16, 32, DataType::F16);
  const Tensor tile = base.view({4, 8}, {3, 5});   // strided: row stride 32, offset 3*32+5
  const Tensor transposed = base.transpose(0, 1);  // strides {1, 32}
  const Tensor sliced = base.slice(1, 2, 30, 4);   // every 4th column from 2: stride 4
  TaskArgs task;
  task.in(tile).in(transposed).inout(sliced);
  Block b(task, 1);
  ASSERT_EQ(kernel::tensor_count(b.args), 3);

  const kernel::TensorView& v0 = kernel::view(b.args, 0);
  expect_view_of(v0, tile);
  EXPECT_EQ(v0.start_offset, 3u * 32 + 5);
  EXPECT_EQ(v0.stride(0), 32u);
  EXPECT_EQ(v0.dtype, static_cast<uint8_t>(DataType::F16));
  EXPECT_EQ(v0.element_bytes, 2);
  EXPECT_FALSE(v0.is_contiguous());
  EXPECT_EQ(v0.numel(), 32u);
  // Element (2, 7) of the tile is element (5, 12) of the buffer.
  EXPECT_EQ(v0.element_offset(2, 7), 5u * 32 + 12);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(v0.element<uint16_t>(2, 7)),
            kBufferAddr + (5u * 32 + 12) * 2);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(v0.element<uint16_t>()), tile.data_addr());

  const kernel::TensorView& v1 = kernel::view(b.args, 1);
  expect_view_of(v1, transposed);
  EXPECT_EQ(v1.shape(0), 32u);
  EXPECT_EQ(v1.stride(0), 1u);
  EXPECT_EQ(v1.stride(1), 32u);
  EXPECT_EQ(v1.element_offset(3, 2), 2u * 32 + 3);

  const kernel::TensorView& v2 = kernel::view(b.args, 2);
  expect_view_of(v2, sliced);
  EXPECT_EQ(v2.start_offset, 2u);
  EXPECT_EQ(v2.shape(1), 7u);
  EXPECT_EQ(v2.stride(1), 4u);

  TaskArgs whole;
  whole.in(matrix(4, 8));
  EXPECT_TRUE(kernel::view(Block(whole, 1).args, 0).is_contiguous());
}

// Only ndim dimensions are written: storage beyond them keeps what it held.
TEST(KernelBlock, OnlyTheViewsDimensionsAreWritten) {
  TaskArgs task;
  task.in(Tensor::make(DeviceBuffer{kBufferAddr, 4096}, {10}, DataType::U8));
  Block b(task, 1);
  const int64_t* view_words = b.args + 1;
  EXPECT_EQ(view_words[3], 10);  // dims[0].shape
  EXPECT_EQ(view_words[4], 1);   // dims[0].stride
  for (int w = 5; w < static_cast<int>(common::kViewWords); ++w) EXPECT_EQ(view_words[w], -1);
}

// A core (or an exported graph's executor) copies the context and the arguments for one block
// and completes the context: block index and count, and where the views stayed.
TEST(KernelBlock, ACopiedContextNamesItsBlockAndTheStoredViews) {
  TaskArgs task;
  task.in(matrix(2, 2)).scalar(int64_t{9});
  Block stored(task, 4);
  int64_t copy[common::kMaxKernelCallWords];
  std::copy(stored.args - common::kContextWords, stored.args + 2, copy);
  int64_t* args = copy + common::kContextWords;
  common::complete_context(args, reinterpret_cast<uintptr_t>(stored.args), 2, 3, 4);
  EXPECT_EQ(kernel::block_idx(args), 3u);
  EXPECT_EQ(kernel::block_num(args), 4u);
  EXPECT_EQ(kernel::scalar_count(args), 1);
  EXPECT_EQ(&kernel::view(args, 0), &kernel::view(stored.args, 0));
}

}  // namespace
}  // namespace chiprt
