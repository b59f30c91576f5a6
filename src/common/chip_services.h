// ChipServices: what the platform offers to chip-side code (schedulers, cores): kicking a core,
// the chip clock, and parking/waking (common/park_wake.h). Protocol struct: the host copies the
// platform's table into device memory and names it in ChipLaunchArgs::services_addr; chip code
// reads it from there. Plain function pointers so any chip thread can call them.
//
// Lifetime: valid while the platform that filled it lives. Threading: every function is
// thread-safe and called from any chip thread.
#pragma once

#include <cstdint>

#include "common/park_wake.h"

namespace chiprt::common {

struct ChipServices {
  void* ctx = nullptr;
  // Tells the platform that core `core` has new work in its handshake cell. On hardware the core
  // polls and this is a no-op; on sim it wakes (or, in serial mode, runs inline) the core.
  void (*kick_core)(void* ctx, uint32_t core) = nullptr;
  // Monotonic chip clock in cycles (platform::Geometry::clock_hz per second).
  uint64_t (*cycles)(void* ctx) = nullptr;
  // How chip threads park on a doorbell or the start barrier and wake each other.
  ParkWake park_wake;
  // Diagnostics (common/diag_layout.h). Optional: nullptr when the platform has none.
  // backoff: a producer whose diagnostics ring is full lets the host collector run (`attempt`
  // counts the waits of one record, from 0: the platform may yield first and sleep later).
  void (*diag_backoff)(void* ctx, uint32_t attempt) = nullptr;
  // read_counters: the calling thread's hardware counters so far (instructions, cycles, thread
  // CPU ns); returns the DiagCounterValid bits of what it could read. The first call on a thread
  // opens its counters; where the host refuses perf_event_open only the CPU time is valid, and
  // the reason (a static string of the platform's, "" when counters work) is stored in *reason.
  uint32_t (*read_counters)(void* ctx, uint64_t* instructions, uint64_t* cycles, uint64_t* cpu_ns,
                            const char** reason) = nullptr;

  bool complete() const noexcept {
    return kick_core != nullptr && cycles != nullptr && park_wake.complete();
  }
};

}  // namespace chiprt::common
