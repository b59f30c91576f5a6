// open_device: the one way the host makes a DeviceRunner for a public object (a Worker, a chip of
// a Node): it checks the options every such object shares, creates the platform by name (the
// host never names a platform's implementation) and attaches the runner to its device.
// Stateless; thread-safe.
#pragma once

#include <memory>
#include <string>

#include "chiprt/call_config.h"
#include "chiprt/sim_options.h"
#include "host/device_runner.h"
#include "host/facade_text.h"
#include "platform/platform.h"

namespace chiprt::host {

struct DeviceOpening {
  std::string platform = "sim";
  int device_id = 0;
  // The variant of runs whose CallConfig::runtime is Default (Default: HostBuildGraph).
  RuntimeVariant runtime = RuntimeVariant::HostBuildGraph;
  SimOptions sim;
  // From platform::start_device_starter of the same platform, or none.
  std::shared_ptr<platform::DeviceStarter> device_starter;
  FacadeText facade;
};

// InvalidConfig for a negative device id, an unknown runtime variant or platform, or options the
// platform rejects.
std::unique_ptr<DeviceRunner> open_device(const DeviceOpening& opening);

}  // namespace chiprt::host
