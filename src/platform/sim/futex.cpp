#include "platform/sim/futex.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

namespace chiprt::platform::sim {

void futex_wait(std::atomic<uint32_t>* word, uint32_t expected, int64_t timeout_ns) noexcept {
  timespec timeout{};
  timespec* timeout_ptr = nullptr;
  if (timeout_ns >= 0) {
    timeout.tv_sec = static_cast<time_t>(timeout_ns / 1'000'000'000);
    timeout.tv_nsec = static_cast<long>(timeout_ns % 1'000'000'000);
    timeout_ptr = &timeout;
  }
  // EAGAIN (value changed), EINTR and ETIMEDOUT all mean "re-check the condition".
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_PRIVATE, expected, timeout_ptr,
          nullptr, 0);
}

void futex_wake(std::atomic<uint32_t>* word, int count) noexcept {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE, count, nullptr, nullptr,
          0);
}

}  // namespace chiprt::platform::sim
