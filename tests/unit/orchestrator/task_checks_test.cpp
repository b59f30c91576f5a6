// The task model's checks (task_checks.h): each returns a compact Verdict (rule and indices) that
// describe_task turns into the error, so the hot path and the message come from one rule.
// RunMemory: the memory a run's tasks may name.
#include "orchestrator/task_checks.h"

#include <gtest/gtest.h>

#include <random>

#include "chiprt/tensor.h"
#include "common/graph_image.h"

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

// Both checks of a task, as the front runs them: the spec first, then the arguments.
Verdict check(const KernelTable& kernels, const RunMemory& memory, uint64_t id,
              const TaskSpec& spec, TaskArgs& args) {
  ArgList list;
  if (!read_args(args, &list)) return {Rule::TooManyArgs};
  const Verdict v = check_task_spec(kernels, spec, list, args.scalar_count());
  return v.ok() ? check_task_args(memory, id, args, list) : v;
}
Status full(const KernelTable& kernels, const RunMemory& memory, uint64_t id, const TaskSpec& spec,
            TaskArgs& args) {
  return describe_task(check(kernels, memory, id, spec, args), kernels, memory, id, &spec, args);
}

TEST(TaskChecks, CommonSubmissionsAreAccepted) {
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
  EXPECT_TRUE(check(kernels, run_memory(), 10, TaskSpec::kernel(1, CoreType::AIV), args).ok());

  TaskArgs signed_args;
  signed_args.in(grid).inout(grid.view({1, 32}, {3, 0})).scalar(1.0f);
  EXPECT_TRUE(
      check(kernels, run_memory(), 0, TaskSpec::kernel(2, CoreType::AIC), signed_args).ok());
  TaskSpec mix;
  mix.core = CoreType::MIX;
  mix.mix.aic = 3;
  EXPECT_TRUE(check(kernels, run_memory(), 0, mix, signed_args).ok());

  TaskArgs outputs;
  outputs.out({16, 16}, DataType::F16);
  ASSERT_TRUE(read_args(outputs, &list));
  EXPECT_TRUE(check_task_args(run_memory(), 0, outputs, list).ok());
  EXPECT_TRUE(check_allocation(outputs, list).ok());
}

