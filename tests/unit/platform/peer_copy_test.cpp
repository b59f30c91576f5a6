// Device-to-device copies between the platforms of one process (Platform::copy_from_peer): every
// pair of sim kinds (in process, isolated), through the sim's direct copy and through the
// interface's staging default, in one table; bad ranges, overlap, a dead device, a reset device and
// two threads copying in opposite directions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "platform/platform.h"
#include "platform/sim/isolated_platform.h"
#include "platform/sim/sim_platform.h"

namespace chiprt::platform {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

enum class Kind { InProcess, Isolated };
enum class Path { Direct, Staged };

struct PeerCase {
  Kind dst;
  Kind src;
  Path path;
};

std::unique_ptr<Platform> make_platform(Kind kind) {
  SimOptions config;
  config.clusters = 1;
  config.aicpu_threads = 1;
  config.host_threads = 1;
  config.memory_bytes = 16 * kMiB;
  config.core_execution = SimCoreExecution::Aicpu;
  if (kind == Kind::InProcess) return std::make_unique<sim::SimPlatform>(config);
  config.isolation = SimIsolation::Process;
  return std::make_unique<sim::IsolatedPlatform>(config);
}

// The copy under test: the platform's own, or the interface's default (what a platform that can
// only copy to and from the host gets).
Status copy(Path path, Platform& dst, uint64_t dst_addr, Platform& src, uint64_t src_addr,
            uint64_t bytes) {
  if (path == Path::Staged) return dst.Platform::copy_from_peer(dst_addr, src, src_addr, bytes);
  return dst.copy_from_peer(dst_addr, src, src_addr, bytes);
}

std::vector<uint8_t> pattern(uint64_t bytes, uint32_t seed) {
  std::vector<uint8_t> data(bytes);
  uint32_t x = seed;
  for (uint8_t& byte : data) {
    x = x * 1664525u + 1013904223u;
    byte = static_cast<uint8_t>(x >> 24);
  }
  return data;
}

DeviceBuffer alloc_with(Platform& platform, const std::vector<uint8_t>& bytes) {
  DeviceBuffer buffer;
  EXPECT_TRUE(platform.alloc(bytes.size(), 64, &buffer).is_ok());
  EXPECT_TRUE(platform.copy_to_device(buffer.addr, bytes.data(), bytes.size()).is_ok());
  return buffer;
}

std::vector<uint8_t> read(Platform& platform, uint64_t addr, uint64_t bytes) {
  std::vector<uint8_t> out(bytes);
  EXPECT_TRUE(platform.copy_from_device(out.data(), addr, bytes).is_ok());
  return out;
}

std::string kind_name(Kind kind) {
  return kind == Kind::InProcess ? "InProcess" : "Isolated";
}

class PeerCopy : public ::testing::TestWithParam<PeerCase> {
 protected:
  void SetUp() override {
    dst_ = make_platform(GetParam().dst);
    src_ = make_platform(GetParam().src);
  }
  Status copy(uint64_t dst_addr, uint64_t src_addr, uint64_t bytes) {
    return platform::copy(GetParam().path, *dst_, dst_addr, *src_, src_addr, bytes);
  }
  std::unique_ptr<Platform> dst_;
  std::unique_ptr<Platform> src_;
};

// More than two staging chunks and an odd size, into the middle of a larger allocation: exactly
// those bytes change.
TEST_P(PeerCopy, CopiesExactlyTheRangeBetweenTwoDevices) {
  const uint64_t bytes = 2 * Platform::kPeerCopyChunk + 4099;
  const std::vector<uint8_t> source = pattern(bytes, 1);
  const std::vector<uint8_t> before = pattern(bytes + 8192, 2);
  const DeviceBuffer from = alloc_with(*src_, source);
  const DeviceBuffer to = alloc_with(*dst_, before);
  ASSERT_TRUE(copy(to.addr + 4096, from.addr, bytes).is_ok());

  std::vector<uint8_t> expected = before;
  std::copy(source.begin(), source.end(), expected.begin() + 4096);
  EXPECT_EQ(read(*dst_, to.addr, to.size), expected);
  EXPECT_EQ(read(*src_, from.addr, from.size), source);
  EXPECT_TRUE(copy(to.addr, from.addr, 0).is_ok());
}

// A range outside a live allocation on either side is InvalidDevicePointer naming the side, and
// the destination is left as it was.
TEST_P(PeerCopy, ABadRangeOnEitherSideWritesNothing) {
  const std::vector<uint8_t> source = pattern(64 * 1024, 3);
  const std::vector<uint8_t> before = pattern(64 * 1024, 4);
  const DeviceBuffer from = alloc_with(*src_, source);
  const DeviceBuffer to = alloc_with(*dst_, before);
  DeviceBuffer freed;
  ASSERT_TRUE(src_->alloc(4096, 64, &freed).is_ok());
  ASSERT_TRUE(src_->free(freed.addr).is_ok());

  struct Bad {
    uint64_t dst;
    uint64_t src;
    uint64_t bytes;
    const char* side;
  };
  const Bad bad[] = {
      {to.addr, from.addr + 1, from.size, "copy_from_peer (source)"},     // past its end
      {to.addr, freed.addr, 64, "copy_from_peer (source)"},               // freed
      {to.addr, 0x10, 64, "copy_from_peer (source)"},                     // no allocation
      {to.addr + 8, from.addr, to.size, "copy_from_peer (destination)"},  // past its end
      {0x10, from.addr, 64, "copy_from_peer (destination)"},              // no allocation
  };
  for (const Bad& b : bad) {
    const Status status = copy(b.dst, b.src, b.bytes);
    EXPECT_EQ(status.code(), StatusCode::InvalidDevicePointer) << status.message();
    EXPECT_NE(status.message().find(b.side), std::string::npos) << status.message();
  }
  EXPECT_EQ(read(*dst_, to.addr, to.size), before);
}

std::vector<PeerCase> every_pair() {
  std::vector<PeerCase> cases;
  for (Path path : {Path::Direct, Path::Staged}) {
    for (Kind dst : {Kind::InProcess, Kind::Isolated}) {
      for (Kind src : {Kind::InProcess, Kind::Isolated}) cases.push_back({dst, src, path});
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Sim, PeerCopy, ::testing::ValuesIn(every_pair()),
                         [](const ::testing::TestParamInfo<PeerCase>& info) {
                           return kind_name(info.param.src) + "To" + kind_name(info.param.dst) +
                                  (info.param.path == Path::Direct ? "Direct" : "Staged");
                         });

// Within one device, overlapping ranges copy as memmove does, in both directions, also across
// staging chunks.
class PeerCopyWithinOneDevice : public ::testing::TestWithParam<std::tuple<Kind, Path>> {};

TEST_P(PeerCopyWithinOneDevice, OverlappingRangesCopyAsMemmove) {
  const auto [kind, path] = GetParam();
  std::unique_ptr<Platform> device = make_platform(kind);
  const uint64_t bytes = Platform::kPeerCopyChunk + 5000;
  const uint64_t shift = 1000;
  for (const bool upwards : {true, false}) {
    const std::vector<uint8_t> data = pattern(bytes + shift, upwards ? 5 : 6);
    const DeviceBuffer buffer = alloc_with(*device, data);
    const uint64_t src = upwards ? buffer.addr : buffer.addr + shift;
    const uint64_t dst = upwards ? buffer.addr + shift : buffer.addr;
    ASSERT_TRUE(copy(path, *device, dst, *device, src, bytes).is_ok());
    std::vector<uint8_t> expected = data;
    std::memmove(expected.data() + (dst - buffer.addr), data.data() + (src - buffer.addr), bytes);
    EXPECT_EQ(read(*device, buffer.addr, buffer.size), expected) << "upwards " << upwards;
    ASSERT_TRUE(device->free(buffer.addr).is_ok());
  }
}

INSTANTIATE_TEST_SUITE_P(Sim, PeerCopyWithinOneDevice,
                         ::testing::Combine(::testing::Values(Kind::InProcess, Kind::Isolated),
                                            ::testing::Values(Path::Direct, Path::Staged)),
                         [](const auto& info) {
                           return kind_name(std::get<0>(info.param)) +
                                  (std::get<1>(info.param) == Path::Direct ? "Direct" : "Staged");
                         });

// A dead device process's memory is still the host's to read (what a node salvages before the
// reset); after the reset its addresses are gone.
TEST(PeerCopyFromADeadDevice, ReadsItsMemoryUntilTheReset) {
  std::unique_ptr<Platform> dead = make_platform(Kind::Isolated);
  std::unique_ptr<Platform> alive = make_platform(Kind::InProcess);
  ASSERT_TRUE(dead->attach(0).is_ok());
  ASSERT_TRUE(dead->start_streams().is_ok());  // the device process
  const std::vector<uint8_t> source = pattern(3 * 4096, 7);
  const DeviceBuffer from = alloc_with(*dead, source);
  DeviceBuffer to;
  ASSERT_TRUE(alive->alloc(source.size(), 64, &to).is_ok());
  ASSERT_TRUE(dead->kill_device("the test kills it").is_ok());
  ASSERT_NE(dead->device_fault().kind, DeviceFault::Kind::None);

  ASSERT_TRUE(alive->copy_from_peer(to.addr, *dead, from.addr, source.size()).is_ok());
  EXPECT_EQ(read(*alive, to.addr, to.size), source);

  ASSERT_TRUE(dead->reset_device().is_ok());
  const Status gone = alive->copy_from_peer(to.addr, *dead, from.addr, source.size());
  EXPECT_EQ(gone.code(), StatusCode::InvalidDevicePointer) << gone.message();
}

// Two host threads copying A -> B and B -> A at once take both devices' locks in a safe order
// (ThreadSanitizer's lock-order check runs this too).
TEST(PeerCopyBetweenThreads, OppositeDirectionsAtOnceNeitherDeadlockNorTear) {
  std::unique_ptr<Platform> a = make_platform(Kind::InProcess);
  std::unique_ptr<Platform> b = make_platform(Kind::Isolated);
  const std::vector<uint8_t> a_data = pattern(256 * 1024, 8);
  const std::vector<uint8_t> b_data = pattern(256 * 1024, 9);
  const DeviceBuffer a_src = alloc_with(*a, a_data);
  const DeviceBuffer b_src = alloc_with(*b, b_data);
  DeviceBuffer a_dst;
  DeviceBuffer b_dst;
  ASSERT_TRUE(a->alloc(b_data.size(), 64, &a_dst).is_ok());
  ASSERT_TRUE(b->alloc(a_data.size(), 64, &b_dst).is_ok());
  constexpr int kRounds = 200;
  auto copier = [](Platform* to, uint64_t to_addr, Platform* from, uint64_t from_addr,
                   uint64_t bytes, bool* ok) {
    for (int i = 0; i < kRounds && *ok; ++i) {
      *ok = to->copy_from_peer(to_addr, *from, from_addr, bytes).is_ok();
    }
  };
  bool ab = true;
  bool ba = true;
  std::thread forward(copier, b.get(), b_dst.addr, a.get(), a_src.addr, a_data.size(), &ab);
  std::thread backward(copier, a.get(), a_dst.addr, b.get(), b_src.addr, b_data.size(), &ba);
  forward.join();
  backward.join();
  EXPECT_TRUE(ab);
  EXPECT_TRUE(ba);
  EXPECT_EQ(read(*b, b_dst.addr, b_dst.size), a_data);
  EXPECT_EQ(read(*a, a_dst.addr, a_dst.size), b_data);
}

}  // namespace
}  // namespace chiprt::platform
