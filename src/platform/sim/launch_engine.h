// LaunchEngine: the simulated chip's streams: the host threads that play the AICPU scheduler
// processors and the bounded pool of executor threads that run the logical compute cores.
//
// Model
// - AICPU threads are created lazily (up to max_aicpu_threads) and park on a condition variable
//   between launches; thread i of a launch runs programs.aicpu_entry(ctx, i, n).
// - Executor threads (executor_threads of them; none on a serial platform) run core_service for
//   kicked cores. Each core has an atomic state Idle -> Queued -> Running (-> RunningKicked); a
//   kick moves Idle to Queued and pushes the core into a lock-free MPMC queue (each core at most
//   once), or Running to RunningKicked so the executor re-queues the core when core_service
//   returns. Thus core_service runs at least once after every kick and never concurrently with
//   itself for one core. Idle executors spin briefly, then park on a futex eventcount.
// - With kernels_on_aicpu there are no executor threads: a kick runs core_service inline on the
//   kicking AICPU thread, as in a serial launch. Every core is kicked only by the one AICPU thread
//   that owns it (the scheduler that dispatches to it), so each AICPU thread runs its own cores'
//   kernels and the chip uses exactly one host thread per AICPU thread: on a host with fewer
//   hardware threads than AICPU threads plus executors, hand-offs between a scheduler and an
//   executor would each cost a context switch.
// - Serial launches (a serial platform, or LaunchRequest::serial) run aicpu_entry on AICPU thread
//   0 only and run core_service inline inside kick_core on the kicking thread; a kick of a core
//   already running on the stack marks it kicked and it is re-run after it returns.
// - wait() waits for every AICPU thread to return, then for every queued or running core to go
//   idle, all within the timeout; on timeout the launch keeps running and wait may be called again.
//
// Lifetime: create with std::make_shared; every host thread holds a reference, so a thread stuck
// in a kernel that stop() had to detach keeps the engine (and, via keep_alive, device memory and
// loaded objects its kernel may still touch) alive until it returns.
// Threading: start/stop/launch/wait are called by one host thread at a time; kick_core and cycles
// (through services()) are thread-safe and lock-free.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "chiprt/status.h"
#include "platform/platform.h"
#include "platform/sim/core_queue.h"
#include "platform/sim/futex.h"

namespace chiprt::platform::sim {

// The chip-side programs of one launch as the engine runs them: `aicpu_entry` once per AICPU
// thread, `core_service` for core `core` until it has nothing to do (again after a kick), both
// with `ctx`, the launch arguments. SimPlatform fills it from its loaded chip runtime and a
// LaunchRequest; engine tests pass programs of their own (SimPlatform::launch_programs).
struct LaunchPrograms {
  void* ctx = nullptr;
  void (*aicpu_entry)(void* ctx, uint32_t thread_index, uint32_t thread_count) = nullptr;
  void (*core_service)(void* ctx, uint32_t core) = nullptr;
  uint32_t aicpu_threads = 0;
  uint32_t cores = 0;   // see LaunchRequest::cores
  bool serial = false;  // see LaunchRequest::serial
};

class LaunchEngine : public std::enable_shared_from_this<LaunchEngine> {
 public:
  struct Options {
    uint32_t cores = 0;
    uint32_t max_aicpu_threads = 8;
    uint32_t executor_threads = 1;
    bool serial = false;
    // Run each core's kernels on the AICPU thread that kicks it (see the model above).
    bool kernels_on_aicpu = false;
    // How long stop() waits for a running launch and for threads to exit before detaching them.
    uint64_t stop_grace_ms = 2000;
    // How chip threads park (ChipServices::park_wake): Shared when the chip's memory is mapped by
    // another process as well (the isolated sim's device process).
    FutexScope park_scope = FutexScope::Private;
    // Run first on every host thread the engine starts (the device process installs its
    // alternate signal stack there); nullptr: nothing.
    void (*thread_start)() = nullptr;
  };

  explicit LaunchEngine(const Options& options);
  ~LaunchEngine();
  LaunchEngine(const LaunchEngine&) = delete;
  LaunchEngine& operator=(const LaunchEngine&) = delete;

  // Keeps `resource` alive as long as the engine (see the lifetime note above).
  void keep_alive(std::shared_ptr<void> resource) { keep_alive_.push_back(std::move(resource)); }

