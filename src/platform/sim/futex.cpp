#include "platform/sim/futex.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <climits>

namespace chiprt::platform::sim {
namespace {

int wait_op(FutexScope scope) {
  return scope == FutexScope::Private ? FUTEX_WAIT_PRIVATE : FUTEX_WAIT;
}
int wake_op(FutexScope scope) {
  return scope == FutexScope::Private ? FUTEX_WAKE_PRIVATE : FUTEX_WAKE;
}

// ParkWake::wait takes an unsigned timeout; a chip-side wait is always bounded.
int64_t bounded(uint64_t timeout_ns) {
  return timeout_ns > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX
                                                       : static_cast<int64_t>(timeout_ns);
}

void park_private(void*, std::atomic<uint32_t>* word, uint32_t expected, uint64_t timeout_ns) {
  futex_wait(word, expected, bounded(timeout_ns), FutexScope::Private);
}
void wake_private(void*, std::atomic<uint32_t>* word) {
  futex_wake(word, INT_MAX, FutexScope::Private);
}
void park_shared(void*, std::atomic<uint32_t>* word, uint32_t expected, uint64_t timeout_ns) {
  futex_wait(word, expected, bounded(timeout_ns), FutexScope::Shared);
}
void wake_shared(void*, std::atomic<uint32_t>* word) {
  futex_wake(word, INT_MAX, FutexScope::Shared);
}

constexpr common::ParkWake kPrivate{nullptr, &park_private, &wake_private};
constexpr common::ParkWake kShared{nullptr, &park_shared, &wake_shared};

}  // namespace

void futex_wait(std::atomic<uint32_t>* word, uint32_t expected, int64_t timeout_ns,
                FutexScope scope) noexcept {
  timespec timeout{};
  timespec* timeout_ptr = nullptr;
  if (timeout_ns >= 0) {
    timeout.tv_sec = static_cast<time_t>(timeout_ns / 1'000'000'000);
    timeout.tv_nsec = static_cast<long>(timeout_ns % 1'000'000'000);
    timeout_ptr = &timeout;
  }
  // EAGAIN (value changed), EINTR and ETIMEDOUT all mean "re-check the condition".
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), wait_op(scope), expected, timeout_ptr,
          nullptr, 0);
}

void futex_wake(std::atomic<uint32_t>* word, int count, FutexScope scope) noexcept {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), wake_op(scope), count, nullptr, nullptr, 0);
}

const common::ParkWake& sim_park_wake(FutexScope scope) noexcept {
  return scope == FutexScope::Private ? kPrivate : kShared;
}

}  // namespace chiprt::platform::sim
