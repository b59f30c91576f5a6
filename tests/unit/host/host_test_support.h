// Helpers shared by the host room's tests: a small simulated chip and runner options whose
// environment lookup reads from a map (so timeout overrides are injected, not set globally).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "chiprt/status.h"
#include "host/device_runner.h"
#include "platform/platform.h"

namespace chiprt::host::test {

inline std::unique_ptr<platform::Platform> make_sim(
    uint32_t clusters = 2, bool serial = false, uint64_t memory_bytes = 256ull << 20,
    uint32_t host_threads = 2,
    platform::SimCoreExecution cores = platform::SimCoreExecution::Auto) {
  platform::SimConfig config;
  config.clusters = clusters;
  config.host_threads = host_threads;
  config.memory_bytes = memory_bytes;
  config.serial = serial;
  config.core_execution = cores;
  std::unique_ptr<platform::Platform> out;
  throw_if_error(platform::create_sim_platform(config, &out));
  return out;
}

inline RunnerOptions options_with_env(std::map<std::string, std::string> vars) {
  auto shared = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
  RunnerOptions options;
  options.env = [shared](const char* name) -> const char* {
    auto it = shared->find(name);
    return it == shared->end() ? nullptr : it->second.c_str();
  };
  return options;
}

}  // namespace chiprt::host::test
