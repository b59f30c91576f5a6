// The task model's rules and output construction shared by both orchestrators (HostGraphBuilder on
// the host, RingOrchestrator on an AICPU thread), so a task is accepted or rejected with the same
// code and message in either runtime variant.
//
// Used only by the task front (task_front.h), which both orchestrators submit through. Every
// check returns a compact Verdict; the error naming the task ("task 12 (func_id 3) arg 1: ...")
// is built from it only on failure, so a valid submission does not allocate. Pure functions; any
// thread.
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

// "0x1f000": a device address in a message.
std::string hex_address(uint64_t v);
// "task 12 (func_id 3)", "task 7 (dummy)", "task 9 (mix 1/2/-1)".
std::string task_label(uint64_t id, const TaskSpec* spec);

// A submission's tensor arguments read once: TaskArgs' accessors are bounds-checked out-of-line
// calls, and a submit's checks and passes would otherwise repeat them several times per argument.
// `tensors` point into the TaskArgs it was read from (Out declarations are rewritten in place).
struct ArgList {
  int tensor_count = 0;
  std::array<ArgTag, kMaxTaskTensors> tags;
  std::array<Tensor*, kMaxTaskTensors> tensors;
};
// Reads `args` into `out`; false (out unusable) when the tensor count is outside
// [0, kMaxTaskTensors] (check_task_args reports that as TooManyArgs).
inline bool read_args(TaskArgs& args, ArgList* out) {
  const int count = args.tensor_count();
  if (count < 0 || count > kMaxTaskTensors) return false;
  out->tensor_count = count;
  for (int i = 0; i < count; ++i) {
    out->tags[i] = args.tag(i);
    out->tensors[i] = &args.tensor(i);
  }
  return true;
}

// Every rule of the task model, written once. A check returns a Verdict: the rule broken (Ok when
// none) and the indices involved, without strings or allocation (the submission hot path); the
// describe_* functions turn the same verdict into the error (code and message), off the hot path.
enum class Rule : uint8_t {
  Ok = 0,
  // The spec against the kernels (check_task_spec).
  CoreTypeValue,         // spec.core is no CoreType
  BlockNum,              // block_num outside [1, kMaxBlockNum]
  MixWithoutKernels,     // every part of a MIX spec is -1
  UnknownFuncId,         // part's func_id absent from the callable
  CoreTypeMismatch,      // part's kernel runs on another core type
  SignatureTensorCount,  // part's kernel declares another tensor count
  SignatureTag,          // arg's tag differs from the kernel's signature
  SignatureScalarCount,  // part's kernel declares another scalar count
  // The arguments (check_task_args).
  TooManyArgs,           // tensor or scalar count outside the limits
  LaterDependency,       // explicit dependency `index` names no earlier task
  TagValue,              // arg's tag is no ArgTag
  Rank,                  // arg's rank outside [1, kMaxTensorDims]
  DtypeValue,            // arg's dtype is no DataType
  OutputTooLarge,        // Out declaration arg: dim `index` makes it larger than 2^64 bytes
  BufferWraps,           // arg's buffer wraps around the address space
  ViewOutOfBounds,       // arg's view lies outside its buffer
  NotRunMemory,          // the run's memory does not admit arg (RunMemory)
  PredicateNotIntegral,  // the predicate is no integer / bool tensor with an element
  SkipFillTooLarge,      // a predicated task's outputs exceed common::kMaxSkipFillBytes
  // allocate (check_allocation).
  AllocationTag,     // arg is not Out
  AllocationExtras,  // scalars, explicit dependencies or a predicate
  // get_tensor_data / set_tensor_data (check_data_call).
  DataRankOrDtype,
  DataOutOfBounds,
  DataBytes,        // bytes differs from numel x element size
  DataNullPointer,  // bytes > 0 and the host pointer is null
  DataNotRunMemory,
};
// The argument index of a verdict about the predicate.
inline constexpr int8_t kPredicateArg = -1;
struct Verdict {
  Rule rule = Rule::Ok;
  int8_t arg = kPredicateArg;  // tensor argument (or kPredicateArg), for argument rules
  uint8_t part = 0;            // MIX part (0 aic, 1 aiv0, 2 aiv1), for kernel rules
  uint8_t index = 0;           // dependency or dimension index
  bool ok() const noexcept { return rule == Rule::Ok; }
};

// The spec against the kernels: func ids present, core types matching (MIX: part 0 on AIC, parts
// 1-2 on AIV, at least one part; a kernel registered as MIX runs as any part), block_num in
// [1, kMaxBlockNum] (blocks queue for cores), each kernel's argument signature.
Verdict check_task_spec(const KernelTable& kernels, const TaskSpec& spec, const ArgList& list,
                        int scalar_count) noexcept;
// Argument checks independent of the heap's state: counts, explicit deps (must be < id), tags,
// ranks, dtypes, Out shapes that overflow, views outside their buffers, tensors (and the
// predicate) the run's memory does not admit, the predicate's dtype, and that a predicated task's
// outputs (zero-filled when it is skipped) fit the record's skip-fill range. `list` is read_args'
// view of `args` (unread when the counts are out of range: that is reported first).
Verdict check_task_args(const RunMemory& memory, uint64_t id, const TaskArgs& args,
                        const ArgList& list) noexcept;
// The allocate rules on top of check_task_args: Out tensors only, no scalars, no explicit
// dependencies, no predicate.
Verdict check_allocation(const TaskArgs& args, const ArgList& list) noexcept;
// get_tensor_data / set_tensor_data of `t` with host pointer `data` and `bytes`.
Verdict check_data_call(const RunMemory& memory, const Tensor& t, const void* data,
                        uint64_t bytes) noexcept;

// The error of a rejected task (check_task_spec / check_task_args / check_allocation verdict);
// `spec` null for dummy and allocation-only tasks.
Status describe_task(const Verdict& verdict, const KernelTable& kernels, const RunMemory& memory,
                     uint64_t id, const TaskSpec* spec, const TaskArgs& args);
// The error of a rejected data call (`call`: "get_tensor_data" / "set_tensor_data").
Status describe_data_call(const Verdict& verdict, const RunMemory& memory, const char* call,
                          const Tensor& t, uint64_t bytes);

// Bytes [*lo, *hi) of `t`'s view from its buffer start (an empty view: 0, 0); false when the
// extent overflows 64 bits. Rank and dtype must be valid.
inline bool view_extent(const Tensor& t, uint64_t* lo, uint64_t* hi) noexcept {
  uint64_t last = t.start_offset;
  for (uint32_t d = 0; d < t.ndim; ++d) {
    if (t.shape[d] == 0) {
      *lo = *hi = 0;  // no elements: an empty region lies in any buffer
      return true;
    }
    uint64_t span;
    if (__builtin_mul_overflow(t.shape[d] - 1, t.strides[d], &span) ||
        __builtin_add_overflow(last, span, &last)) {
      return false;
    }
  }
  const uint64_t esize = element_size(t.dtype);
  return !__builtin_add_overflow(last, 1, &last) && !__builtin_mul_overflow(last, esize, hi) &&
         !__builtin_mul_overflow(t.start_offset, esize, lo);
}

// Bytes of an Out declaration (shape x element size; validated by check_task_args).
uint64_t output_bytes(const Tensor& declaration) noexcept;
// The contiguous tensor an Out declaration becomes once placed at `addr` (size `bytes`): an
// output of task `owner` of run `run` (RunMemory::run).
Tensor make_output(const Tensor& declaration, uint64_t addr, uint64_t bytes, TaskId owner,
                   uint32_t run) noexcept;

}  // namespace chiprt::orchestrator
