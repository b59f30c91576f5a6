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

  bool complete() const noexcept {
    return kick_core != nullptr && cycles != nullptr && park_wake.complete();
  }
};

}  // namespace chiprt::common
