// The simulated chip's tracked device memory: alignment, exhaustion, double free, range checks,
// accounting and abandon.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "platform/sim/sim_platform.h"

namespace chiprt::platform {
namespace {

constexpr uint64_t kMiB = 1ull << 20;

sim::SimPlatform make_platform(uint64_t memory_bytes = 4 * kMiB) {
  SimOptions config;
  config.memory_bytes = memory_bytes;
  return sim::SimPlatform(config);
}

bool contains(const Status& status, const std::string& text) {
  return status.message().find(text) != std::string::npos;
}

TEST(SimMemoryTest, AllocHonoursEveryPowerOfTwoAlignment) {
  auto platform = make_platform();
  for (uint64_t align = 1; align <= 4096; align *= 2) {
    DeviceBuffer buffer;
    ASSERT_TRUE(platform.alloc(100, align, &buffer).is_ok()) << align;
    EXPECT_EQ(buffer.addr % align, 0u) << align;
    EXPECT_EQ(buffer.size, 100u);
    EXPECT_TRUE(platform.free(buffer.addr).is_ok());
  }
}

TEST(SimMemoryTest, BadAlignmentAndZeroBytesAreInvalidArgument) {
  auto platform = make_platform();
  DeviceBuffer buffer;
  for (uint64_t align : {0ull, 3ull, 48ull, 8192ull}) {
    const Status status = platform.alloc(64, align, &buffer);
    EXPECT_EQ(status.code(), StatusCode::InvalidArgument) << align;
    EXPECT_TRUE(contains(status, "power of two in [1, 4096] (got " + std::to_string(align) + ")"))
        << status.message();
  }
  const Status zero = platform.alloc(0, 64, &buffer);
  EXPECT_EQ(zero.code(), StatusCode::InvalidArgument);
  EXPECT_TRUE(contains(zero, "bytes must be > 0")) << zero.message();
  EXPECT_EQ(platform.alloc(64, 64, nullptr).code(), StatusCode::InvalidArgument);
  EXPECT_EQ(platform.bytes_in_use(), 0u);
}

TEST(SimMemoryTest, ExhaustionReportsRequestedAvailableAndCapacity) {
  auto platform = make_platform(2 * kMiB);
  DeviceBuffer first;
  ASSERT_TRUE(platform.alloc(kMiB + kMiB / 2, 64, &first).is_ok());
  DeviceBuffer second;
  const Status status = platform.alloc(kMiB, 64, &second);
  EXPECT_EQ(status.code(), StatusCode::OutOfDeviceMemory);
  EXPECT_TRUE(
      contains(status, "requested 1048576 bytes, available 524288 of capacity 2097152 bytes"))
      << status.message();
  ASSERT_TRUE(platform.free(first.addr).is_ok());
  EXPECT_TRUE(platform.alloc(kMiB, 64, &second).is_ok());
}

TEST(SimMemoryTest, DoubleFreeAndUnknownPointerAreErrorsNotCrashes) {
  auto platform = make_platform();
  DeviceBuffer buffer;
  ASSERT_TRUE(platform.alloc(256, 64, &buffer).is_ok());
  ASSERT_TRUE(platform.free(buffer.addr).is_ok());
  const Status twice = platform.free(buffer.addr);
  EXPECT_EQ(twice.code(), StatusCode::InvalidDevicePointer);
  EXPECT_TRUE(contains(twice, "double free")) << twice.message();

  int host_variable = 0;
  const Status unknown = platform.free(reinterpret_cast<uint64_t>(&host_variable));
  EXPECT_EQ(unknown.code(), StatusCode::InvalidDevicePointer);
  EXPECT_TRUE(contains(unknown, "not a live allocation")) << unknown.message();
  EXPECT_EQ(platform.free(0).code(), StatusCode::InvalidDevicePointer);
}

TEST(SimMemoryTest, InteriorPointerIsNotFreeable) {
  auto platform = make_platform();
  DeviceBuffer buffer;
  ASSERT_TRUE(platform.alloc(256, 64, &buffer).is_ok());
  EXPECT_EQ(platform.free(buffer.addr + 8).code(), StatusCode::InvalidDevicePointer);
  EXPECT_EQ(platform.bytes_in_use(), 256u);
  EXPECT_TRUE(platform.free(buffer.addr).is_ok());
}

TEST(SimMemoryTest, CopiesAndMemsetRoundTrip) {
  auto platform = make_platform();
  DeviceBuffer buffer;
  ASSERT_TRUE(platform.alloc(64, 64, &buffer).is_ok());
  std::vector<uint8_t> source(64);
  for (size_t i = 0; i < source.size(); ++i) source[i] = static_cast<uint8_t>(i * 3);
  ASSERT_TRUE(platform.copy_to_device(buffer.addr, source.data(), 64).is_ok());
  ASSERT_TRUE(platform.memset(buffer.addr + 16, 0xAB, 8).is_ok());
  std::vector<uint8_t> back(64);
  ASSERT_TRUE(platform.copy_from_device(back.data(), buffer.addr, 64).is_ok());
  for (size_t i = 0; i < back.size(); ++i) {
    const uint8_t expected = (i >= 16 && i < 24) ? 0xAB : static_cast<uint8_t>(i * 3);
    EXPECT_EQ(back[i], expected) << i;
  }
  // A sub-range copy inside the allocation is fine.
  uint32_t word = 0;
  ASSERT_TRUE(platform.copy_from_device(&word, buffer.addr + 60, 4).is_ok());
}

TEST(SimMemoryTest, OutOfRangeCopiesAndMemsetNameAddressSizeAndAllocation) {
  auto platform = make_platform();
  DeviceBuffer a;
  DeviceBuffer b;
  ASSERT_TRUE(platform.alloc(64, 64, &a).is_ok());
  ASSERT_TRUE(platform.alloc(64, 64, &b).is_ok());
  std::vector<uint8_t> host(128);

  const Status overflow = platform.copy_to_device(a.addr + 32, host.data(), 40);
  EXPECT_EQ(overflow.code(), StatusCode::InvalidDevicePointer);
  EXPECT_TRUE(contains(overflow, "copy_to_device")) << overflow.message();
  EXPECT_TRUE(contains(overflow, "+40 bytes")) << overflow.message();
  EXPECT_TRUE(contains(overflow, "+64 bytes)")) << overflow.message();
  EXPECT_TRUE(contains(overflow, "by 8 bytes")) << overflow.message();

  const Status from = platform.copy_from_device(host.data(), b.addr, 65);
  EXPECT_EQ(from.code(), StatusCode::InvalidDevicePointer);
  EXPECT_TRUE(contains(from, "copy_from_device")) << from.message();

  const Status set = platform.memset(a.addr, 0, 128);
  EXPECT_EQ(set.code(), StatusCode::InvalidDevicePointer);
  EXPECT_TRUE(contains(set, "memset")) << set.message();

  int host_variable = 0;
  const Status outside =
      platform.memset(reinterpret_cast<uint64_t>(&host_variable), 0, sizeof(host_variable));
  EXPECT_EQ(outside.code(), StatusCode::InvalidDevicePointer);
  EXPECT_TRUE(contains(outside, "not inside any live allocation")) << outside.message();

  // A range whose end wraps around the address space is rejected, not accepted.
  EXPECT_EQ(platform.memset(a.addr, 0, ~0ull).code(), StatusCode::InvalidDevicePointer);
  EXPECT_EQ(platform.copy_to_device(a.addr, nullptr, 8).code(), StatusCode::InvalidArgument);
  EXPECT_EQ(platform.copy_from_device(nullptr, a.addr, 8).code(), StatusCode::InvalidArgument);

  ASSERT_TRUE(platform.free(a.addr).is_ok());
  EXPECT_EQ(platform.memset(a.addr, 0, 8).code(), StatusCode::InvalidDevicePointer);
}

TEST(SimMemoryTest, BytesInUseTracksAllocationsAndFrees) {
  auto platform = make_platform();
  EXPECT_EQ(platform.bytes_in_use(), 0u);
  std::vector<DeviceBuffer> buffers(10);
  for (size_t i = 0; i < buffers.size(); ++i) {
    ASSERT_TRUE(platform.alloc(100 * (i + 1), 16, &buffers[i]).is_ok());
  }
  EXPECT_EQ(platform.bytes_in_use(), 5500u);
  EXPECT_EQ(platform.live_allocations(), 10u);
  for (size_t i = 0; i < buffers.size(); i += 2)
    ASSERT_TRUE(platform.free(buffers[i].addr).is_ok());
  // Freed sizes 100, 300, 500, 700, 900; left 200 + 400 + 600 + 800 + 1000.
  EXPECT_EQ(platform.bytes_in_use(), 3000u);
  EXPECT_EQ(platform.live_allocations(), 5u);
}

TEST(SimMemoryTest, AbandonForgetsEveryAllocation) {
  auto platform = make_platform();
  DeviceBuffer a;
  DeviceBuffer b;
  ASSERT_TRUE(platform.alloc(1000, 64, &a).is_ok());
  ASSERT_TRUE(platform.alloc(2000, 64, &b).is_ok());
  platform.abandon_memory();
  EXPECT_EQ(platform.bytes_in_use(), 0u);
  EXPECT_EQ(platform.live_allocations(), 0u);
  EXPECT_EQ(platform.free(a.addr).code(), StatusCode::InvalidDevicePointer);
  EXPECT_EQ(platform.memset(b.addr, 0, 8).code(), StatusCode::InvalidDevicePointer);
  // The full capacity is available again.
  DeviceBuffer big;
  EXPECT_TRUE(platform.alloc(platform.capacity(), 64, &big).is_ok());
}

TEST(SimMemoryTest, ReusedAddressIsLiveAgainNotDoubleFreed) {
  auto platform = make_platform();
  for (int round = 0; round < 50; ++round) {
    DeviceBuffer buffer;
    ASSERT_TRUE(platform.alloc(128, 64, &buffer).is_ok());
    ASSERT_TRUE(platform.free(buffer.addr).is_ok()) << round;
  }
  EXPECT_EQ(platform.bytes_in_use(), 0u);
}

}  // namespace
}  // namespace chiprt::platform
