// The sim's options (include/chiprt/sim_options.h): names, the environment override and the
// resolution of Auto.
#include <cstdlib>
#include <string>
#include <thread>

#include "chiprt/sim_options.h"
#include "chiprt/status.h"
#include "platform/sim/sim_platform.h"

namespace chiprt {

std::string_view sim_core_execution_name(SimCoreExecution mode) noexcept {
  switch (mode) {
    case SimCoreExecution::Auto:
      return "auto";
    case SimCoreExecution::Aicpu:
      return "aicpu";
    case SimCoreExecution::Executors:
      return "executors";
  }
  return "unknown";
}

bool parse_sim_core_execution(std::string_view name, SimCoreExecution* out) noexcept {
  for (const SimCoreExecution mode :
       {SimCoreExecution::Auto, SimCoreExecution::Aicpu, SimCoreExecution::Executors}) {
    if (name == sim_core_execution_name(mode)) {
      *out = mode;
      return true;
    }
  }
  return false;
}

SimCoreExecution resolve_sim_core_execution(const SimOptions& options) {
  if (options.core_execution != SimCoreExecution::Auto &&
      options.core_execution != SimCoreExecution::Aicpu &&
      options.core_execution != SimCoreExecution::Executors) {
    throw Error(StatusCode::InvalidConfig,
                "SimOptions.core_execution " +
                    std::to_string(static_cast<int>(options.core_execution)) +
                    " is unknown; use Auto, Aicpu or Executors");
  }
  SimOptions requested = options;
  throw_if_error(platform::sim::apply_core_execution_env(&requested));
  return platform::sim::resolve_core_execution(requested);
}

std::string_view sim_isolation_name(SimIsolation mode) noexcept {
  switch (mode) {
    case SimIsolation::Default:
      return "default";
    case SimIsolation::None:
      return "none";
    case SimIsolation::Process:
      return "process";
  }
  return "unknown";
}

bool parse_sim_isolation(std::string_view name, SimIsolation* out) noexcept {
  for (const SimIsolation mode :
       {SimIsolation::Default, SimIsolation::None, SimIsolation::Process}) {
    if (name == sim_isolation_name(mode)) {
      *out = mode;
      return true;
    }
  }
  return false;
}

SimIsolation resolve_sim_isolation(const SimOptions& options) {
  if (options.isolation != SimIsolation::Default && options.isolation != SimIsolation::None &&
      options.isolation != SimIsolation::Process) {
    throw Error(StatusCode::InvalidConfig, "SimOptions.isolation " +
                                               std::to_string(static_cast<int>(options.isolation)) +
                                               " is unknown; use Default, None or Process");
  }
  SimOptions requested = options;
  throw_if_error(platform::sim::apply_isolation_env(&requested));
  // In-process stays the default: it is what a debugger steps through most easily.
  return requested.isolation == SimIsolation::Default ? SimIsolation::None : requested.isolation;
}

}  // namespace chiprt

namespace chiprt::platform::sim {

Status apply_isolation_env(SimOptions* options) {
  // An explicit (or unknown: validate_sim_options names it) mode is kept.
  if (options->isolation != SimIsolation::Default) return Status::ok();
  const char* text = std::getenv("CHIPRT_SIM_ISOLATION");
  if (text == nullptr || *text == '\0') return Status::ok();
  const std::string_view name(text);
  if (name == "process") {
    options->isolation = SimIsolation::Process;
  } else if (name == "none") {
    options->isolation = SimIsolation::None;
  } else {
    return Status(StatusCode::InvalidConfig,
                  std::string("CHIPRT_SIM_ISOLATION='") + text + "' is not one of process, none");
  }
  return Status::ok();
}

Status apply_core_execution_env(SimOptions* options) {
  // An explicit (or unknown: validate_sim_options names it) mode is kept.
  if (options->core_execution != SimCoreExecution::Auto) return Status::ok();
  const char* text = std::getenv("CHIPRT_SIM_CORES");
  if (text == nullptr || *text == '\0') return Status::ok();
  if (!parse_sim_core_execution(text, &options->core_execution)) {
    return Status(StatusCode::InvalidConfig, std::string("CHIPRT_SIM_CORES='") + text +
                                                 "' is not one of auto, aicpu, executors");
  }
  return Status::ok();
}

// Kernels run on the AICPU threads when those alone occupy every hardware thread: executors would
// then only add threads that take turns on the same CPUs, each scheduler-to-core hand-off a
// context switch (measured on 2 cores: about two per task of a dependency chain).
SimCoreExecution resolve_core_execution(const SimOptions& options, unsigned hardware_threads) {
  if (options.core_execution != SimCoreExecution::Auto) return options.core_execution;
  if (hardware_threads == 0) hardware_threads = std::thread::hardware_concurrency();
  if (hardware_threads == 0) hardware_threads = 1;
  return hardware_threads <= options.aicpu_threads ? SimCoreExecution::Aicpu
                                                   : SimCoreExecution::Executors;
}

}  // namespace chiprt::platform::sim
