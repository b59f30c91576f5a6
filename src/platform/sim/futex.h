// Thin wrappers over the Linux futex syscall on a std::atomic<uint32_t>, used by the simulated
// chip to park idle host threads (executors, the host waiting for a launch to drain) instead of
// spinning. Stateless; callable from any thread. Memory ordering is provided by the atomics the
// callers use around these calls; the futex itself is only the sleep/wake mechanism.
#pragma once

#include <atomic>
#include <cstdint>

namespace chiprt::platform::sim {

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t),
              "futex needs a plain 32-bit atomic");

// Sleeps while `*word == expected`, at most `timeout_ns` nanoseconds (negative: no limit).
// Returns at once when the value differs; may return spuriously. Callers re-check their condition.
void futex_wait(std::atomic<uint32_t>* word, uint32_t expected, int64_t timeout_ns = -1) noexcept;

// Wakes up to `count` threads sleeping on `word`.
void futex_wake(std::atomic<uint32_t>* word, int count) noexcept;

}  // namespace chiprt::platform::sim
