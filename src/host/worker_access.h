// Access to the DeviceRunner behind a public Worker, for the runtime's own tests (replay and
// launch counters, arenas, resolved ring sizes). Not part of the public API: tools, examples and
// benchmarks use RunReport and the Worker's methods instead.
//
// runner_of throws like any Worker method before init (NotInitialized), after close
// (AlreadyClosed) and from inside a run (ReentrantCall). The reference stays valid until the
// Worker is closed; use it under the Worker's threading rules (one thread at a time, no run in
// flight on another thread).
#pragma once

#include "chiprt/worker.h"
#include "host/device_runner.h"

namespace chiprt::host {

struct WorkerAccess {
  static DeviceRunner& runner(Worker& worker);
};

inline DeviceRunner& runner_of(Worker& worker) {
  return WorkerAccess::runner(worker);
}

}  // namespace chiprt::host
