// ParkWake: how chip-side threads sleep on a 32-bit word of shared memory until another chip
// thread changes it, chosen by the platform (process-private futex on the simulated chip; a
// shared futex when the chip's memory is shared between processes; a device primitive on other
// hardware). The chip side calls only these two functions, never a system call of its own.
//
// Contract (a futex's): wait(word, expected, timeout_ns) returns at once when *word != expected,
// else sleeps until woken, the timeout passes, or spuriously; callers re-check their condition.
// wake_all(word) wakes every thread sleeping on `word`. Ordering comes from the atomics the
// callers use around the calls; these are only the sleep and the wake.
//
// Lifetime: a plain table of function pointers with a context, copied into device memory as part
// of ChipServices (common/chip_services.h); valid while the platform that filled it lives.
// Threading: both functions are called from any chip thread at once.
#pragma once

#include <atomic>
#include <cstdint>

namespace chiprt::common {

struct ParkWake {
  void* ctx = nullptr;
  void (*wait)(void* ctx, std::atomic<uint32_t>* word, uint32_t expected,
               uint64_t timeout_ns) = nullptr;
  void (*wake_all)(void* ctx, std::atomic<uint32_t>* word) = nullptr;

  bool complete() const noexcept { return wait != nullptr && wake_all != nullptr; }
  void park(std::atomic<uint32_t>* word, uint32_t expected, uint64_t timeout_ns) const {
    wait(ctx, word, expected, timeout_ns);
  }
  void wake(std::atomic<uint32_t>* word) const { wake_all(ctx, word); }
};

}  // namespace chiprt::common
