// Chip callable container: one self-describing binary holding an orchestration object and the
// kernel objects it calls.
//
// Layout (little-endian, every offset relative to the container start, aligned to kObjectAlign):
//   ContainerHeader | OrchestrationDesc | KernelDesc[kernel_count] | object bytes...
// An object is either a shared object image (ObjectKind::SharedObject, loaded from memory by the
// platform; it exports `chiprt_orchestration` or `kernel_entry`) or an in-process function pointer
// (ObjectKind::InProcess, 8 bytes, valid only inside the process that built it; for embedding).
// Each object's descriptor carries its checksum (content_hash64 of its bytes).
//
// CallableBuilder produces containers; parse_callable validates every size, offset, alignment and
// count before touching object bytes, then every object's checksum, and never crashes on hostile
// input. Both are values with no shared state: use one per thread.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "chiprt/status.h"
#include "chiprt/task_args.h"
#include "chiprt/types.h"

namespace chiprt {

class Orchestration;
// Entry point of an orchestration function; the symbol a shared object must export is
// `chiprt_orchestration`.
using OrchestrationEntry = void (*)(Orchestration& orch, const TaskArgs& args);
// Entry point of a kernel: tensor data pointers first, then scalars, then block index and block
// count. The symbol a kernel shared object must export is `kernel_entry`.
using KernelEntry = void (*)(int64_t* args);

inline constexpr char kOrchestrationSymbol[] = "chiprt_orchestration";
inline constexpr char kKernelSymbol[] = "kernel_entry";

inline constexpr char kCallableMagic[8] = {'C', 'H', 'I', 'P', 'R', 'T', 'C', 'B'};
// Version 2 added ObjectDesc::checksum; version 1 containers are refused (rebuild them).
inline constexpr uint32_t kCallableVersion = 2;
inline constexpr uint64_t kObjectAlign = 64;
inline constexpr uint32_t kMaxKernelsPerCallable = 128;
inline constexpr uint64_t kMaxObjectBytes = 256ull << 20;

enum class ObjectKind : uint32_t { SharedObject = 1, InProcess = 2 };

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

#pragma pack(push, 1)
struct ObjectDesc {
  uint32_t kind;  // ObjectKind
  uint32_t reserved;
  uint64_t offset;
  uint64_t size;
  uint64_t checksum;  // content_hash64 of the object's `size` bytes
};
struct SignatureDesc {
  uint8_t tensor_count;
  uint8_t scalar_count;
  uint8_t tags[kMaxTaskTensors];
  uint8_t reserved[6];
};
struct ContainerHeader {
  char magic[8];
  uint32_t version;
  uint32_t header_size;  // sizeof(ContainerHeader)
  uint64_t total_size;
  uint32_t kernel_count;
  uint32_t reserved;
  uint64_t orchestration_offset;  // OrchestrationDesc
  uint64_t kernel_table_offset;   // KernelDesc[kernel_count]
};
struct OrchestrationDesc {
  ObjectDesc object;
  SignatureDesc signature;
};
struct KernelDesc {
  int32_t func_id;
  uint8_t core_type;  // CoreType
  uint8_t reserved[3];
  ObjectDesc object;
  SignatureDesc signature;
};
#pragma pack(pop)

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

// A validated, non-owning view of a container. Spans point into the parsed bytes.
struct ParsedObject {
  ObjectKind kind = ObjectKind::SharedObject;
  std::span<const uint8_t> bytes;
  uint64_t checksum = 0;  // content_hash64(bytes), as parse_callable verified it
  // For InProcess objects: the function address.
  uint64_t function_addr() const noexcept;
};
struct ParsedKernel {
  int32_t func_id = 0;
  CoreType core = CoreType::AIC;
  ParsedObject object;
  ArgSignature signature;
};
struct ParsedCallable {
  ParsedObject orchestration;
  ArgSignature orchestration_signature;
  std::vector<ParsedKernel> kernels;
  uint64_t content_hash = 0;       // over the whole container
  uint64_t kernel_image_hash = 0;  // over the kernel descriptors and objects only
};

// Validates `bytes` completely (an object whose bytes do not match its checksum included); on
// failure returns MalformedCallable (or EmptyCallable) with a message naming the field or the
// object, and leaves `out` unspecified.
Status parse_callable(std::span<const uint8_t> bytes, ParsedCallable* out);

// 64-bit content hash used for deduplication (XXH3).
uint64_t content_hash64(std::span<const uint8_t> bytes) noexcept;

}  // namespace chiprt
