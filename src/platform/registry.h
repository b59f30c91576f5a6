// The platform registry: platforms are created by name ("sim", ...) with the options each one
// reads from PlatformOptions. The host creates its platform here and never names a platform's
// implementation (src/platform/sim is chip code to the host).
//
// Lifetime: the registry is a constant table; create_platform returns a platform owned by the
// caller. Threading: both functions are thread-safe.
#pragma once

#include <memory>
#include <span>
#include <string_view>

#include "chiprt/sim_options.h"
#include "chiprt/status.h"
#include "platform/platform.h"

namespace chiprt::platform {

// What any platform may be created with; each reads its own part.
struct PlatformOptions {
  SimOptions sim;  // platform "sim"
  // From start_device_starter of the same platform name, or none (each device starts from the
  // calling thread).
  std::shared_ptr<DeviceStarter> device_starter;
};

// The names create_platform knows, in registration order.
std::span<const std::string_view> platform_names() noexcept;

// Creates platform `name`. InvalidConfig for an unknown name (listing the known ones) or for
// options the platform rejects (naming the field and its range).
Status create_platform(std::string_view name, const PlatformOptions& options,
                       std::unique_ptr<Platform>* out);

// Makes what platform `name` needs to start devices for a process that runs threads of its own
// (platform.h, DeviceStarter). Call it while this process runs no other thread. InvalidConfig for
// an unknown name, as create_platform.
Status start_device_starter(std::string_view name, std::shared_ptr<DeviceStarter>* out);

}  // namespace chiprt::platform
