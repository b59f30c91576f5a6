// Worker: the public host API over one DeviceRunner (see include/chiprt/worker.h).
#include "chiprt/worker.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include <unistd.h>

#include "common/run_context.h"
#include "host/device_runner.h"
#include "host/fork_guard.h"
#include "host/log.h"
#include "host/poisoned_memory.h"
#include "host/run_state.h"
#include "host/run_steps.h"
#include "host/worker_access.h"
#include "platform/registry.h"

namespace chiprt {

struct Worker::Impl {
  enum class State { Fresh, Ready, Closed };
  // The runner's lock: every call on the runner holds it (the pipeline thread for each step).
  mutable std::mutex mutex;
  // Written under the mutex; atomic so that initialized() needs no lock.
  std::atomic<State> state{State::Fresh};
  std::unique_ptr<host::DeviceRunner> runner;

  // --- the pipeline (submit) ---------------------------------------------------------------
  // Lock order: mutex, then pipe_mutex. pipe_mutex guards admitted, next_sequence, closing,
  // driver and every RunState::prepare_error; pipe_cv announces a change of admitted (a place
  // freed, a run admitted, a run done).
  static constexpr std::size_t kMaxAdmitted = host::kPipelineDepth;
  mutable std::mutex pipe_mutex;
  mutable std::condition_variable pipe_cv;
  std::deque<std::shared_ptr<host::RunState>> admitted;  // front: the run executing or next
  uint64_t next_sequence = 1;
  bool closing = false;         // no more admissions; the driver exits once admitted is empty
  bool driver_running = false;  // from the driver's start until it exits
  // reset() retires the idle driver before the device is forked anew (no pipeline thread may
  // exist at that fork: ThreadSanitizer ends a child forked beside other threads once it starts
  // threads); admissions meanwhile wait for retire_driver to start a new one.
  bool retiring = false;
  // The driver is in a wait slice of a launch's AICPU phase, holding the runner's lock: a run
  // admitted now wakes it (Platform::wake_wait) so that it prepares the run at once.
  bool driver_waiting = false;
  std::thread driver;
  // Memory failed runs left unfinished (worker.h: a failed run cancels the later runs that touch
  // memory it wrote), guarded by `mutex`: every run checks it before its launch, on the pipeline
  // thread or in run().
  host::PoisonedMemory poisoned;

  // Refuses a call made from inside a run (an orchestration function or a kernel, see
  // common/run_context.h): a host_build_graph orchestration function runs on a thread that
  // already holds the lock, and chip threads would wait for the run they belong to.
  static void refuse_inside_a_run(const char* what) {
    const common::RunContext& context = common::current_run_context();
    if (context.role != common::RunRole::None) {
      throw Error(StatusCode::ReentrantCall, std::string("Worker::") + what +
                                                 " called from inside a run, from " +
                                                 common::describe(context));
    }
  }

  // The process that created this Worker (host/fork_guard.h). In a forked child the Worker is
  // the parent's: every call throws InheritedWorker before touching a lock (a parent thread may
  // have held one at the fork) and the destructor leaves everything as it is.
  const uint64_t fork_generation = host::fork_generation();
  const int creator_pid = static_cast<int>(getpid());
  bool inherited() const noexcept { return fork_generation != host::fork_generation(); }

  // Refuses a call in a forked child (InheritedWorker) or from inside a run (ReentrantCall).
  void refuse(const char* what) const {
    host::refuse_inherited(fork_generation, creator_pid, "Worker", what);
    refuse_inside_a_run(what);
  }

  // Host calls waiting for the lock: the pipeline thread lets them in between two wait slices.
  mutable std::atomic<int> lock_waiters{0};

  // Every entry point starts here: refuses calls in a forked child or from inside a run, then
  // takes the lock.
  std::unique_lock<std::mutex> enter(const char* what) const {
    refuse(what);
    lock_waiters.fetch_add(1, std::memory_order_acq_rel);
    std::unique_lock<std::mutex> lock(mutex);
    lock_waiters.fetch_sub(1, std::memory_order_acq_rel);
    return lock;
  }

