#include "platform/sim/launch_engine.h"

#include <climits>
#include <string>
#include <system_error>

#include "common/run_context.h"
#include "platform/sim/diag_services.h"
#include "platform/sim/futex.h"

namespace chiprt::platform::sim {
namespace {

// Idle executors poll the queue this many times (yielding the CPU each time) before parking: a
// kick that follows a completion closely is picked up without a futex round trip, and on an
// oversubscribed host the yield hands the CPU to whoever will produce that kick.
constexpr int kSpinBeforePark = 16;
// After the host abandoned a stuck launch, how long stop() waits for the threads that are not
// stuck (idle ones exit within microseconds) before it detaches the rest.
constexpr uint64_t kAbandonedExitGraceMs = 200;

void kick_core_thunk(void* ctx, uint32_t core) {
  static_cast<LaunchEngine*>(ctx)->kick_core(core);
}

uint64_t cycles_thunk(void* ctx) {
  return static_cast<const LaunchEngine*>(ctx)->cycles();
}

int64_t remaining_ns(std::chrono::steady_clock::time_point deadline) {
  const auto left = deadline - std::chrono::steady_clock::now();
  return std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
}

}  // namespace

LaunchEngine::LaunchEngine(const Options& options)
    : options_(options),
      core_state_(std::make_unique<PaddedState[]>(options.cores == 0 ? 1 : options.cores)),
      queue_(2 * static_cast<std::size_t>(options.cores)) {
  services_.ctx = this;
  services_.kick_core = &kick_core_thunk;
  services_.cycles = &cycles_thunk;
  services_.diag_backoff = &diag_backoff;
  services_.read_counters = &read_counters;
  // Private futexes unless the chip's memory is shared with another process.
  services_.park_wake = sim_park_wake(options.park_scope);
}

LaunchEngine::~LaunchEngine() {
  // stop() leaves every thread joined or detached. A last reference dropped by a detached thread
  // runs this destructor on that thread, whose std::thread object is already detached.
  for (auto* pool : {&aicpu_threads_, &executors_}) {
    for (auto& host_thread : *pool) {
      if (host_thread->thread.joinable()) host_thread->thread.detach();
    }
  }
}

uint64_t LaunchEngine::cycles() const noexcept {
  // The host's steady clock itself: in-process and in a device process alike,
  // the chip's cycles then read the same as the host's clock, so diagnostics map them exactly.
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

bool LaunchEngine::faulted() const {
  std::lock_guard lock(mutex_);
  return faulted_;
}

Status LaunchEngine::start_thread_locked(std::vector<std::unique_ptr<HostThread>>* pool, bool aicpu,
                                         uint32_t index) {
  auto host_thread = std::make_unique<HostThread>();
  HostThread* self = host_thread.get();
  std::shared_ptr<LaunchEngine> engine = shared_from_this();
  const uint64_t seen = launch_generation_;
  try {
    if (aicpu) {
      host_thread->thread =
          std::thread([engine, index, seen, self] { engine->aicpu_main(index, seen, self); });
    } else {
      host_thread->thread =
          std::thread([engine, index, self] { engine->executor_main(index, self); });
    }
  } catch (const std::system_error& error) {
    return Status(StatusCode::InternalError,
                  std::string("the simulated chip could not start a host thread (") +
                      (aicpu ? "AICPU " : "core executor ") + std::to_string(index) +
                      "): " + error.what());
  }
  ++live_threads_;
  pool->push_back(std::move(host_thread));
  return Status::ok();
}

Status LaunchEngine::start() {
  std::lock_guard lock(mutex_);
  if (faulted_) {
    return Status(StatusCode::DeviceFaulted,
                  "start_streams: threads of an earlier launch were stuck in chip code and were "
                  "abandoned; create a new platform");
  }
  if (started_) return Status::ok();
  stopping_ = false;
  stopping_flag_.store(false, std::memory_order_relaxed);
  started_ = true;  // so that stop() joins whatever was started even if a start below fails
  if (!options_.serial && !options_.kernels_on_aicpu) {
    for (uint32_t i = 0; i < options_.executor_threads; ++i) {
      if (Status status = start_thread_locked(&executors_, false, i); !status) return status;
    }
  }
  return Status::ok();
}

void LaunchEngine::thread_exited(HostThread* self) {
  std::lock_guard lock(mutex_);
  self->exited = true;
  --live_threads_;
  host_cv_.notify_all();
}

void LaunchEngine::aicpu_main(uint32_t index, uint64_t seen_generation, HostThread* self) {
  // This thread runs only chip code: host API calls from it are refused (common/run_context.h).
  if (options_.thread_start != nullptr) options_.thread_start();
  common::t_run_context = {common::RunRole::AicpuThread, -1, 0, index};
  std::unique_lock lock(mutex_);
  for (;;) {
    aicpu_cv_.wait(lock, [&] { return stopping_ || launch_generation_ != seen_generation; });
    if (launch_generation_ != seen_generation) {
      seen_generation = launch_generation_;
      const LaunchPrograms programs = launch_programs_;
      if (index < programs.aicpu_threads) {
        lock.unlock();
        programs.aicpu_entry(programs.ctx, index, programs.aicpu_threads);
        lock.lock();
        if (--aicpu_running_ == 0) {
          // Notified after unlocking: a waiter woken under the lock would only block on it.
          lock.unlock();
          host_cv_.notify_all();
          lock.lock();
        }
      }
      continue;
    }
    break;  // stopping, no pending launch
  }
  lock.unlock();
  thread_exited(self);
}

void LaunchEngine::executor_main(uint32_t index, HostThread* self) {
  if (options_.thread_start != nullptr) options_.thread_start();
  common::t_run_context = {common::RunRole::CoreExecutor, -1, 0, index};
  uint32_t core = 0;
  while (!stopping_flag_.load(std::memory_order_acquire)) {
    bool found = queue_.pop(&core);
    for (int spin = 0; !found && spin < kSpinBeforePark; ++spin) {
      std::this_thread::yield();
      found = queue_.pop(&core);
    }
    if (found) {
      run_queued(core);
      continue;
    }
    // Eventcount: read the epoch before the last check of the queue; a push after that check
    // bumps the epoch, so futex_wait returns at once instead of sleeping through it.
    const uint32_t epoch = wake_epoch_.load(std::memory_order_seq_cst);
    parked_executors_.fetch_add(1, std::memory_order_seq_cst);
    if (queue_.pop(&core)) {
      parked_executors_.fetch_sub(1, std::memory_order_relaxed);
      run_queued(core);
      continue;
    }
    if (!stopping_flag_.load(std::memory_order_seq_cst)) futex_wait(&wake_epoch_, epoch);
    parked_executors_.fetch_sub(1, std::memory_order_relaxed);
  }
  thread_exited(self);
}

void LaunchEngine::enqueue(uint32_t core) noexcept {
  // The core is in the queue at most once, so push fails only while a consumer is between
  // claiming a slot and releasing it (a few instructions); yield until it has.
  while (!queue_.push(core)) std::this_thread::yield();
  wake_epoch_.fetch_add(1, std::memory_order_seq_cst);
  if (parked_executors_.load(std::memory_order_seq_cst) != 0) futex_wake(&wake_epoch_, 1);
}

void LaunchEngine::kick_core(uint32_t core) noexcept {
  if (core >= launch_cores_.load(std::memory_order_acquire)) {
    ignored_kicks_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (inline_kicks_.load(std::memory_order_relaxed)) {
    run_inline(core);
    return;
  }
  std::atomic<uint32_t>& state = core_state_[core].value;
  uint32_t current = state.load(std::memory_order_relaxed);
  for (;;) {
    // Every outcome is a read-modify-write (even Queued -> Queued) so the kicker's earlier writes
    // (the core's handshake cell) happen-before the executor's next core_service run.
    uint32_t next = current;
    if (current == kIdle) next = kQueued;
    if (current == kRunning) next = kRunningKicked;
    if (state.compare_exchange_weak(current, next, std::memory_order_acq_rel,
                                    std::memory_order_relaxed)) {
      if (current == kIdle) {
        // Counted before the push, so before the core can run and go idle again.
        busy_cores_.fetch_add(1, std::memory_order_relaxed);
        enqueue(core);
      }
      return;
    }
  }
}

void LaunchEngine::run_queued(uint32_t core) noexcept {
  std::atomic<uint32_t>& state = core_state_[core].value;
  // Only the executor that popped the core moves it out of Queued; kickers may rewrite Queued.
  uint32_t expected = kQueued;
  while (!state.compare_exchange_weak(expected, kRunning, std::memory_order_acq_rel,
                                      std::memory_order_relaxed)) {
    expected = kQueued;
  }
  core_service_(core_ctx_, core);
  expected = kRunning;
  if (state.compare_exchange_strong(expected, kIdle, std::memory_order_acq_rel,
                                    std::memory_order_relaxed)) {
    if (busy_cores_.fetch_sub(1, std::memory_order_seq_cst) == 1 &&
        drain_waiters_.load(std::memory_order_seq_cst) != 0) {
      futex_wake(&busy_cores_, INT_MAX);
    }
    return;
  }
  // Kicked while running: run it again, behind the other queued cores so none starves.
  expected = kRunningKicked;
  while (!state.compare_exchange_weak(expected, kQueued, std::memory_order_acq_rel,
                                      std::memory_order_relaxed)) {
    expected = kRunningKicked;
  }
  enqueue(core);
}

// Inline kicks of one core all come from one thread (a serial launch has one host thread; with
// kernels_on_aicpu only the core's owning scheduler kicks it), so the core state needs no
// read-modify-write (two locked instructions per task otherwise).
void LaunchEngine::run_inline(uint32_t core) noexcept {
  std::atomic<uint32_t>& state = core_state_[core].value;
  if (state.load(std::memory_order_relaxed) != kIdle) {
    // Already running further up this stack: re-run it when it returns instead of recursing.
    state.store(kRunningKicked, std::memory_order_relaxed);
    return;
  }
  state.store(kRunning, std::memory_order_relaxed);
  for (;;) {
    core_service_(core_ctx_, core);
    if (state.load(std::memory_order_relaxed) != kRunningKicked) break;
    state.store(kRunning, std::memory_order_relaxed);
  }
  state.store(kIdle, std::memory_order_relaxed);
}

Status LaunchEngine::launch(const LaunchPrograms& programs) {
  if (programs.aicpu_entry == nullptr) {
    return Status(StatusCode::InvalidArgument, "launch: programs.aicpu_entry must not be null");
  }
  if (programs.cores > 0 && programs.core_service == nullptr) {
    return Status(StatusCode::InvalidArgument,
                  "launch: programs.core_service must not be null when cores > 0 (cores = " +
                      std::to_string(programs.cores) + ")");
  }
  if (programs.aicpu_threads < 1 || programs.aicpu_threads > options_.max_aicpu_threads) {
    return Status(StatusCode::InvalidConfig, "launch: aicpu_threads must be in [1, " +
                                                 std::to_string(options_.max_aicpu_threads) +
                                                 "] (got " +
                                                 std::to_string(programs.aicpu_threads) + ")");
  }
  if (programs.cores > options_.cores) {
    return Status(StatusCode::InvalidConfig, "launch: cores must be at most the device's " +
                                                 std::to_string(options_.cores) + " cores (got " +
                                                 std::to_string(programs.cores) + ")");
  }
  const bool serial = options_.serial || programs.serial;
  if (serial && programs.aicpu_threads != 1) {
    return Status(StatusCode::InvalidConfig,
                  "launch: a serial launch runs on one host thread, so aicpu_threads must be 1 "
                  "(got " +
                      std::to_string(programs.aicpu_threads) + ")");
  }
  std::unique_lock lock(mutex_);
  if (faulted_) {
    return Status(StatusCode::DeviceFaulted,
                  "launch: threads of an earlier launch were stuck and abandoned");
  }
  if (!started_) {
    return Status(StatusCode::NotInitialized, "launch: call start_streams() before launching");
  }
  if (launch_active_ && launch_timed_out_) {
    return Status(
        StatusCode::DeviceFaulted,
        "launch: an earlier launch is still running (a kernel is stuck) after its wait "
        "timed out; wait() again or call recover() once it has drained, or create a new platform");
  }
  if (launch_active_) {
    return Status(StatusCode::InvalidArgument,
                  "launch: the previous launch has not been waited for; call wait() until it "
                  "returns Ok before launching again");
  }
  while (aicpu_threads_.size() < programs.aicpu_threads) {
    const auto index = static_cast<uint32_t>(aicpu_threads_.size());
    if (Status status = start_thread_locked(&aicpu_threads_, true, index); !status) return status;
  }
  // Cores first: publish the core program and which cores belong to the launch, so kicks from
  // the AICPU threads started below find them.
  core_ctx_ = programs.ctx;
  core_service_ = programs.core_service;
  inline_kicks_.store(serial || options_.kernels_on_aicpu, std::memory_order_relaxed);
  launch_cores_.store(programs.cores, std::memory_order_release);
  launch_programs_ = programs;
  aicpu_running_ = programs.aicpu_threads;
  launch_active_ = true;
  launch_timed_out_ = false;
  wake_requested_ = false;  // a wake meant for an earlier launch
  launch_abandoned_ = false;
  ++launch_generation_;
  lock.unlock();
  // After unlocking: AICPU threads woken under the lock would only block on it.
  aicpu_cv_.notify_all();
  return Status::ok();
}

namespace {

// Clamped so that "wait forever" values do not overflow the clock arithmetic.
std::chrono::steady_clock::time_point deadline_after(uint64_t timeout_ms) {
  constexpr uint64_t kMaxTimeoutMs = 365ull * 24 * 3600 * 1000;
  return std::chrono::steady_clock::now() +
         std::chrono::milliseconds(timeout_ms < kMaxTimeoutMs ? timeout_ms : kMaxTimeoutMs);
}

}  // namespace

Status LaunchEngine::wait_aicpu_until(std::chrono::steady_clock::time_point deadline,
                                      uint64_t timeout_ms, bool wakeable) {
  std::unique_lock lock(mutex_);
  if (!launch_active_) return Status::ok();
  if (!host_cv_.wait_until(lock, deadline,
                           [&] { return aicpu_running_ == 0 || (wakeable && wake_requested_); })) {
    launch_timed_out_ = true;
    return Status(StatusCode::StreamSyncTimeout,
                  "wait: the launch did not finish within " + std::to_string(timeout_ms) +
                      " ms: " + std::to_string(aicpu_running_) + " of " +
                      std::to_string(launch_programs_.aicpu_threads) +
                      " AICPU threads are still running (the launch keeps running; wait again, "
                      "or raise CHIPRT_STREAM_SYNC_TIMEOUT_MS)");
  }
  if (!wakeable) return Status::ok();
  wake_requested_ = false;
  if (aicpu_running_ != 0) {  // woken (wake_waiter), not timed out: the launch goes on
    return Status(StatusCode::StreamSyncTimeout,
                  "wait: woken before the launch's AICPU threads returned (it keeps running)");
  }
  return Status::ok();
}

void LaunchEngine::wake_waiter() noexcept {
  {
    std::lock_guard lock(mutex_);
    wake_requested_ = true;
  }
  host_cv_.notify_all();
}

Status LaunchEngine::wait_aicpu(uint64_t timeout_ms, bool wakeable) {
  return wait_aicpu_until(deadline_after(timeout_ms), timeout_ms, wakeable);
}

Status LaunchEngine::wait(uint64_t timeout_ms) {
  const auto deadline = deadline_after(timeout_ms);
  if (Status status = wait_aicpu_until(deadline, timeout_ms, /*wakeable=*/false); !status.is_ok()) {
    return status;
  }
  std::unique_lock lock(mutex_);
  if (!launch_active_) return Status::ok();
  const uint32_t threads = launch_programs_.aicpu_threads;
  lock.unlock();
  // Every AICPU thread returned, so the scheduler told its cores to exit; wait for the executors
  // to finish the core loops still queued or running.
  for (;;) {
    const uint32_t busy = busy_cores_.load(std::memory_order_seq_cst);
    if (busy == 0) break;
    const int64_t left = remaining_ns(deadline);
    if (left <= 0) {
      {
        std::lock_guard relock(mutex_);
        launch_timed_out_ = true;
      }
      return Status(StatusCode::StreamSyncTimeout,
                    "wait: all " + std::to_string(threads) + " AICPU threads returned but " +
                        std::to_string(busy) + " cores were still running or queued after " +
                        std::to_string(timeout_ms) +
                        " ms (a kernel may be stuck; wait again, or raise "
                        "CHIPRT_STREAM_SYNC_TIMEOUT_MS)");
    }
    drain_waiters_.fetch_add(1, std::memory_order_seq_cst);
    const uint32_t still_busy = busy_cores_.load(std::memory_order_seq_cst);
    if (still_busy != 0) futex_wait(&busy_cores_, still_busy, left);
    drain_waiters_.fetch_sub(1, std::memory_order_seq_cst);
  }
  lock.lock();
  launch_cores_.store(0, std::memory_order_release);
  inline_kicks_.store(false, std::memory_order_relaxed);
  launch_active_ = false;
  launch_timed_out_ = false;
  launch_abandoned_ = false;
  return Status::ok();
}

void LaunchEngine::abandon_launch() {
  std::lock_guard lock(mutex_);
  if (launch_active_) launch_abandoned_ = true;
}

Status LaunchEngine::recover() {
  {
    std::lock_guard lock(mutex_);
    if (faulted_) {
      return Status(StatusCode::DeviceFaulted,
                    "recover: threads of an earlier launch were stuck and abandoned when the "
                    "streams stopped; create a new platform");
    }
  }
  Status drained = wait(0);
  if (drained.is_ok()) return drained;
  return Status(StatusCode::DeviceFaulted,
                "recover: an earlier launch is still running (a kernel is stuck); the device "
                "cannot be reused until it returns (" +
                    drained.message() + ")");
}

void LaunchEngine::stop() {
  bool abandoned = false;
  {
    std::lock_guard lock(mutex_);
    if (!started_ || faulted_) return;
    abandoned = launch_abandoned_;
  }
  // A launch still running gets a bounded time to finish (none when the host abandoned it: it is
  // known to be stuck); a stuck one is abandoned below.
  const bool drained = wait(abandoned ? 0 : options_.stop_grace_ms).is_ok();
  const uint64_t exit_grace_ms = abandoned && !drained
                                     ? std::min(options_.stop_grace_ms, kAbandonedExitGraceMs)
                                     : options_.stop_grace_ms;
  std::unique_lock lock(mutex_);
  stopping_ = true;
  stopping_flag_.store(true, std::memory_order_seq_cst);
  aicpu_cv_.notify_all();
  wake_epoch_.fetch_add(1, std::memory_order_seq_cst);
  futex_wake(&wake_epoch_, INT_MAX);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(exit_grace_ms);
  host_cv_.wait_until(lock, deadline, [&] { return live_threads_ == 0; });
  std::vector<std::thread> to_join;
  bool stuck = false;
  for (auto* pool : {&aicpu_threads_, &executors_}) {
    for (auto& host_thread : *pool) {
      if (!host_thread->thread.joinable()) continue;
      if (host_thread->exited) {
        to_join.push_back(std::move(host_thread->thread));
      } else {
        // A thread still inside chip code (a kernel or scheduler that never returns) cannot be
        // killed; detach it. It holds a reference to this engine, and through keep_alive to the
        // device memory and loaded objects it may still use, so nothing it touches is freed.
        host_thread->thread.detach();
        stuck = true;
      }
    }
  }
  if (stuck) {
    faulted_ = true;
  } else {
    aicpu_threads_.clear();
    executors_.clear();
    started_ = false;
    launch_active_ = false;
    launch_timed_out_ = false;
    launch_cores_.store(0, std::memory_order_release);
    if (!drained) {
      // The launch finished only after the executors were told to exit: reset the cores it left
      // queued so a restarted stream starts clean (every thread has exited; nothing races).
      uint32_t core = 0;
      while (queue_.pop(&core)) {
      }
      for (uint32_t i = 0; i < options_.cores; ++i) {
        core_state_[i].value.store(kIdle, std::memory_order_relaxed);
      }
      busy_cores_.store(0, std::memory_order_relaxed);
    }
  }
  lock.unlock();
  for (std::thread& thread : to_join) thread.join();
}

}  // namespace chiprt::platform::sim
