// SimOptions validation (the sim's one option set, chiprt/sim_options.h), geometry, clock and
// attach rules of the simulated chip.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "platform/platform.h"
#include "platform/sim/sim_platform.h"

namespace chiprt::platform {
namespace {

Status create(const SimOptions& config) {
  std::unique_ptr<Platform> platform;
  return sim::create_sim_platform(config, &platform);
}

void expect_invalid(const SimOptions& config, const std::string& field, const std::string& range) {
  const Status status = create(config);
  EXPECT_EQ(status.code(), StatusCode::InvalidConfig) << status.to_string();
  EXPECT_NE(status.message().find(field), std::string::npos) << status.message();
  EXPECT_NE(status.message().find(range), std::string::npos) << status.message();
}

TEST(SimOptionsTest, DefaultConfigCreatesEightClusterChip) {
  std::unique_ptr<Platform> platform;
  ASSERT_TRUE(sim::create_sim_platform(SimOptions{}, &platform).is_ok());
  ASSERT_NE(platform, nullptr);
  EXPECT_EQ(platform->name(), "sim");
  const Geometry g = platform->geometry();
  EXPECT_EQ(g.clusters, 8u);
  EXPECT_EQ(g.cores(), 24u);
  EXPECT_EQ(g.max_aicpu_threads, 8u);
  EXPECT_EQ(g.default_aicpu_threads, 4u);
  EXPECT_EQ(g.clock_hz, 1'000'000'000u);
  EXPECT_EQ(platform->capacity(), 4ull << 30);
  EXPECT_FALSE(platform->serial());
}

TEST(SimOptionsTest, ClustersOutOfRangeNamesFieldAndRange) {
  SimOptions config;
  config.clusters = 0;
  expect_invalid(config, "SimOptions.clusters", "[1, 24] (got 0)");
  config.clusters = 25;
  expect_invalid(config, "SimOptions.clusters", "[1, 24] (got 25)");
  config.clusters = 24;
  EXPECT_TRUE(create(config).is_ok());
  config.clusters = 1;
  EXPECT_TRUE(create(config).is_ok());
}

TEST(SimOptionsTest, AicpuThreadsOutOfRangeNamesFieldAndRange) {
  SimOptions config;
  config.aicpu_threads = 0;
  expect_invalid(config, "SimOptions.aicpu_threads", "[1, 8] (got 0)");
  config.aicpu_threads = 9;
  expect_invalid(config, "SimOptions.aicpu_threads", "[1, 8] (got 9)");
  config.aicpu_threads = 8;
  std::unique_ptr<Platform> platform;
  ASSERT_TRUE(sim::create_sim_platform(config, &platform).is_ok());
  EXPECT_EQ(platform->geometry().default_aicpu_threads, 8u);
}

TEST(SimOptionsTest, HostThreadsOutOfRangeNamesFieldAndRange) {
  SimOptions config;
  config.host_threads = 65;
  expect_invalid(config, "SimOptions.host_threads", "[1, 64] (got 65)");
  config.host_threads = 64;
  EXPECT_TRUE(create(config).is_ok());
}

TEST(SimOptionsTest, HostThreadsZeroMeansHardwareThreads) {
  SimOptions config;
  config.host_threads = 0;
  config.core_execution = SimCoreExecution::Executors;
  sim::SimPlatform platform(config);
  EXPECT_GE(platform.executor_threads(), 1u);
  EXPECT_EQ(sim::resolve_host_threads(0), platform.executor_threads());
  EXPECT_EQ(sim::resolve_host_threads(3), 3u);
}

TEST(SimOptionsTest, UnknownCoreExecutionNamesFieldAndValues) {
  SimOptions config;
  config.core_execution = static_cast<SimCoreExecution>(7);
  expect_invalid(config, "SimOptions.core_execution",
                 "0 (auto), 1 (aicpu) or 2 (executors) (got 7)");
}

TEST(SimOptionsTest, MemoryBelowOneMiBNamesFieldAndMinimum) {
  SimOptions config;
  config.memory_bytes = (1ull << 20) - 1;
  expect_invalid(config, "SimOptions.memory_bytes", "at least 1048576 (1 MiB) (got 1048575)");
  config.memory_bytes = 1ull << 20;
  EXPECT_TRUE(create(config).is_ok());
}

TEST(SimOptionsTest, NullOutIsInvalidArgument) {
  EXPECT_EQ(sim::create_sim_platform(SimOptions{}, nullptr).code(), StatusCode::InvalidArgument);
}

TEST(SimOptionsTest, SerialChipDefaultsToOneAicpuThread) {
  SimOptions config;
  config.serial = true;
  std::unique_ptr<Platform> platform;
  ASSERT_TRUE(sim::create_sim_platform(config, &platform).is_ok());
  EXPECT_TRUE(platform->serial());
  EXPECT_EQ(platform->geometry().default_aicpu_threads, 1u);
  EXPECT_EQ(platform->geometry().max_aicpu_threads, 8u);
}

TEST(SimOptionsTest, GeometryNumbersAicThenAivCores) {
  SimOptions config;
  config.clusters = 3;
  sim::SimPlatform platform(config);
  const Geometry g = platform.geometry();
  EXPECT_EQ(g.aic_cores(), 3u);
  EXPECT_EQ(g.aiv_cores(), 6u);
  EXPECT_EQ(core_type_of(g, 2), CoreType::AIC);
  EXPECT_EQ(core_type_of(g, 3), CoreType::AIV);
  EXPECT_EQ(core_type_of(g, 8), CoreType::AIV);
}

TEST(SimClockTest, CyclesAreNanosecondsOfSteadyClock) {
  sim::SimPlatform platform(SimOptions{});
  const ChipServices& services = platform.services();
  ASSERT_NE(services.cycles, nullptr);
  const uint64_t before = services.cycles(services.ctx);
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  const uint64_t after = services.cycles(services.ctx);
  // sleep_for sleeps at least the duration, and the clock runs at 1 GHz (ns).
  EXPECT_GE(after - before, 2'000'000u);
}

TEST(SimAttachTest, NegativeDeviceIdIsInvalidArgument) {
  sim::SimPlatform platform(SimOptions{});
  const Status status = platform.attach(-1);
  EXPECT_EQ(status.code(), StatusCode::InvalidArgument);
  EXPECT_NE(status.message().find("-1"), std::string::npos) << status.message();
}

TEST(SimAttachTest, SameDeviceTwiceIsFineOtherDeviceIsMismatch) {
  sim::SimPlatform platform(SimOptions{});
  EXPECT_TRUE(platform.attach(0).is_ok());
  EXPECT_TRUE(platform.attach(0).is_ok());
  const Status status = platform.attach(1);
  EXPECT_EQ(status.code(), StatusCode::DeviceMismatch);
  EXPECT_NE(
      status.message().find("already attached to device 0; finalize before attaching to device 1"),
      std::string::npos)
      << status.message();
  EXPECT_TRUE(platform.attach(0).is_ok());
}

}  // namespace
}  // namespace chiprt::platform