  // With `lock` (the runner's) held: waits, releasing it meanwhile, until no admitted run
  // satisfies `blocks`; returns with the lock held and nothing blocking. While the lock is held no
  // run is launched or admitted-and-prepared, so what the caller does next cannot race a run.
  template <class Blocks>
  void wait_until_clear(std::unique_lock<std::mutex>& lock, Blocks&& blocks) const {
    for (;;) {
      std::unique_lock pipe(pipe_mutex);
      auto clear = [&] {
        for (const auto& run : admitted) {
          if (blocks(*run)) return false;
        }
        return true;
      };
      if (clear()) return;
      lock.unlock();
      pipe_cv.wait(pipe, clear);
      pipe.unlock();
      lock.lock();
    }
  }
  // Waits until no admitted run names caller memory in [lo, hi).
  void wait_for_memory(std::unique_lock<std::mutex>& lock, uint64_t lo, uint64_t hi) const {
    wait_until_clear(lock, [&](const host::RunState& run) { return run.touches(lo, hi); });
  }
  // Waits until every admitted run is done.
  void drain(std::unique_lock<std::mutex>& lock) const {
    wait_until_clear(lock, [](const host::RunState&) { return true; });
  }

  // With the runner's lock held, just before run `sequence` would start: the error it ends with
  // instead, unlaunched, when the device faulted earlier (DeviceFaulted) or when it names poisoned
  // memory (Cancelled, `*cancelled` set; what the run writes is poisoned in turn when `poisons`).
  std::optional<Error> refusal(host::DeviceRunner& runner, uint64_t sequence, int32_t callable_id,
                               const TaskArgs& args, bool poisons, bool* cancelled) {
    if (runner.faulted()) {
      return Error(StatusCode::DeviceFaulted,
                   "run " + std::to_string(sequence) + " of callable " +
                       std::to_string(callable_id) +
                       " was not launched: the device faulted earlier and its resources were "
                       "abandoned (" +
                       runner.fault_description() + "); call Worker::reset()");
    }
    const host::PoisonedMemory::Range* cause = poisoned.find(args);
    if (cause == nullptr) return std::nullopt;
    Error error = host::PoisonedMemory::cancellation(sequence, callable_id, *cause);
    if (poisons) poisoned.poison_cancelled(args, sequence, *cause);
    *cancelled = true;
    return error;
  }

  RunHandle admit(int32_t callable_id, const TaskArgs& args, const CallConfig& config, bool block,
                  bool* admitted_out, bool poisons = true);
  void drive();
  // Prepares (unless done while the run before it executed), launches, waits for and collects
  // `run`, preparing its successor during the wait; its report, or `failure` set.
  RunReport execute(host::RunState& run, std::optional<Error>* failure);
  void prepare_run(host::DeviceRunner& runner, host::RunState& run);
  // Prepares `next` while `executing` (launched as `launch`) runs; a failure is kept as next's.
  void prepare_successor(host::DeviceRunner& runner, host::RunState& executing,
                         host::PreparedLaunch& launch, host::RunState& next);
  // The run admitted after `run`, when it has one (pipe_mutex held).
  std::shared_ptr<host::RunState> successor_of(const host::RunState& run) const {
    for (std::size_t i = 0; i + 1 < admitted.size(); ++i) {
      if (admitted[i].get() == &run) return admitted[i + 1];
    }
    return nullptr;
  }
  // Starts the pipeline thread (pipe_mutex held).
  void start_driver() {
    driver = std::thread([this] { drive(); });
    driver_running = true;
  }
  // With the runner's lock held, after drain (reset): ends the pipeline thread if it is idle;
  // the next admission starts a new one.
  void retire_driver();
  // Stops admissions, lets every admitted run finish and waits for the driver to exit (close;
  // any number of threads at once).
  void stop_pipeline();

