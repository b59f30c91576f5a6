// Recovery after a device fault: a stuck kernel faults the run quickly (the host does not wait
// the whole stream-sync timeout once the schedulers gave up), reset() refuses while the kernel is
// still stuck and makes the runner usable again once it has returned.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "chiprt/callable.h"
#include "chiprt/orchestration.h"
#include "host/device_runner.h"
#include "host/log.h"
#include "host_test_support.h"
#include "platform/sim/sim_platform.h"

namespace chiprt::host {
namespace {

using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

std::unique_ptr<platform::Platform> make_sim() {
  return test::make_sim(/*clusters=*/1);
}

std::atomic<bool> g_release{false};

void blocking_kernel(int64_t*) {
  while (!g_release.load(std::memory_order_acquire)) g_release.wait(false);
}

std::atomic<int> g_quick_runs{0};
void counting_kernel(int64_t*) {
  g_quick_runs.fetch_add(1, std::memory_order_relaxed);
}

void one_task_orchestration(Orchestration& orch, const TaskArgs&) {
  TaskArgs task;
  orch.submit(0, CoreType::AIV, task);
}

std::vector<uint8_t> one_task_callable(KernelEntry kernel) {
  return CallableBuilder()
      .orchestration_function(&one_task_orchestration, ArgSignature{})
      .kernel_function(0, CoreType::AIV, kernel, ArgSignature{})
      .build();
}

// Releases the blocked kernel when the test ends whatever happened (declared after the runner,
// so it runs before the runner and its platform are destroyed).
struct ReleaseKernelAtExit {
  ReleaseKernelAtExit() { g_release.store(false); }
  ~ReleaseKernelAtExit() { release(); }
  static void release() {
    g_release.store(true, std::memory_order_release);
    g_release.notify_all();
  }
};

RunnerOptions timeouts(const char* scheduler_ms, const char* stream_sync_ms) {
  return test::options_with_env({{kSchedulerTimeoutEnv, scheduler_ms},
                                 {kOpExecuteTimeoutEnv, "200000"},
                                 {kStreamSyncTimeoutEnv, stream_sync_ms}});
}

CallConfig small_config() {
  return test::small_call_config(64);
}

class FaultRecovery : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_ = log_level();
    set_log_level(LogLevel::Off);
  }
  void TearDown() override { set_log_level(saved_); }
  LogLevel saved_ = LogLevel::Warn;
};

// Runs the blocking callable and expects the scheduler watchdog or the stream timeout to fault.
void run_into_fault(DeviceRunner& runner, const CallConfig& config = small_config()) {
  try {
    runner.run(0, TaskArgs{}, config);
    ADD_FAILURE() << "the stuck kernel should fault the run";
  } catch (const Error& e) {
    EXPECT_TRUE(e.code() == StatusCode::SchedulerTimeout ||
                e.code() == StatusCode::StreamSyncTimeout)
        << e.what();
  }
  EXPECT_TRUE(runner.faulted());
}

TEST_F(FaultRecovery, ResetAfterAStuckKernelReturnedMakesTheRunnerUsable) {
  DeviceRunner runner(make_sim(), timeouts("100", "1700"));
  ReleaseKernelAtExit release;
  runner.attach(0);
  runner.register_callable(0, one_task_callable(&blocking_kernel));
  run_into_fault(runner);

  // Still stuck: reset refuses clearly and the runner stays faulted.
  try {
    runner.reset();
    ADD_FAILURE() << "reset must refuse while the kernel is stuck";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::DeviceFaulted) << e.what();
    EXPECT_THAT(e.message(), HasSubstr("still running (a kernel is stuck)"));
  }
  EXPECT_TRUE(runner.faulted());

  ReleaseKernelAtExit::release();
  // The released kernel returns and its core drains; reset succeeds then (generous bound).
  const Clock::time_point deadline = Clock::now() + std::chrono::seconds(20);
  bool reset_done = false;
  while (!reset_done && Clock::now() < deadline) {
    try {
      runner.reset();
      reset_done = true;
    } catch (const Error& e) {
      ASSERT_EQ(e.code(), StatusCode::DeviceFaulted) << e.what();
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  ASSERT_TRUE(reset_done) << "reset never succeeded after the kernel was released";
  EXPECT_FALSE(runner.faulted());

  runner.attach(0);
  runner.register_callable(1, one_task_callable(&counting_kernel));
  const int before = g_quick_runs.load();
  RunReport report = runner.run(1, TaskArgs{}, small_config());
  EXPECT_EQ(report.task_count, 1u);
  EXPECT_EQ(g_quick_runs.load(), before + 1);
}

struct StuckCase {
  SimCoreExecution cores;
  RuntimeVariant runtime;
  int aicpu_threads;
};

class StuckKernel : public FaultRecovery, public ::testing::WithParamInterface<StuckCase> {};

// A 30 s stream-sync timeout; a scheduler (or, when kernels run on the only scheduler, the ring
// orchestrator) gives up after 100 ms and the rest of the launch then gets only a short grace, so
// the run fails long before the stream timeout, naming the stuck task.
TEST_P(StuckKernel, FaultsWithoutWaitingTheWholeStreamSyncTimeout) {
  const StuckCase& param = GetParam();
  DeviceRunner runner(test::make_sim(1, false, 256ull << 20, 2, param.cores),
                      timeouts("100", "30000"));
  ReleaseKernelAtExit release;
  runner.attach(0);
  ASSERT_EQ(runner.timeouts().stream_sync_ms, 30000u);
  runner.register_callable(0, one_task_callable(&blocking_kernel));
  CallConfig config = small_config();
  config.runtime = param.runtime;
  config.aicpu_thread_num = param.aicpu_threads;
  const Clock::time_point start = Clock::now();
  try {
    runner.run(0, TaskArgs{}, config);
    ADD_FAILURE() << "the stuck kernel should fault the run";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::SchedulerTimeout) << e.what();
    EXPECT_THAT(e.message(), HasSubstr("func_id 0"));
    EXPECT_THAT(e.message(), HasSubstr("still inside the kernel named above"));
  }
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(15)) << "waited for the stream timeout";
  EXPECT_TRUE(runner.faulted());
}

