// Worker: the host-side entry point to one device.
//
// Lifetime: construct, init() once, register callables, run() any number of times, close() (also
// done by the destructor). Every call before init or after close throws Error(NotInitialized /
// AlreadyClosed). A Worker owns its device context and every device resource it created; device
// buffers from malloc() are freed by free() or at close.
//
// Device faults. With SimIsolation::Process the chip runs in a device process: a kernel that
// crashes (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, exit()) ends the run with KernelCrashed,
// naming the task, its kernel (func_id, symbol where known), core and block, the signal and (for
// SIGSEGV / SIGBUS) the faulting address; a kernel that runs longer than
// CHIPRT_OP_EXECUTE_TIMEOUT_US gets the device process killed and the run ends with
// OpExecuteTimeout naming it. The orchestration function of a tensormap_ringbuffer run runs on
// the chip, so its crash is a device fault like a kernel's (KernelCrashed naming the
// orchestration function). The orchestration function of a host_build_graph run runs on the host,
// inside run(): it is user host code, and a crash there is a crash of the host process (an
// exception it throws fails the run instead). In process (the default) a crash takes the host
// process down, and a kernel that never returns is reported by the scheduler watchdog
// (SchedulerTimeout) but its thread cannot be stopped. After any device fault (these, or a stuck
// launch) the Worker refuses device work with DeviceFaulted, saying what faulted, until reset():
// device memory is lost with the device, the Worker's host state and callables are kept.
//
// Pipelined runs. submit() admits a run and returns a RunHandle (chiprt/run_handle.h) without
// waiting for it: while run N executes on the chip, the Worker's pipeline thread prepares run N+1
// (host_build_graph: its orchestration and graph image, uploaded into the other arena bank;
// tensormap_ringbuffer: its launch arguments, kernel table and ring state, its orchestration
// then runs on the chip once launched) and launches it the moment run N is collected. At most two
// runs are admitted per Worker (one executing, one prepared or queued); a third submit() waits
// for a place (try_submit() says no instead). Runs execute one at a time and complete in
// submission order; the pipeline chooses each run's slot and bank (CallConfig::pipeline_slot and
// arena_bank are ignored by submit). Watchdog and timeouts apply per run. Diagnostics work as
// with run(): each run gets its own collector and directory.
// While runs are admitted: copy_to, copy_from, memset and free of memory a run names as an
// argument (its buffers, whole) wait until that run is done, so a host read after a submit sees
// what the run wrote; other memory is not held up. unregister_callable of a callable an admitted
// run uses, export_graph and reset wait until every admitted run is done; close() finishes every
// admitted run first. run() is submit().wait() when runs are admitted (it queues behind them);
// with none, it runs on the calling thread, as does a host_build_graph orchestration function
// (a submitted run's runs on the pipeline thread).
//
// Failed runs. A submitted run (submit, try_submit) that fails cancels exactly the later runs that
// touch memory it wrote or was writing, and no other: what a run writes is every buffer (whole) it
// passes as InOut or OutputExisting; a later run touches it when it passes any part of it as any
// argument but Out. Such a run is never launched: it ends with Error(Cancelled) naming the failed
// run's sequence number (RunHandle::sequence) and its error. A run that shares no buffer with a
// failed run runs normally. A cancelled run cancels nothing by itself, but what it would have
// written is not produced, so later runs touching that memory are cancelled too, naming the
// original failure. The memory stays poisoned until the host rewrites it (copy_to or memset
// covering it; a partial rewrite clears only what it covers) or frees it; reset() clears all of it.
// A run refused by its checks before any of its code ran (an unknown callable, arguments that do
// not match the signature or lie in no live buffer, an invalid config) wrote nothing and cancels
// nothing. run() (and run_async()) is cancelled by the same rule (run() calls take sequence
// numbers too), but a failed or cancelled run() poisons nothing: its caller has its error before
// it runs anything else, and may retry on the same buffers. Each run's fate is decided when its
// turn comes, after every run before it is done, so it is the same on both runtime variants, in
// process and on the isolated device, whatever the timing.
// After a device fault every later run ends DeviceFaulted instead, naming the fault, until reset().
// A run that is never launched writes no diagnostics directory.
//
// Threading: a Worker may be used from several host threads (calls are serialised internally by a
// mutex, so concurrent calls are safe but not parallel: a call from another thread while a run is
// executing may wait up to one wait slice, about 20 ms, or until the run returns). submit() may be
// called from several threads at once; their runs are ordered by admission.
// No Worker method (of this or any other Worker) may be called from inside a run: from an
// orchestration function (host_build_graph runs it on the thread inside Worker::run,
// tensormap_ringbuffer on the chip) or from a kernel. Such a call throws Error(ReentrantCall)
// at once, naming the method and where it was called from; inside an orchestration function use
// its Orchestration (submit, allocate, get/set_tensor_data). Thrown there, the error fails that
// run like any orchestration error; thrown in a kernel, the run fails with KernelFault. Neither
// faults the device: the next run works.
//
// fork(): a Worker and its RunHandles belong to the process that created them. In a forked child
// (detected by a pthread_atfork handler) every method of an inherited Worker throws
// Error(InheritedWorker) naming both processes (initialized() answers false), as do its
// handles' (run_handle.h); its destructor joins, waits for and closes nothing (the pipeline and
// chip threads do not exist in the child, and the device, with an isolated device's shared
// control block, is the parent's): the child's copy is left as it is until the child exits.
// A Worker created in the child works normally; the parent's is unaffected by the child.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "chiprt/call_config.h"
#include "chiprt/graph_export.h"
#include "chiprt/run_handle.h"
#include "chiprt/run_report.h"
#include "chiprt/sim_options.h"
#include "chiprt/status.h"
#include "chiprt/task_args.h"
#include "chiprt/types.h"

