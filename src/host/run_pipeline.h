// RunPipeline: everything that runs on one device context, between a public facade (Worker,
// include/chiprt/worker.h) and the DeviceRunner it owns. It keeps the runner's lock, admits runs
// (at most kPipelineDepth at once: one executing, one prepared or queued), executes them in order
// on its pipeline thread (preparing run N+1 while run N executes), decides each run's fate when its
// turn comes (DeviceFaulted after a fault, Cancelled when it names poisoned memory) and keeps the
// poisoned memory; host calls that touch what an admitted run may use wait for that run first.
// The facade checks its own API's arguments and forwards here; the rules it documents under
// "Pipelined runs" and "Failed runs" are implemented here.
//
// Lifetime: constructed fresh, with the texts of its facade (host/facade_text.h: every error names
// "<owner>::<call>" and the facade's own reset call); init() once with a runner, then any calls,
// close() (idempotent). The destructor closes (a failure is logged) and stops the pipeline thread,
// also when close() is refused. The pipeline belongs to the process that created it: in a forked
// child every call throws InheritedWorker before taking a lock, and the object must not be
// destroyed there (its thread does not exist in the child, and destroying a joinable std::thread
// ends the process): its owner leaks it when inherited() says so.
//
// Threading: every method may be called from any host thread, concurrently. Calls on the runner
// hold the runner's lock (a Call, from enter()); the pipeline thread holds it for each step of a
// run and lets a waiting call in between two wait slices. The pipeline mutex guards the admitted
// runs, the sequence numbers and a successor's prepare error. Lock order: the runner's lock, then
// the pipeline mutex. No method may be called from inside a run (an orchestration function or a
// kernel, common/run_context.h): refused with ReentrantCall before any lock is taken.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "chiprt/call_config.h"
#include "chiprt/graph_export.h"
#include "chiprt/run_handle.h"
#include "chiprt/run_report.h"
#include "chiprt/status.h"
#include "chiprt/task_args.h"
#include "chiprt/types.h"
#include "host/device_runner.h"
#include "host/facade_text.h"
#include "host/fork_guard.h"
#include "host/poisoned_memory.h"
#include "host/prepared_launch.h"
#include "host/run_state.h"

namespace chiprt::host {

class RunPipeline {
 public:
  // A call on the runner, holding the runner's lock (made by enter()). `what` names the call in
  // errors ("<owner>::<what> called after close(); ..."). The methods taking one check again that
  // the pipeline is open after any wait that released the lock.
  class Call {
   public:
    const char* what() const noexcept { return what_; }

   private:
    friend class RunPipeline;
    Call(std::unique_lock<std::mutex> lock, const char* what)
        : lock_(std::move(lock)), what_(what) {}
    std::unique_lock<std::mutex> lock_;
    const char* what_;
  };

  explicit RunPipeline(FacadeText facade);
  ~RunPipeline();
  RunPipeline(const RunPipeline&) = delete;
  RunPipeline& operator=(const RunPipeline&) = delete;

  // Whether this is a forked child's copy of the pipeline (host/fork_guard.h).
  bool inherited() const noexcept { return fork_generation_ != host::fork_generation(); }
  // The facade's texts, for the runner that init() opens.
  const FacadeText& facade() const noexcept { return facade_; }

  // --- open and close ---------------------------------------------------------------------------
  // Opens the pipeline on the runner `make_runner` returns, called with the runner's lock held
  // after the state checks (AlreadyClosed after close, InvalidArgument when called twice); what it
  // throws leaves the pipeline fresh.
  void init(const std::function<std::unique_ptr<DeviceRunner>()>& make_runner);
  // Open (init done, close not yet) and not inherited; takes no lock.
  bool initialized() const noexcept;
  // Stops admissions, finishes every admitted run and stops the pipeline thread, then writes the
  // pending background diagnostics (a failure is logged) and finalizes the runner. Any number of
  // threads at once; each returns once the pipeline thread has exited.
  void close();

  // --- calls on the runner ----------------------------------------------------------------------
  // Refuses a call in a forked child (InheritedWorker) or from inside a run (ReentrantCall), takes
  // the runner's lock, then refuses a call before init (NotInitialized) or after close
  // (AlreadyClosed).
  Call enter(const char* what) const;
  // The runner, for what no admitted run depends on (registration, allocation, counters,
  // diagnostics flushes): valid while `call` holds the lock.
  DeviceRunner& runner(const Call& call) const;

