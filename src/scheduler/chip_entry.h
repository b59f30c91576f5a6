// Chip-side entry points of one launch, the chip runtime a platform provides
// (Platform::load_chip_runtime; the sim links them) and runs on a LaunchRequest.
//
// The host zeroes the shared-state region (host_build_graph: only its first
// common::kSharedClearedBytes, thread 0 formats the rest), fills common::ChipLaunchArgs and
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

void aicpu_entry(void* launch_args, uint32_t thread_index, uint32_t thread_count);

}  // namespace chiprt::scheduler
