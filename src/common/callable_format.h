// The chip callable container's wire format: the byte layout CallableBuilder writes and
// parse_callable reads. Not part of the public API (include/chiprt/callable.h is): a container is
// opaque bytes to its users, and only the runtime (the host's callable registry, the platform's
// object loader, their tests and the parser's fuzz target) looks inside.
//
// Layout (little-endian, every offset relative to the container start; objects aligned to
// kObjectAlign):
//   ContainerHeader | OrchestrationDesc | KernelDesc[kernel_count] | strings | object bytes...
// An object is either a shared object image (ObjectKind::SharedObject, loaded from memory by the
// platform; it exports `chiprt_orchestration` and/or kernel symbols) or an in-process function
// pointer (ObjectKind::InProcess, 8 bytes, valid only inside the process that built it; for
// embedding). Each object's descriptor carries its checksum (content_hash64 of its bytes). Several
// descriptors may name the same object bytes (one object holding several kernels is stored once).
// A kernel descriptor names its symbol (a C identifier; none for an in-process function) and its
// display name (printable ASCII; none: the symbol), as byte ranges of the strings area, without
// terminators.
//
// Versions: 3 (this layout) is what the builder writes. 2 is read too: its KernelDescV2 has no
// symbol or name, and each of its shared-object kernels is `kernel_entry`, named so. 1 (no object
// checksums) is refused.
//
// parse_callable validates every size, offset, alignment and count before touching object bytes,
// then every object's checksum, and never crashes on hostile input. Plain data and pure functions:
// thread-safe; a ParsedCallable borrows the parsed bytes (its objects) and is valid while they are.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "chiprt/callable.h"
#include "chiprt/status.h"

namespace chiprt {

inline constexpr char kCallableMagic[8] = {'C', 'H', 'I', 'P', 'R', 'T', 'C', 'B'};
// Version 2 added ObjectDesc::checksum, version 3 each kernel's symbol and display name.
inline constexpr uint32_t kCallableVersion = 3;
// The oldest version parse_callable reads.
inline constexpr uint32_t kCallableOldestReadVersion = 2;
inline constexpr uint64_t kObjectAlign = 64;

enum class ObjectKind : uint32_t { SharedObject = 1, InProcess = 2 };

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
// A string of the strings area: `size` bytes at `offset`; size 0 (and offset 0): none.
struct StringDesc {
  uint64_t offset;
  uint32_t size;
  uint32_t reserved;
};
struct KernelDesc {
  int32_t func_id;
  uint8_t core_type;  // CoreType
  uint8_t reserved[3];
  ObjectDesc object;
  SignatureDesc signature;
  StringDesc symbol;  // required for a shared object, none for an in-process function
  StringDesc name;    // none: the symbol
};
// The kernel descriptor of version 2 containers (read only).
struct KernelDescV2 {
  int32_t func_id;
  uint8_t core_type;  // CoreType
  uint8_t reserved[3];
  ObjectDesc object;
  SignatureDesc signature;
};
#pragma pack(pop)

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
  std::string symbol;  // the symbol to resolve in `object`; empty for an in-process function
  std::string name;    // the display name (the symbol unless the container gave one); may be
                       // empty only for an in-process function
};
struct ParsedCallable {
  ParsedObject orchestration;
  ArgSignature orchestration_signature;
  std::vector<ParsedKernel> kernels;
  uint32_t version = kCallableVersion;  // the container's format version
  uint64_t content_hash = 0;            // over the whole container
  uint64_t kernel_image_hash = 0;       // over the kernels (func_ids, cores, signatures,
                                        // symbols, names, objects) only
};

// Why `symbol` is not a kernel symbol (a C identifier of 1..kMaxKernelSymbolBytes characters),
// or nullptr when it is; the same for a display name (1..kMaxKernelNameBytes printable ASCII
// characters). The builder and the parser share these rules.
const char* kernel_symbol_problem(std::string_view symbol) noexcept;
const char* kernel_name_problem(std::string_view name) noexcept;

// Validates `bytes` completely (an object whose bytes do not match its checksum included); on
// failure returns MalformedCallable (or EmptyCallable) with a message naming the field or the
// object, and leaves `out` unspecified. Reads versions
// kCallableOldestReadVersion..kCallableVersion.
Status parse_callable(std::span<const uint8_t> bytes, ParsedCallable* out);

// 64-bit content hash used for deduplication (XXH3).
uint64_t content_hash64(std::span<const uint8_t> bytes) noexcept;

}  // namespace chiprt
