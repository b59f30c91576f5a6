// Submission checks and output construction shared by both orchestrators (HostGraphBuilder on
// the host, RingOrchestrator on an AICPU thread), so a task is accepted or rejected with the same
// code and message in either runtime variant.
//
// Every check returns Ok or the error naming the task ("task 12 (func_id 3) arg 1: ..."). Strings
// are built only on failure, so a valid submission does not allocate. Pure functions; any thread.
//
// The device memory a task may name is bounded by the run (RunMemory): the host checks the run's
// arguments against live allocations, and every task tensor must lie inside one of their buffers
// or the run's output heap, and must not be a runtime output of another run.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "chiprt/callable.h"
#include "chiprt/orchestration.h"
#include "chiprt/status.h"
#include "chiprt/task_args.h"
#include "chiprt/types.h"
#include "common/kernel_table.h"

namespace chiprt::orchestrator {

using common::KernelInfo;
using common::KernelTable;

// The device memory one run's tasks may name and the run's identity, from what the host declares
// for the run (DeviceRunner, for both orchestrators): the buffers of the run's tensor arguments
// (Out declarations excluded; the host checked the others against live allocations), the run's
// output heap, and the run's number (non-zero, unique in the process), which its runtime outputs
// carry in Tensor::owner_run. A default-constructed RunMemory bounds nothing and numbers no run
// (orchestrators driven directly, as in their unit tests). Plain data, fixed size; immutable.
class RunMemory {
 public:
  RunMemory() = default;
  RunMemory(const TaskArgs& run_args, DeviceBuffer heap, uint32_t run) noexcept;

  uint32_t run() const noexcept { return run_; }
  DeviceBuffer heap() const noexcept { return heap_; }
  // Whether a task of this run may name `t`, whose view covers bytes [lo, hi) of its buffer (the
  // caller validated that they lie inside it): `t` is no runtime output of another run, and
  // [buffer + lo, buffer + hi) lies inside one argument buffer or the heap. An empty view names
  // no memory (lo == hi).
  bool admits(const Tensor& t, uint64_t lo, uint64_t hi) const noexcept {
    if (!bounded_) return true;
    if (t.owner_run != 0 && t.owner_run != run_) return false;
    return lo == hi || contains(t.buffer.addr + lo, t.buffer.addr + hi);
  }
  // The InvalidDevicePointer error for a tensor admits() refused; `where` names it.
  Status refusal(const std::string& where, const Tensor& t, uint64_t lo, uint64_t hi) const;

 private:
  // Disjoint (overlapping buffers, views of one allocation, are merged) and sorted by start. A
  // run has few: an inline scan costs less than a call to a binary search.
  struct Range {
    uint64_t lo = 0;
    uint64_t hi = 0;
  };
  bool contains(uint64_t lo, uint64_t hi) const noexcept {
    for (uint32_t i = 0; i < count_ && ranges_[i].lo <= lo; ++i) {
      if (hi <= ranges_[i].hi) return true;
    }
    return false;
  }

  std::array<Range, kMaxTaskTensors + 1> ranges_{};
  uint32_t count_ = 0;
  uint32_t run_ = 0;
  bool bounded_ = false;
  DeviceBuffer heap_{};
};

// "task 12 (func_id 3)", "task 7 (dummy)", "task 9 (mix 1/2/-1)".
std::string task_label(uint64_t id, const TaskSpec* spec);

// The spec against the kernels: func ids present, core types matching (MIX: part 0 on AIC, parts
// 1-2 on AIV, at least one part), block_num in [1, kMaxBlockNum], a MIX task's blocks <= the
// run's clusters is NOT required (blocks queue for clusters). Argument signature of each kernel.
Status check_task_spec(const KernelTable& kernels, uint64_t id, const TaskSpec& spec,
                       const TaskArgs& args);

// Argument checks independent of the heap's state: counts, tags, ranks, dtypes, Out shapes that
// overflow, views outside their buffers, tensors (and the predicate) the run's memory does not
// admit, explicit deps (must be < id), the predicate tensor. `spec` is null for dummy /
// allocation-only tasks.
Status check_task_args(const RunMemory& memory, uint64_t id, const TaskSpec* spec,
                       const TaskArgs& args);
// get_tensor_data / set_tensor_data (`call`) of `t`, whose view the caller checked to lie inside
// its buffer: the run's memory admits it.
Status check_data_access(const RunMemory& memory, const char* call, const Tensor& t);

// A submission's tensor arguments read once: TaskArgs' accessors are bounds-checked out-of-line
// calls, and a submit's checks and passes would otherwise repeat them several times per argument.
// `tensors` point into the TaskArgs it was read from (Out declarations are rewritten in place).
struct ArgList {
  int tensor_count = 0;
  std::array<ArgTag, kMaxTaskTensors> tags;
  std::array<Tensor*, kMaxTaskTensors> tensors;
};
// Reads `args` into `out`; false (out unusable) when the tensor count is outside
// [0, kMaxTaskTensors] (check_task_args reports that).
bool read_args(TaskArgs& args, ArgList* out);

// Fast acceptance for the common submission, without building a Status or a string: true only
// when check_task_spec would return Ok. False means "not decided here" (a MIX spec, or anything
// check_task_spec rejects): run check_task_spec for the verdict and its message.
bool task_spec_accepted(const KernelTable& kernels, const TaskSpec& spec, const TaskArgs& args,
                        const ArgList& list) noexcept;
// The same for check_task_args (false also for any task with a predicate).
bool task_args_accepted(const RunMemory& memory, uint64_t id, const TaskArgs& args,
                        const ArgList& list) noexcept;

// Bytes of an Out declaration (shape x element size; validated by check_task_args).
uint64_t output_bytes(const Tensor& declaration) noexcept;
// The contiguous tensor an Out declaration becomes once placed at `addr` (size `bytes`): an
// output of task `owner` of run `run` (RunMemory::run).
Tensor make_output(const Tensor& declaration, uint64_t addr, uint64_t bytes, TaskId owner,
                   uint32_t run) noexcept;

}  // namespace chiprt::orchestrator
