// The simulated chip's park/wake primitive (platform/sim/futex.h, common::ParkWake): many
// park/wake rounds between threads never lose a wake-up, with process-private futexes (today's
// sim) and with shared ones (a chip in another process), so either is a drop-in for the other.
// (The doorbell protocol over the primitive: tests/unit/common/doorbell_test.cpp.)
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

#include "common/park_wake.h"
#include "platform/sim/futex.h"

namespace chiprt::platform::sim {
namespace {

using Clock = std::chrono::steady_clock;

// Only a lost wake-up runs a park this long with its word already changed.
constexpr uint64_t kParkTimeoutNs = 5'000'000'000ull;

class ParkWakeTest : public ::testing::TestWithParam<FutexScope> {};

// Ping-pong over one word: each side parks until the other bumps it, `rounds` times. A lost
// wake-up would leave a side asleep for the whole timeout with the word already bumped.
TEST_P(ParkWakeTest, PingPongNeverSleepsThroughAWake) {
  const common::ParkWake& park_wake = sim_park_wake(GetParam());
  ASSERT_TRUE(park_wake.complete());
  constexpr uint32_t kRounds = 20000;
  std::atomic<uint32_t> word{0};
  std::atomic<uint32_t> slept_through{0};
  auto side = [&](uint32_t parity) {
    for (uint32_t turn = parity; turn < 2 * kRounds; turn += 2) {
      for (;;) {
        const uint32_t seen = word.load(std::memory_order_seq_cst);
        if (seen == turn) break;
        const auto start = Clock::now();
        park_wake.park(&word, seen, kParkTimeoutNs);
        if (word.load(std::memory_order_seq_cst) != seen &&
            Clock::now() - start >= std::chrono::nanoseconds(kParkTimeoutNs)) {
          slept_through.fetch_add(1);
        }
      }
      word.store(turn + 1, std::memory_order_seq_cst);
      park_wake.wake(&word);
    }
  };
  std::thread odd(side, 1u);
  side(0);
  odd.join();
  EXPECT_EQ(word.load(), 2 * kRounds);
  EXPECT_EQ(slept_through.load(), 0u);
}

TEST_P(ParkWakeTest, ParkOnAChangedWordReturnsAtOnce) {
  const common::ParkWake& park_wake = sim_park_wake(GetParam());
  std::atomic<uint32_t> word{5};
  const auto start = Clock::now();
  park_wake.park(&word, 4, kParkTimeoutNs);  // value differs: no sleep
  EXPECT_LT(Clock::now() - start, std::chrono::nanoseconds(kParkTimeoutNs));
}

INSTANTIATE_TEST_SUITE_P(Scopes, ParkWakeTest,
                         ::testing::Values(FutexScope::Private, FutexScope::Shared),
                         [](const ::testing::TestParamInfo<FutexScope>& info) {
                           return info.param == FutexScope::Private ? "Private" : "Shared";
                         });

}  // namespace
}  // namespace chiprt::platform::sim
