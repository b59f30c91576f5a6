// RunState: one run admitted to a RunPipeline (host/run_pipeline.h: Worker::submit, try_submit,
// run_async, or run() queued behind admitted runs), shared by its RunHandle
// (include/chiprt/run_handle.h) and the pipeline thread.
//
// What the run is (callable, arguments, config with its own copy of user_data, the caller's
// buffers it names) is fixed at admission. The driver alone touches `prepared`, `started` and
// `prepare_error` (under the pipeline mutex for `prepare_error`); the result is
// published once, under the state's own mutex, and read by any number of handle calls.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "chiprt/call_config.h"
#include "chiprt/run_handle.h"
#include "chiprt/run_report.h"
#include "chiprt/status.h"
#include "chiprt/task_args.h"
#include "host/prepared_launch.h"

namespace chiprt::host {

struct RunState {
  RunState(uint64_t sequence, int32_t callable_id, const TaskArgs& args, const CallConfig& config);

  const uint64_t sequence;
  // The process that admitted the run (host/fork_guard.h): a forked child's handle refuses to
  // wait for it (InheritedWorker) and is dropped without waiting.
  const uint64_t fork_generation;
  const int creator_pid;
  bool inherited() const noexcept;
  // The class whose submit admitted it (FacadeText::owner, a string literal), for those texts.
  const char* facade = "Worker";
  const int32_t callable_id;
  const TaskArgs args;
  CallConfig config;                      // user_data points into user_data_copy
  std::vector<std::byte> user_data_copy;  // the caller's bytes may go once submit returns
  std::vector<std::pair<uint64_t, uint64_t>> buffers;  // [lo, hi) of the caller's buffers named
  // Submitted (submit, try_submit): its failure, or its cancellation, poisons what it writes.
  // False for a Worker::run (or Worker::run_async): its caller handles its error itself.
  bool poisons = true;

  // Whether the run names caller memory overlapping [lo, hi).
  bool touches(uint64_t lo, uint64_t hi) const noexcept;

  // Driver only.
  std::optional<PreparedLaunch> prepared;
  // The run passed its checks (DeviceRunner::prepare): from then on it may have written memory.
  bool started = false;
  // Set (pipeline mutex) when preparing it while the run before it executed failed; reported when
  // its turn comes.
  std::optional<Error> prepare_error;

  // Called once the run is done (after its waiters are woken), on the thread that finished it
  // (the pipeline thread, or the closing one); set before admission. It must not call back into
  // the pipeline.
  std::function<void()> on_done;

  // Publishes the result once, wakes every waiter, then calls on_done.
  void finish(RunReport report);
  void fail(const Error& error);

  RunHandle handle(std::shared_ptr<RunState> self) const { return RunHandle(std::move(self)); }

  mutable std::mutex mutex;
  mutable std::condition_variable done_cv;
  bool done = false;
  mutable bool observed = false;  // a wait() returned the result
  RunReport report;
  std::optional<Error> error;
};

}  // namespace chiprt::host