namespace chiprt {

namespace host {
class DeviceRunner;
struct WorkerAccess;
}  // namespace host

struct WorkerOptions {
  std::string platform = "sim";
  int device_id = 0;
  // The variant of runs whose CallConfig::runtime is Default.
  RuntimeVariant runtime = RuntimeVariant::HostBuildGraph;
  SimOptions sim;  // options of platform "sim" (chiprt/sim_options.h)
};

class Worker {
 public:
  Worker();
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  void init(const WorkerOptions& options = {});
  bool initialized() const noexcept;

  // Registers a chip callable container (see callable.h) under `callable_id`. Identical
  // containers are uploaded once (content-hash deduplication with reference counts). A callable
  // runs on either runtime variant: the orchestration entry of WorkerOptions::runtime is loaded
  // now, the other variant's (host entry or chip-side entry) on its first run.
  // Every call taking a callable id refuses one outside [0, kMaxCallableIds) with
  // CallableIdOutOfRange (has_callable answers false), and an unregistered one in range with
  // UnknownCallable.
  void register_callable(int32_t callable_id, std::span<const uint8_t> container);
  void unregister_callable(int32_t callable_id);
  bool has_callable(int32_t callable_id) const;

  // Runs the callable's orchestration with `args` (checked against its signature) and waits for
  // the chip to finish, on CallConfig::runtime (Default: WorkerOptions::runtime). Throws Error on
  // any failure, with the chip's status when it failed there; a tensormap_ringbuffer run reports
  // the first error its orchestrator or schedulers latched (RingDeadlock, WaitTimeout, ...).
  // Tensor arguments must lie in live allocations from malloc; the tasks may name only memory of
  // those buffers and runtime outputs of this run (InvalidDevicePointer otherwise).
  RunReport run(int32_t callable_id, const TaskArgs& args, const CallConfig& config = {});