  // Throws unless the worker is initialised and open.
  host::DeviceRunner& ready(const char* what) const {
    if (state == State::Closed) {
      throw Error(StatusCode::AlreadyClosed,
                  std::string("Worker::") + what + " called after close(); create a new Worker");
    }
    if (state == State::Fresh) {
      throw Error(StatusCode::NotInitialized,
                  std::string("Worker::") + what + " called before init(); call init() first");
    }
    return *runner;
  }
};

namespace {

std::string range_text(uint64_t offset, uint64_t bytes, uint64_t size) {
  return "offset " + std::to_string(offset) + " + " + std::to_string(bytes) +
         " bytes exceeds the buffer size " + std::to_string(size);
}

// [offset, offset+bytes) must lie inside `buffer`.
void check_buffer_range(const char* what, const DeviceBuffer& buffer, uint64_t offset,
                        uint64_t bytes) {
  if (buffer.empty()) {
    throw Error(StatusCode::InvalidDevicePointer,
                std::string("Worker::") + what + ": the DeviceBuffer is empty (address 0)");
  }
  if (offset > buffer.size || bytes > buffer.size - offset) {
    throw Error(StatusCode::InvalidArgument,
                std::string("Worker::") + what + ": " + range_text(offset, bytes, buffer.size));
  }
}

}  // namespace

Worker::Worker() : impl_(std::make_unique<Impl>()) {}

Worker::~Worker() {
  if (impl_->inherited()) {
    // A forked child's copy of the parent's Worker: its threads do not exist here and its device
    // is the parent's. Nothing is joined, closed or freed (freeing would run the device's
    // destructors); the copy's memory goes with this process.
    (void)impl_.release();
    return;
  }
  try {
    close();
  } catch (const std::exception& e) {
    CHIPRT_LOG_WARN("Worker destructor: close failed: %s", e.what());
  } catch (...) {
    CHIPRT_LOG_WARN("Worker destructor: close failed with an unknown exception");
  }
  // close() refused (called from inside a run): the pipeline thread must still be gone before
  // the runner it drives is destroyed.
  impl_->stop_pipeline();
}

void Worker::init(const WorkerOptions& options) {
  const auto lock = impl_->enter("init");
  if (impl_->state == Impl::State::Closed) {
    throw Error(StatusCode::AlreadyClosed,
                "Worker::init called after close(); create a new Worker");
  }
  if (impl_->state == Impl::State::Ready) {
    throw Error(StatusCode::InvalidArgument,
                "Worker::init called twice; a Worker is initialised once (close it and create a "
                "new one to change options)");
  }
  if (options.device_id < 0) {
    throw Error(StatusCode::InvalidConfig,
                "device_id=" + std::to_string(options.device_id) + " is negative; use an id >= 0");
  }
  RuntimeVariant runtime = options.runtime;
  if (runtime == RuntimeVariant::Default) runtime = RuntimeVariant::HostBuildGraph;
  if (runtime != RuntimeVariant::HostBuildGraph && runtime != RuntimeVariant::TensormapRingbuffer) {
    throw Error(StatusCode::InvalidConfig,
                "runtime variant " + std::to_string(static_cast<int>(runtime)) + " is unknown");
  }
  // By name: the host never names a platform's implementation (an unknown name lists the known).
  platform::PlatformOptions platform_options;
  platform_options.sim = options.sim;
  std::unique_ptr<platform::Platform> platform;
  throw_if_error(platform::create_platform(options.platform, platform_options, &platform));
  host::RunnerOptions runner_options;
  runner_options.default_runtime = runtime;
  auto runner = std::make_unique<host::DeviceRunner>(std::move(platform), runner_options);
  runner->attach(options.device_id);
  impl_->runner = std::move(runner);
  impl_->state = Impl::State::Ready;
}

bool Worker::initialized() const noexcept {
  return !impl_->inherited() && impl_->state.load() == Impl::State::Ready;
}

void Worker::register_callable(int32_t callable_id, std::span<const uint8_t> container) {
  const auto lock = impl_->enter("register_callable");
  impl_->ready("register_callable").register_callable(callable_id, container);
}

void Worker::unregister_callable(int32_t callable_id) {
  auto lock = impl_->enter("unregister_callable");
  impl_->ready("unregister_callable");
  // Its kernels' code goes with it: not while an admitted run may still call them.
  impl_->wait_until_clear(
      lock, [&](const host::RunState& run) { return run.callable_id == callable_id; });
  impl_->ready("unregister_callable").unregister_callable(callable_id);
}

bool Worker::has_callable(int32_t callable_id) const {
  const auto lock = impl_->enter("has_callable");
  return impl_->ready("has_callable").has_callable(callable_id);
}

RunReport Worker::run(int32_t callable_id, const TaskArgs& args, const CallConfig& config) {
  {
    const auto lock = impl_->enter("run");
    host::DeviceRunner& runner = impl_->ready("run");
    std::unique_lock pipe(impl_->pipe_mutex);
    // Nothing admitted: no run can start while the lock is held, so this one runs here, on the
    // caller's thread, without a hand-off.
    if (impl_->admitted.empty()) {
      const uint64_t sequence = impl_->next_sequence++;
      pipe.unlock();
      // Its caller sees its error at once: it poisons nothing.
      bool cancelled = false;
      if (std::optional<Error> refused =
              impl_->refusal(runner, sequence, callable_id, args, /*poisons=*/false, &cancelled)) {
        throw *refused;
      }
      return runner.run(callable_id, args, config);
    }
  }
  bool admitted = false;
  return impl_->admit(callable_id, args, config, /*block=*/true, &admitted, /*poisons=*/false)
      .wait();
}

RunHandle Worker::run_async(int32_t callable_id, const TaskArgs& args, const CallConfig& config) {
  bool admitted = false;
  return impl_->admit(callable_id, args, config, /*block=*/true, &admitted, /*poisons=*/false);
}

RunHandle Worker::submit(int32_t callable_id, const TaskArgs& args, const CallConfig& config) {
  bool admitted = false;
  return impl_->admit(callable_id, args, config, /*block=*/true, &admitted);
}

bool Worker::try_submit(int32_t callable_id, const TaskArgs& args, const CallConfig& config,
                        RunHandle* handle) {
  if (handle == nullptr) {
    throw Error(StatusCode::InvalidArgument, "Worker::try_submit: the handle pointer is null");
  }
  bool admitted = false;
  RunHandle made = impl_->admit(callable_id, args, config, /*block=*/false, &admitted);
  if (admitted) *handle = std::move(made);
  return admitted;
}

uint32_t Worker::runs_in_flight() const {
  impl_->refuse("runs_in_flight");
  std::lock_guard pipe(impl_->pipe_mutex);
  return static_cast<uint32_t>(impl_->admitted.size());
}

RunHandle Worker::Impl::admit(int32_t callable_id, const TaskArgs& args, const CallConfig& config,
                              bool block, bool* admitted_out, bool poisons) {
  const char* what = block ? "submit" : "try_submit";
  refuse(what);
  std::unique_lock pipe(pipe_mutex);
  auto refuse_state = [&] {
    if (closing || state == State::Closed) {
      throw Error(StatusCode::AlreadyClosed,
                  std::string("Worker::") + what + " called after close(); create a new Worker");
    }
    if (state == State::Fresh) {
      throw Error(StatusCode::NotInitialized,
                  std::string("Worker::") + what + " called before init(); call init() first");
    }
  };
  refuse_state();
  if (admitted.size() >= kMaxAdmitted) {
    if (!block) return RunHandle();
    pipe_cv.wait(pipe, [&] { return admitted.size() < kMaxAdmitted || closing; });
    refuse_state();
  }
  auto run = std::make_shared<host::RunState>(next_sequence++, callable_id, args, config);
  run->poisons = poisons;
  // The thread first: if it cannot start, nothing was admitted that nobody would run.
  if (!driver.joinable() && !retiring) start_driver();
  admitted.push_back(run);
  // Only while the driver holds the runner's lock in its wait: the platform is alive and not
  // being reset then.
  if (driver_waiting) runner->platform().wake_wait();
  pipe.unlock();
  pipe_cv.notify_all();
  *admitted_out = true;
  return run->handle(run);
}

// The pipeline thread: executes the admitted runs in order, one at a time.
void Worker::Impl::drive() {
  std::unique_lock pipe(pipe_mutex);
  for (;;) {
    pipe_cv.wait(pipe, [&] { return closing || retiring || !admitted.empty(); });
    if (retiring || admitted.empty()) break;  // retired, or closing with nothing left
    std::shared_ptr<host::RunState> run = admitted.front();
    pipe.unlock();
    std::optional<Error> failure;
    RunReport report;
    try {
      report = execute(*run, &failure);
    } catch (const std::exception& e) {  // not a chiprt::Error (those are failures already)
      failure =
          Error(StatusCode::InternalError, std::string("the pipeline thread failed running run ") +
                                               std::to_string(run->sequence) + ": " + e.what());
    }
    pipe.lock();
    admitted.pop_front();
    pipe_cv.notify_all();
    // Published after the run left `admitted`, so what its waiter does next (a read of its
    // output) is not held up by it.
    pipe.unlock();
    if (failure) {
      run->fail(*failure);
    } else {
      run->finish(std::move(report));
    }
    pipe.lock();
  }
  driver_running = false;
  pipe_cv.notify_all();
}

void Worker::Impl::prepare_run(host::DeviceRunner& runner, host::RunState& run) {
  CallConfig config = run.config;
  // The pipeline picks the slot and bank: consecutive runs alternate, so a run is prepared into
  // the pair the executing run does not use.
  config.pipeline_slot = config.arena_bank =
      static_cast<uint32_t>(run.sequence % host::kPipelineDepth);
  const host::RunClock::time_point t_entry = host::RunClock::now();
  const host::RunPlan plan = runner.plan_run(config);
  run.prepared.emplace(runner.prepare(plan, run.callable_id, run.args, t_entry, &run.started));
}

void Worker::Impl::prepare_successor(host::DeviceRunner& runner, host::RunState& executing,
                                     host::PreparedLaunch& launch, host::RunState& next) {
  // Cancelled when its turn comes (execute): its orchestration does not run.
  if (poisoned.find(next.args) != nullptr) return;
  // A host_build_graph orchestration function runs now, on the host, while `executing` runs on
  // the chip: its get/set_tensor_data of memory the executing run names first waits for that
  // run's chip work (what run() order would give), everything else goes ahead.
  runner.set_host_data_fence([&](uint64_t lo, uint64_t hi) {
    if (launch.stage == host::LaunchStage::Launched && executing.touches(lo, hi)) {
      runner.wait(launch);
    }
  });
  struct Unfence {
    host::DeviceRunner& runner;
    ~Unfence() { runner.set_host_data_fence({}); }
  } unfence{runner};
  try {
    prepare_run(runner, next);
  } catch (const Error& e) {
    // The successor's own failure, reported when its turn comes (not this run's).
    std::lock_guard pipe(pipe_mutex);
    if (!next.prepare_error) next.prepare_error = e;
  }
}

RunReport Worker::Impl::execute(host::RunState& run, std::optional<Error>* failure_out) {
  std::optional<Error>& failure = *failure_out;
  RunReport report;
  {
    std::unique_lock lock(mutex);
    host::DeviceRunner& runner = *this->runner;
    std::optional<Error> refused;
    {
      std::lock_guard pipe(pipe_mutex);
      refused = run.prepare_error;
    }
    bool cancelled = false;
    try {
      // Decided here, when every run before this one is done, never by how far it got before.
      if (std::optional<Error> refusal_error =
              refusal(runner, run.sequence, run.callable_id, run.args, run.poisons, &cancelled)) {
        refused = std::move(refusal_error);
      }
      if (refused) {
        // Never launched, and no directory whether or not it was prepared by now: a collector
        // prepared for it (cancelled or refused after a fault; a failed prepare has none) gives its
        // device region back unwritten.
        if (run.prepared) runner.drop_diagnostics(*run.prepared);
        throw *refused;
      }
      if (!run.prepared) prepare_run(runner, run);
      host::PreparedLaunch& prepared = *run.prepared;
      if (prepared.needs_launch) {
        try {
          runner.launch(prepared);
          // While the chip executes this run, prepare the next one: admitted by now, or during
          // the wait (an admission wakes the wait).
          bool next_prepared = false;
          auto look_for_successor = [&] {
            if (next_prepared) return;
            std::shared_ptr<host::RunState> next;
            {
              std::lock_guard pipe(pipe_mutex);
              next = successor_of(run);
            }
            if (next == nullptr) return;
            next_prepared = true;
            prepare_successor(runner, run, prepared, *next);
          };
          look_for_successor();
          // A wait slice, wakeable by an admission while no successor is prepared.
          auto wait_slice = [&] {
            bool wakeable = !next_prepared;
            if (wakeable) {
              std::lock_guard pipe(pipe_mutex);
              // Admitted between the last look and now: prepare it first.
              if (successor_of(run) != nullptr) return false;
              driver_waiting = true;
            }
            struct Cleared {  // also when poll throws
              Impl& impl;
              bool wakeable;
              ~Cleared() {
                if (!wakeable) return;
                std::lock_guard pipe(impl.pipe_mutex);
                impl.driver_waiting = false;
              }
            } cleared{*this, wakeable};
            return runner.poll(prepared, wakeable);
          };
          // The successor's prepare may have finished this wait already (its data fence).
          while (prepared.stage == host::LaunchStage::Launched && !wait_slice()) {
            look_for_successor();
            // Hand the lock to a host call waiting for it between two wait slices.
            if (lock_waiters.load(std::memory_order_acquire) > 0) {
              lock.unlock();
              for (int i = 0; i < 1000 && lock_waiters.load(std::memory_order_acquire) > 0; ++i) {
                std::this_thread::yield();
              }
              lock.lock();
            }
          }
        } catch (const Error& e) {
          runner.fail_diagnostics(prepared, e);
        }
      }
      report = runner.collect(prepared);
    } catch (const Error& e) {
      failure = e;
    } catch (const std::exception& e) {
      failure =
          Error(StatusCode::InternalError, std::string("run ") + std::to_string(run.sequence) +
                                               " failed on the pipeline thread: " + e.what());
    }
    run.prepared.reset();
    // What a submitted run that started and failed writes cancels the later runs naming it (a
    // device fault refuses them all anyway, until reset).
    if (failure && run.poisons && run.started && !cancelled && !runner.faulted()) {
      poisoned.poison_failed(run.args, run.sequence, *failure);
    }
  }
  return report;
}

void Worker::Impl::retire_driver() {
  std::thread old;
  {
    std::lock_guard pipe(pipe_mutex);
    // A run admitted since the drain may be executing, waiting for the runner's lock: the driver
    // is not idle then and stays (the caller raced its own reset).
    if (!admitted.empty()) return;
    retiring = true;
    old = std::move(driver);
  }
  pipe_cv.notify_all();
  // The driver is idle (nothing was admitted under the runner's lock, which it would need): it
  // exits at once.
  if (old.joinable()) old.join();
  std::lock_guard pipe(pipe_mutex);
  retiring = false;
  // Admitted meanwhile: its driver starts now (and waits for the runner's lock).
  if (!admitted.empty() && !closing && !driver.joinable()) start_driver();
}

void Worker::Impl::stop_pipeline() {
  std::thread joined;
  std::unique_lock pipe(pipe_mutex);
  closing = true;
  joined = std::move(driver);
  pipe_cv.notify_all();
  if (joined.joinable()) {
    pipe.unlock();
    if (joined.get_id() == std::this_thread::get_id()) {
      // Called on the pipeline thread itself (a Worker destroyed from inside one of its own
      // runs): it cannot wait for itself; it finishes on its own after this run.
      joined.detach();
      return;
    }
    joined.join();
    return;
  }
  // Another close() holds the thread: wait until the driver has exited all the same, so that
  // no caller finalizes the runner under it.
  pipe_cv.wait(pipe, [&] { return !driver_running; });
}

GraphExport Worker::export_graph(int32_t callable_id, const TaskArgs& args,
                                 const CallConfig& config) {
  auto lock = impl_->enter("export_graph");
  impl_->ready("export_graph");
  impl_->drain(lock);  // the export builds in a bank's output heap an admitted run may use
  return impl_->ready("export_graph").export_graph(callable_id, args, config);
}

DeviceBuffer Worker::malloc(uint64_t bytes) {
  const auto lock = impl_->enter("malloc");
  host::DeviceRunner& runner = impl_->ready("malloc");
  if (bytes == 0) {
    throw Error(StatusCode::InvalidArgument, "Worker::malloc: 0 bytes requested; ask for >= 1");
  }
  return runner.allocate(bytes);
}

void Worker::free(DeviceBuffer buffer) {
  auto lock = impl_->enter("free");
  impl_->ready("free");
  if (buffer.empty()) {
    throw Error(StatusCode::InvalidDevicePointer,
                "Worker::free: the DeviceBuffer is empty (address 0)");
  }
  impl_->wait_for_memory(lock, buffer.addr, buffer.addr + buffer.size);
  impl_->ready("free").free(buffer.addr);
  impl_->poisoned.clear(buffer.addr, buffer.addr + buffer.size);
}

void Worker::copy_to(DeviceBuffer dst, const void* src, uint64_t bytes, uint64_t dst_offset) {
  auto lock = impl_->enter("copy_to");
  impl_->ready("copy_to");
  check_buffer_range("copy_to", dst, dst_offset, bytes);
  if (bytes == 0) return;
  if (src == nullptr) throw Error(StatusCode::InvalidArgument, "Worker::copy_to: source is null");
  impl_->wait_for_memory(lock, dst.addr + dst_offset, dst.addr + dst_offset + bytes);
  impl_->ready("copy_to").copy_to_device(dst.addr + dst_offset, src, bytes);
  impl_->poisoned.clear(dst.addr + dst_offset, dst.addr + dst_offset + bytes);
}

void Worker::copy_from(void* dst, DeviceBuffer src, uint64_t bytes, uint64_t src_offset) {
  auto lock = impl_->enter("copy_from");
  impl_->ready("copy_from");
  check_buffer_range("copy_from", src, src_offset, bytes);
  if (bytes == 0) return;
  if (dst == nullptr) {
    throw Error(StatusCode::InvalidArgument, "Worker::copy_from: destination is null");
  }
  impl_->wait_for_memory(lock, src.addr + src_offset, src.addr + src_offset + bytes);
  impl_->ready("copy_from").copy_from_device(dst, src.addr + src_offset, bytes);
}

void Worker::memset(DeviceBuffer dst, int value, uint64_t bytes) {
  auto lock = impl_->enter("memset");
  impl_->ready("memset");
  check_buffer_range("memset", dst, 0, bytes);
  impl_->wait_for_memory(lock, dst.addr, dst.addr + bytes);
  impl_->ready("memset").memset(dst.addr, value, bytes);
  impl_->poisoned.clear(dst.addr, dst.addr + bytes);
}

uint64_t Worker::device_bytes_in_use() const {
  const auto lock = impl_->enter("device_bytes_in_use");
  return impl_->ready("device_bytes_in_use").bytes_in_use();
}

void Worker::reset() {
  auto lock = impl_->enter("reset");
  impl_->ready("reset");
  impl_->drain(lock);
  impl_->retire_driver();
  impl_->ready("reset").reset_device();
  impl_->poisoned.clear_all();  // every buffer was lost with the device
}

uint64_t Worker::reset_count() const {
  const auto lock = impl_->enter("reset_count");
  return impl_->ready("reset_count").reset_count();
}

void Worker::flush_diagnostics() {
  const auto lock = impl_->enter("flush_diagnostics");
  const std::vector<std::string> failures = impl_->ready("flush_diagnostics").flush_diagnostics();
  if (failures.empty()) return;
  std::string message = "writing the diagnostics of " + std::to_string(failures.size()) +
                        " run(s) in the background failed:";
  for (const std::string& failure : failures) message += " " + failure + ";";
  message.pop_back();
  throw Error(StatusCode::DiagnosticsError, message);
}

void Worker::close() {
  impl_->refuse("close");
  // Admitted runs finish first (the pipeline thread needs the lock for them).
  impl_->stop_pipeline();
  const auto lock = impl_->enter("close");
  if (impl_->state == Impl::State::Closed) return;
  impl_->state = Impl::State::Closed;
  std::unique_ptr<host::DeviceRunner> runner = std::move(impl_->runner);
  if (runner == nullptr) return;
  for (const std::string& failure : runner->flush_diagnostics()) {
    CHIPRT_LOG_WARN("Worker::close: a background diagnostics write failed: %s", failure.c_str());
  }
  runner->finalize();
}

}  // namespace chiprt

namespace chiprt::host {

DeviceRunner& WorkerAccess::runner(Worker& worker) {
  const auto lock = worker.impl_->enter("runner_of");
  return worker.impl_->ready("runner_of");
}

}  // namespace chiprt::host
