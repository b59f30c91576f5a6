#include "platform/platform.h"

#include "platform/sim/sim_platform.h"

namespace chiprt::platform {

Status create_sim_platform(const SimConfig& config, std::unique_ptr<Platform>* out) {
  if (out == nullptr) {
    return Status(StatusCode::InvalidArgument, "create_sim_platform: out must not be null");
  }
  if (Status status = sim::validate_sim_config(config); !status) return status;
  *out = std::make_unique<sim::SimPlatform>(config);
  return Status::ok();
}

}  // namespace chiprt::platform
