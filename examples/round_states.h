// RoundStates: repeating one example call so that every repetition computes what one run would.
//
// An example's call may accumulate into the buffers it writes (bgemm adds into C), so running the
// same arguments twice is not running the example twice. RoundStates snapshots, after the example
// uploaded its inputs, every buffer the call writes (tensor arguments tagged InOut,
// OutputExisting or NoDep) and keeps `copies` device copies of each; round_args(i) restores copy i
// to the snapshot and returns the call's arguments with every tensor over a written buffer
// (whatever its tag) moved onto copy i, same offsets and strides. The original buffers stay as
// uploaded, for the example's own run and check. Used by `chiprt run --pipeline` and `chiprt bench
// --pipeline`, which keep one copy per run in flight.
//
// Lifetime: made inside an Executor (the Worker's buffers hold the inputs), destroyed before the
// executor returns; the destructor frees the copies (waiting for runs that still use them).
// Threading: the thread that runs the example.
#pragma once

#include <cstdint>
#include <vector>

#include "chiprt/task_args.h"
#include "chiprt/types.h"
#include "chiprt/worker.h"

namespace chiprt::examples {

class RoundStates {
 public:
  RoundStates(Worker& worker, const TaskArgs& args, int copies);
  ~RoundStates();
  RoundStates(const RoundStates&) = delete;
  RoundStates& operator=(const RoundStates&) = delete;

  // Copy `i` (0 <= i < copies) restored to the snapshot (Worker::copy_to: waits for an admitted
  // run still using it) and the arguments moved onto it.
  TaskArgs round_args(int i);

 private:
  struct Written {
    DeviceBuffer original;
    std::vector<uint8_t> snapshot;
    std::vector<DeviceBuffer> copies;
  };
  Worker& worker_;
  TaskArgs args_;
  std::vector<Written> written_;
};

}  // namespace chiprt::examples
