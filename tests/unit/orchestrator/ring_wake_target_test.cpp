// Back-pressure hysteresis of the ring orchestrator: while it waits for retirement it asks the
// completers (RingControl::orchestrator_wake_at) to wake it only once a batch of a quarter of the
// set's unretired tasks completed, capped at the tasks submitted so far, so that it does not wake
// per task.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "ring_test_support.h"

namespace chiprt::orchestrator {
namespace {

using testing::kAivFunc;
using testing::RingHarness;
using testing::SetSizes;

// What the orchestrator asked for while the fake chip ran a task during a wait.
struct WaitSnapshot {
  uint64_t wake_at;
  uint64_t submitted;
};

TEST(RingWakeTarget, BackPressuredOrchestratorWaitsForAQuarterOfTheWindow) {
  RingHarness h({SetSizes{.window = 32}});
  std::vector<WaitSnapshot> seen;
  h.driver.on_run = [&](uint32_t) {
    seen.push_back(WaitSnapshot{h.control.orchestrator_wake_at.load(std::memory_order_relaxed),
                                h.driver.submitted_seen});
  };
  constexpr int kTasks = 100;
  for (int i = 0; i < kTasks; ++i) {
    TaskArgs args;
    args.scalar(static_cast<int64_t>(i));
    ASSERT_EQ(h.orch->submit(kAivFunc, CoreType::AIV, args), i);
  }
  ASSERT_FALSE(h.orch->failed()) << h.orch->error().message();
  // The first wait happens with the window full (32 submitted, none completed): woken after 8.
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.front().submitted, 32u);
  EXPECT_EQ(seen.front().wake_at, 8u);
  // Every target is reachable: never beyond the tasks submitted when it was set.
  for (const WaitSnapshot& s : seen) EXPECT_LE(s.wake_at, s.submitted);
}

TEST(RingWakeTarget, TargetIsCappedAtTheSubmittedTasks) {
  // A window of 16 holding only 16 tasks: a batch of 4 is reachable, and a chain keeps the cap.
  RingHarness h;
  std::vector<WaitSnapshot> seen;
  h.driver.on_run = [&](uint32_t) {
    seen.push_back(WaitSnapshot{h.control.orchestrator_wake_at.load(std::memory_order_relaxed),
                                h.driver.submitted_seen});
  };
  const Tensor t = Tensor::make(DeviceBuffer{0x100000, 4096}, {16}, DataType::F32);
  for (int i = 0; i < 40; ++i) {
    TaskArgs args;
    args.inout(t);
    ASSERT_EQ(h.orch->submit(kAivFunc, CoreType::AIV, args), i);
  }
  ASSERT_FALSE(h.orch->failed()) << h.orch->error().message();
  ASSERT_FALSE(seen.empty());
  for (const WaitSnapshot& s : seen) {
    EXPECT_GE(s.wake_at, 1u);
    EXPECT_LE(s.wake_at, s.submitted);
  }
}

}  // namespace
}  // namespace chiprt::orchestrator
