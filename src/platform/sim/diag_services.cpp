#include "platform/sim/diag_services.h"

#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <thread>

#include "common/diag_layout.h"

namespace chiprt::platform::sim {
namespace {

constexpr uint32_t kYieldAttempts = 4;
constexpr uint64_t kFirstSleepUs = 20;
constexpr uint64_t kMaxSleepUs = 1000;

int open_counter(uint64_t config) {
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof(attr));
  attr.size = sizeof(attr);
  attr.type = PERF_TYPE_HARDWARE;
  attr.config = config;
  attr.exclude_kernel = 1;  // what perf_event_paranoid 2 allows an unprivileged process
  attr.exclude_hv = 1;
  // pid 0, cpu -1: this thread, wherever it runs.
  return static_cast<int>(syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0));
}

struct ThreadCounters {
  bool opened = false;
  int instructions_fd = -1;
  int cycles_fd = -1;
  const char* reason = "";

  ~ThreadCounters() {
    if (instructions_fd >= 0) close(instructions_fd);
    if (cycles_fd >= 0) close(cycles_fd);
  }

  void open() {
    opened = true;
    const char* forced = std::getenv("CHIPRT_SIM_PERF_COUNTERS");
    if (forced != nullptr && std::strcmp(forced, "off") == 0) {
      reason = "hardware counters switched off by CHIPRT_SIM_PERF_COUNTERS=off";
      return;
    }
    instructions_fd = open_counter(PERF_COUNT_HW_INSTRUCTIONS);
    cycles_fd = open_counter(PERF_COUNT_HW_CPU_CYCLES);
    if (instructions_fd < 0 && cycles_fd < 0) {
      reason = errno == EACCES || errno == EPERM
                   ? "perf_event_open refused (permission: see /proc/sys/kernel/"
                     "perf_event_paranoid, or the container's seccomp profile)"
                   : "perf_event_open failed (no hardware counters on this host or VM)";
    }
  }
};

uint64_t read_fd(int fd) {
  uint64_t value = 0;
  if (fd < 0 || read(fd, &value, sizeof(value)) != sizeof(value)) return 0;
  return value;
}

}  // namespace

void diag_backoff(void* /*ctx*/, uint32_t attempt) {
  if (attempt < kYieldAttempts) {
    std::this_thread::yield();
    return;
  }
  const uint32_t doublings = std::min<uint32_t>(attempt - kYieldAttempts, 6);
  const uint64_t us = std::min<uint64_t>(kFirstSleepUs << doublings, kMaxSleepUs);
  std::this_thread::sleep_for(std::chrono::microseconds(us));
}

uint32_t read_counters(void* /*ctx*/, uint64_t* instructions, uint64_t* cycles, uint64_t* cpu_ns,
                       const char** reason) {
  thread_local ThreadCounters counters;
  if (!counters.opened) counters.open();
  uint32_t valid = common::kDiagHaveCpuTime;
  timespec now;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  *cpu_ns = static_cast<uint64_t>(now.tv_sec) * 1000000000ull + static_cast<uint64_t>(now.tv_nsec);
  *instructions = read_fd(counters.instructions_fd);
  *cycles = read_fd(counters.cycles_fd);
  if (counters.instructions_fd >= 0) valid |= common::kDiagHaveInstructions;
  if (counters.cycles_fd >= 0) valid |= common::kDiagHaveCycles;
  if (reason != nullptr) *reason = counters.reason;
  return valid;
}

}  // namespace chiprt::platform::sim
