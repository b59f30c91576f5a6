// SimOptions: the options of the simulated chip (platform "sim"), the one definition of them.
// The public WorkerOptions carries them; the sim platform (src/platform/sim) consumes them.
//
// Plain values; the functions below are pure except resolve_sim_core_execution and
// resolve_sim_isolation, which read the environment (CHIPRT_SIM_CORES, CHIPRT_SIM_ISOLATION).
// Thread-safe.
#pragma once

#include <cstdint>
#include <string_view>

namespace chiprt {

// Where the simulated chip runs the compute cores' kernels. The scheduling logic (handshake,
// dispatch, completion) is the same in both; what differs is which host thread executes a kernel.
enum class SimCoreExecution : uint8_t {
  // Aicpu when the host's hardware threads do not exceed SimOptions::aicpu_threads, else
  // Executors. The environment variable CHIPRT_SIM_CORES (auto, aicpu, executors) overrides it.
  Auto = 0,
  // Each core's kernels run on the AICPU (scheduler) thread that owns the core, inside its
  // dispatch loop: the chip uses exactly aicpu_threads host threads, and a dependency step needs
  // no hand-off between threads. Kernels run in parallel across scheduler threads only.
  Aicpu = 1,
  // Kernels run on host_threads executor threads, concurrently with the scheduler that
  // dispatched them (closest to the chip's concurrency; each hand-off is a thread wake-up).
  Executors = 2,
};

// Where the simulated chip lives. The scheduling logic is the same in both; what differs is what a
// crashing or hanging kernel takes down.
enum class SimIsolation : uint8_t {
  // None, unless the environment variable CHIPRT_SIM_ISOLATION (process, none) says otherwise.
  Default = 0,
  // The chip runs on threads of the host process: the easiest to step through in a debugger; a
  // kernel that crashes kills the host, one that hangs keeps its thread busy for good.
  None = 1,
  // The chip (AICPU threads, cores, loaded kernels, device memory) runs in a device process the
  // Worker forks at device init: a crashing kernel ends the run with KernelCrashed, a hanging one
  // with OpExecuteTimeout, the host survives, and Worker::reset() starts a fresh device.
  Process = 2,
};

// Options of the simulated chip (platform "sim").
struct SimOptions {
  uint32_t clusters = 8;       // 1..24; each is 1 AIC + 2 AIV
  uint32_t aicpu_threads = 4;  // scheduler processors (1 orchestrator + 3 schedulers)
  uint32_t host_threads = 0;   // executor threads (SimCoreExecution::Executors); 0 = hardware
  uint64_t memory_bytes = 4ull << 30;  // device memory capacity
  bool serial = false;                 // every run on one host thread, deterministic order
  SimCoreExecution core_execution = SimCoreExecution::Auto;
  SimIsolation isolation = SimIsolation::Default;
};

// What `options.core_execution` means on this host (CHIPRT_SIM_CORES applied, Auto resolved;
// never returns Auto). Throws Error(InvalidConfig) for a bad CHIPRT_SIM_CORES value.
SimCoreExecution resolve_sim_core_execution(const SimOptions& options);
// "auto", "aicpu", "executors".
std::string_view sim_core_execution_name(SimCoreExecution mode) noexcept;
bool parse_sim_core_execution(std::string_view name, SimCoreExecution* out) noexcept;

// What `options.isolation` means (CHIPRT_SIM_ISOLATION applied, Default resolved; never returns
// Default). Throws Error(InvalidConfig) for a bad CHIPRT_SIM_ISOLATION value.
SimIsolation resolve_sim_isolation(const SimOptions& options);
// "default", "none", "process".
std::string_view sim_isolation_name(SimIsolation mode) noexcept;
bool parse_sim_isolation(std::string_view name, SimIsolation* out) noexcept;

}  // namespace chiprt