  const ChipServices& services() const noexcept { return services_; }
  Status start();
  void stop();
  Status launch(const LaunchPrograms& programs);
  Status wait(uint64_t timeout_ms);
  // Waits for the AICPU threads of the current launch only (see Platform::wait_aicpu;
  // `wakeable`: Platform::wait_aicpu_wakeable).
  Status wait_aicpu(uint64_t timeout_ms, bool wakeable = false);
  // See Platform::wake_wait: any thread; only a wakeable wait_aicpu of the current launch uses it.
  void wake_waiter() noexcept;
  // See Platform::recover: wait(0), mapping a launch that is still running to DeviceFaulted.
  Status recover();
  // See Platform::abandon_launch: stop() gives an abandoned launch no grace to finish and its
  // threads only a short one to exit (idle threads exit at once; stuck ones never do).
  void abandon_launch();

  void kick_core(uint32_t core) noexcept;
  uint64_t cycles() const noexcept;

  // Kicks for cores outside the current launch (ignored).
  uint64_t ignored_kicks() const noexcept { return ignored_kicks_.load(std::memory_order_relaxed); }
  // True once stop() had to detach threads stuck in chip code; the engine refuses further work.
  bool faulted() const;
  // Executor threads this engine runs (0 for a serial engine or with kernels_on_aicpu).
  uint32_t executor_threads() const noexcept {
    return options_.serial || options_.kernels_on_aicpu ? 0 : options_.executor_threads;
  }

 private:
  // The first phase of wait (and all of wait_aicpu): the AICPU threads returned by `deadline`;
  // `wakeable`: wake_waiter() ends it early.
  Status wait_aicpu_until(std::chrono::steady_clock::time_point deadline, uint64_t timeout_ms,
                          bool wakeable);
  enum CoreState : uint32_t { kIdle = 0, kQueued = 1, kRunning = 2, kRunningKicked = 3 };
  struct alignas(64) PaddedState {
    std::atomic<uint32_t> value{kIdle};
  };
  struct HostThread {
    std::thread thread;
    bool exited = false;  // guarded by mutex_
  };

  void aicpu_main(uint32_t index, uint64_t seen_generation, HostThread* self);
  void executor_main(uint32_t index, HostThread* self);
  void thread_exited(HostThread* self);
  void enqueue(uint32_t core) noexcept;
  void run_queued(uint32_t core) noexcept;
  void run_inline(uint32_t core) noexcept;
  Status start_thread_locked(std::vector<std::unique_ptr<HostThread>>* pool, bool aicpu,
                             uint32_t index);

  const Options options_;
  ChipServices services_{};
  std::vector<std::shared_ptr<void>> keep_alive_;

  // Launch coordination (host <-> AICPU threads); not on the hot path.
  mutable std::mutex mutex_;
  std::condition_variable aicpu_cv_;  // AICPU threads: new launch or stop
  std::condition_variable host_cv_;   // host: AICPU threads returned, threads exited
  bool started_ = false;
  bool stopping_ = false;
  bool faulted_ = false;
  bool launch_active_ = false;
  // A wait() on the active launch timed out: a later launch() is refused as a fault, not misuse.
  bool launch_timed_out_ = false;
  bool launch_abandoned_ = false;  // abandon_launch() on the active launch
  bool wake_requested_ = false;    // wake_waiter(): the next AICPU wait returns early
  uint64_t launch_generation_ = 0;
  LaunchPrograms launch_programs_{};
  uint32_t aicpu_running_ = 0;
  uint32_t live_threads_ = 0;
  std::vector<std::unique_ptr<HostThread>> aicpu_threads_;
  std::vector<std::unique_ptr<HostThread>> executors_;

  // Core scheduling (hot path): lock-free.
  void* core_ctx_ = nullptr;  // written before launch_cores_ is published
  void (*core_service_)(void*, uint32_t) = nullptr;
  std::atomic<uint32_t> launch_cores_{0};
  // Kicks run the core inline on the kicking thread (a serial launch, or kernels_on_aicpu).
  std::atomic<bool> inline_kicks_{false};
  std::atomic<bool> stopping_flag_{false};
  std::unique_ptr<PaddedState[]> core_state_;
  CoreQueue queue_;
  alignas(64) std::atomic<uint32_t> wake_epoch_{0};
  std::atomic<uint32_t> parked_executors_{0};
  alignas(64) std::atomic<uint32_t> busy_cores_{0};  // cores Queued or Running
  std::atomic<uint32_t> drain_waiters_{0};
  std::atomic<uint64_t> ignored_kicks_{0};
};

}  // namespace chiprt::platform::sim
