// chiprt status codes and the Error exception.
//
// One enum covers every failure the host, orchestrator and scheduler can report. Each code has a
// stable name (never renamed once released), a one-line detail and a hint naming the knob to turn.
// Status values are plain data and may cross the host/chip boundary; Error is the exception the
// host-side API throws. Both are immutable after construction and safe to share between threads.
#pragma once

#include <cstdint>
#include <exception>
#include <string>
#include <string_view>

namespace chiprt {

// X-macro list: code, numeric value, detail, hint. Values are stable; append only.
#define CHIPRT_STATUS_CODES(X)                                                                    \
  X(Ok, 0, "success", "nothing to do")                                                            \
  X(InvalidArgument, 1, "an argument is outside its allowed range",                               \
    "check the value named in the message against the API documentation")                         \
  X(NotInitialized, 2, "the worker or device was used before init",                               \
    "call Worker::init (or DeviceRunner::attach) first")                                          \
  X(AlreadyClosed, 3, "the worker was used after close", "create and init a new Worker")          \
  X(DeviceMismatch, 4, "the runner is already attached to another device",                        \
    "finalize the runner before attaching it to a different device id")                           \
  X(UnknownCallable, 5, "no callable is registered under this id",                                \
    "register the callable first, or use an id returned by register_callable")                    \
  X(DuplicateCallable, 6, "a callable is already registered under this id",                       \
    "unregister the old callable first or choose another id")                                     \
  X(CallableIdOutOfRange, 7, "the callable id is outside the supported range",                    \
    "use an id in [0, kMaxCallableIds)")                                                          \
  X(EmptyCallable, 8, "the callable has no orchestration function or no kernels",                 \
    "add the orchestration object and at least one kernel with CallableBuilder")                  \
  X(MalformedCallable, 9, "the chip callable container is truncated or corrupted",                \
    "rebuild the container with CallableBuilder; the message names the bad field")                \
  X(SignatureMismatch, 10, "the run arguments do not match the callable's signature",             \
    "pass exactly the tensors and directions the orchestration signature declares")               \
  X(OutOfDeviceMemory, 11, "the device memory pool cannot satisfy the allocation",                \
    "free device buffers or raise the simulated device capacity (SimOptions::memory_bytes)")      \
  X(InvalidDevicePointer, 12, "the address is not a live device allocation",                      \
    "pass an address returned by malloc that has not been freed")                                 \
  X(InvalidConfig, 13, "a CallConfig or WorkerOptions field is invalid",                          \
    "fix the field named in the message")                                                         \
  X(DeviceFaulted, 14, "the device faulted earlier and its resources were abandoned",             \
    "reset the device with the call the message names (device memory is lost, callables stay "    \
    "registered)")                                                                                \
  X(LoadFailed, 15, "a chip object (kernel or orchestration) could not be loaded",                \
    "rebuild the shared object for this platform; the message names the bad ELF field or "        \
    "carries the loader error")                                                                   \
  X(StreamSyncTimeout, 16, "the launch did not finish within the stream sync timeout",            \
    "raise CHIPRT_STREAM_SYNC_TIMEOUT_MS or find the stuck kernel")                               \
  X(ArenaCommitFailed, 17, "a device arena region could not be committed",                        \
    "lower the requested sizes or raise the device capacity")                                     \
  X(TooManyArgs, 18, "a task has more arguments than the fixed maximum",                          \
    "split the task, or pack scalars into a tensor (limits: kMaxTaskTensors, kMaxTaskScalars)")   \
  X(ViewOutOfBounds, 19, "a tensor view does not fit inside its source",                          \
    "check the shape, offset and step of the dimension named in the message")                     \
  X(CapacityExceeded, 20, "a graph or ring capacity was exceeded",                                \
    "raise the limit named in the message (CallConfig.max_tasks or ring sizing)")                 \
  X(HeapExhausted, 21, "the output heap cannot hold a runtime-allocated output",                  \
    "raise CallConfig.output_heap_bytes or close scopes earlier to release intermediates")        \
  X(UnknownFuncId, 22, "a task names a func_id the active callable does not provide",             \
    "add a kernel with that func_id to the callable")                                             \
  X(CoreTypeMismatch, 23, "a task's core type differs from its kernel's core type",               \
    "submit the task to the core type the kernel was built for")                                  \
  X(ScopeMismatch, 24, "scope_end without a matching scope_begin, or scopes left open",           \
    "pair every scope_begin with a scope_end (use chiprt::Scope)")                                \
  X(InvalidTask, 25, "a task refers to a task id or tensor that does not exist",                  \
    "depend only on task ids returned by submit in this run")                                     \
  X(OrchestrationFailed, 26, "the orchestration function threw an exception",                     \
    "see the message for the exception text")                                                     \
  X(SchedulerTimeout, 27, "the scheduler made no progress within the watchdog timeout",           \
    "find the stuck task named in the message or raise CHIPRT_SCHEDULER_TIMEOUT_MS")              \
  X(KernelFault, 28, "a kernel failed on a compute core", "see the message for the kernel")       \
  X(UnsupportedFeature, 29, "this platform or runtime variant does not provide the feature",      \
    "choose a runtime/platform that provides it; the message names the feature")                  \
  X(InternalError, 30, "an internal invariant was broken", "report a bug with the message")       \
  X(RingDeadlock, 31, "a full ring waits on a task that the allocating scope itself holds",       \
    "raise the ring size named in the message (CallConfig::rings or CHIPRT_RING_*) or end "       \
    "scopes sooner")                                                                              \
  X(WaitTimeout, 32, "the orchestrator waited too long for a task to complete or retire",         \
    "find the task named in the message or raise CHIPRT_SCHEDULER_TIMEOUT_MS")                    \
  X(InvalidScope, 33, "a scope nesting rule was broken (an automatic scope inside a manual one)", \
    "nest automatic scopes only outside manual ones")                                             \
  X(ReentrantCall, 34,                                                                            \
    "a Worker method was called from inside a run (an orchestration function "                    \
    "or a kernel)",                                                                               \
    "call Worker methods from a host thread outside orchestration functions and kernels; inside " \
    "an orchestration function use its Orchestration (submit, allocate, get/set_tensor_data)")    \
  X(KernelCrashed, 35,                                                                            \
    "code on the device (a kernel, or the chip-side orchestration) crashed its device process",   \
    "fix the kernel named in the message (the signal and faulting address say how it failed), "   \
    "then reset the device with the call the message names")                                      \
  X(OpExecuteTimeout, 36, "a kernel ran longer than the op execute timeout and was stopped",      \
    "fix the kernel named in the message or raise CHIPRT_OP_EXECUTE_TIMEOUT_US, then reset the "  \
    "device with the call the message names")                                                     \
  X(DiagnosticsError, 37, "a diagnostics directory or file could not be written or read",         \
    "check CallConfig::diagnostics.output_dir (it must be a writable directory) or the file "     \
    "named in the message")                                                                       \
  X(Cancelled, 38,                                                                                \
    "a run was not launched because it uses memory that an earlier failed run wrote",             \
    "fix the failed run named in the message, rewrite the memory it names from the host "         \
    "(copy_to, memset) or free it, then run again")                                               \
  X(InheritedWorker, 39,                                                                          \
    "the Worker (or run handle) was created by the parent of this forked process",                \
    "create a new Worker in this process; the inherited one stays the parent's (destroying it "   \
    "here releases nothing of the parent's)")                                                     \
  X(BuildFailed, 40, "a chip object's sources did not compile",                                   \
    "fix the compiler error in the message (the compiler's output follows the command)")

enum class StatusCode : int32_t {
#define CHIPRT_STATUS_ENUM(name, value, detail, hint) name = value,
  CHIPRT_STATUS_CODES(CHIPRT_STATUS_ENUM)
#undef CHIPRT_STATUS_ENUM
};

struct StatusInfo {
  std::string_view name;
  std::string_view detail;
  std::string_view hint;
};

// Every StatusCode has an entry; unknown numeric values map to InternalError's info.
const StatusInfo& status_info(StatusCode code) noexcept;
inline std::string_view status_name(StatusCode code) noexcept {
  return status_info(code).name;
}
// All codes in declaration order (for tests and tools).
const StatusCode* all_status_codes(std::size_t* count) noexcept;

// A status value: a code and a message naming what was wrong. Cheap when Ok (no allocation).
// The hint is the code's (status_info) unless the failure knows a more precise one, given as
// `hint` (a missing kernel symbol names the attribute to add, say).
class Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  Status(StatusCode code, std::string message, std::string hint)
      : code_(code), message_(std::move(message)), hint_(std::move(hint)) {}
  static Status ok() { return Status(); }