// Closing a runner whose launch it abandoned does not wait for that launch again: the stuck
// threads are left behind at once (they keep what they use alive until they return).
TEST_P(StuckKernel, ClosingAfterTheFaultIsPrompt) {
  const StuckCase& param = GetParam();
  ReleaseKernelAtExit release;
  auto runner = std::make_unique<DeviceRunner>(
      test::make_sim(1, false, 256ull << 20, 2, param.cores), timeouts("100", "30000"));
  runner->attach(0);
  runner->register_callable(0, one_task_callable(&blocking_kernel));
  CallConfig config = small_config();
  config.runtime = param.runtime;
  config.aicpu_thread_num = param.aicpu_threads;
  run_into_fault(*runner, config);
  const Clock::time_point start = Clock::now();
  runner.reset();  // finalize and platform teardown while the kernel is still stuck
  EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(1500))
      << "closing waited for the abandoned launch";
}

INSTANTIATE_TEST_SUITE_P(
    KernelsOn, StuckKernel,
    ::testing::Values(StuckCase{SimCoreExecution::Executors, RuntimeVariant::HostBuildGraph, 0},
                      StuckCase{SimCoreExecution::Aicpu, RuntimeVariant::HostBuildGraph, 2},
                      StuckCase{SimCoreExecution::Executors, RuntimeVariant::TensormapRingbuffer,
                                0},
                      StuckCase{SimCoreExecution::Aicpu, RuntimeVariant::TensormapRingbuffer, 2},
                      StuckCase{SimCoreExecution::Aicpu, RuntimeVariant::TensormapRingbuffer, 4}),
    [](const ::testing::TestParamInfo<StuckCase>& info) {
      std::string name = info.param.cores == SimCoreExecution::Aicpu ? "Aicpu" : "Executors";
      name += info.param.runtime == RuntimeVariant::TensormapRingbuffer ? "Ring" : "HostBuildGraph";
      return name + "Threads" + std::to_string(info.param.aicpu_threads);
    });

TEST(SimRecover, LaunchAfterATimedOutWaitIsAFaultNotMisuse) {
  std::unique_ptr<platform::Platform> sim = make_sim();
  ReleaseKernelAtExit release;
  ASSERT_TRUE(sim->start_streams().is_ok());
  static std::atomic<bool> entered{false};
  entered.store(false);
  // The engine's own programs, not the chip runtime: a launch that blocks until released.
  auto& chip = static_cast<platform::sim::SimPlatform&>(*sim);
  platform::sim::LaunchPrograms programs;
  programs.aicpu_threads = 1;
  programs.aicpu_entry = [](void*, uint32_t, uint32_t) {
    entered.store(true);
    while (!g_release.load(std::memory_order_acquire)) g_release.wait(false);
  };
  ASSERT_TRUE(chip.launch_programs(programs).is_ok());
  EXPECT_EQ(sim->wait(1).code(), StatusCode::StreamSyncTimeout);
  Status relaunch = chip.launch_programs(programs);
  EXPECT_EQ(relaunch.code(), StatusCode::DeviceFaulted) << relaunch.to_string();
  EXPECT_THAT(relaunch.message(), HasSubstr("still running (a kernel is stuck)"));
  Status recovered = sim->recover();
  EXPECT_EQ(recovered.code(), StatusCode::DeviceFaulted) << recovered.to_string();
  ReleaseKernelAtExit::release();
  ASSERT_TRUE(sim->wait(20000).is_ok());
  EXPECT_TRUE(sim->recover().is_ok());
  programs.aicpu_entry = [](void*, uint32_t, uint32_t) {};
  ASSERT_TRUE(chip.launch_programs(programs).is_ok());
  EXPECT_TRUE(sim->wait(20000).is_ok());
}

}  // namespace
}  // namespace chiprt::host
