// The platform registry (platform/registry.h) and the seam's launch contract: platforms are
// created by name, an unknown name is refused listing the known ones, and a launch names only
// device addresses and the shape of a chip runtime the platform loaded.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <memory>
#include <string>

#include "platform/registry.h"
#include "platform/sim/fork_server.h"
#include "platform/sim/sim_platform.h"

namespace chiprt::platform {
namespace {

bool contains(const Status& status, const std::string& text) {
  return status.message().find(text) != std::string::npos;
}

TEST(PlatformRegistryTest, SimIsCreatedByNameWithItsOptions) {
  PlatformOptions options;
  options.sim.clusters = 3;
  options.sim.memory_bytes = 64ull << 20;
  std::unique_ptr<Platform> platform;
  ASSERT_TRUE(create_platform("sim", options, &platform).is_ok());
  ASSERT_NE(platform, nullptr);
  EXPECT_EQ(platform->name(), "sim");
  EXPECT_EQ(platform->geometry().clusters, 3u);
  EXPECT_EQ(platform->capacity(), 64ull << 20);
  const auto names = platform_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "sim"), names.end());
}

TEST(PlatformRegistryTest, UnknownNameIsRefusedListingTheKnownOnes) {
  std::unique_ptr<Platform> platform;
  const Status status = create_platform("cuda", PlatformOptions{}, &platform);
  EXPECT_EQ(status.code(), StatusCode::InvalidConfig);
  EXPECT_EQ(status.message(), "unknown platform 'cuda'; available: sim");
  EXPECT_EQ(platform, nullptr);
  EXPECT_EQ(create_platform("", PlatformOptions{}, &platform).code(), StatusCode::InvalidConfig);
  EXPECT_EQ(create_platform("sim", PlatformOptions{}, nullptr).code(), StatusCode::InvalidArgument);
}

TEST(PlatformRegistryTest, AnUnknownNameIsQuotedPrintableAndShort) {
  std::unique_ptr<Platform> platform;
  const std::string hostile = std::string("ab\0c\n", 5) + std::string(5000, 'x');
  const Status status = create_platform(hostile, PlatformOptions{}, &platform);
  EXPECT_EQ(status.code(), StatusCode::InvalidConfig);
  EXPECT_EQ(status.message(), "unknown platform 'ab?c?" + std::string(59, 'x') +
                                  "... (5005 characters)'; available: sim");
}

TEST(PlatformRegistryTest, InvalidSimOptionsAreRefusedByField) {
  PlatformOptions options;
  options.sim.clusters = 0;
  std::unique_ptr<Platform> platform;
  const Status status = create_platform("sim", options, &platform);
  EXPECT_EQ(status.code(), StatusCode::InvalidConfig);
  EXPECT_TRUE(contains(status, "SimOptions.clusters must be in [1, 24] (got 0)"))
      << status.message();
}

TEST(LaunchRequestTest, ALaunchNeedsTheLoadedChipRuntimeAndItsArgumentsBlock) {
  sim::SimPlatform platform(SimOptions{});
  ASSERT_TRUE(platform.start_streams().is_ok());
  LaunchRequest request;
  request.launch_args_addr = 0x1000;
  request.aicpu_threads = 1;
  request.cores = 3;
  Status status = platform.launch(request);
  EXPECT_EQ(status.code(), StatusCode::NotInitialized);
  EXPECT_TRUE(contains(status, "load_chip_runtime()")) << status.message();
  ASSERT_TRUE(platform.load_chip_runtime().is_ok());
  ASSERT_TRUE(platform.load_chip_runtime().is_ok());  // idempotent
  request.launch_args_addr = 0;
  status = platform.launch(request);
  EXPECT_EQ(status.code(), StatusCode::InvalidArgument);
  EXPECT_TRUE(contains(status, "launch_args_addr")) << status.message();
}

TEST(LaunchRequestTest, TheSimFillsEveryChipService) {
  sim::SimPlatform platform(SimOptions{});
  EXPECT_TRUE(platform.services().complete());
}

// A device starter comes from the registry by platform name and reaches the platforms created
// with it: the sim's is a fork server, and an isolated sim platform reserves its device range
// there (so one made with a server that is gone fails, naming it).
TEST(PlatformRegistryTest, ADeviceStarterByNameReachesThePlatformsCreatedWithIt) {
  std::shared_ptr<DeviceStarter> starter;
  ASSERT_TRUE(start_device_starter("sim", &starter).is_ok());
  auto* server = dynamic_cast<sim::ForkServer*>(starter.get());
  ASSERT_NE(server, nullptr);
  PlatformOptions options;
  options.sim.memory_bytes = 16ull << 20;
  options.sim.isolation = SimIsolation::Process;
  options.device_starter = starter;
  std::unique_ptr<Platform> platform;
  ASSERT_TRUE(create_platform("sim", options, &platform).is_ok());
  ASSERT_TRUE(platform->attach(0).is_ok());
  ASSERT_TRUE(platform->start_streams().is_ok());  // its device process, through the server
  platform.reset();

  ASSERT_EQ(kill(server->pid(), SIGKILL), 0);
  const Status gone = create_platform("sim", options, &platform);
  EXPECT_EQ(gone.code(), StatusCode::InternalError) << gone.to_string();
  EXPECT_TRUE(contains(gone, "reserving the device range: reserve: the fork server (pid " +
                                 std::to_string(server->pid()) + ") ended"))
      << gone.message();
  options.device_starter.reset();
  starter.reset();  // the last reference: the server is reaped
  errno = 0;
  EXPECT_EQ(waitpid(-1, nullptr, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD);
}

TEST(PlatformRegistryTest, ADeviceStarterIsRefusedForAnUnknownPlatformOrAnotherPlatform) {
  std::shared_ptr<DeviceStarter> starter;
  const Status unknown = start_device_starter("cuda", &starter);
  EXPECT_EQ(unknown.code(), StatusCode::InvalidConfig);
  EXPECT_TRUE(contains(unknown, "unknown platform 'cuda'; available: sim")) << unknown.message();
  EXPECT_EQ(start_device_starter("sim", nullptr).code(), StatusCode::InvalidArgument);

  struct OtherStarter final : DeviceStarter {};
  PlatformOptions options;
  options.sim.isolation = SimIsolation::Process;
  options.device_starter = std::make_shared<OtherStarter>();
  std::unique_ptr<Platform> platform;
  const Status refused = create_platform("sim", options, &platform);
  EXPECT_EQ(refused.code(), StatusCode::InvalidConfig);
  EXPECT_TRUE(contains(refused, "the device starter is not the sim's")) << refused.message();
}

}  // namespace
}  // namespace chiprt::platform
