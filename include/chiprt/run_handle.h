// RunHandle: a run submitted with Worker::submit, to be waited for.
//
// A run goes through these states: admitted (Worker::submit returned: it is queued, or prepared in
// the pipeline slot and arena bank the Worker chose for it) -> executing (launched on the chip;
// one run at a time) -> done (its RunReport, or its error). A run that touches memory an earlier
// failed run wrote or was writing is never launched: it is done with Error(Cancelled) naming that
// run's sequence number and error (the rule in chiprt/worker.h, "Failed runs"); after a device
// fault every later run is done with DeviceFaulted. Runs of one Worker complete in submission
// order.
//
// Lifetime: a handle owns only its run's result, not the Worker; it may outlive the Worker (whose
// close() finishes every admitted run first). Destroying or move-assigning over a handle whose
// run is not done waits for it; an error the run ended with and nobody waited for is logged as a
// warning (dropped inside a run, it does not wait; a warning says so). A default-constructed or
// moved-from handle is empty (valid() false); its other methods throw Error(InvalidArgument).
// In a forked child a handle of the parent's run throws Error(InheritedWorker) from every method
// but valid(), and destroying it does not wait (nothing in the child would finish the run).
//
// Threading: the methods may be called from any thread, also concurrently on one handle; wait()
// may be called more than once (each call returns the report or throws the error again). Not
// from inside a run (an orchestration function or a kernel): wait() there would wait for the run
// it is part of, and throws Error(ReentrantCall) instead.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>

#include "chiprt/run_report.h"

namespace chiprt {

namespace host {
struct RunState;
}  // namespace host

class RunHandle {
 public:
  RunHandle() = default;
  RunHandle(RunHandle&& other) noexcept = default;
  RunHandle& operator=(RunHandle&& other) noexcept;
  RunHandle(const RunHandle&) = delete;
  RunHandle& operator=(const RunHandle&) = delete;
  ~RunHandle();

  bool valid() const noexcept { return state_ != nullptr; }
  // The run's identity: its number on its Worker (1 for its first run; Worker::run calls take
  // numbers too), the one a Cancelled message names.
  uint64_t sequence() const;
  // Whether the run is done (never blocks).
  bool ready() const;
  // Waits at most `timeout` for the run to be done; true when it is.
  bool wait_for(std::chrono::nanoseconds timeout) const;
  // Waits until the run is done; returns its report or throws its chiprt::Error.
  RunReport wait() const;

 private:
  friend struct host::RunState;
  explicit RunHandle(std::shared_ptr<host::RunState> state) noexcept : state_(std::move(state)) {}
  std::shared_ptr<host::RunState> state_;
};

}  // namespace chiprt