  // Admits a run and returns at once (the pipeline above): the arguments, config and user_data
  // are copied, so the caller's may change once it returns. Waits while two runs are admitted.
  // Refuses at once what needs no device (NotInitialized, AlreadyClosed, ReentrantCall); every
  // other error (the ones run() throws) comes from the handle's wait().
  RunHandle submit(int32_t callable_id, const TaskArgs& args, const CallConfig& config = {});
  // run() without blocking the caller: admitted as submit() admits a run, and like run() its
  // failure cancels nothing (its caller, who waits on the handle, has the error and may retry on
  // the same buffers); it is cancelled itself by the rule of "Failed runs". For a caller that must
  // stay responsive while it waits (the Python module's Worker.run waits on it in slices, so
  // Ctrl-C interrupts the wait).
  RunHandle run_async(int32_t callable_id, const TaskArgs& args, const CallConfig& config = {});
  // submit() that never waits: false, leaving `handle` as it was, when two runs are admitted.
  bool try_submit(int32_t callable_id, const TaskArgs& args, const CallConfig& config,
                  RunHandle* handle);
  // Runs admitted and not yet done (0, 1 or 2).
  uint32_t runs_in_flight() const;

  // Builds the task graph of the callable's orchestration with `args` exactly as a
  // host_build_graph run would (same argument, signature and config checks with the same errors;
  // same dependency inference, limits and runtime output allocation) and returns it instead of
  // launching it: nothing runs on the chip, nothing is cached for replay_graph runs (an image
  // cached earlier stays in use unless the export had to grow the output heap, after which the
  // next replay_graph run builds anew). It is always the host_build_graph graph, whatever
  // WorkerOptions::runtime is; config.runtime, config.replay_graph and config.replay_key are
  // ignored, config.user_data reaches the orchestration as in a run. The
  // orchestration itself does run on the host, so its get/set_tensor_data calls take effect
  // (GraphExport::accessed_tensor_data says so).
  // Addresses in the result: tensor arguments are the caller's buffers; runtime outputs are in
  // this Worker's output heap (bank config.arena_bank) and valid until the next run or export;
  // kernel entries are valid while the callable stays registered. Throws Error like run()
  // (CallableIdOutOfRange, UnknownCallable, SignatureMismatch, InvalidDevicePointer, InvalidConfig,
  // the orchestration's own errors).
  GraphExport export_graph(int32_t callable_id, const TaskArgs& args,
                           const CallConfig& config = {});

  DeviceBuffer malloc(uint64_t bytes);
  void free(DeviceBuffer buffer);
  void copy_to(DeviceBuffer dst, const void* src, uint64_t bytes, uint64_t dst_offset = 0);
  void copy_from(void* dst, DeviceBuffer src, uint64_t bytes, uint64_t src_offset = 0);
  void memset(DeviceBuffer dst, int value, uint64_t bytes);
  uint64_t device_bytes_in_use() const;

  // Resets the device, as a hardware reset would: with SimIsolation::Process a fresh device
  // process replaces the old one (killed if it still runs); in process, the chip's threads and
  // memory are replaced (a thread stuck in a kernel is left behind, still running). Every device
  // buffer is lost: its memory is gone and a later use of it (free, copies, memset, a run
  // argument) fails with InvalidDevicePointer saying "device buffer 0x.. (N bytes) was lost when
  // the device was reset (reset K); allocate a new one" (malloc new ones). The isolated device
  // never hands an address out twice; in process a new buffer may reuse a lost one's address,
  // which from then on names the new buffer. Memory a fault left
  // quarantined is returned. Callables stay registered (the Worker keeps their containers and
  // loads them on the new device); options and host state are kept. Allowed at any time between
  // runs, needed after a device fault. Throws NotInitialized before init, AlreadyClosed after
  // close, and the platform's error when the new device cannot start.
  void reset();
  // How many times reset() replaced the device.
  uint64_t reset_count() const;

  // Waits until the run directories of earlier runs with DiagnosticsConfig::background_write are
  // written (a no-op when none is pending). Throws Error(DiagnosticsError) naming every directory
  // whose write failed since the last flush, with the reason (that directory then lacks the files
  // after the failure, run.json among them). Needs no device: allowed after a fault too.
  void flush_diagnostics();

  // Releases the device and everything the Worker created. Finishes every admitted run first
  // (their handles then hold their results), then waits for pending background diagnostics
  // writes; a write that failed is then only logged (flush_diagnostics() before
  // close reports it as an error).
  void close();

 private:
  // The runtime's own tests reach the runner behind a Worker through src/host/worker_access.h;
  // not part of this API.
  friend struct host::WorkerAccess;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace chiprt
