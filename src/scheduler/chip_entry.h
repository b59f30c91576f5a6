// Chip-side entry points of one launch, called by the platform (see platform::LaunchPrograms).
//
// The host zeroes the shared-state region (host_build_graph: only its first
// shared_state_cleared_bytes(), thread 0 formats the rest), fills common::ChipLaunchArgs and
// launches:
//   cores:  aicore::core_service(args, core)        (src/aicore/core_executor.h)
//   AICPU:  scheduler::aicpu_entry(args, i, n)      for i in [0, n)
// Thread 0 initialises the shared state from the graph image (fan-in counters, ready queues,
// handshake cells) while the others wait; then every thread schedules its own share of the cores
// until all tasks completed or an error latched in ChipLaunchArgs::result. Returns only when the
// run is over, after telling its cores to exit.
#pragma once

#include <cstdint>

namespace chiprt::scheduler {

// Bytes of shared state a run of `task_count` tasks on `cores` cores needs (host sizes the
// orchestrator<->scheduler arena with it).
uint64_t shared_state_bytes(uint64_t task_count, uint32_t cores);
// Bytes at the start of a host_build_graph shared-state region the host zeroes before launch
// (the handshake prefix and the counters); the per-task arrays and ready queues after them are
// formatted by the chip, so the host's per-run cost does not grow with the graph.
uint64_t shared_state_cleared_bytes();

void aicpu_entry(void* launch_args, uint32_t thread_index, uint32_t thread_count);

}  // namespace chiprt::scheduler
