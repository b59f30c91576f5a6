// SimOptions: the options of the simulated chip (platform "sim"), the one definition of them.
// The public WorkerOptions carries them; the sim platform (src/platform/sim) consumes them.
//
// Plain values; the functions below are pure except resolve_sim_core_execution, which reads the
// environment (CHIPRT_SIM_CORES). Thread-safe.
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

// Options of the simulated chip (platform "sim").
struct SimOptions {
  uint32_t clusters = 8;       // 1..24; each is 1 AIC + 2 AIV
  uint32_t aicpu_threads = 4;  // scheduler processors (1 orchestrator + 3 schedulers)
  uint32_t host_threads = 0;   // executor threads (SimCoreExecution::Executors); 0 = hardware
  uint64_t memory_bytes = 4ull << 30;  // device memory capacity
  bool serial = false;                 // every run on one host thread, deterministic order
  SimCoreExecution core_execution = SimCoreExecution::Auto;
};

// What `options.core_execution` means on this host (CHIPRT_SIM_CORES applied, Auto resolved;
// never returns Auto). Throws Error(InvalidConfig) for a bad CHIPRT_SIM_CORES value.
SimCoreExecution resolve_sim_core_execution(const SimOptions& options);
// "auto", "aicpu", "executors".
std::string_view sim_core_execution_name(SimCoreExecution mode) noexcept;
bool parse_sim_core_execution(std::string_view name, SimCoreExecution* out) noexcept;

}  // namespace chiprt
