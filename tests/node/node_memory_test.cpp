// NodeMemory (src/node/node_memory.h): node buffers in the node's own address space, their copies
// on chips and the host, the transfers that keep them coherent, eviction and chip resets.
// In-process and isolated chips through one table; a random oracle moves real bytes between chips.
#include "node/node_memory.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "chiprt/status.h"
#include "node_test_support.h"

namespace chiprt::node {
namespace {

using Access = Coherence::Access;

NodeOptions chip_options(bool in_process, uint32_t chips, uint64_t memory_bytes = 256ull << 20) {
  NodeOptions options;
  options.chips = chips;
  options.in_process = in_process;
  options.sim.clusters = 1;
  options.sim.memory_bytes = memory_bytes;
  return options;
}

std::vector<uint8_t> pattern(uint64_t bytes, uint8_t seed) {
  std::vector<uint8_t> v(bytes);
  for (uint64_t i = 0; i < bytes; ++i) v[i] = static_cast<uint8_t>(seed + i * 7);
  return v;
}

std::vector<uint8_t> read(NodeMemory& memory, uint64_t addr, uint64_t bytes) {
  std::vector<uint8_t> v(bytes);
  memory.copy_from(v.data(), addr, bytes);
  return v;
}

// What a kernel on chip `k` does to the copy `acquire` returned: writes `bytes` at `offset`.
void chip_writes(NodeChips& chips, uint32_t k, const CopyAddress& copy, uint64_t offset,
                 const std::vector<uint8_t>& bytes) {
  chips.copy_to(k, copy.addr + offset, bytes.data(), bytes.size());
}

class NodeMemoryTest : public testing::TestWithParam<bool> {};  // in process?

TEST_P(NodeMemoryTest, HostWritesLandAtHomeAndReadsGatherFromWhereTheBytesAre) {
  NodeChips chips(chip_options(GetParam(), 3));
  NodeMemory memory(chips);
  constexpr uint64_t kBytes = 4096;
  for (Location home : {Location{1}, kHostLocation}) {
    SCOPED_TRACE(location_name(home));
    const NodeAllocation buffer = memory.allocate(kBytes, home);
    EXPECT_TRUE(memory.is_node_address(buffer.addr));
    EXPECT_TRUE(memory.has_copy(buffer.addr, home));
    memory.copy_to(buffer.addr, pattern(kBytes, 1).data(), kBytes);
    EXPECT_EQ(read(memory, buffer.addr, kBytes), pattern(kBytes, 1));
    EXPECT_FALSE(memory.has_copy(buffer.addr, kHostLocation) && home != kHostLocation)
        << "a host read makes no host copy";
    // A run on chip 2 writes [1024, 2048) of its copy: afterwards the host reads those bytes from
    // chip 2 and the rest from the home.
    const CopyAddress copy = memory.acquire(buffer.addr, 1024, 2048, 2, Access::Write);
    EXPECT_EQ(copy.location, 2u);
    chip_writes(chips, 2, copy, 1024, pattern(1024, 99));
    memory.release(buffer.addr, 1024, 2048, 2, Access::Write);
    std::vector<uint8_t> expected = pattern(kBytes, 1);
    const std::vector<uint8_t> written = pattern(1024, 99);
    std::memcpy(expected.data() + 1024, written.data(), 1024);
    EXPECT_EQ(read(memory, buffer.addr, kBytes), expected);
    EXPECT_EQ(read(memory, buffer.addr + 1000, 100),
              std::vector<uint8_t>(expected.begin() + 1000, expected.begin() + 1100));
    // The home is written again from the host: the chip's bytes are stale now.
    memory.memset(buffer.addr + 1500, 0x5a, 10);
    std::memset(expected.data() + 1500, 0x5a, 10);
    EXPECT_EQ(read(memory, buffer.addr, kBytes), expected);
    memory.free(buffer.addr);
  }
}

TEST_P(NodeMemoryTest, ARegionReadByThreeChipsIsCopiedOncePerChipUntilTheNextWrite) {
  NodeChips chips(chip_options(GetParam(), 4));
  NodeMemory memory(chips);
  const NodeAllocation buffer = memory.allocate(1 << 16, 0);
  memory.copy_to(buffer.addr, pattern(1 << 16, 3).data(), 1 << 16);
  for (int round = 0; round < 2; ++round) {
    for (Location k : {1u, 2u, 3u}) {
      const CopyAddress copy = memory.acquire(buffer.addr, 0, 1 << 16, k, Access::Read);
      std::vector<uint8_t> on_chip(1 << 16);
      chips.copy_from(k, on_chip.data(), copy.addr, on_chip.size());
      EXPECT_EQ(on_chip, pattern(1 << 16, 3)) << "chip " << k;
      memory.release(buffer.addr, 0, 1 << 16, k, Access::Read);
    }
  }
  EXPECT_EQ(memory.traffic().copies, 3u) << "once per chip, not once per read";
  EXPECT_EQ(memory.traffic().bytes, 3u << 16);
  // A write on a replica chip (2) of [0, 256): the next read on chip 3 copies just that, from 2.
  const CopyAddress two = memory.acquire(buffer.addr, 0, 256, 2, Access::Write);
  chip_writes(chips, 2, two, 0, pattern(256, 200));
  memory.release(buffer.addr, 0, 256, 2, Access::Write);
  const CopyAddress three = memory.acquire(buffer.addr, 0, 1 << 16, 3, Access::Read);
  memory.release(buffer.addr, 0, 1 << 16, 3, Access::Read);
  EXPECT_EQ(memory.traffic().copies, 4u);
  EXPECT_EQ(memory.traffic().bytes, (3u << 16) + 256);
  std::vector<uint8_t> head(256);
  chips.copy_from(3, head.data(), three.addr, 256);
  EXPECT_EQ(head, pattern(256, 200));
}

TEST_P(NodeMemoryTest, FullChipsDropTheirLeastRecentlyUsedReplicasBeforeRefusing) {
  // Chip 1 has room for a handful of 4 MiB copies besides its runtime's own memory.
  NodeChips chips(chip_options(GetParam(), 2, 48ull << 20));
  NodeMemory memory(chips);
  constexpr uint64_t kBytes = 4ull << 20;
  std::vector<NodeAllocation> buffers;
  for (int i = 0; i < 16; ++i) buffers.push_back(memory.allocate(kBytes, kHostLocation));
  for (const NodeAllocation& b : buffers) {
    memory.acquire(b.addr, 0, kBytes, 1, Access::Read);
    memory.release(b.addr, 0, kBytes, 1, Access::Read);
  }
  const uint64_t evictions = memory.traffic().evictions;
  EXPECT_GT(evictions, 0u) << "16 x 4 MiB do not fit a 48 MiB chip";
  EXPECT_FALSE(memory.has_copy(buffers.front().addr, 1)) << "the least recently used went first";
  EXPECT_TRUE(memory.has_copy(buffers.back().addr, 1));
  // Pinned copies and only copies are never dropped: fill chip 1 with buffers homed there.
  std::vector<NodeAllocation> homed;
  const Error full = error_of([&] {
    for (int i = 0; i < 16; ++i) homed.push_back(memory.allocate(kBytes, 1));
  });
  EXPECT_EQ(full.code(), StatusCode::OutOfDeviceMemory) << full.what();
  EXPECT_NE(std::string(full.what()).find("chip 1"), std::string::npos) << full.what();
  EXPECT_GT(homed.size(), 0u);
  for (const NodeAllocation& b : buffers) EXPECT_FALSE(memory.has_copy(b.addr, 1));
}

TEST_P(NodeMemoryTest, AChipResetLosesOnlyTheBytesWhoseOnlyCopyWasThere) {
  NodeChips chips(chip_options(GetParam(), 2));
  NodeMemory memory(chips);
  constexpr uint64_t kBytes = 8192;
  const NodeAllocation buffer = memory.allocate(kBytes, 1);
  memory.copy_to(buffer.addr, pattern(kBytes, 5).data(), kBytes);
  memory.acquire(buffer.addr, 0, kBytes / 2, 0, Access::Read);
  memory.release(buffer.addr, 0, kBytes / 2, 0, Access::Read);
  chips.reset_chip(1);
  memory.chip_reset(1, "chip 1 was reset (Node::reset_chip(1))");
  const std::vector<uint8_t> written = pattern(kBytes, 5);
  EXPECT_EQ(read(memory, buffer.addr, kBytes / 2),
            std::vector<uint8_t>(written.begin(), written.begin() + kBytes / 2));
  const Error lost = error_of([&] { read(memory, buffer.addr, kBytes); });
  EXPECT_EQ(lost.code(), StatusCode::InvalidDevicePointer);
  EXPECT_NE(std::string(lost.what()).find("[4096, 8192)"), std::string::npos) << lost.what();
  EXPECT_NE(std::string(lost.what()).find("Node::reset_chip(1)"), std::string::npos) << lost.what();
  // Written again from the host (at the home, whose copy is made anew), it reads whole.
  memory.copy_to(buffer.addr + kBytes / 2, pattern(kBytes / 2, 9).data(), kBytes / 2);
  const std::vector<uint8_t> back = read(memory, buffer.addr, kBytes);
  EXPECT_EQ(std::vector<uint8_t>(back.begin() + kBytes / 2, back.end()), pattern(kBytes / 2, 9));
}

TEST_P(NodeMemoryTest, BadAddressesAndSizesAreNamed) {
  NodeChips chips(chip_options(GetParam(), 2));
  NodeMemory memory(chips);
  const NodeAllocation a = memory.allocate(1000, 0);
  uint8_t byte = 0;
  EXPECT_EQ(error_of([&] { memory.allocate(0, 0); }).code(), StatusCode::InvalidArgument);
  const Error no_chip = error_of([&] { memory.allocate(8, 2); });
  EXPECT_NE(std::string(no_chip.what()).find("home chip 2 does not exist"), std::string::npos);
  const Error past = error_of([&] { memory.copy_to(a.addr + 999, &byte, 2); });
  EXPECT_EQ(past.code(), StatusCode::InvalidArgument) << past.what();
  EXPECT_NE(std::string(past.what()).find("exceed node buffer"), std::string::npos) << past.what();
  const DeviceBuffer device = chips.allocate(0, 64);
  const Error foreign = error_of([&] { memory.copy_from(&byte, device.addr, 1); });
  EXPECT_EQ(foreign.code(), StatusCode::InvalidDevicePointer);
  EXPECT_NE(std::string(foreign.what()).find("is not a node buffer's address"), std::string::npos)
      << foreign.what();
  EXPECT_FALSE(memory.is_node_address(device.addr)) << "device addresses are never node addresses";
  EXPECT_EQ(error_of([&] { memory.free(a.addr + 8); }).code(), StatusCode::InvalidDevicePointer);
  EXPECT_EQ(error_of([&] { memory.copy_to(a.addr, nullptr, 1); }).code(),
            StatusCode::InvalidArgument);
  memory.free(a.addr);
  const Error freed = error_of([&] { memory.copy_from(&byte, a.addr, 1); });
  EXPECT_NE(std::string(freed.what()).find("is not inside a live node buffer"), std::string::npos)
      << freed.what();
  EXPECT_EQ(error_of([&] { memory.free(a.addr); }).code(), StatusCode::InvalidDevicePointer);
  // A freed range is taken again.
  EXPECT_EQ(memory.allocate(1000, 1).addr, a.addr);
}

// Random reads and partial writes on chips and the host over two buffers, with real bytes moved by
// the node and written "by kernels" into the acquired copies, against the one true content.
TEST_P(NodeMemoryTest, RandomAccessesAcrossChipsReadTheLastWrite) {
  constexpr uint64_t kBytes = 512;
  const int seeds = GetParam() ? 60 : 8;
  NodeChips chips(chip_options(GetParam(), 3));
  for (int seed = 0; seed < seeds; ++seed) {
    std::mt19937_64 rng(seed);
    NodeMemory memory(chips);
    const Location homes[] = {static_cast<Location>(rng() % 3), kHostLocation};
    std::vector<NodeAllocation> buffers;
    std::vector<std::vector<uint8_t>> truth;
    for (Location home : homes) {
      buffers.push_back(memory.allocate(kBytes, home));
      truth.push_back(pattern(kBytes, static_cast<uint8_t>(seed)));
      memory.copy_to(buffers.back().addr, truth.back().data(), kBytes);
    }
    for (int op = 0; op < 24; ++op) {
      const size_t which = rng() % 2;
      const uint64_t addr = buffers[which].addr;
      uint64_t lo = rng() % kBytes, hi = rng() % (kBytes + 1);
      if (lo > hi) std::swap(lo, hi);
      if (lo == hi) continue;
      const Location at = rng() % 4 == 3 ? kHostLocation : static_cast<Location>(rng() % 3);
      if (at == kHostLocation) {
        ASSERT_EQ(read(memory, addr + lo, hi - lo),
                  std::vector<uint8_t>(truth[which].begin() + lo, truth[which].begin() + hi))
            << "seed " << seed << " op " << op;
        continue;
      }
      const bool write = rng() % 2 == 0;
      const CopyAddress copy =
          memory.acquire(addr, lo, hi, at, write ? Access::Write : Access::Read);
      std::vector<uint8_t> on_chip(hi - lo);
      chips.copy_from(at, on_chip.data(), copy.addr + lo, hi - lo);
      ASSERT_EQ(on_chip, std::vector<uint8_t>(truth[which].begin() + lo, truth[which].begin() + hi))
          << "seed " << seed << " op " << op << " on chip " << at;
      if (write) {  // a strided writer: every other 16-byte run
        for (uint64_t i = lo; i < hi; i += 32) {
          const uint64_t end = std::min(hi, i + 16);
          const std::vector<uint8_t> fresh = pattern(end - i, static_cast<uint8_t>(op * 13 + seed));
          chip_writes(chips, at, copy, i, fresh);
          std::copy(fresh.begin(), fresh.end(), truth[which].begin() + i);
        }
      }
      memory.release(addr, lo, hi, at, write ? Access::Write : Access::Read);
    }
    for (size_t b = 0; b < 2; ++b) {
      ASSERT_EQ(read(memory, buffers[b].addr, kBytes), truth[b]) << "seed " << seed;
      memory.free(buffers[b].addr);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Chips, NodeMemoryTest, testing::Values(true, false),
                         [](const testing::TestParamInfo<bool>& info) {
                           return info.param ? "InProcess" : "Isolated";
                         });

}  // namespace
}  // namespace chiprt::node
