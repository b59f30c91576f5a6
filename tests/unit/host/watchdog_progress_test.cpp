// The scheduler watchdog's one rule of progress, on every runtime variant and core mode (one
// table): a run fails with SchedulerTimeout only when, for the scheduler timeout, no task
// completed, no kernel started and the orchestration function neither submitted nor returned.
// Healthy runs whose kernels each take a good part of the timeout pass; a stuck kernel or a stuck
// orchestration function is named, with the true completed count.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "chiprt/callable.h"
#include "chiprt/orchestration.h"
#include "host/device_runner.h"
#include "host/log.h"
#include "host_test_support.h"

namespace chiprt::host {
namespace {

using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

// 600 ms, not less: each healthy kernel leaves the watchdog 20% (120 ms) of slack, which a kernel's
// sleep and the next dispatch must not overrun on a loaded 2-core host.
constexpr uint64_t kWatchdogMs = 600;
// The smallest stream-sync timeout the ordering rule allows with that watchdog (> 1.5 s more):
// the healthy runs take longer than this, so the host's wait must follow progress too.
constexpr uint64_t kStreamSyncMs = 2200;
// Each kernel of the healthy runs takes 80% of the watchdog (an observer that looked at progress
// only every quarter timeout, and not again before its verdict, killed such runs); their runs
// take several watchdogs.
constexpr auto kKernelTime = std::chrono::milliseconds(kWatchdogMs * 4 / 5);
// Serial runs have the host's wait as their only watchdog: kernels of 80% of the stream-sync
// timeout.
constexpr auto kLongKernelTime = std::chrono::milliseconds(kStreamSyncMs * 4 / 5);

std::atomic<bool> g_release{false};

void slow_kernel(int64_t*) {
  std::this_thread::sleep_for(kKernelTime);
}
void long_kernel(int64_t*) {
  std::this_thread::sleep_for(kLongKernelTime);
}
void quick_kernel(int64_t*) {}
// Blocks until the test releases it (the stuck kernel).
void blocking_kernel(int64_t*) {
  while (!g_release.load(std::memory_order_acquire)) g_release.wait(false);
}

constexpr int32_t kSlow = 0;
constexpr int32_t kQuick = 1;
constexpr int32_t kBlocking = 2;
constexpr int32_t kLong = 3;

// A dependency chain through one buffer (run argument 0, 4 bytes): each task waits for the last.
void chain_of(Orchestration& orch, const Tensor& token, int32_t func_id, uint64_t count) {
  for (uint64_t i = 0; i < count; ++i) {
    TaskArgs task;
    task.inout(token);
    orch.submit(func_id, CoreType::AIV, task);
  }
}
// Scalar 0: how many slow tasks in a chain.
void slow_chain(Orchestration& orch, const TaskArgs& args) {
  chain_of(orch, args.tensor(0), kSlow, args.scalar_bits(0));
}
// Scalar 0: how many long tasks in a chain.
void long_chain(Orchestration& orch, const TaskArgs& args) {
  chain_of(orch, args.tensor(0), kLong, args.scalar_bits(0));
}
// Scalar 0: how many independent slow tasks.
void slow_independent(Orchestration& orch, const TaskArgs& args) {
  for (uint64_t i = 0; i < args.scalar_bits(0); ++i) {
    TaskArgs task;
    orch.submit(kSlow, CoreType::AIV, task);
  }
}
// Scalar 0 quick tasks, then the function blocks until the test releases it.
void stuck_orchestration(Orchestration& orch, const TaskArgs& args) {
  chain_of(orch, args.tensor(0), kQuick, args.scalar_bits(0));
  while (!g_release.load(std::memory_order_acquire)) g_release.wait(false);
}
// Scalar 0 quick tasks, each after a pause of 0.8 watchdogs: nothing is outstanding most of the
// time, but the function keeps submitting.
void slow_orchestration(Orchestration& orch, const TaskArgs& args) {
  for (uint64_t i = 0; i < args.scalar_bits(0); ++i) {
    std::this_thread::sleep_for(kKernelTime);
    chain_of(orch, args.tensor(0), kQuick, 1);
  }
}
// Scalar 0 quick tasks in a chain, then a stuck one.
void quick_then_stuck(Orchestration& orch, const TaskArgs& args) {
  chain_of(orch, args.tensor(0), kQuick, args.scalar_bits(0));
  chain_of(orch, args.tensor(0), kBlocking, 1);
}

std::vector<uint8_t> callable_with(OrchestrationEntry orchestration) {
  return CallableBuilder()
      .orchestration_function(orchestration, ArgSignature{})
      .kernel_function(kSlow, CoreType::AIV, &slow_kernel, ArgSignature{})
      .kernel_function(kQuick, CoreType::AIV, &quick_kernel, ArgSignature{})
      .kernel_function(kBlocking, CoreType::AIV, &blocking_kernel, ArgSignature{})
      .kernel_function(kLong, CoreType::AIV, &long_kernel, ArgSignature{})
      .build();
}

struct Combination {
  const char* name;
  RuntimeVariant runtime;
  SimCoreExecution cores;
  bool serial;
};
const Combination kCombinations[] = {
    {"hbg_aicpu", RuntimeVariant::HostBuildGraph, SimCoreExecution::Aicpu, false},
    {"hbg_executors", RuntimeVariant::HostBuildGraph, SimCoreExecution::Executors, false},
    {"hbg_serial", RuntimeVariant::HostBuildGraph, SimCoreExecution::Auto, true},
    {"ring_aicpu", RuntimeVariant::TensormapRingbuffer, SimCoreExecution::Aicpu, false},
    {"ring_executors", RuntimeVariant::TensormapRingbuffer, SimCoreExecution::Executors, false},
    {"ring_serial", RuntimeVariant::TensormapRingbuffer, SimCoreExecution::Auto, true},
};

class WatchdogProgress : public ::testing::TestWithParam<Combination> {
 protected:
  void SetUp() override {
    saved_level_ = log_level();
    set_log_level(LogLevel::Off);
    g_release.store(false);
    const Combination& c = GetParam();
    runner_ = std::make_unique<DeviceRunner>(
        test::make_sim(/*clusters=*/2, c.serial, 64ull << 20, /*host_threads=*/2, c.cores),
        test::options_with_env({{kSchedulerTimeoutEnv, std::to_string(kWatchdogMs)},
                                {kOpExecuteTimeoutEnv, "1000000"},
                                {kStreamSyncTimeoutEnv, std::to_string(kStreamSyncMs)}}));
    runner_->attach(0);
    runner_->ensure_initialized();
    ASSERT_EQ(runner_->timeouts().scheduler_ms, kWatchdogMs) << "the test's timeouts were ignored";
    token_ = runner_->allocate(64);
  }
  void TearDown() override {
    g_release.store(true, std::memory_order_release);
    g_release.notify_all();
    runner_.reset();
    set_log_level(saved_level_);
  }

