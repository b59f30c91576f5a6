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

// Bytes of an Out declaration (shape x element size; validated by check_task_args).
uint64_t output_bytes(const Tensor& declaration) noexcept;
// The contiguous tensor an Out declaration becomes once placed at `addr` (size `bytes`).
Tensor make_output(const Tensor& declaration, uint64_t addr, uint64_t bytes, TaskId owner) noexcept;

}  // namespace chiprt::orchestrator
