#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <string>

#include "chiprt/status.h"
#include "chiprt/task_args.h"

namespace chiprt {
namespace {

template <class Fn>
void expect_error(Fn&& fn, StatusCode code, const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "no error thrown; expected " << status_name(code) << " with '" << needle
                  << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(e.message().find(needle), std::string::npos)
        << "message '" << e.message() << "' lacks '" << needle << "'";
  }
}

Tensor some_tensor() {
  return Tensor::make({0x2000, 256}, {8, 8}, DataType::F32);
}

TEST(ArgTagTest, NamesAndDirections) {
  EXPECT_EQ(arg_tag_name(ArgTag::In), "in");
  EXPECT_EQ(arg_tag_name(ArgTag::Out), "out");
  EXPECT_EQ(arg_tag_name(ArgTag::InOut), "inout");
  EXPECT_EQ(arg_tag_name(ArgTag::OutputExisting), "output_existing");
  EXPECT_EQ(arg_tag_name(ArgTag::NoDep), "no_dep");
  EXPECT_EQ(arg_tag_name(static_cast<ArgTag>(kArgTagCount)), "invalid");
  EXPECT_TRUE(arg_tag_reads(ArgTag::InOut));
  EXPECT_FALSE(arg_tag_reads(ArgTag::NoDep));
  EXPECT_TRUE(arg_tag_writes(ArgTag::OutputExisting));
  EXPECT_FALSE(arg_tag_writes(ArgTag::In));
}

TEST(TaskArgsTest, RecordsTensorsInOrderWithTags) {
  const Tensor t = some_tensor();
  TaskArgs args;
  args.in(t).out({4, 2}, DataType::F16).inout(t).output_existing(t).no_dep(t);
  ASSERT_EQ(args.tensor_count(), 5);
  EXPECT_EQ(args.tag(0), ArgTag::In);
  EXPECT_EQ(args.tag(1), ArgTag::Out);
  EXPECT_EQ(args.tag(2), ArgTag::InOut);
  EXPECT_EQ(args.tag(3), ArgTag::OutputExisting);
  EXPECT_EQ(args.tag(4), ArgTag::NoDep);
  EXPECT_EQ(args.tensor(0).buffer, t.buffer);

  const Tensor& out = args.output(0);
  EXPECT_TRUE(out.buffer.empty());
  EXPECT_EQ(out.ndim, 2u);
  EXPECT_EQ(out.shape[0], 4u);
  EXPECT_EQ(out.shape[1], 2u);
  EXPECT_EQ(out.strides[0], 2u);
  EXPECT_EQ(out.strides[1], 1u);
  EXPECT_EQ(out.dtype, DataType::F16);
  EXPECT_EQ(&args.output(0), &args.tensor(1));
}

TEST(TaskArgsTest, OutputFindsTheKthOutArgument) {
  TaskArgs args;
  args.in(some_tensor()).out({1}, DataType::I8).in(some_tensor()).out({3}, DataType::U64);
  EXPECT_EQ(args.output(1).dtype, DataType::U64);
  args.tensor(3).buffer = {0x9000, 24};  // what submit does
  EXPECT_EQ(args.output(1).buffer.addr, 0x9000u);
  expect_error([&] { args.output(2); }, StatusCode::InvalidArgument, "has 2 Out arguments");
  expect_error([&] { args.output(-1); }, StatusCode::InvalidArgument, "output -1");
}

TEST(TaskArgsTest, RejectsMissingBuffersAndBadOuts) {
  TaskArgs args;
  Tensor no_buffer = some_tensor();
  no_buffer.buffer = {};
  expect_error([&] { args.in(no_buffer); }, StatusCode::InvalidArgument,
               "tensor argument 0 (in) has no device buffer");
  expect_error([&] { args.inout(no_buffer); }, StatusCode::InvalidArgument, "(inout)");
  expect_error([&] { args.add(static_cast<ArgTag>(9), some_tensor()); },
               StatusCode::InvalidArgument, "tag value 9");
  expect_error([&] { args.out(std::span<const uint64_t>(), DataType::F32); },
               StatusCode::InvalidArgument, "rank 0");
  expect_error(
      [&] {
        args.out({1, 2, 3, 4, 5, 6}, DataType::F32);
      },
      StatusCode::InvalidArgument, "rank 6");
  expect_error([&] { args.out({4}, static_cast<DataType>(50)); }, StatusCode::InvalidArgument,
               "dtype value 50");
  expect_error(
      [&] {
        args.out({1ull << 40, 1ull << 30}, DataType::F32);
      },
      StatusCode::InvalidArgument, "larger than 2^64 bytes");
  EXPECT_EQ(args.tensor_count(), 0);
  // Out through add() keeps whatever tensor it was given (the buffer is filled by submit).
  EXPECT_NO_THROW(args.add(ArgTag::Out, no_buffer));
}

TEST(TaskArgsTest, TensorLimit) {
  TaskArgs args;
  for (int i = 0; i < kMaxTaskTensors; ++i) args.in(some_tensor());
  expect_error([&] { args.in(some_tensor()); }, StatusCode::TooManyArgs,
               "task has more than 16 tensor arguments (kMaxTaskTensors)");
  expect_error([&] { args.out({2}, DataType::F32); }, StatusCode::TooManyArgs, "kMaxTaskTensors");
  EXPECT_EQ(args.tensor_count(), kMaxTaskTensors);
}

TEST(TaskArgsTest, ScalarLimitAndBitCasting) {
  TaskArgs args;
  args.scalar(1.5f).scalar(-2.25).scalar(int32_t{-7}).scalar(uint8_t{200}).scalar(true);
  ASSERT_EQ(args.scalar_count(), 5);
  EXPECT_EQ(args.scalar_bits(0), uint64_t{std::bit_cast<uint32_t>(1.5f)});
  EXPECT_EQ(args.scalar_bits(1), std::bit_cast<uint64_t>(-2.25));
  // Zero-extended, not sign-extended: the kernel reinterprets the low 32 bits.
  EXPECT_EQ(args.scalar_bits(2), uint64_t{0xFFFFFFF9u});
  EXPECT_EQ(static_cast<int32_t>(static_cast<uint32_t>(args.scalar_bits(2))), -7);
  EXPECT_EQ(args.scalar_bits(3), 200u);
  EXPECT_EQ(args.scalar_bits(4), 1u);
  float f = 0;
  const uint64_t bits = args.scalar_bits(0);
  std::memcpy(&f, &bits, sizeof(f));
  EXPECT_EQ(f, 1.5f);

  for (int i = args.scalar_count(); i < kMaxTaskScalars; ++i) args.scalar(int64_t{i});
  expect_error([&] { args.scalar(1); }, StatusCode::TooManyArgs,
               "task has more than 16 scalar arguments (kMaxTaskScalars)");
  expect_error([&] { args.add_scalar_bits(1); }, StatusCode::TooManyArgs, "kMaxTaskScalars");
}

TEST(TaskArgsTest, ExplicitDependencies) {
  TaskArgs args;
  args.after(0).after(41);
  EXPECT_EQ(args.dep_count(), 2);
  EXPECT_EQ(args.dep(1), 41);
  expect_error([&] { args.after(kNoTask); }, StatusCode::InvalidArgument, "task id -1");
  for (int i = args.dep_count(); i < kMaxExplicitDeps; ++i) args.after(i);
  expect_error([&] { args.after(3); }, StatusCode::TooManyArgs,
               "more than 8 explicit dependencies (kMaxExplicitDeps)");
}

TEST(TaskArgsTest, IndexChecksAndClear) {
  TaskArgs args;
  args.in(some_tensor()).scalar(3);
  expect_error([&] { args.tensor(1); }, StatusCode::InvalidArgument,
               "argument index 1 is outside [0, 1)");
  expect_error([&] { args.tag(-1); }, StatusCode::InvalidArgument, "index -1");
  expect_error([&] { args.scalar_bits(1); }, StatusCode::InvalidArgument, "index 1");
  expect_error([&] { args.dep(0); }, StatusCode::InvalidArgument, "[0, 0)");
  args.clear();
  EXPECT_EQ(args.tensor_count(), 0);
  EXPECT_EQ(args.scalar_count(), 0);
  EXPECT_EQ(args.dep_count(), 0);
  expect_error([&] { args.tensor(0); }, StatusCode::InvalidArgument, "[0, 0)");
}

}  // namespace
}  // namespace chiprt
