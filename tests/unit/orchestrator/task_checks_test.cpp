// The allocation-free acceptance predicates of task_checks.h (task_spec_accepted,
// task_args_accepted) against the full checks: they may accept only what check_task_spec /
// check_task_args accept, and they accept the common valid submissions (the fast path a ring
// orchestrator takes per task). RunMemory: the memory a run's tasks may name.
#include "orchestrator/task_checks.h"

#include <gtest/gtest.h>

#include <random>

#include "chiprt/tensor.h"

namespace chiprt::orchestrator {
namespace {

constexpr DeviceBuffer kBuffer{0x10000, 4096};
constexpr DeviceBuffer kHeap{0x800000, 1 << 16};
constexpr uint32_t kRun = 2;

// A run whose only argument is kBuffer, with heap kHeap.
RunMemory run_memory() {
  TaskArgs run_args;
  run_args.inout(Tensor::make(kBuffer, {kBuffer.size / 4}, DataType::F32));
  return RunMemory(run_args, kHeap, kRun);
}

KernelTable make_kernels() {
  KernelTable kernels{};
  kernels[1] = KernelInfo{true, CoreType::AIV, ArgSignature{}};
  kernels[2] = KernelInfo{true, CoreType::AIC, ArgSignature::of({ArgTag::In, ArgTag::InOut}, 1)};
  kernels[3] = KernelInfo{true, CoreType::MIX, ArgSignature{}};
  return kernels;
}

TEST(TaskChecksAccepted, CommonSubmissionsTakeTheFastPath) {
  const KernelTable kernels = make_kernels();
  const Tensor grid = Tensor::make(kBuffer, {32, 32}, DataType::F32);
  TaskArgs args;
  args.inout(grid.view({2, 2}, {4, 6})).in(grid.view({2, 2}, {4, 4})).scalar(uint64_t{7});
  args.after(3);
  ArgList list;
  ASSERT_TRUE(read_args(args, &list));
  EXPECT_EQ(list.tensor_count, 2);
  EXPECT_EQ(list.tags[0], ArgTag::InOut);
  EXPECT_EQ(list.tensors[1], &args.tensor(1));
  EXPECT_TRUE(task_spec_accepted(kernels, TaskSpec::kernel(1, CoreType::AIV), args, list));
  EXPECT_TRUE(task_args_accepted(run_memory(), 10, args, list));

  TaskArgs signed_args;
  signed_args.in(grid).inout(grid.view({1, 32}, {3, 0})).scalar(1.0f);
  ASSERT_TRUE(read_args(signed_args, &list));
  EXPECT_TRUE(task_spec_accepted(kernels, TaskSpec::kernel(2, CoreType::AIC), signed_args, list));

  TaskArgs outputs;
  outputs.out({16, 16}, DataType::F16);
  ASSERT_TRUE(read_args(outputs, &list));
  EXPECT_TRUE(task_args_accepted(run_memory(), 0, outputs, list));
}

TEST(TaskChecksAccepted, LeavesEveryRejectionToTheFullChecks) {
  const KernelTable kernels = make_kernels();
  const Tensor grid = Tensor::make(kBuffer, {32, 32}, DataType::F32);
  ArgList list;
  TaskArgs args;
  args.in(grid);
  ASSERT_TRUE(read_args(args, &list));
  // Wrong core, unknown func id, block count, MIX (always left to the full check).
  EXPECT_FALSE(task_spec_accepted(kernels, TaskSpec::kernel(1, CoreType::AIC), args, list));
  EXPECT_FALSE(task_spec_accepted(kernels, TaskSpec::kernel(9, CoreType::AIV), args, list));
  EXPECT_FALSE(task_spec_accepted(kernels, TaskSpec::kernel(1, CoreType::AIV, 0), args, list));
  EXPECT_FALSE(task_spec_accepted(kernels, TaskSpec::kernel(2, CoreType::AIC), args, list));
  TaskSpec mix;
  mix.core = CoreType::MIX;
  mix.mix.aic = 3;
  EXPECT_FALSE(task_spec_accepted(kernels, mix, args, list));
  // A dependency on a later task, a view past its buffer, a predicate.
  TaskArgs dep = args;
  dep.after(5);
  ASSERT_TRUE(read_args(dep, &list));
  EXPECT_FALSE(task_args_accepted(RunMemory(), 5, dep, list));
  TaskArgs outside;
  outside.in(grid);
  outside.tensor(0).start_offset = 1;
  ASSERT_TRUE(read_args(outside, &list));
  EXPECT_FALSE(task_args_accepted(RunMemory(), 0, outside, list));
  EXPECT_FALSE(check_task_args(RunMemory(), 0, nullptr, outside).is_ok());
  TaskArgs predicated;
  predicated.in(grid).when(Tensor::make(kBuffer, {1}, DataType::I32));
  ASSERT_TRUE(read_args(predicated, &list));
  EXPECT_FALSE(task_args_accepted(RunMemory(), 0, predicated, list));
  EXPECT_TRUE(check_task_args(RunMemory(), 0, nullptr, predicated).is_ok());
  // Memory outside the run's arguments and heap, a runtime output of another run.
  TaskArgs moved;
  moved.in(Tensor::make(DeviceBuffer{kBuffer.addr + kBuffer.size, 64}, {16}, DataType::F32));
  ASSERT_TRUE(read_args(moved, &list));
  EXPECT_TRUE(task_args_accepted(RunMemory(), 0, moved, list));  // nothing bounded
  EXPECT_FALSE(task_args_accepted(run_memory(), 0, moved, list));
  EXPECT_EQ(check_task_args(run_memory(), 0, nullptr, moved).code(),
            StatusCode::InvalidDevicePointer);
  TaskArgs stale;
  stale.in(Tensor::make(DeviceBuffer{kHeap.addr, 64}, {16}, DataType::F32));
  stale.tensor(0).owner_run = kRun + 1;
  ASSERT_TRUE(read_args(stale, &list));
  EXPECT_FALSE(task_args_accepted(run_memory(), 0, stale, list));
  EXPECT_EQ(check_task_args(run_memory(), 0, nullptr, stale).code(),
            StatusCode::InvalidDevicePointer);
}

TEST(RunMemory, AdmitsBytesInsideOneArgumentBufferOrTheHeap) {
  const DeviceBuffer a{0x10000, 256};
  const DeviceBuffer a_tail{0x10080, 256};  // overlaps a: one allocation, viewed twice
  const DeviceBuffer b{0x10180, 128};       // adjacent to a_tail: another allocation
  TaskArgs run_args;
  run_args.in(Tensor::make(b, {32}, DataType::F32))
      .inout(Tensor::make(a, {64}, DataType::F32))
      .no_dep(Tensor::make(a_tail, {64}, DataType::F32))
      .out({1 << 20}, DataType::F32);  // a declaration names no memory
  const RunMemory memory(run_args, kHeap, kRun);
  const Tensor t = Tensor::make(DeviceBuffer{0x10000, 1 << 20}, {1}, DataType::U8);
  EXPECT_TRUE(memory.admits(t, 0, 256));
  EXPECT_TRUE(memory.admits(t, 0, 0x180));   // a and a_tail merged
  EXPECT_FALSE(memory.admits(t, 0, 0x181));  // into b: two allocations
  EXPECT_TRUE(memory.admits(t, 0x180, 0x200));
  EXPECT_FALSE(memory.admits(t, 0x180, 0x201));
  const Tensor in_heap = Tensor::make(kHeap, {kHeap.size}, DataType::U8);
  EXPECT_TRUE(memory.admits(in_heap, 0, kHeap.size));
  EXPECT_FALSE(memory.admits(in_heap, 0, kHeap.size + 1));
  const Tensor below = Tensor::make(DeviceBuffer{0x1000, 64}, {64}, DataType::U8);
  EXPECT_FALSE(memory.admits(below, 0, 64));
  EXPECT_TRUE(memory.admits(below, 0, 0));  // an empty view names no memory
  const Status refused = memory.refusal("task 3 (func_id 1) arg 0", below, 0, 64);
  EXPECT_EQ(refused.code(), StatusCode::InvalidDevicePointer);
  EXPECT_NE(refused.message().find("task 3 (func_id 1) arg 0: tensor"), std::string::npos);
  EXPECT_NE(refused.message().find("[0x1000, 0x1040)"), std::string::npos);

  Tensor output = in_heap;
  output.owner_task = 4;
  output.owner_run = kRun;
  EXPECT_TRUE(memory.admits(output, 0, 64));
  output.owner_run = kRun - 1;
  EXPECT_FALSE(memory.admits(output, 0, 64));
  EXPECT_FALSE(memory.admits(output, 0, 0));
  const std::string stale = memory.refusal("task 9 (dummy) arg 1", output, 0, 64).message();
  EXPECT_NE(stale.find("runtime output of task 4 of run #1, not of this run (#2)"),
            std::string::npos)
      << stale;
  // Unbounded (orchestrators driven directly) admits anything.
  EXPECT_TRUE(RunMemory().admits(output, 0, 64));
  EXPECT_TRUE(RunMemory().admits(below, 0, 64));
}

// Random submissions, valid and broken in every field the checks read: the predicates agree with
// the full checks wherever they decide.
TEST(TaskChecksAccepted, RandomSubmissionsAgreeWithTheFullChecks) {
  std::mt19937_64 rng(4);
  const KernelTable kernels = make_kernels();
  const Tensor grid = Tensor::make(kBuffer, {32, 32}, DataType::F32);
  const RunMemory memory = run_memory();
  int spec_fast = 0;
  int args_fast = 0;
  for (int step = 0; step < 20000; ++step) {
    TaskArgs args;
    const int tensors = static_cast<int>(rng() % 4);
    for (int i = 0; i < tensors; ++i) {
      const auto tag = static_cast<ArgTag>(rng() % kArgTagCount);
      if (tag == ArgTag::Out) {
        args.out({1 + rng() % 8, 1 + rng() % 8}, DataType::F32);
      } else {
        const uint64_t r = rng() % 32;
        const uint64_t c = rng() % 32;
        args.add(tag, grid.view({1 + rng() % (32 - r), 1 + rng() % (32 - c)}, {r, c}));
      }
      Tensor& t = args.tensor(i);
      switch (rng() % 16) {  // one broken field now and then
        case 0:
          t.ndim = static_cast<uint32_t>(rng() % 2 == 0 ? 0 : kMaxTensorDims + 1);
          break;
        case 1:
          t.dtype = static_cast<DataType>(200);
          break;
        case 2:
          t.start_offset += rng() % 64;
          break;
        case 3:
          t.shape[0] = rng() % 2 == 0 ? 0 : UINT64_MAX / (1 + rng() % 4);
          break;
        case 4:
          t.strides[0] = rng() % 2 == 0 ? UINT64_MAX / 2 : 33;
          break;
        case 5:
          t.buffer.addr = UINT64_MAX - rng() % 8192;
          break;
        case 6:
          t.buffer.addr += kBuffer.size;  // a made-up buffer of the same size
          break;
        case 7:
          t.owner_run = kRun - 1 + static_cast<uint32_t>(rng() % 3);  // stale 2 times in 3
          break;
        default:
          break;
      }
    }
    const int scalars = static_cast<int>(rng() % 3);
    for (int i = 0; i < scalars; ++i) args.scalar(static_cast<uint64_t>(i));
    const uint64_t id = rng() % 8;
    if (rng() % 4 == 0) args.after(static_cast<TaskId>(rng() % 10));
    if (rng() % 10 == 0) args.when(Tensor::make(kBuffer, {1}, DataType::I32));
    TaskSpec spec = TaskSpec::kernel(static_cast<int32_t>(rng() % 5) - 1,
                                     static_cast<CoreType>(rng() % kCoreTypeCount),
                                     static_cast<uint32_t>(rng() % 8 == 0 ? 0 : 1 + rng() % 4));
    if (spec.core == CoreType::MIX) spec.mix.aic = 3;

    ArgList list;
    ASSERT_TRUE(read_args(args, &list));
    const bool spec_full = check_task_spec(kernels, id, spec, args).is_ok();
    const bool spec_quick = task_spec_accepted(kernels, spec, args, list);
    // Exact for AIC / AIV specs; MIX specs are always left to the full check.
    if (spec.core == CoreType::MIX) {
      ASSERT_FALSE(spec_quick) << "step " << step;
    } else {
      ASSERT_EQ(spec_quick, spec_full) << "step " << step;
    }
    const bool args_full = check_task_args(memory, id, &spec, args).is_ok();
    const bool args_quick = task_args_accepted(memory, id, args, list);
    // Exact without a predicate (the broken fields above overflow in at most one dimension);
    // predicated tasks are always left to the full check.
    if (args.has_predicate()) {
      ASSERT_FALSE(args_quick) << "step " << step;
    } else {
      ASSERT_EQ(args_quick, args_full) << "step " << step;
    }
    spec_fast += spec_quick;
    args_fast += args_quick;
  }
  // Both outcomes occurred.
  EXPECT_GT(spec_fast, 1000);
  EXPECT_GT(args_fast, 5000);
}

}  // namespace
}  // namespace chiprt::orchestrator
