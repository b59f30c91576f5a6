// Chip callable: the one self-describing binary (a "container") that carries an orchestration
// function and the kernels it calls, as Worker::register_callable takes it.
//
// CallableBuilder assembles a container from shared objects (the chip objects a build produces,
// loaded by the platform from memory; they export `chiprt_orchestration` and their kernels) or from
// in-process function pointers (valid only inside the process that built the container; for
// embedding and tests).
//
// Each kernel has a func_id (what a task names), a symbol (what the runtime looks up in its shared
// object: `kernel_entry` unless given, so one object may export several kernels, each under its
// own symbol, and serve several func_ids) and a display name (what the diagnostics, the run report
// and error messages call it: the symbol unless given). Identical objects are stored once in the
// container and loaded once per worker, however many func_ids use them. docs/kernels.md shows the
// whole path from C++, C, Python and CMake. The container's byte layout is the runtime's business,
// not part of this API: treat it as opaque bytes, store or send it as they are, and rebuild it with
// the CallableBuilder of the runtime that loads it (a container from another version is refused
// with MalformedCallable). The Worker validates every container completely before using it.
//
// Lifetime and threading: CallableBuilder and ArgSignature are values with no shared state; use
// one builder per thread. build() copies what it was given, so the sources may go away after it.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
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
// A kernel symbol is a C identifier ([A-Za-z_][A-Za-z0-9_]*) of at most this many characters: the
// name an `extern "C"` function is exported under.
inline constexpr uint32_t kMaxKernelSymbolBytes = 255;
// A display name is 1..kMaxKernelNameBytes printable ASCII characters (space to '~').
inline constexpr uint32_t kMaxKernelNameBytes = 64;

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
  // The kernel `symbol` of a shared object under `func_id`; `name` is its display name (empty: the
  // symbol). Several calls may pass the same object with different symbols (one object, several
  // kernels) or the same symbol (one kernel under several func_ids); the container holds the
  // object once. The symbol is resolved when the Worker registers the container: a symbol the
  // object does not export fails there with LoadFailed naming it.
  CallableBuilder& kernel_object(int32_t func_id, CoreType core, std::span<const uint8_t> so_bytes,
                                 const ArgSignature& sig, std::string_view symbol = kKernelSymbol,
                                 std::string_view name = {});
  // An in-process function under `func_id`; it has no symbol, and `name` is its display name
  // (empty: the kernel is shown as "func <func_id>").
  CallableBuilder& kernel_function(int32_t func_id, CoreType core, KernelEntry fn,
                                   const ArgSignature& sig, std::string_view name = {});
  // Throws Error(EmptyCallable) without an orchestration or kernels, InvalidArgument for a
  // duplicate or out-of-range func_id, a symbol that is not a C identifier or a display name that
  // is not 1..kMaxKernelNameBytes printable ASCII characters.
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
    std::string symbol;  // empty for an in-process function
    std::string name;    // empty: the default
  };
  bool has_orchestration_ = false;
  Object orchestration_{};
  ArgSignature orchestration_sig_{};
  std::vector<Kernel> kernels_;
};

}  // namespace chiprt
