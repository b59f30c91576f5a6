// 100 crash/reset cycles on one isolated Worker leak nothing: this process's fd and thread counts
// are exactly those after a warm-up cycle, exactly one device process lives (the current one) and
// none is left unreaped, and RSS grows by at most a few MiB. The figures are printed at the start,
// every 25 cycles and at the end.
#include <gtest/gtest.h>

#include <cstdio>
#include <vector>

#include "chiprt/status.h"
#include "chiprt/worker.h"
#include "isolation_support.h"

namespace chiprt::isolation_test {
namespace {

constexpr int kCycles = 100;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
// The sanitizers keep freed memory in quarantine and grow their shadow memory.
constexpr uint64_t kRssGrowthBound = 64ull << 20;
#else
constexpr uint64_t kRssGrowthBound = 4ull << 20;
#endif

// One cycle: a kernel crash, then a reset and a normal run on fresh buffers.
void crash_and_reset(Worker& worker, RuntimeVariant variant) {
  const DeviceBuffer x = worker.malloc(kBytes);
  const DeviceBuffer y = worker.malloc(kBytes);
  try {
    worker.run(kCallable, scenario_args(x, y, Scenario::KernelFault, TaskKind::Aiv, Fault::Segv),
               run_config(variant, false));
    FAIL() << "the faulting run succeeded";
  } catch (const Error& e) {
    ASSERT_EQ(e.code(), StatusCode::KernelCrashed) << e.what();
  }
  worker.reset();
  expect_works_after_reset(worker, x, variant);
}

TEST(ResetCycles, HundredCrashResetCyclesLeakNothing) {
  bus_address();
  Worker worker;
  worker.init(isolated_options());
  register_suite_callables(worker);
  const ProcessResources initial = process_resources();
  std::printf("[ measured ] start: %s\n", initial.describe().c_str());
  // Warm-up: the first cycle may create what later ones reuse (the host's threads, caches).
  crash_and_reset(worker, RuntimeVariant::HostBuildGraph);
  const ProcessResources warm = process_resources();
  std::printf("[ measured ] after the warm-up cycle: %s\n", warm.describe().c_str());
  for (int cycle = 1; cycle <= kCycles; ++cycle) {
    crash_and_reset(worker, cycle % 2 == 0 ? RuntimeVariant::HostBuildGraph
                                           : RuntimeVariant::TensormapRingbuffer);
    if (testing::Test::HasFatalFailure()) return;
    if (cycle % 25 == 0) {
      const ProcessResources now = process_resources();
      std::printf("[ measured ] after %d cycles: %s\n", cycle, now.describe().c_str());
      EXPECT_EQ(now.fds, warm.fds) << "cycle " << cycle;
      EXPECT_EQ(now.threads, warm.threads) << "cycle " << cycle;
      EXPECT_EQ(now.live_children, 1u) << "cycle " << cycle << ": only the current device";
      EXPECT_EQ(now.zombie_children, 0u) << "cycle " << cycle;
      EXPECT_FALSE(has_unreaped_child()) << "cycle " << cycle;
    }
  }
  const ProcessResources end = process_resources();
  EXPECT_EQ(worker.reset_count(), static_cast<uint64_t>(kCycles) + 1);
  const int64_t rss_growth =
      static_cast<int64_t>(end.rss_bytes) - static_cast<int64_t>(warm.rss_bytes);
  std::printf("[ measured ] RSS growth over %d cycles: %lld KiB (bound %llu KiB)\n", kCycles,
              static_cast<long long>(rss_growth / 1024),
              static_cast<unsigned long long>(kRssGrowthBound / 1024));
  EXPECT_LE(rss_growth, static_cast<int64_t>(kRssGrowthBound));
  worker.close();
  const ProcessResources closed = process_resources();
  std::printf("[ measured ] after close: %s\n", closed.describe().c_str());
  EXPECT_EQ(closed.live_children, 0u);
  EXPECT_EQ(closed.zombie_children, 0u);
  EXPECT_FALSE(has_unreaped_child());
}

}  // namespace
}  // namespace chiprt::isolation_test
