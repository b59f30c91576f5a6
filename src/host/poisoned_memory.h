// PoisonedMemory: the caller memory failed runs left unfinished, which cancels every later run
// naming it (the Worker's rule, include/chiprt/worker.h, "Failed runs"). One per device context,
// kept by its RunPipeline (host/run_pipeline.h) for as long as it lives; not thread-safe (the
// pipeline's runner lock guards it).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "chiprt/status.h"
#include "chiprt/task_args.h"

namespace chiprt::host {

// Caller memory (ranges of device buffers) that a failed run wrote or was writing: its InOut and
// OutputExisting arguments, whole. A later run naming any of it (with any tag but Out) is not
// launched; it ends Cancelled naming the failed run and its error, and the memory it would have
// written is poisoned in turn, carrying the same failure. The host rewriting a range (copy_to,
// memset) or freeing it clears that range; a device reset clears everything. Not thread-safe
// (the pipeline's runner lock guards it).
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
