// A kernel that never returns, on the isolated platform: the op execute timeout is enforced, so
// the run ends with OpExecuteTimeout naming the task in about the configured time, the device
// process is killed (nothing keeps a CPU busy afterwards: this process's CPU time over the next
// second stays small, and no device process is left), and after reset() a normal run works.
// The in-process contrast is not run: its stuck kernel would keep a thread of this binary spinning
// for good.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "chiprt/status.h"
#include "chiprt/worker.h"
#include "isolation_support.h"
#include "scoped_env.h"

namespace chiprt::isolation_test {
namespace {

// The ordering rule of src/host/timeouts.h: scheduler < op execute < stream sync, and stream sync
// more than 1.5 s above the scheduler timeout.
constexpr char kSchedulerMs[] = "200";
constexpr char kOpExecuteUs[] = "400000";
constexpr char kStreamSyncMs[] = "2000";
constexpr double kOpExecuteS = 0.4;
// An upper bound that only catches a hang (stream sync alone would end it at 2 s).
constexpr double kGenerousBoundS = 10.0;
// CPU time of the whole process over one second after the error.
constexpr uint64_t kIdleCpuBoundNs = 100'000'000;

class Hang : public testing::TestWithParam<RuntimeVariant> {};

TEST_P(Hang, OpExecuteTimeoutKillsTheDeviceAndResetRecovers) {
  const RuntimeVariant variant = GetParam();
  // Resolved at the Worker's first attach (init).
  test::ScopedEnv scheduler("CHIPRT_SCHEDULER_TIMEOUT_MS", kSchedulerMs);
  test::ScopedEnv op_execute("CHIPRT_OP_EXECUTE_TIMEOUT_US", kOpExecuteUs);
  test::ScopedEnv stream_sync("CHIPRT_STREAM_SYNC_TIMEOUT_MS", kStreamSyncMs);
  Worker worker;
  worker.init(isolated_options());
  register_suite_callables(worker);
  const DeviceBuffer x = worker.malloc(kBytes);
  const DeviceBuffer y = worker.malloc(kBytes);
  const std::vector<float> xs = x_values();
  worker.copy_to(x, xs.data(), kBytes);

  const auto start = std::chrono::steady_clock::now();
  try {
    worker.run(kCallable, scenario_args(x, y, Scenario::Hang), run_config(variant, false));
    FAIL() << "the hanging run succeeded";
  } catch (const Error& e) {
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    std::printf("[ measured ] %s: OpExecuteTimeout after %.3f s (op execute timeout %.3f s)\n",
                std::string(runtime_variant_name(variant)).c_str(), took.count(), kOpExecuteS);
    ASSERT_EQ(e.code(), StatusCode::OpExecuteTimeout) << e.what();
    EXPECT_NE(e.message().find("task " + std::to_string(kFaultingTask)), std::string::npos)
        << e.message();
    EXPECT_NE(e.message().find("func_id " + std::to_string(kHang)), std::string::npos)
        << e.message();
    EXPECT_LT(took.count(), kGenerousBoundS);
  }

  // Nothing spins: neither a thread of this process nor a device process.
  const uint64_t cpu_before = process_cpu_ns();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const uint64_t cpu_spent = process_cpu_ns() - cpu_before;
  std::printf("[ measured ] CPU time of this process over 1 s after the error: %.1f ms\n",
              static_cast<double>(cpu_spent) / 1e6);
  EXPECT_LT(cpu_spent, kIdleCpuBoundNs);
  const ProcessResources resources = process_resources();
  EXPECT_EQ(resources.live_children, 0u)
      << "the hanging device process still runs; " << resources.describe();
  EXPECT_EQ(resources.zombie_children, 0u) << resources.describe();

  try {
    worker.run(kCallable, scenario_args(x, y, Scenario::Normal), run_config(variant, false));
    ADD_FAILURE() << "a run after the timeout was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::DeviceFaulted) << e.what();
  }
  worker.reset();
  expect_works_after_reset(worker, x, variant);
}

INSTANTIATE_TEST_SUITE_P(Isolated, Hang,
                         testing::Values(RuntimeVariant::HostBuildGraph,
                                         RuntimeVariant::TensormapRingbuffer),
                         [](const testing::TestParamInfo<RuntimeVariant>& info) {
                           return info.param == RuntimeVariant::HostBuildGraph
                                      ? std::string("HostBuildGraph")
                                      : std::string("Ringbuffer");
                         });

}  // namespace
}  // namespace chiprt::isolation_test
