// The TaskArgs wire format (common/task_args_wire.h): what the host encodes the chip decodes into
// the same arguments, and a block that is not what this version wrote is refused by name.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "common/task_args_wire.h"

namespace chiprt::common {
namespace {

void expect_same_tensor(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.buffer.addr, b.buffer.addr);
  EXPECT_EQ(a.buffer.size, b.buffer.size);
  EXPECT_EQ(a.start_offset, b.start_offset);
  EXPECT_EQ(a.ndim, b.ndim);
  EXPECT_EQ(a.dtype, b.dtype);
  EXPECT_EQ(a.shape, b.shape);
  EXPECT_EQ(a.strides, b.strides);
  EXPECT_EQ(a.owner_task, b.owner_task);
  EXPECT_EQ(a.version, b.version);
  EXPECT_EQ(a.owner_run, b.owner_run);
}

// Every field a TaskArgs carries, with values no default would give.
TaskArgs full_args() {
  Tensor a = Tensor::make(DeviceBuffer{0x10000, 4096}, {4, 8}, DataType::F32, 16);
  Tensor b = a.view({2, 4}, {1, 2});
  b.owner_task = 7;
  b.version = 3;
  b.owner_run = 42;
  const Tensor flag = Tensor::make(DeviceBuffer{0x20000, 64}, {1}, DataType::I32);
  TaskArgs args;
  args.in(a).inout(b).output_existing(a).no_dep(b).out({3, 5, 7}, DataType::F16);
  args.scalar(1.5f).scalar(int64_t{-9}).scalar(uint8_t{200});
  args.after(4).after(11);
  args.when(flag);
  return args;
}

TaskArgsWire encoded(const TaskArgs& args) {
  TaskArgsWire wire;
  encode_task_args(args, &wire);
  return wire;
}

std::string refusal(const TaskArgsWire& wire) {
  TaskArgs out;
  const Status status = decode_task_args(wire, &out);
  EXPECT_EQ(status.code(), StatusCode::InternalError) << status.message();
  return status.message();
}

TEST(TaskArgsWireTest, RoundTripKeepsEveryField) {
  const TaskArgs args = full_args();
  TaskArgs decoded;
  decoded.add_scalar_bits(99);  // decoding replaces what was there
  ASSERT_TRUE(decode_task_args(encoded(args), &decoded).is_ok());
  ASSERT_EQ(decoded.tensor_count(), args.tensor_count());
  for (int i = 0; i < args.tensor_count(); ++i) {
    EXPECT_EQ(decoded.tag(i), args.tag(i)) << i;
    expect_same_tensor(decoded.tensor(i), args.tensor(i));
  }
  ASSERT_EQ(decoded.scalar_count(), args.scalar_count());
  for (int i = 0; i < args.scalar_count(); ++i)
    EXPECT_EQ(decoded.scalar_bits(i), args.scalar_bits(i));
  ASSERT_EQ(decoded.dep_count(), args.dep_count());
  for (int i = 0; i < args.dep_count(); ++i) EXPECT_EQ(decoded.dep(i), args.dep(i));
  ASSERT_TRUE(decoded.has_predicate());
  expect_same_tensor(decoded.predicate(), args.predicate());
}

TEST(TaskArgsWireTest, EmptyArgumentsRoundTrip) {
  TaskArgs decoded;
  decoded.add_scalar_bits(1);
  ASSERT_TRUE(decode_task_args(encoded(TaskArgs{}), &decoded).is_ok());
  EXPECT_EQ(decoded.tensor_count(), 0);
  EXPECT_EQ(decoded.scalar_count(), 0);
  EXPECT_EQ(decoded.dep_count(), 0);
  EXPECT_FALSE(decoded.has_predicate());
}

TEST(TaskArgsWireTest, EqualArgumentsEncodeToEqualBytes) {
  const TaskArgsWire a = encoded(full_args());
  const TaskArgsWire b = encoded(full_args());
  EXPECT_EQ(std::memcmp(&a, &b, sizeof(a)), 0);
  EXPECT_EQ(a.header.magic, kTaskArgsWireMagic);
  EXPECT_EQ(a.header.version, kTaskArgsWireVersion);
  EXPECT_EQ(a.header.bytes, sizeof(TaskArgsWire));
}

TEST(TaskArgsWireTest, WrongVersionIsRefused) {
  TaskArgsWire wire = encoded(full_args());
  wire.header.version = kTaskArgsWireVersion + 1;
  wire.header.checksum = task_args_wire_checksum(wire);
  EXPECT_NE(refusal(wire).find("version 2 is not the supported version 1"), std::string::npos);
}

TEST(TaskArgsWireTest, WrongMagicAndSizeAreRefused) {
  TaskArgsWire wire = encoded(full_args());
  wire.header.magic = 0x12345678;
  EXPECT_NE(refusal(wire).find("magic 0x12345678 is not \"CTAW\""), std::string::npos);
  wire = encoded(full_args());
  wire.header.bytes = 100;
  wire.header.checksum = task_args_wire_checksum(wire);
  EXPECT_NE(refusal(wire).find("size 100 is not 2392 bytes"), std::string::npos);
}

TEST(TaskArgsWireTest, AnyChangedByteFailsTheChecksum) {
  const TaskArgsWire good = encoded(full_args());
  // A tensor address, a scalar, a count (header fields count too), the predicate.
  const std::size_t offsets[] = {
      offsetof(TaskArgsWire, tensors) + 1, offsetof(TaskArgsWire, scalars) + 8,
      offsetof(TaskArgsWireHeader, scalar_count), offsetof(TaskArgsWire, predicate) + 2};
  for (std::size_t offset : offsets) {
    TaskArgsWire wire = good;
    reinterpret_cast<uint8_t*>(&wire)[offset] ^= 0x01;
    EXPECT_NE(refusal(wire).find("checksum mismatch"), std::string::npos) << offset;
  }
}

TEST(TaskArgsWireTest, FieldsOutsideTheirDomainAreRefusedByName) {
  TaskArgsWire wire = encoded(full_args());
  wire.header.tensor_count = kMaxTaskTensors + 1;
  wire.header.checksum = task_args_wire_checksum(wire);
  EXPECT_NE(refusal(wire).find("17 tensors"), std::string::npos);

  wire = encoded(full_args());
  wire.tensors[2].tag = 9;
  wire.header.checksum = task_args_wire_checksum(wire);
  EXPECT_NE(refusal(wire).find("tensor 2 has tag value 9, not an ArgTag"), std::string::npos);

  wire = encoded(full_args());
  wire.tensors[1].ndim = 6;
  wire.header.checksum = task_args_wire_checksum(wire);
  EXPECT_NE(refusal(wire).find("tensor 1 has rank 6, above 5"), std::string::npos);

  wire = encoded(full_args());
  wire.predicate.dtype = 200;
  wire.header.checksum = task_args_wire_checksum(wire);
  EXPECT_NE(refusal(wire).find("the predicate has dtype value 200"), std::string::npos);

  // What the public builders refuse is refused with their words.
  wire = encoded(full_args());
  wire.tensors[0].buffer_addr = 0;
  wire.header.checksum = task_args_wire_checksum(wire);
  EXPECT_NE(refusal(wire).find("tensor argument 0 (in) has no device buffer"), std::string::npos);
}

}  // namespace
}  // namespace chiprt::common
