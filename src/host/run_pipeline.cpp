// RunPipeline (see host/run_pipeline.h).
#include "host/run_pipeline.h"

#include <unistd.h>

#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "common/run_context.h"
#include "host/log.h"
#include "host/run_guard.h"
#include "host/run_steps.h"

namespace chiprt::host {

namespace {

// "<owner>::<what> called after close()" / "... before init()".
Error called_after_close(const char* owner, const char* what) {
  return Error(StatusCode::AlreadyClosed,
               std::string(owner) + "::" + what + " called after close(); create a new " + owner);
}
Error called_before_init(const char* owner, const char* what) {
  return Error(StatusCode::NotInitialized,
               std::string(owner) + "::" + what + " called before init(); call init() first");
}

}  // namespace

RunPipeline::RunPipeline(FacadeText facade)
    : facade_(std::move(facade)),
      owner_(facade_.owner),
      fork_generation_(host::fork_generation()),
      creator_pid_(static_cast<int>(getpid())) {}

RunPipeline::~RunPipeline() {
  try {
    close();
  } catch (const std::exception& e) {
    CHIPRT_LOG_WARN("%s destructor: close failed: %s", owner_, e.what());
  } catch (...) {
    CHIPRT_LOG_WARN("%s destructor: close failed with an unknown exception", owner_);
  }
  // close() refused (called from inside a run): the pipeline thread must still be gone before
  // the runner it drives is destroyed.
  stop_pipeline();
}

// --- entry ---------------------------------------------------------------------------------------

void RunPipeline::refuse(const char* what) const {
  // In a forked child the pipeline is the parent's: refused before touching a lock (a parent
  // thread may have held one at the fork).
  refuse_inherited(fork_generation_, creator_pid_, owner_, what, owner_);
  // From inside a run: a host_build_graph orchestration function runs on a thread that already
  // holds the runner's lock, and chip threads would wait for the run they belong to.
  refuse_inside_run(owner_, what);
}

std::unique_lock<std::mutex> RunPipeline::lock_runner(const char* what) const {
  refuse(what);
  lock_waiters_.fetch_add(1, std::memory_order_acq_rel);
  std::unique_lock<std::mutex> lock(mutex_);
  lock_waiters_.fetch_sub(1, std::memory_order_acq_rel);
  return lock;
}

DeviceRunner& RunPipeline::ready(const char* what) const {
  if (state_ == State::Closed) throw called_after_close(owner_, what);
  if (state_ == State::Fresh) throw called_before_init(owner_, what);
  return *runner_;
}

RunPipeline::Call RunPipeline::enter(const char* what) const {
  std::unique_lock<std::mutex> lock = lock_runner(what);
  ready(what);
  return Call(std::move(lock), what);
}

DeviceRunner& RunPipeline::runner(const Call& call) const {
  return ready(call.what_);
}

// --- open and close ------------------------------------------------------------------------------

void RunPipeline::init(const std::function<std::unique_ptr<DeviceRunner>()>& make_runner) {
  const auto lock = lock_runner("init");
  if (state_ == State::Closed) throw called_after_close(owner_, "init");
  if (state_ == State::Ready) {
    throw Error(StatusCode::InvalidArgument,
                std::string(owner_) + "::init called twice; a " + owner_ +
                    " is initialised once (close it and create a new one to change options)");
  }
  runner_ = make_runner();
  state_ = State::Ready;
}

bool RunPipeline::initialized() const noexcept {
  return !inherited() && state_.load() == State::Ready;
}

void RunPipeline::close() {
  refuse("close");
  // Admitted runs finish first (the pipeline thread needs the lock for them).
  stop_pipeline();
  const auto lock = lock_runner("close");
  if (state_ == State::Closed) return;
  state_ = State::Closed;
  std::unique_ptr<DeviceRunner> runner = std::move(runner_);
  if (runner == nullptr) return;
  for (const std::string& failure : runner->flush_diagnostics()) {
    CHIPRT_LOG_WARN("%s::close: a background diagnostics write failed: %s", owner_,
                    failure.c_str());
  }
  runner->finalize();
}

// --- waiting for admitted runs -------------------------------------------------------------------

template <class Blocks>
void RunPipeline::wait_until_clear(std::unique_lock<std::mutex>& lock, Blocks&& blocks) const {
  for (;;) {
    std::unique_lock pipe(pipe_mutex_);
    auto clear = [&] {
      for (const auto& run : admitted_) {
        if (blocks(*run)) return false;
      }
      return true;
    };
    if (clear()) return;
    lock.unlock();
    pipe_cv_.wait(pipe, clear);
    pipe.unlock();
    lock.lock();
  }
}

void RunPipeline::wait_for_memory(std::unique_lock<std::mutex>& lock, uint64_t lo,
                                  uint64_t hi) const {
  wait_until_clear(lock, [&](const RunState& run) { return run.touches(lo, hi); });
}

bool RunPipeline::memory_clear(uint64_t lo, uint64_t hi) const {
  std::lock_guard pipe(pipe_mutex_);
  for (const auto& run : admitted_) {
    if (run->touches(lo, hi)) return false;
  }
  return true;
}

void RunPipeline::drain(std::unique_lock<std::mutex>& lock) const {
  wait_until_clear(lock, [](const RunState&) { return true; });
}

void RunPipeline::unregister_callable(Call& call, int32_t callable_id) {
  // Its kernels' code goes with it: not while an admitted run may still call them.
  wait_until_clear(call.lock_, [&](const RunState& run) { return run.callable_id == callable_id; });
  ready(call.what_).unregister_callable(callable_id);
}

GraphExport RunPipeline::export_graph(Call& call, int32_t callable_id, const TaskArgs& args,
                                      const CallConfig& config) {
  drain(call.lock_);  // the export builds in a bank's output heap an admitted run may use
  return ready(call.what_).export_graph(callable_id, args, config);
}

void RunPipeline::free(Call& call, const DeviceBuffer& buffer) {
  wait_for_memory(call.lock_, buffer.addr, buffer.addr + buffer.size);
  ready(call.what_).free(buffer.addr);
  poisoned_.clear(buffer.addr, buffer.addr + buffer.size);
}

void RunPipeline::copy_to(Call& call, uint64_t dst, const void* src, uint64_t bytes) {
  wait_for_memory(call.lock_, dst, dst + bytes);
  ready(call.what_).copy_to_device(dst, src, bytes);
  poisoned_.clear(dst, dst + bytes);
}

void RunPipeline::copy_from(Call& call, void* dst, uint64_t src, uint64_t bytes) {
  wait_for_memory(call.lock_, src, src + bytes);
  ready(call.what_).copy_from_device(dst, src, bytes);
}

void RunPipeline::memset(Call& call, uint64_t dst, int value, uint64_t bytes) {
  wait_for_memory(call.lock_, dst, dst + bytes);
  ready(call.what_).memset(dst, value, bytes);
  poisoned_.clear(dst, dst + bytes);
}

bool RunPipeline::copy_from_peer(Call& call, uint64_t dst, RunPipeline& src, Call& src_call,
                                 uint64_t src_addr, uint64_t bytes) {
  if (&src == this) {
    wait_until_clear(call.lock_, [&](const RunState& run) {
      return run.touches(dst, dst + bytes) || run.touches(src_addr, src_addr + bytes);
    });
  } else if (!memory_clear(dst, dst + bytes) || !src.memory_clear(src_addr, src_addr + bytes)) {
    return false;
  }
  DeviceRunner& source = src.ready(src_call.what_);
  ready(call.what_).copy_from_peer(dst, source, src_addr, bytes);
  poisoned_.clear(dst, dst + bytes);
  return true;
}

void RunPipeline::reset(Call& call) {
  drain(call.lock_);
  retire_driver();
  ready(call.what_).reset_device();
  poisoned_.clear_all();  // every buffer was lost with the device
}

// --- runs ----------------------------------------------------------------------------------------

std::optional<Error> RunPipeline::refusal(DeviceRunner& runner, uint64_t sequence,
                                          int32_t callable_id, const TaskArgs& args, bool poisons,
                                          bool* cancelled) {
  if (runner.faulted()) {
    return Error(StatusCode::DeviceFaulted,
                 "run " + std::to_string(sequence) + " of callable " + std::to_string(callable_id) +
                     " was not launched: the device faulted earlier and its resources were "
                     "abandoned (" +
                     runner.fault_description() + "); call " + facade_.reset_call);
  }
  const PoisonedMemory::Range* cause = poisoned_.find(args);
  if (cause == nullptr) return std::nullopt;
  Error error = PoisonedMemory::cancellation(sequence, callable_id, *cause);
  if (poisons) poisoned_.poison_cancelled(args, sequence, *cause);
  *cancelled = true;
  return error;
}

RunReport RunPipeline::run(Call call, int32_t callable_id, const TaskArgs& args,
                           const CallConfig& config) {
  {
    DeviceRunner& runner = ready(call.what_);
    std::unique_lock pipe(pipe_mutex_);
    // Nothing admitted: no run can start while the lock is held, so this one runs here, on the
    // caller's thread, without a hand-off.
    if (admitted_.empty()) {
      const uint64_t sequence = next_sequence_++;
      pipe.unlock();
      // Its caller sees its error at once: it poisons nothing.
      bool cancelled = false;
      if (std::optional<Error> refused =
              refusal(runner, sequence, callable_id, args, /*poisons=*/false, &cancelled)) {
        throw *refused;
      }
      return runner.run(callable_id, args, config);
    }
  }
  call.lock_.unlock();
  return submit(callable_id, args, config, /*poisons=*/false).wait();
}

RunHandle RunPipeline::submit(int32_t callable_id, const TaskArgs& args, const CallConfig& config,
                              bool poisons, std::function<void()> on_done) {
  return std::move(*admit(callable_id, args, config, /*block=*/true, poisons, std::move(on_done)));
}

std::optional<RunHandle> RunPipeline::try_submit(int32_t callable_id, const TaskArgs& args,
                                                 const CallConfig& config) {
  return admit(callable_id, args, config, /*block=*/false, /*poisons=*/true);
}

uint32_t RunPipeline::runs_in_flight() const {
  refuse("runs_in_flight");
  std::lock_guard pipe(pipe_mutex_);
  return static_cast<uint32_t>(admitted_.size());
}

std::optional<RunHandle> RunPipeline::admit(int32_t callable_id, const TaskArgs& args,
                                            const CallConfig& config, bool block, bool poisons,
                                            std::function<void()> on_done) {
  const char* what = block ? "submit" : "try_submit";
  refuse(what);
  std::unique_lock pipe(pipe_mutex_);
  auto refuse_state = [&] {
    if (closing_ || state_ == State::Closed) throw called_after_close(owner_, what);
    if (state_ == State::Fresh) throw called_before_init(owner_, what);
  };
  refuse_state();
  if (admitted_.size() >= kMaxAdmitted) {
    if (!block) return std::nullopt;
    pipe_cv_.wait(pipe, [&] { return admitted_.size() < kMaxAdmitted || closing_; });
    refuse_state();
  }
  auto run = std::make_shared<RunState>(next_sequence_++, callable_id, args, config);
  run->facade = owner_;
  run->poisons = poisons;
  run->on_done = std::move(on_done);
  // The thread first: if it cannot start, nothing was admitted that nobody would run.
  if (!driver_.joinable() && !retiring_) start_driver();
  admitted_.push_back(run);
  // Only while the driver holds the runner's lock in its wait: the platform is alive and not
  // being reset then.
  if (driver_waiting_) runner_->platform().wake_wait();
  pipe.unlock();
  pipe_cv_.notify_all();
  return run->handle(run);
}

std::shared_ptr<RunState> RunPipeline::successor_of(const RunState& run) const {
  for (std::size_t i = 0; i + 1 < admitted_.size(); ++i) {
    if (admitted_[i].get() == &run) return admitted_[i + 1];
  }
  return nullptr;
}

void RunPipeline::start_driver() {
  driver_ = std::thread([this] { drive(); });
  driver_running_ = true;
}

void RunPipeline::drive() {
  std::unique_lock pipe(pipe_mutex_);
  for (;;) {
    pipe_cv_.wait(pipe, [&] { return closing_ || retiring_ || !admitted_.empty(); });
    if (retiring_ || admitted_.empty()) break;  // retired, or closing with nothing left
    std::shared_ptr<RunState> run = admitted_.front();
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
    admitted_.pop_front();
    pipe_cv_.notify_all();
    // Published after the run left `admitted_`, so what its waiter does next (a read of its
    // output) is not held up by it.
    pipe.unlock();
    if (failure) {
      run->fail(*failure);
    } else {
      run->finish(std::move(report));
    }
    pipe.lock();
  }
  driver_running_ = false;
  pipe_cv_.notify_all();
}

void RunPipeline::prepare_run(DeviceRunner& runner, RunState& run) {
  CallConfig config = run.config;
  // The pipeline picks the slot and bank: consecutive runs alternate, so a run is prepared into
  // the pair the executing run does not use.
  config.pipeline_slot = config.arena_bank = static_cast<uint32_t>(run.sequence % kPipelineDepth);
  const RunClock::time_point t_entry = RunClock::now();
  const RunPlan plan = runner.plan_run(config);
  run.prepared.emplace(runner.prepare(plan, run.callable_id, run.args, t_entry, &run.started));
}

void RunPipeline::prepare_successor(DeviceRunner& runner, RunState& executing,
                                    PreparedLaunch& launch, RunState& next) {
  // Cancelled when its turn comes (execute): its orchestration does not run.
  if (poisoned_.find(next.args) != nullptr) return;
  // A host_build_graph orchestration function runs now, on the host, while `executing` runs on
  // the chip: its get/set_tensor_data of memory the executing run names first waits for that
  // run's chip work (what run() order would give), everything else goes ahead.
  runner.set_host_data_fence([&](uint64_t lo, uint64_t hi) {
    if (launch.stage == LaunchStage::Launched && executing.touches(lo, hi)) {
      runner.wait(launch);
    }
  });
  struct Unfence {
    DeviceRunner& runner;
    ~Unfence() { runner.set_host_data_fence({}); }
  } unfence{runner};
  try {
    prepare_run(runner, next);
  } catch (const Error& e) {
    // The successor's own failure, reported when its turn comes (not this run's).
    std::lock_guard pipe(pipe_mutex_);
    if (!next.prepare_error) next.prepare_error = e;
  }
}

RunReport RunPipeline::execute(RunState& run, std::optional<Error>* failure_out) {
  std::optional<Error>& failure = *failure_out;
  RunReport report;
  {
    std::unique_lock lock(mutex_);
    DeviceRunner& runner = *runner_;
    std::optional<Error> refused;
    {
      std::lock_guard pipe(pipe_mutex_);
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
      PreparedLaunch& prepared = *run.prepared;
      if (prepared.needs_launch) {
        try {
          runner.launch(prepared);
          // While the chip executes this run, prepare the next one: admitted by now, or during
          // the wait (an admission wakes the wait).
          bool next_prepared = false;
          auto look_for_successor = [&] {
            if (next_prepared) return;
            std::shared_ptr<RunState> next;
            {
              std::lock_guard pipe(pipe_mutex_);
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
              std::lock_guard pipe(pipe_mutex_);
              // Admitted between the last look and now: prepare it first.
              if (successor_of(run) != nullptr) return false;
              driver_waiting_ = true;
            }
            struct Cleared {  // also when poll throws
              RunPipeline& pipeline;
              bool wakeable;
              ~Cleared() {
                if (!wakeable) return;
                std::lock_guard pipe(pipeline.pipe_mutex_);
                pipeline.driver_waiting_ = false;
              }
            } cleared{*this, wakeable};
            return runner.poll(prepared, wakeable);
          };
          // The successor's prepare may have finished this wait already (its data fence).
          while (prepared.stage == LaunchStage::Launched && !wait_slice()) {
            look_for_successor();
            // Hand the lock to a host call waiting for it between two wait slices.
            if (lock_waiters_.load(std::memory_order_acquire) > 0) {
              lock.unlock();
              for (int i = 0; i < 1000 && lock_waiters_.load(std::memory_order_acquire) > 0; ++i) {
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
      poisoned_.poison_failed(run.args, run.sequence, *failure);
    }
  }
  return report;
}

void RunPipeline::retire_driver() {
  std::thread old;
  {
    std::lock_guard pipe(pipe_mutex_);
    // A run admitted since the drain may be executing, waiting for the runner's lock: the driver
    // is not idle then and stays (the caller raced its own reset).
    if (!admitted_.empty()) return;
    retiring_ = true;
    old = std::move(driver_);
  }
  pipe_cv_.notify_all();
  // The driver is idle (nothing was admitted under the runner's lock, which it would need): it
  // exits at once.
  if (old.joinable()) old.join();
  std::lock_guard pipe(pipe_mutex_);
  retiring_ = false;
  // Admitted meanwhile: its driver starts now (and waits for the runner's lock).
  if (!admitted_.empty() && !closing_ && !driver_.joinable()) start_driver();
}

void RunPipeline::stop_pipeline() {
  std::thread joined;
  std::unique_lock pipe(pipe_mutex_);
  closing_ = true;
  joined = std::move(driver_);
  pipe_cv_.notify_all();
  if (joined.joinable()) {
    pipe.unlock();
    if (joined.get_id() == std::this_thread::get_id()) {
      // Called on the pipeline thread itself (its owner destroyed from inside one of its own
      // runs): it cannot wait for itself; it finishes on its own after this run.
      joined.detach();
      return;
    }
    joined.join();
    return;
  }
  // Another close() holds the thread: wait until the driver has exited all the same, so that
  // no caller finalizes the runner under it.
  pipe_cv_.wait(pipe, [&] { return !driver_running_; });
}

}  // namespace chiprt::host
