// Chip callable: the one self-describing binary (a "container") that carries an orchestration
// function and the kernels it calls, as Worker::register_callable takes it.
//
// CallableBuilder assembles a container from shared objects (the chip objects a build produces,
// loaded by the platform from memory; they export `chiprt_orchestration` / `kernel_entry`) or from
// in-process function pointers (valid only inside the process that built the container; for
// embedding and tests). The container's byte layout is the runtime's business, not part of this
// API: treat it as opaque bytes, store or send it as they are, and rebuild it with the
// CallableBuilder of the runtime that loads it (a container from another version is refused with
// MalformedCallable). The Worker validates every container completely before using it.
//
// Lifetime and threading: CallableBuilder and ArgSignature are values with no shared state; use
// one builder per thread. build() copies what it was given, so the sources may go away after it.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "chiprt/kernel.h"
#include "chiprt/status.h"
#include "chiprt/task_args.h"
#include "chiprt/types.h"

namespace chiprt {

class Orchestration;
// Entry point of an orchestration function; the symbol a shared object must export is
// `chiprt_orchestration` (see orchestration.h).
using OrchestrationEntry = void (*)(Orchestration& orch, const TaskArgs& args);
inline constexpr char kOrchestrationSymbol[] = "chiprt_orchestration";

// Limits of one container, checked by CallableBuilder::build and again by the Worker.
inline constexpr uint32_t kMaxKernelsPerCallable = 128;
inline constexpr uint64_t kMaxObjectBytes = 256ull << 20;

// How an object is carried in the container (defined with the wire format, inside the runtime).
enum class ObjectKind : uint32_t;

// A signature entry: the tag each tensor argument must have. Scalars are counted separately.
// An empty signature (no tensors, no scalars) means "not checked".
struct ArgSignature {
  uint8_t tensor_count = 0;
  uint8_t scalar_count = 0;
  ArgTag tags[kMaxTaskTensors]{};

  // From tensor tags in argument order and a scalar count; throws Error(TooManyArgs) above
  // kMaxTaskTensors tensors or kMaxTaskScalars scalars.
  static ArgSignature of(std::initializer_list<ArgTag> tags, uint8_t scalar_count = 0);
};

class CallableBuilder {
 public:
  CallableBuilder& orchestration_object(std::span<const uint8_t> so_bytes, const ArgSignature& sig);
  CallableBuilder& orchestration_function(OrchestrationEntry fn, const ArgSignature& sig);
  CallableBuilder& kernel_object(int32_t func_id, CoreType core, std::span<const uint8_t> so_bytes,
                                 const ArgSignature& sig);
  CallableBuilder& kernel_function(int32_t func_id, CoreType core, KernelEntry fn,
                                   const ArgSignature& sig);
  // Throws Error(EmptyCallable) without an orchestration or kernels, InvalidArgument for a
  // duplicate or out-of-range func_id.
  std::vector<uint8_t> build() const;

 private:
  struct Object {
    ObjectKind kind;
    std::vector<uint8_t> bytes;
  };
  struct Kernel {
    int32_t func_id;
    CoreType core;
    Object object;
    ArgSignature sig;
  };
  bool has_orchestration_ = false;
  Object orchestration_{};
  ArgSignature orchestration_sig_{};
  std::vector<Kernel> kernels_;
};

}  // namespace chiprt
