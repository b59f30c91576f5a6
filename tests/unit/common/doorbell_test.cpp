// common::Doorbell: a parked owner never sleeps through work published before a ring, however
// the ringers interleave with its parks. Several ringers publish at once, so a ringer is often
// late from an earlier park while the owner parks again (what a separate flag and sequence got
// wrong: the late ringer cleared the new park's flag, and the next ringer skipped the wake).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "common/handshake.h"
#include "platform/sim/futex.h"

namespace chiprt::common {
namespace {

using Clock = std::chrono::steady_clock;

// The simulated chip's park/wake primitive (process-private futexes).
const ParkWake& kParkWake = platform::sim::sim_park_wake();

// Long enough that only a lost wake-up runs a wait to its end with work pending.
constexpr auto kParkTimeout = std::chrono::seconds(5);

struct Stats {
  uint64_t parks = 0;
  uint64_t slept_through_work = 0;  // waits that timed out with published work unconsumed
};

// The owner: consumes everything published, parking whenever it sees nothing new.
Stats run_owner(Doorbell* bell, const std::atomic<uint64_t>* published,
                std::atomic<uint64_t>* consumed, uint64_t total) {
  Stats stats;
  while (consumed->load(std::memory_order_relaxed) < total) {
    const uint64_t available = published->load(std::memory_order_seq_cst);
    if (available > consumed->load(std::memory_order_relaxed)) {
      consumed->store(available, std::memory_order_seq_cst);
      continue;
    }
    const uint32_t seen = bell->prepare_park(1);
    if (published->load(std::memory_order_seq_cst) > available) {  // the re-check
      bell->unpark();
      continue;
    }
    ++stats.parks;
    const auto start = Clock::now();
    kParkWake.park(&bell->word, seen,
                   std::chrono::duration_cast<std::chrono::nanoseconds>(kParkTimeout).count());
    const bool unchanged = bell->word.load(std::memory_order_seq_cst) == seen;
    if (unchanged && Clock::now() - start >= kParkTimeout &&
        published->load(std::memory_order_seq_cst) > available) {
      ++stats.slept_through_work;
    }
    bell->unpark();
  }
  return stats;
}

TEST(DoorbellTest, ConcurrentRingersNeverLeaveTheOwnerAsleepWithWorkPublished) {
  constexpr int kRingers = 3;
  constexpr uint64_t kItemsPerRinger = 10000;
  constexpr uint64_t kTotal = kRingers * kItemsPerRinger;
  Doorbell bell{};
  std::atomic<uint64_t> published{0};
  std::atomic<uint64_t> consumed{0};
  Stats stats;
  std::thread owner([&] { stats = run_owner(&bell, &published, &consumed, kTotal); });
  std::vector<std::thread> ringers;
  for (int r = 0; r < kRingers; ++r) {
    ringers.emplace_back([&] {
      for (uint64_t i = 0; i < kItemsPerRinger; ++i) {
        const uint64_t mine = published.fetch_add(1, std::memory_order_seq_cst) + 1;
        bell.ring(kParkWake);
        // Ping-pong: the owner parks between items, so rings keep meeting parks.
        while (consumed.load(std::memory_order_seq_cst) < mine) std::this_thread::yield();
      }
    });
  }
  for (std::thread& t : ringers) t.join();
  owner.join();
  EXPECT_EQ(consumed.load(), kTotal);
  EXPECT_EQ(stats.slept_through_work, 0u) << "of " << stats.parks << " parks";
  EXPECT_GT(stats.parks, 0u);  // the owner did park: the protocol was exercised
}

// The interleaving the separate flag and sequence lost, step by step: a ringer observes park 1,
// stalls; another ringer wakes the owner, which parks again (park 2) and finds nothing; the late
// ringer then completes its ring. Park 2 must either keep its flag (so the next ringer wakes it)
// or see its value changed (so its wait returns at once); never a cleared flag and its value.
TEST(DoorbellTest, ALateRingerNeverLeavesTheNextParkWithoutFlagAndWake) {
  Doorbell bell{};
  bell.prepare_park(1);  // park 1
  const uint32_t observed_by_late_ringer = bell.word.load();
  bell.ring(kParkWake);  // a prompt ringer wakes park 1
  bell.unpark();
  const uint32_t park2 = bell.prepare_park(1);
  bell.ring_observed(observed_by_late_ringer, kParkWake);
  EXPECT_TRUE(bell.parked() || bell.word.load() != park2);
  // A ringer that observed park 2 itself always wakes it.
  const uint32_t park3 = bell.prepare_park(1);
  bell.ring_observed(park3, kParkWake);
  EXPECT_FALSE(bell.parked());
  EXPECT_NE(bell.word.load(), park3);
}

TEST(DoorbellTest, RingWithoutAParkedOwnerIsALoad) {
  Doorbell bell{};
  bell.ring(kParkWake);
  EXPECT_EQ(bell.word.load(), 0u);  // no flag: nothing cleared, no sequence bump
  const uint32_t seen = bell.prepare_park(7);
  EXPECT_TRUE(bell.parked());
  EXPECT_EQ(bell.wants.load(), 7u);
  bell.ring(kParkWake);
  EXPECT_FALSE(bell.parked());
  EXPECT_NE(bell.word.load(), seen);  // a wait on `seen` now returns at once
  bell.ring(kParkWake);               // already woken: no second bump
  EXPECT_EQ(bell.word.load(), (seen & ~Doorbell::kParkedBit) + Doorbell::kSequenceStep);
}

TEST(DoorbellTest, UnparkKeepsARingersSequenceBump) {
  Doorbell bell{};
  const uint32_t seen = bell.prepare_park(1);
  bell.ring(kParkWake);
  bell.unpark();
  EXPECT_NE(bell.word.load(), seen & ~Doorbell::kParkedBit);
  EXPECT_FALSE(bell.parked());
}

}  // namespace
}  // namespace chiprt::common
