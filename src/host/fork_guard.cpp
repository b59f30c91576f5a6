// Fork detection (see host/fork_guard.h).
#include "host/fork_guard.h"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <string>

#include "chiprt/status.h"

namespace chiprt::host {
namespace {

std::atomic<uint64_t> g_generation{0};

// Runs in the child right after fork(), before fork() returns there: one atomic increment.
void on_fork_child() noexcept {
  g_generation.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

uint64_t fork_generation() noexcept {
  // Once per process image; the handler stays registered for the library's life (glibc drops it
  // when the library is unloaded).
  static const bool registered = pthread_atfork(nullptr, nullptr, &on_fork_child) == 0;
  (void)registered;
  return g_generation.load(std::memory_order_relaxed);
}

void refuse_inherited(uint64_t generation, int creator_pid, const char* object, const char* what,
                      const char* facade) {
  if (generation == g_generation.load(std::memory_order_relaxed)) return;
  throw Error(StatusCode::InheritedWorker,
              std::string(object) + "::" + what + " called in process " + std::to_string(getpid()) +
                  ", a forked child of process " + std::to_string(creator_pid) +
                  ", which created it and owns its device and threads; create a new " + facade +
                  " in this process");
}

}  // namespace chiprt::host
