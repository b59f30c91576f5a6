#include "host/open_device.h"

#include <string>
#include <utility>

#include "chiprt/status.h"
#include "platform/registry.h"

namespace chiprt::host {

std::unique_ptr<DeviceRunner> open_device(const DeviceOpening& opening) {
  if (opening.device_id < 0) {
    throw Error(StatusCode::InvalidConfig,
                "device_id=" + std::to_string(opening.device_id) + " is negative; use an id >= 0");
  }
  RuntimeVariant runtime = opening.runtime;
  if (runtime == RuntimeVariant::Default) runtime = RuntimeVariant::HostBuildGraph;
  if (runtime != RuntimeVariant::HostBuildGraph && runtime != RuntimeVariant::TensormapRingbuffer) {
    throw Error(StatusCode::InvalidConfig,
                "runtime variant " + std::to_string(static_cast<int>(runtime)) + " is unknown");
  }
  platform::PlatformOptions platform_options;
  platform_options.sim = opening.sim;
  platform_options.device_starter = opening.device_starter;
  std::unique_ptr<platform::Platform> platform;
  throw_if_error(platform::create_platform(opening.platform, platform_options, &platform));
  RunnerOptions runner_options;
  runner_options.default_runtime = runtime;
  runner_options.facade = opening.facade;
  auto runner = std::make_unique<DeviceRunner>(std::move(platform), runner_options);
  runner->attach(opening.device_id);
  return runner;
}

}  // namespace chiprt::host