TEST(TaskChecks, EachRejectionNamesItsRuleAndIndices) {
  const KernelTable kernels = make_kernels();
  const Tensor grid = Tensor::make(kBuffer, {32, 32}, DataType::F32);
  TaskArgs args;
  args.in(grid);
  auto rule = [&](const TaskSpec& spec, TaskArgs a, const RunMemory& memory = RunMemory(),
                  uint64_t id = 0) { return check(kernels, memory, id, spec, a); };
  EXPECT_EQ(rule(TaskSpec::kernel(1, CoreType::AIC), args).rule, Rule::CoreTypeMismatch);
  EXPECT_EQ(rule(TaskSpec::kernel(9, CoreType::AIV), args).rule, Rule::UnknownFuncId);
  EXPECT_EQ(rule(TaskSpec::kernel(1, CoreType::AIV, 0), args).rule, Rule::BlockNum);
  EXPECT_EQ(rule(TaskSpec::kernel(2, CoreType::AIC), args).rule, Rule::SignatureTensorCount);
  TaskSpec mix;
  mix.core = CoreType::MIX;
  EXPECT_EQ(rule(mix, args).rule, Rule::MixWithoutKernels);
  mix.mix.aiv1 = 2;  // an AIC kernel as the second AIV part
  const Verdict part = rule(mix, args);
  EXPECT_EQ(part.rule, Rule::CoreTypeMismatch);
  EXPECT_EQ(part.part, 2);
  TaskArgs wrong_tag;
  wrong_tag.in(grid).in(grid).scalar(1.0f);
  const Verdict tag = rule(TaskSpec::kernel(2, CoreType::AIC), wrong_tag);
  EXPECT_EQ(tag.rule, Rule::SignatureTag);
  EXPECT_EQ(tag.arg, 1);
  // A dependency on a later task, a view past its buffer, a predicate.
  TaskArgs dep = args;
  dep.after(1).after(5);
  const Verdict later = rule(TaskSpec::kernel(1, CoreType::AIV), dep, RunMemory(), 5);
  EXPECT_EQ(later.rule, Rule::LaterDependency);
  EXPECT_EQ(later.index, 1);
  TaskArgs outside;
  outside.in(grid).in(grid);
  outside.tensor(1).start_offset = 1;
  const Verdict bounds = rule(TaskSpec::kernel(1, CoreType::AIV), outside);
  EXPECT_EQ(bounds.rule, Rule::ViewOutOfBounds);
  EXPECT_EQ(bounds.arg, 1);
  TaskArgs predicated;
  predicated.in(grid).when(Tensor::make(kBuffer, {1}, DataType::I32));
  EXPECT_TRUE(rule(TaskSpec::kernel(1, CoreType::AIV), predicated).ok());
  // Memory outside the run's arguments and heap, a runtime output of another run.
  TaskArgs moved;
  moved.in(Tensor::make(DeviceBuffer{kBuffer.addr + kBuffer.size, 64}, {16}, DataType::F32));
  EXPECT_TRUE(rule(TaskSpec::kernel(1, CoreType::AIV), moved).ok());  // nothing bounded
  EXPECT_EQ(rule(TaskSpec::kernel(1, CoreType::AIV), moved, run_memory()).rule, Rule::NotRunMemory);
  EXPECT_EQ(full(kernels, run_memory(), 0, TaskSpec::kernel(1, CoreType::AIV), moved).code(),
            StatusCode::InvalidDevicePointer);
  TaskArgs stale;
  stale.in(Tensor::make(DeviceBuffer{kHeap.addr, 64}, {16}, DataType::F32));
  stale.tensor(0).owner_run = kRun + 1;
  EXPECT_EQ(full(kernels, run_memory(), 0, TaskSpec::kernel(1, CoreType::AIV), stale).code(),
            StatusCode::InvalidDevicePointer);
  // allocate: Out only, nothing else.
  TaskArgs alloc_in;
  alloc_in.out({4}, DataType::F32).in(grid);
  ArgList list;
  ASSERT_TRUE(read_args(alloc_in, &list));
  const Verdict alloc_tag = check_allocation(alloc_in, list);
  EXPECT_EQ(alloc_tag.rule, Rule::AllocationTag);
  EXPECT_EQ(alloc_tag.arg, 1);
  TaskArgs alloc_scalar;
  alloc_scalar.out({4}, DataType::F32).scalar(1);
  ASSERT_TRUE(read_args(alloc_scalar, &list));
  EXPECT_EQ(check_allocation(alloc_scalar, list).rule, Rule::AllocationExtras);
}

