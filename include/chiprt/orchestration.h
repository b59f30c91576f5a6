// Orchestration: the API an orchestration function uses to submit tasks.
//
// The runtime passes an Orchestration to the user's orchestration function
// (`extern "C" void chiprt_orchestration(chiprt::Orchestration&, const chiprt::TaskArgs&)`) for
// the duration of one run. Dependencies are derived from the tensor regions each task touches:
// a task that reads a region (In, InOut, the predicate flag of TaskArgs::when) depends on the
// earlier tasks that wrote an overlapping region (read-after-write), and a task that writes one
// (InOut, OutputExisting) also on the earlier tasks that wrote or read it (write-after-write,
// write-after-read); Out arguments are fresh memory. NoDep arguments and manual scopes are not
// tracked; TaskArgs::after orders what regions cannot express. Overlap is exact for two views
// with the same strides and element size, and conservative (assumed) whenever disjointness
// cannot be proved.
//
// Both runtime variants implement this API: host_build_graph runs the function on the host before
// launch, tensormap_ringbuffer runs it on an AICPU thread while the other AICPU threads dispatch.
//
// Errors latch: the first failing call (bad arguments, an exhausted or deadlocked ring, a wait
// that timed out, ...) records its error and returns kNoTask; every later call is a no-op that
// returns kNoTask (reads return without copying). failed() and error() let the function stop
// early; the run then fails with that first error (code, message naming the task, hint). An
// exception escaping the function fails the run with OrchestrationFailed (or the Error's code and
// message; an Error with code Ok still fails it, with OrchestrationFailed). Both variants check the
// same rules with the same messages; a message is cut at 1023 bytes.
//
// The object is only valid during the call and only on the thread that called the function.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <span>

#include "chiprt/status.h"
#include "chiprt/task_args.h"
#include "chiprt/types.h"

namespace chiprt {

// The kernels of a MIX task, one per core of a cluster. All three cores of one cluster are
// reserved and started together (never partially); a part set to -1 leaves its core idle for the
// task. Every part receives the same arguments and block context.
struct MixKernels {
  int32_t aic = -1;
  int32_t aiv0 = -1;
  int32_t aiv1 = -1;
};

// What a task runs and on how many cores.
struct TaskSpec {
  CoreType core = CoreType::AIV;
  int32_t func_id = -1;  // AIC / AIV tasks; ignored for MIX
  MixKernels mix;        // MIX tasks only
  // SPMD: the kernel runs block_num times (MIX: on block_num clusters), each reading its block
  // index in [0, block_num) with kernel::block_idx(args); the task completes when every block
  // finished.
  // More blocks than cores is fine: blocks are dispatched as cores free up. Limit kMaxBlockNum.
  uint32_t block_num = 1;

  static TaskSpec kernel(int32_t func_id, CoreType core, uint32_t block_num = 1) {
    TaskSpec spec;
    spec.core = core;
    spec.func_id = func_id;
    spec.block_num = block_num;
    return spec;
  }
  static TaskSpec mixed(const MixKernels& kernels, uint32_t block_num = 1) {
    TaskSpec spec;
    spec.core = CoreType::MIX;
    spec.mix = kernels;
    spec.block_num = block_num;
    return spec;
  }
};
inline constexpr uint32_t kMaxBlockNum = 65535;

// Automatic scopes derive dependencies from the tensor map. Manual scopes skip the tensor map
// entirely (no lookups, no records): tasks inside depend only on TaskArgs::after. Rules: a manual
// scope may nest manual scopes only (an automatic scope inside a manual one is InvalidScope,
// since the tensor map knows nothing of the manual tasks' writes); writes made inside a manual
// scope are invisible to later automatic tasks, which must name such producers with after().
enum class ScopeMode : uint8_t { Auto = 0, Manual = 1 };

class Orchestration {
 public:
  virtual ~Orchestration() = default;

  // Task ids: submit, submit_dummy and allocate return the task's id, its index among the tasks
  // this function submitted (0, 1, ...), the same on both variants; after(), Tensor::owner_task,
  // RunReport::task_count and every message use these ids. Tasks the runtime adds of its own
  // (host_build_graph's scope fences) have none.
  //
  // Submits a task (AIC, AIV or MIX; SPMD when spec.block_num > 1). Out arguments are allocated
  // from the output heap and written back into `args` (see TaskArgs::output). A predicate
  // (TaskArgs::when) is read at dispatch: when false the task is skipped (no kernel runs) and
  // still releases its consumers.
  virtual TaskId submit(const TaskSpec& spec, TaskArgs& args) = 0;
  TaskId submit(int32_t func_id, CoreType core, TaskArgs& args) {
    return submit(TaskSpec::kernel(func_id, core), args);
  }
  // A dependency-only task: runs no kernel, completes once its producers completed. Its Out
  // arguments are allocated like a kernel task's.
  virtual TaskId submit_dummy(TaskArgs& args) = 0;
  // An allocation-only task: every tensor argument must be Out (InvalidArgument otherwise); the
  // outputs are allocated and the task completes at once, so later tasks may fill them (InOut).
  virtual TaskId allocate(TaskArgs& outputs) = 0;

  // Scopes bound the lifetime of runtime-allocated outputs: outputs created inside a scope are
  // released at its end (their memory may be reused by later outputs, after every task that used
  // them has finished). A tensor from an ended scope must not be passed to later tasks.
  virtual void scope_begin(ScopeMode mode) = 0;
  void scope_begin() { scope_begin(ScopeMode::Auto); }
  virtual void scope_end() = 0;

  // Copies the elements of `tensor` (row-major over its view, `bytes` == numel * element size)
  // into `dst` once the tasks writing overlapping regions have completed. host_build_graph runs
  // no task before the graph is complete, so there it only reads tensors no task of this run
  // writes (UnsupportedFeature otherwise). Waits are bounded by the scheduler timeout
  // (WaitTimeout naming the task waited on).
  virtual void get_tensor_data(const Tensor& tensor, void* dst, uint64_t bytes) = 0;
  // Writes `src` into the elements of `tensor` once every earlier task of the run has completed
  // (not only those touching it: the readers of a region are not tracked); later tasks see the
  // new data. Same bounds and host_build_graph rule.
  virtual void set_tensor_data(const Tensor& tensor, const void* src, uint64_t bytes) = 0;

  // Whether an error latched; error() is the first one (Ok while none).
  virtual bool failed() const = 0;
  virtual Status error() const = 0;

  // Tasks submitted so far in this run: the id the next task will get.
  virtual uint64_t task_count() const = 0;
  // Geometry of this run (clusters may be fewer than the device has; see CallConfig).
  virtual uint32_t cluster_count() const = 0;
  // The run's copy of CallConfig::user_data (empty when none), at least
  // CallConfig::kUserDataAlign-aligned, valid for the function's whole call; on
  // tensormap_ringbuffer it lies in device memory next to the run's arguments. Read-only: a
  // replay_graph run keys on these bytes.
  virtual std::span<const std::byte> user_data() const = 0;
};

// RAII scope: scope_begin on construction, scope_end on destruction.
class Scope {
 public:
  explicit Scope(Orchestration& orch, ScopeMode mode = ScopeMode::Auto)
      : orch_(orch), unwinding_(std::uncaught_exceptions()) {
    orch_.scope_begin(mode);
  }
  // While an exception unwinds the run is failing anyway; ending the scope then could throw again.
  ~Scope() noexcept(false) {
    if (std::uncaught_exceptions() == unwinding_) orch_.scope_end();
  }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  Orchestration& orch_;
  int unwinding_;
};

}  // namespace chiprt