  RunReport run(OrchestrationEntry orchestration, uint64_t count) {
    runner_->register_callable(0, callable_with(orchestration));
    TaskArgs args;
    args.inout(Tensor::make(token_, {1}, DataType::F32)).scalar(count);
    CallConfig config = test::small_call_config(256);
    config.runtime = GetParam().runtime;
    config.serial = GetParam().serial;
    return runner_->run(0, args, config);
  }

  std::unique_ptr<DeviceRunner> runner_;
  DeviceBuffer token_;
  LogLevel saved_level_ = LogLevel::Warn;
};

// 5 x 0.8 watchdogs in a chain: a task completes within every watchdog period, and the run
// takes longer than the stream-sync timeout.
TEST_P(WatchdogProgress, AChainOfSlowKernelsIsNotATimeout) {
  const RunReport report = run(&slow_chain, 5);
  EXPECT_EQ(report.task_count, 5u);
  EXPECT_FALSE(runner_->faulted());
}

// 8 independent slow tasks: with kernels on the AICPU threads a thread runs its share back to
// back (several watchdogs) while kernels keep starting.
TEST_P(WatchdogProgress, ManyIndependentSlowKernelsAreNotATimeout) {
  const RunReport report = run(&slow_independent, 8);
  EXPECT_EQ(report.task_count, 8u);
  EXPECT_FALSE(runner_->faulted());
}

// Serial launches: the host's wait is the watchdog; 3 x 0.8 stream-sync timeouts in a chain.
TEST_P(WatchdogProgress, ASerialChainOfKernelsNearTheStreamSyncTimeoutIsNotATimeout) {
  if (!GetParam().serial) GTEST_SKIP() << "threaded launches are watched by the schedulers";
  const RunReport report = run(&long_chain, 3);
  EXPECT_EQ(report.task_count, 3u);
  EXPECT_FALSE(runner_->faulted());
}

// A kernel that never returns is still reported, with the tasks that did complete counted.
TEST_P(WatchdogProgress, AStuckKernelIsNamedWithTheTrueCompletedCount) {
  if (GetParam().serial) GTEST_SKIP() << "a serial launch runs the stuck kernel on its only thread";
  const Clock::time_point start = Clock::now();
  try {
    run(&quick_then_stuck, 5);
    ADD_FAILURE() << "the stuck kernel must end the run";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::SchedulerTimeout) << e.what();
    EXPECT_THAT(e.what(), HasSubstr("task 5 (func_id 2) running on core"));
    EXPECT_THAT(e.what(), HasSubstr("5 of 6 tasks completed"));
  }
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(10));
}