  bool is_ok() const noexcept { return code_ == StatusCode::Ok; }
  explicit operator bool() const noexcept { return is_ok(); }
  StatusCode code() const noexcept { return code_; }
  const std::string& message() const noexcept { return message_; }
  std::string_view hint() const noexcept {
    return hint_.empty() ? status_info(code_).hint : std::string_view(hint_);
  }
  // The same status with `prefix` in front of its message (its hint kept).
  Status with_context(const std::string& prefix) const {
    return Status(code_, prefix + message_, hint_);
  }
  // "[NAME] message (hint: ...)"
  std::string to_string() const;

 private:
  StatusCode code_ = StatusCode::Ok;
  std::string message_;
  std::string hint_;  // empty: the code's hint
};

// Thrown by the host-side API. what() is "[NAME] message (hint: ...)".
class Error : public std::exception {
 public:
  Error(StatusCode code, std::string message);
  // `hint` replaces the code's hint when not empty.
  Error(StatusCode code, std::string message, std::string hint);
  explicit Error(const Status& status)
      : Error(status.code(), status.message(), std::string(status.hint())) {}

  StatusCode code() const noexcept { return code_; }
  std::string_view name() const noexcept { return status_name(code_); }
  std::string_view hint() const noexcept {
    return hint_.empty() ? status_info(code_).hint : std::string_view(hint_);
  }
  const std::string& message() const noexcept { return message_; }
  const char* what() const noexcept override { return what_.c_str(); }

 private:
  StatusCode code_;
  std::string message_;
  std::string hint_;  // empty: the code's hint
  std::string what_;
};

// Throws Error when the status is not Ok.
inline void throw_if_error(const Status& status) {
  if (!status.is_ok()) throw Error(status);
}

}  // namespace chiprt
