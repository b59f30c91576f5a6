// Storage kept between host_build_graph runs (issue 11, item 7): it serves runs of a similar size
// again, and is given back after a run that needs less than a quarter of it (above a 64 MiB
// floor), so one very large graph does not leave the Worker at its size until close.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <vector>

#include "chiprt/callable.h"
#include "chiprt/orchestration.h"
#include "host/arena.h"
#include "host/device_runner.h"
#include "host/log.h"
#include "host_test_support.h"

namespace chiprt::host {
namespace {

uint64_t g_dummy_tasks = 1;

void dummy_tasks_orchestration(Orchestration& orch, const TaskArgs&) {
  for (uint64_t i = 0; i < g_dummy_tasks; ++i) {
    TaskArgs task;
    orch.submit_dummy(task);
  }
}

void noop_kernel(int64_t*) {}

std::vector<uint8_t> dummy_tasks_callable() {
  return CallableBuilder()
      .orchestration_function(&dummy_tasks_orchestration, ArgSignature{})
      .kernel_function(0, CoreType::AIV, &noop_kernel, ArgSignature{})
      .build();
}

constexpr uint64_t kMiB = 1ull << 20;
// Large enough that each kind of storage it leaves is above the 64 MiB floor (the image, the
// smallest, is about 65 bytes a task), small enough for a unit test (about 1 s; 20 s under TSan).
constexpr uint64_t kBigTasks = 1'200'000;

RunReport run_tasks(DeviceRunner& runner, uint64_t tasks) {
  g_dummy_tasks = tasks;
  CallConfig config = test::small_call_config(kBigTasks + 16);
  return runner.run(0, TaskArgs{}, config);
}

// Host storage kept for the next build plus the device regions of bank 0 that grow with a graph.
struct Retained {
  uint64_t host = 0;
  uint64_t shared_state = 0;
  uint64_t runtime_image = 0;
};
Retained retained(DeviceRunner& runner) {
  const ArenaSizes committed = runner.arenas().committed_sizes(0);
  return {runner.retained_host_bytes(), committed.shared_state, committed.runtime_image};
}

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
// Resident set of this process (a sanitizer's allocator keeps freed memory, so not under one).
uint64_t resident_bytes() {
  std::FILE* file = std::fopen("/proc/self/statm", "r");
  if (file == nullptr) return 0;
  unsigned long long size = 0;
  unsigned long long resident = 0;
  const int read = std::fscanf(file, "%llu %llu", &size, &resident);
  std::fclose(file);
  return read == 2 ? resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE)) : 0;
}
#endif

class RetainedStorage : public ::testing::Test {
 protected:
  void SetUp() override {
    runner_ = std::make_unique<DeviceRunner>(
        test::make_sim(/*clusters=*/1, /*serial=*/false, /*memory_bytes=*/2048 * kMiB));
    runner_->attach(0);
    runner_->register_callable(0, dummy_tasks_callable());
  }
  std::unique_ptr<DeviceRunner> runner_;
};

TEST_F(RetainedStorage, IsGivenBackAfterAMuchSmallerRunAndKeptForSimilarOnes) {
  ASSERT_EQ(run_tasks(*runner_, kBigTasks).task_count, kBigTasks);
  const Retained big = retained(*runner_);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  const uint64_t rss_big = resident_bytes();
#endif
  RecordProperty("retained_host_mib_after_big_run", static_cast<int>(big.host / kMiB));
  RecordProperty("shared_state_mib_after_big_run", static_cast<int>(big.shared_state / kMiB));
  RecordProperty("runtime_image_mib_after_big_run", static_cast<int>(big.runtime_image / kMiB));
  ASSERT_GT(big.host, 64 * kMiB) << "the big run should retain more than the floor";
  ASSERT_GT(big.shared_state, 64 * kMiB);
  ASSERT_GT(big.runtime_image, 64 * kMiB);

  // A run of more than a quarter of the tasks reuses everything: no storage is given back.
  const uint64_t commits = runner_->arenas().commit_count();
  ASSERT_EQ(run_tasks(*runner_, kBigTasks / 3).task_count, kBigTasks / 3);
  const Retained similar = retained(*runner_);
  EXPECT_EQ(similar.host, big.host);
  EXPECT_EQ(similar.shared_state, big.shared_state);
  EXPECT_EQ(similar.runtime_image, big.runtime_image);
  EXPECT_EQ(runner_->arenas().commit_count(), commits);

  // A run of one task gives the big storage back.
  ASSERT_EQ(run_tasks(*runner_, 1).task_count, 1u);
  const Retained small = retained(*runner_);
  EXPECT_LT(small.host, 1 * kMiB) << "after the big run " << big.host << " bytes";
  EXPECT_LT(small.shared_state, 1 * kMiB) << "after the big run " << big.shared_state << " bytes";
  EXPECT_LT(small.runtime_image, 1 * kMiB) << "after the big run " << big.runtime_image << " bytes";
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  const uint64_t rss_small = resident_bytes();
  RecordProperty("rss_mib_after_big_run", static_cast<int>(rss_big / kMiB));
  RecordProperty("rss_mib_after_small_run", static_cast<int>(rss_small / kMiB));
  // Most of what the big run kept is resident memory that is now returned.
  EXPECT_LT(rss_small + (big.host + big.shared_state + big.runtime_image) / 3, rss_big);
#endif

  // And the runner works as before.
  EXPECT_EQ(run_tasks(*runner_, 10).task_count, 10u);
  EXPECT_LT(retained(*runner_).host, 1 * kMiB);
}

// The replay cache is retention the caller asked for: a small run between replays of a large
// cached graph keeps bank 0's regions, so the next replay still finds its image.
TEST_F(RetainedStorage, SmallRunsKeepTheRegionsOfACachedGraph) {
  CallConfig replay = test::small_call_config(kBigTasks + 16);
  replay.replay_graph = true;
  g_dummy_tasks = kBigTasks;
  ASSERT_EQ(runner_->run(0, TaskArgs{}, replay).task_count, kBigTasks);
  const Retained cached = retained(*runner_);
  ASSERT_GT(cached.runtime_image, 64 * kMiB);

  ASSERT_EQ(run_tasks(*runner_, 1).task_count, 1u);
  EXPECT_EQ(retained(*runner_).runtime_image, cached.runtime_image);
  EXPECT_EQ(retained(*runner_).shared_state, cached.shared_state);

  g_dummy_tasks = kBigTasks;
  ASSERT_EQ(runner_->run(0, TaskArgs{}, replay).task_count, kBigTasks);
  EXPECT_EQ(runner_->replayed_runs(), 1u);
}

}  // namespace
}  // namespace chiprt::host