  // --- runs -------------------------------------------------------------------------------------
  // Worker::run: with nothing admitted it runs on the calling thread, holding `call`'s lock all
  // along (refused first like any run whose turn came: DeviceFaulted, Cancelled; it poisons
  // nothing); otherwise it releases the lock and waits for submit(..., poisons=false).
  RunReport run(Call call, int32_t callable_id, const TaskArgs& args, const CallConfig& config);
  // Admits a run, waiting while kPipelineDepth runs are admitted. `poisons`: whether its failure
  // (or cancellation) poisons the memory it writes (submit) or not (run_async, run). Throws only
  // what needs no device (InheritedWorker, ReentrantCall, NotInitialized, AlreadyClosed); every
  // other error comes from the handle's wait().
  // `on_done` (RunState::on_done): called once the run is done, on the thread that finished it.
  RunHandle submit(int32_t callable_id, const TaskArgs& args, const CallConfig& config,
                   bool poisons, std::function<void()> on_done = {});
  // submit(..., poisons=true) without waiting: nothing when kPipelineDepth runs are admitted.
  std::optional<RunHandle> try_submit(int32_t callable_id, const TaskArgs& args,
                                      const CallConfig& config);
  // Runs admitted and not yet done.
  uint32_t runs_in_flight() const;

  // --- calls that wait for admitted runs --------------------------------------------------------
  // Each releases `call`'s lock while it waits and returns with it held. While the lock is held no
  // run is launched or prepared, so what the call does after its wait races no run.
  //
  // Once no admitted run uses the callable.
  void unregister_callable(Call& call, int32_t callable_id);
  // Once no run is admitted (the export builds in an output heap an admitted run may use).
  GraphExport export_graph(Call& call, int32_t callable_id, const TaskArgs& args,
                           const CallConfig& config);
  // Caller memory: once no admitted run names [addr, addr + bytes). free, copy_to and memset
  // clear the poisoned memory they rewrite.
  void free(Call& call, const DeviceBuffer& buffer);
  void copy_to(Call& call, uint64_t dst, const void* src, uint64_t bytes);
  void copy_from(Call& call, void* dst, uint64_t src, uint64_t bytes);
  void memset(Call& call, uint64_t dst, int value, uint64_t bytes);
  // Device to device, from `src_call`'s pipeline `src` (another device of this process) into
  // this one, clearing the poisoned memory it rewrites. Within this device (`call` passed as
  // both) it waits until no admitted run names either range, then copies: true. Between two
  // devices it never waits (a wait releases one lock while the other is held, and two copies in
  // opposite directions would deadlock): it copies and returns true when no admitted run of
  // either names its side's range, and returns false, copying nothing, otherwise. The caller
  // entered both pipelines in one fixed order (a node: by chip); after false it releases both,
  // waits on each alone (wait_for_memory) and tries again.
  bool copy_from_peer(Call& call, uint64_t dst, RunPipeline& src, Call& src_call, uint64_t src_addr,
                      uint64_t bytes);
  // Once no admitted run names [lo, hi).
  void wait_for_memory(Call& call, uint64_t lo, uint64_t hi) {
    wait_for_memory(call.lock_, lo, hi);
  }
  // Once no run is admitted: retires the idle pipeline thread (none may exist when the device is
  // forked anew; the next admission starts one), replaces the device and clears the poisoned
  // memory (every buffer was lost with the device).
  void reset(Call& call);

 private:
  enum class State { Fresh, Ready, Closed };

  // Refuses a call in a forked child (InheritedWorker) or from inside a run (ReentrantCall).
  void refuse(const char* what) const;
  // refuse, then takes the runner's lock (a waiting call is let in between two wait slices).
  std::unique_lock<std::mutex> lock_runner(const char* what) const;
  // Throws unless the pipeline is open (runner's lock held).
  DeviceRunner& ready(const char* what) const;

