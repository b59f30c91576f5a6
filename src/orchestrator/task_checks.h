// Submission checks and output construction shared by both orchestrators (HostGraphBuilder on
// the host, RingOrchestrator on an AICPU thread), so a task is accepted or rejected with the same
// code and message in either runtime variant.
//
// Every check returns Ok or the error naming the task ("task 12 (func_id 3) arg 1: ..."). Strings
// are built only on failure, so a valid submission does not allocate. Pure functions; any thread.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "chiprt/callable.h"
#include "chiprt/orchestration.h"
#include "chiprt/status.h"
#include "chiprt/task_args.h"
#include "chiprt/types.h"

namespace chiprt::orchestrator {

// What the orchestrator knows about each func_id of the active callable. Trivially copyable: the
// host copies a KernelTable to device memory for the tensormap_ringbuffer orchestrator.
struct KernelInfo {
  bool present = false;
  CoreType core = CoreType::AIC;
  ArgSignature signature;
};
using KernelTable = std::array<KernelInfo, kMaxFuncId>;

// "task 12 (func_id 3)", "task 7 (dummy)", "task 9 (mix 1/2/-1)".
std::string task_label(uint64_t id, const TaskSpec* spec);

// The spec against the kernels: func ids present, core types matching (MIX: part 0 on AIC, parts
// 1-2 on AIV, at least one part), block_num in [1, kMaxBlockNum], a MIX task's blocks <= the
// run's clusters is NOT required (blocks queue for clusters). Argument signature of each kernel.
Status check_task_spec(const KernelTable& kernels, uint64_t id, const TaskSpec& spec,
                       const TaskArgs& args);

// Argument checks independent of the heap: counts, tags, ranks, dtypes, Out shapes that overflow,
// views outside their buffers, explicit deps (must be < id), the predicate tensor. `spec` is null
// for dummy / allocation-only tasks.
Status check_task_args(uint64_t id, const TaskSpec* spec, const TaskArgs& args);

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
bool task_args_accepted(uint64_t id, const TaskArgs& args, const ArgList& list) noexcept;

// Bytes of an Out declaration (shape x element size; validated by check_task_args).
uint64_t output_bytes(const Tensor& declaration) noexcept;
// The contiguous tensor an Out declaration becomes once placed at `addr` (size `bytes`).
Tensor make_output(const Tensor& declaration, uint64_t addr, uint64_t bytes, TaskId owner) noexcept;

}  // namespace chiprt::orchestrator