// The message of a verdict: the full text, built from the verdict and the submission.
TEST(TaskChecks, DescribeTurnsTheVerdictIntoTheMessage) {
  const KernelTable kernels = make_kernels();
  const Tensor grid = Tensor::make(kBuffer, {32, 32}, DataType::F32);
  TaskArgs args;
  args.in(grid).in(grid).scalar(1.0f);
  const Status tag = full(kernels, RunMemory(), 4, TaskSpec::kernel(2, CoreType::AIC), args);
  EXPECT_EQ(tag.code(), StatusCode::SignatureMismatch);
  EXPECT_EQ(tag.message(), "func_id 2 arg 1: expected inout, got in (task 4 (func_id 2))");
  TaskArgs dep;
  dep.in(grid).after(7);
  const Status later = full(kernels, RunMemory(), 3, TaskSpec::kernel(1, CoreType::AIV), dep);
  EXPECT_EQ(later.code(), StatusCode::InvalidTask);
  EXPECT_EQ(later.message(),
            "task 3 (func_id 1): explicit dependency on task 7 is not an earlier task of this run "
            "(valid: 0..2)");
  TaskArgs huge;
  huge.out({4, 4}, DataType::F32);
  huge.tensor(0).shape[1] =
      UINT64_MAX / 2;  // TaskArgs::out refuses it; a rewritten one reaches here
  const Status overflow = full(kernels, RunMemory(), 0, TaskSpec::kernel(1, CoreType::AIV), huge);
  EXPECT_EQ(overflow.code(), StatusCode::InvalidArgument);
  EXPECT_EQ(overflow.message(),
            "task 0 (func_id 1) arg 0: output shape dim 1=" + std::to_string(UINT64_MAX / 2) +
                " makes it larger than 2^64 bytes");  // dim 0 alone fits
  const Tensor x = Tensor::make(kBuffer, {16}, DataType::F32);
  const Verdict bytes = check_data_call(RunMemory(), x, &args, 60);
  EXPECT_EQ(bytes.rule, Rule::DataBytes);
  EXPECT_EQ(describe_data_call(bytes, RunMemory(), "get_tensor_data", x, 60).message(),
            "get_tensor_data: tensor " + x.to_string() +
                ": 60 bytes given, the tensor has 64 (numel x element size)");
  EXPECT_EQ(check_data_call(RunMemory(), x, nullptr, 64).rule, Rule::DataNullPointer);
  EXPECT_TRUE(check_data_call(RunMemory(), x, &args, 64).ok());
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

// Random submissions, valid and broken in every field the checks read: every verdict describes to
// an error of the rule's code (Ok exactly when the verdict is), and both outcomes occur.
TEST(TaskChecks, RandomSubmissionsDescribeTheirVerdicts) {
  std::mt19937_64 rng(4);
  const KernelTable kernels = make_kernels();
  const Tensor grid = Tensor::make(kBuffer, {32, 32}, DataType::F32);
  const RunMemory memory = run_memory();
  int mix_accepted = 0;
  int kernel_accepted = 0;
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

    const Verdict v = check(kernels, memory, id, spec, args);
    const Status status = describe_task(v, kernels, memory, id, &spec, args);
    ASSERT_EQ(v.ok(), status.is_ok()) << "step " << step;
    if (!v.ok()) {
      ASSERT_FALSE(status.message().empty()) << "step " << step;
      ASSERT_NE(status.code(), StatusCode::InternalError)
          << "step " << step << ": " << status.message();
    }
    (spec.core == CoreType::MIX ? mix_accepted : kernel_accepted) += v.ok();
  }
  // Both outcomes occurred.
  EXPECT_GT(mix_accepted, 50);
  EXPECT_GT(kernel_accepted, 300);
}

}  // namespace
}  // namespace chiprt::orchestrator

namespace chiprt::orchestrator {
namespace {

// A skipped predicated task zero-fills its outputs through a 32-bit granule count: its packed
// outputs may take at most common::kMaxSkipFillBytes (each output 64-byte aligned).
TEST(TaskChecks, APredicatedTasksOutputsFitTheSkipFillRange) {
  const KernelTable kernels = make_kernels();
  const Tensor flag = Tensor::make(kBuffer, {1}, DataType::I32);
  const uint64_t max_floats = common::kMaxSkipFillBytes / sizeof(float);
  TaskArgs fits;
  fits.out({max_floats}, DataType::F32).when(flag);
  EXPECT_TRUE(check(kernels, RunMemory(), 0, TaskSpec::kernel(1, CoreType::AIV), fits).ok());
  TaskArgs padded;  // one float more than fits once each output is 64-byte aligned
  padded.out({max_floats - 16}, DataType::F32).out({1}, DataType::F32).out({1}, DataType::F32);
  padded.when(flag);
  const Status too_large =
      full(kernels, RunMemory(), 4, TaskSpec::kernel(1, CoreType::AIV), padded);
  EXPECT_EQ(too_large.code(), StatusCode::InvalidArgument);
  EXPECT_EQ(too_large.message(),
            "task 4 (func_id 1): a predicated task's runtime outputs take 274877906944 bytes "
            "(each 64-byte aligned), more than the 274877906880 a skipped task zero-fills; split "
            "the outputs over several tasks");
  TaskArgs unpredicated;  // no predicate: nothing is ever zero-filled, no bound
  unpredicated.out({max_floats}, DataType::F32).out({1}, DataType::F32);
  EXPECT_TRUE(
      check(kernels, RunMemory(), 0, TaskSpec::kernel(1, CoreType::AIV), unpredicated).ok());
}

}  // namespace
}  // namespace chiprt::orchestrator
