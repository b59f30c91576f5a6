// Orchestration: the API an orchestration function uses to submit tasks.
//
// The runtime passes an Orchestration to the user's orchestration function
// (`extern "C" void chiprt_orchestration(chiprt::Orchestration&, const chiprt::TaskArgs&)`) for
// the duration of one run. Dependencies are derived from the tensor regions each task touches:
// a task that reads (In/InOut) or writes (InOut/OutputExisting) a region depends on the last task
// that wrote an overlapping region (read-after-write and write-after-write through INOUT /
// OUTPUT_EXISTING). Write-after-read is NOT tracked: a task that overwrites a region other tasks
// still read must name them with TaskArgs::after. Overlap is exact for two views with the same
// strides and element size, and conservative (assumed) whenever disjointness cannot be proved.
//
// The object is only valid during the call and only on the thread that called the function.
// Errors throw chiprt::Error; the run then fails with that error.
#pragma once

#include <cstdint>
#include <exception>

#include "chiprt/task_args.h"
#include "chiprt/types.h"

namespace chiprt {

class Orchestration {
 public:
  virtual ~Orchestration() = default;

  // Submits a kernel task running `func_id` on a core of type `core`. Out arguments are
  // allocated from the output heap and written back into `args` (see TaskArgs::output).
  virtual TaskId submit(int32_t func_id, CoreType core, TaskArgs& args) = 0;
  // A dependency-only task: runs no kernel, completes once its producers completed. Its Out
  // arguments are allocated like a kernel task's.
  virtual TaskId submit_dummy(TaskArgs& args) = 0;

  // Scopes bound the lifetime of runtime-allocated outputs: outputs created inside a scope are
  // released at its end (their memory may be reused by later outputs, after every task that used
  // them has finished). A tensor from an ended scope must not be passed to later tasks.
  virtual void scope_begin() = 0;
  virtual void scope_end() = 0;

  // Tasks submitted so far in this run.
  virtual uint64_t task_count() const = 0;
  // Geometry of this run (clusters may be fewer than the device has; see CallConfig).
  virtual uint32_t cluster_count() const = 0;
};

// RAII scope: scope_begin on construction, scope_end on destruction.
class Scope {
 public:
  explicit Scope(Orchestration& orch) : orch_(orch), unwinding_(std::uncaught_exceptions()) {
    orch_.scope_begin();
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

// Helpers for kernels: typed access to the int64 argument array.
namespace chiprt::kernel {
template <class T>
inline T* tensor_arg(int64_t* args, int index) {
  return reinterpret_cast<T*>(static_cast<uintptr_t>(args[index]));
}
template <class T>
inline T scalar_arg(int64_t* args, int index) {
  T value;
  static_assert(sizeof(T) <= 8);
  __builtin_memcpy(&value, &args[index], sizeof(T));
  return value;
}
}  // namespace chiprt::kernel