// tensormap_ringbuffer: the orchestration function is watched too. One that keeps submitting,
// however slowly, is healthy.
TEST_P(WatchdogProgress, AnOrchestrationFunctionThatKeepsSubmittingIsHealthy) {
  if (GetParam().runtime != RuntimeVariant::TensormapRingbuffer) {
    GTEST_SKIP() << "host_build_graph orchestrates on the host before the launch";
  }
  const RunReport report = run(&slow_orchestration, 5);
  EXPECT_EQ(report.task_count, 5u);
}

// One that neither submits nor returns is named by the scheduler watchdog (threaded); in a serial
// launch it blocks the only chip thread, and the host's wait ends it after the stream-sync
// timeout without progress. Either way long before the old 30 s whole-launch deadline would.
TEST_P(WatchdogProgress, AStuckOrchestrationFunctionIsNamed) {
  if (GetParam().runtime != RuntimeVariant::TensormapRingbuffer) {
    GTEST_SKIP() << "host_build_graph orchestrates on the host before the launch";
  }
  const Clock::time_point start = Clock::now();
  try {
    run(&stuck_orchestration, 3);
    ADD_FAILURE() << "the stuck orchestration function must end the run";
  } catch (const Error& e) {
    if (GetParam().serial) {
      EXPECT_EQ(e.code(), StatusCode::StreamSyncTimeout) << e.what();
      EXPECT_THAT(e.what(),
                  HasSubstr("made no progress for " + std::to_string(kStreamSyncMs) + " ms"));
    } else {
      EXPECT_EQ(e.code(), StatusCode::SchedulerTimeout) << e.what();
      EXPECT_THAT(e.what(), HasSubstr("the orchestration function (AICPU thread 0) has neither "
                                      "submitted a task nor returned; tasks submitted: 3"));
      EXPECT_THAT(e.what(), HasSubstr("still inside a kernel or the orchestration function"));
    }
  }
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(10));
}

INSTANTIATE_TEST_SUITE_P(EveryVariantAndCoreMode, WatchdogProgress,
                         ::testing::ValuesIn(kCombinations),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace chiprt::host
