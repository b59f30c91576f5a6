// RunContext: what the calling thread is executing on behalf of a chiprt run.
//
// The host API must not be entered from inside a run: an orchestration function of
// host_build_graph runs on the host thread that holds the Worker, one of tensormap_ringbuffer and
// every kernel run on chip threads the host is waiting for, so such a call would deadlock or stall
// the launch. Whoever runs run code on a thread marks it here — the platform its chip threads
// (AICPU threads, core executors) when it starts them, the orchestrators around the user's
// orchestration function, the core executor around each kernel — and the Worker refuses a call
// made while a mark is set (ReentrantCall, naming describe()).
//
// Both sides may see it (chip code only sets it, host code only reads it). Lifetime: a plain
// thread_local, constant-initialised (no TLS wrapper on the kernel path). Threading: each thread
// sees only its own context.
#pragma once

#include <cstdint>
#include <string>

namespace chiprt::common {

enum class RunRole : uint8_t {
  None = 0,           // not inside a run
  AicpuThread,        // a chip AICPU (scheduler) thread outside the roles below; `unit` = index
  CoreExecutor,       // a chip thread that runs compute cores' kernels; `unit` = its index
  HostOrchestration,  // the orchestration function of a host_build_graph run (host thread)
  ChipOrchestration,  // the orchestration function of a tensormap_ringbuffer run (AICPU thread 0)
  Kernel,             // a kernel: `func_id`, `task`, `unit` = core
};

struct RunContext {
  RunRole role = RunRole::None;
  int32_t func_id = -1;
  uint64_t task = 0;  // Kernel: the task's public TaskId
  uint32_t unit = 0;
};

inline constinit thread_local RunContext t_run_context{};

// The calling thread's context for the scope's lifetime; the previous one is restored after.
class RunContextScope {
 public:
  explicit RunContextScope(const RunContext& context) noexcept : previous_(t_run_context) {
    t_run_context = context;
  }
  ~RunContextScope() { t_run_context = previous_; }
  RunContextScope(const RunContextScope&) = delete;
  RunContextScope& operator=(const RunContextScope&) = delete;

 private:
  RunContext previous_;
};

inline const RunContext& current_run_context() noexcept {
  return t_run_context;
}

// "the orchestration function of a host_build_graph run (on the host thread)", "kernel func_id
// 3 (task 7 on core 2)", "AICPU thread 1 of the chip", ...
std::string describe(const RunContext& context);

}  // namespace chiprt::common