  // With `lock` (the runner's) held: waits, releasing it meanwhile, until no admitted run
  // satisfies `blocks`; returns with the lock held and nothing blocking.
  template <class Blocks>
  void wait_until_clear(std::unique_lock<std::mutex>& lock, Blocks&& blocks) const;
  // Waits until no admitted run names caller memory in [lo, hi).
  void wait_for_memory(std::unique_lock<std::mutex>& lock, uint64_t lo, uint64_t hi) const;
  // Whether no admitted run names caller memory in [lo, hi) (runner's lock held).
  bool memory_clear(uint64_t lo, uint64_t hi) const;
  // Waits until every admitted run is done.
  void drain(std::unique_lock<std::mutex>& lock) const;

  // With the runner's lock held, just before run `sequence` would start: the error it ends with
  // instead, unlaunched, when the device faulted earlier (DeviceFaulted) or when it names poisoned
  // memory (Cancelled, `*cancelled` set; what the run writes is poisoned in turn when `poisons`).
  std::optional<Error> refusal(DeviceRunner& runner, uint64_t sequence, int32_t callable_id,
                               const TaskArgs& args, bool poisons, bool* cancelled);

  // Admits a run; nothing when `block` is false and the pipeline is full.
  std::optional<RunHandle> admit(int32_t callable_id, const TaskArgs& args,
                                 const CallConfig& config, bool block, bool poisons,
                                 std::function<void()> on_done = {});
  // The pipeline thread: executes the admitted runs in order, one at a time.
  void drive();
  // Prepares (unless done while the run before it executed), launches, waits for and collects
  // `run`, preparing its successor during the wait; its report, or `failure` set.
  RunReport execute(RunState& run, std::optional<Error>* failure);
  void prepare_run(DeviceRunner& runner, RunState& run);
  // Prepares `next` while `executing` (launched as `launch`) runs; a failure is kept as next's.
  void prepare_successor(DeviceRunner& runner, RunState& executing, PreparedLaunch& launch,
                         RunState& next);
  // The run admitted after `run`, when it has one (pipeline mutex held).
  std::shared_ptr<RunState> successor_of(const RunState& run) const;
  // Starts the pipeline thread (pipeline mutex held).
  void start_driver();
  // With the runner's lock held, after drain (reset): ends the pipeline thread if it is idle;
  // the next admission starts a new one.
  void retire_driver();
  // Stops admissions, lets every admitted run finish and waits for the driver to exit (close;
  // any number of threads at once).
  void stop_pipeline();

  const FacadeText facade_;
  const char* const owner_;  // facade_.owner

  // The runner's lock: every call on the runner holds it (the pipeline thread for each step).
  mutable std::mutex mutex_;
  // Written under mutex_; atomic so that initialized() needs no lock.
  std::atomic<State> state_{State::Fresh};
  std::unique_ptr<DeviceRunner> runner_;

  // --- admission ---------------------------------------------------------------------------------
  // Lock order: mutex_, then pipe_mutex_. pipe_mutex_ guards admitted_, next_sequence_, closing_,
  // the driver's fields and every RunState::prepare_error; pipe_cv_ announces a change of
  // admitted_ (a place freed, a run admitted, a run done).
  static constexpr std::size_t kMaxAdmitted = kPipelineDepth;
  mutable std::mutex pipe_mutex_;
  mutable std::condition_variable pipe_cv_;
  std::deque<std::shared_ptr<RunState>> admitted_;  // front: the run executing or next
  uint64_t next_sequence_ = 1;
  bool closing_ = false;         // no more admissions; the driver exits once admitted_ is empty
  bool driver_running_ = false;  // from the driver's start until it exits
  // reset() retires the idle driver before the device is forked anew (no pipeline thread may
  // exist at that fork: ThreadSanitizer ends a child forked beside other threads once it starts
  // threads); admissions meanwhile wait for retire_driver to start a new one.
  bool retiring_ = false;
  // The driver is in a wait slice of a launch's AICPU phase, holding the runner's lock: a run
  // admitted now wakes it (Platform::wake_wait) so that it prepares the run at once.
  bool driver_waiting_ = false;
  std::thread driver_;
  // Memory failed runs left unfinished, guarded by mutex_: every run checks it before its launch,
  // on the pipeline thread or in run().
  PoisonedMemory poisoned_;

  // The process that created this pipeline (host/fork_guard.h).
  const uint64_t fork_generation_;
  const int creator_pid_;

  // Host calls waiting for the runner's lock: the pipeline thread lets them in between two wait
  // slices.
  mutable std::atomic<int> lock_waiters_{0};
};

}  // namespace chiprt::host
