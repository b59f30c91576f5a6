// The sim platforms' diagnostics services (common::ChipServices::diag_backoff, read_counters).
//
// Backoff: a chip thread whose diagnostics ring is full yields a few times, then sleeps 20 us
// doubling to 1 ms, so it never spins a core the host collector needs to drain it.
// Counters: per chip thread, perf_event_open instruction and cycle counters (user space only),
// opened on the thread's first call; where the host refuses them (perf_event_paranoid, a
// container's seccomp profile, or CHIPRT_SIM_PERF_COUNTERS=off, which tests use to force the
// refusal) only the thread's CPU time is valid and the reason is given.
//
// Threading: both are called from any chip thread; the counters are thread-local.
#pragma once

#include <cstdint>

namespace chiprt::platform::sim {

void diag_backoff(void* ctx, uint32_t attempt);
uint32_t read_counters(void* ctx, uint64_t* instructions, uint64_t* cycles, uint64_t* cpu_ns,
                       const char** reason);

}  // namespace chiprt::platform::sim
