// RunState: one run submitted with Worker::submit, shared by its RunHandle
// (include/chiprt/run_handle.h) and the Worker's pipeline driver (src/host/worker.cpp).
//
// What the run is (callable, arguments, config with its own copy of user_data, the caller's
// buffers it names) is fixed at admission. The driver alone touches `prepared`, `started` and
// `prepare_error` (under the Worker's pipeline mutex for `prepare_error`); the result is
// published once, under the state's own mutex, and read by any number of handle calls.
//
// PoisonedMemory: the caller memory failed runs left unfinished, which cancels every later run
// naming it (the Worker's rule, include/chiprt/worker.h). Guarded by the Worker's runner lock.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
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

  // Publishes the result once and wakes every waiter.
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

// Caller memory (ranges of device buffers) that a failed run wrote or was writing: its InOut and
// OutputExisting arguments, whole. A later run naming any of it (with any tag but Out) is not
// launched; it ends Cancelled naming the failed run and its error, and the memory it would have
// written is poisoned in turn, carrying the same failure. The host rewriting a range (copy_to,
// memset) or freeing it clears that range; a device reset clears everything. Not thread-safe
// (the Worker's runner lock guards it).
class PoisonedMemory {
 public:
  struct Range {
    uint64_t lo = 0;
    uint64_t hi = 0;
    uint64_t failed_run = 0;  // the run whose failure left the memory unfinished
    uint64_t via_run = 0;     // the cancelled run that left it unwritten (0: failed_run wrote it)
    StatusCode code = StatusCode::Ok;  // failed_run's error
    std::string message;
  };

  bool empty() const noexcept { return ranges_.empty(); }
  // The poisoned range `args` names (any tensor but an Out one) with the earliest failed run, or
  // null when it names none.
  const Range* find(const TaskArgs& args) const noexcept;
  // Run `run` failed with `error` after it started: what it writes is poisoned.
  void poison_failed(const TaskArgs& args, uint64_t run, const Error& error);
  // Run `run` was cancelled by `cause`: what it would have written and is not poisoned yet is
  // poisoned with cause's failure.
  void poison_cancelled(const TaskArgs& args, uint64_t run, const Range& cause);
  // The host rewrote or freed [lo, hi).
  void clear(uint64_t lo, uint64_t hi);
  void clear_all() noexcept { ranges_.clear(); }

  // The error of run `run` (of callable `callable_id`), not launched because it names `cause`.
  static Error cancellation(uint64_t run, int32_t callable_id, const Range& cause);

 private:
  // Poisons what `args` writes with `what`'s cause: all of it (`replace`), or only what no
  // range covers yet.
  void poison(const TaskArgs& args, const Range& what, bool replace);
  std::vector<Range> ranges_;
};

}  // namespace chiprt::host
