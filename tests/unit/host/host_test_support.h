// Helpers shared by the host room's tests: a small simulated chip and runner options whose
// environment lookup reads from a map (so timeout overrides are injected, not set globally).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include <gtest/gtest.h>

#include "chiprt/call_config.h"
#include "chiprt/status.h"
#include "chiprt/worker.h"
#include "host/device_runner.h"
#include "platform/registry.h"

namespace chiprt::host::test {

inline std::unique_ptr<platform::Platform> make_sim(
    uint32_t clusters = 2, bool serial = false, uint64_t memory_bytes = 256ull << 20,
    uint32_t host_threads = 2, SimCoreExecution cores = SimCoreExecution::Auto) {
  platform::PlatformOptions options;
  options.sim.clusters = clusters;
  options.sim.host_threads = host_threads;
  options.sim.memory_bytes = memory_bytes;
  options.sim.serial = serial;
  options.sim.core_execution = cores;
  std::unique_ptr<platform::Platform> out;
  throw_if_error(platform::create_platform("sim", options, &out));
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

// A small simulated chip for the Worker-level tests.
struct SmallChip {
  uint32_t clusters = 2;
  uint32_t host_threads = 2;
  uint64_t memory_bytes = 256ull << 20;
  bool serial = false;
  RuntimeVariant runtime = RuntimeVariant::HostBuildGraph;
};
inline WorkerOptions small_worker_options(const SmallChip& chip = {}) {
  WorkerOptions options;
  options.runtime = chip.runtime;
  options.sim.clusters = chip.clusters;
  options.sim.host_threads = chip.host_threads;
  options.sim.memory_bytes = chip.memory_bytes;
  options.sim.serial = chip.serial;
  return options;
}
// Both runtime variants, for tests parametrised over them, and the test name of a
// Combine(ValuesIn(kBothVariants), ValuesIn(cases)) parameter: "<variant>_<case name>".
inline constexpr RuntimeVariant kBothVariants[] = {RuntimeVariant::HostBuildGraph,
                                                   RuntimeVariant::TensormapRingbuffer};
struct VariantCaseName {
  template <class Case>
  std::string operator()(
      const ::testing::TestParamInfo<std::tuple<RuntimeVariant, Case>>& info) const {
    return std::string(runtime_variant_name(std::get<0>(info.param))) + "_" +
           std::get<1>(info.param).name;
  }
};

// Runs `call` and returns the Error it throws (fails the test when it does not throw).
inline Error error_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no Error thrown";
  return Error(StatusCode::Ok, "");
}

// A 1 MiB output heap and room for `max_tasks` tasks.
inline CallConfig small_call_config(uint64_t max_tasks) {
  CallConfig config;
  config.output_heap_bytes = 1 << 20;
  config.max_tasks = max_tasks;
  return config;
}

}  // namespace chiprt::host::test
