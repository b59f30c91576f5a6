// The one futex wrapper of chiprt: thin calls of the Linux futex syscall on a
// std::atomic<uint32_t>, used by the simulated chip to park idle host threads (executors, the host
// waiting for a launch to drain) and, through the ParkWake table it fills (sim_park_wake), the
// chip-side threads (doorbells, the start barrier). Stateless; callable from any thread. Memory
// ordering is provided by the atomics the callers use around these calls; the futex itself is
// only the sleep/wake mechanism.
//
// FutexScope::Private (FUTEX_*_PRIVATE) serves memory of this process, the simulated chip's case;
// FutexScope::Shared serves memory mapped into several processes (a chip in its own process): the
// ParkWake of such a platform is sim_park_wake(FutexScope::Shared), a drop-in for the private one.
#pragma once

#include <atomic>
#include <cstdint>

#include "common/park_wake.h"

namespace chiprt::platform::sim {

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t),
              "futex needs a plain 32-bit atomic");

enum class FutexScope : uint8_t { Private = 0, Shared = 1 };

// Sleeps while `*word == expected`, at most `timeout_ns` nanoseconds (negative: no limit).
// Returns at once when the value differs; may return spuriously. Callers re-check their condition.
void futex_wait(std::atomic<uint32_t>* word, uint32_t expected, int64_t timeout_ns = -1,
                FutexScope scope = FutexScope::Private) noexcept;

// Wakes up to `count` threads sleeping on `word`.
void futex_wake(std::atomic<uint32_t>* word, int count,
                FutexScope scope = FutexScope::Private) noexcept;

// The chip side's park/wake primitive over these futexes (a static table: valid forever).
const common::ParkWake& sim_park_wake(FutexScope scope = FutexScope::Private) noexcept;

}  // namespace chiprt::platform::sim
