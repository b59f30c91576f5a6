#include "chiprt/callable.h"
#include "common/callable_format.h"

#include <xxhash.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

namespace chiprt {

ArgSignature ArgSignature::of(std::initializer_list<ArgTag> tags, uint8_t scalar_count) {
  if (tags.size() > static_cast<std::size_t>(kMaxTaskTensors) || scalar_count > kMaxTaskScalars) {
    throw Error(StatusCode::TooManyArgs,
                "signature with " + std::to_string(tags.size()) + " tensors and " +
                    std::to_string(scalar_count) +
                    " scalars exceeds kMaxTaskTensors=" + std::to_string(kMaxTaskTensors) +
                    " / kMaxTaskScalars=" + std::to_string(kMaxTaskScalars));
  }
  ArgSignature sig;
  sig.tensor_count = static_cast<uint8_t>(tags.size());
  sig.scalar_count = scalar_count;
  int i = 0;
  for (ArgTag tag : tags) sig.tags[i++] = tag;
  return sig;
}

namespace {

static_assert(sizeof(ContainerHeader) == 48, "ContainerHeader layout is part of the format");
static_assert(sizeof(OrchestrationDesc) == 56, "OrchestrationDesc layout is part of the format");
static_assert(sizeof(KernelDesc) == 96, "KernelDesc layout is part of the format");
static_assert(sizeof(KernelDescV2) == 64, "KernelDescV2 layout is part of the format");
static_assert(kMaxKernelSymbolBytes == 255 && kMaxKernelNameBytes == 64,
              "the limits are spelled out in the messages below");
static_assert(std::endian::native == std::endian::little,
              "the container format is little-endian; add byte swapping for this host");

constexpr uint64_t kDescAlign = 8;
constexpr uint64_t kInProcessObjectBytes = 8;

uint64_t align_up(uint64_t v, uint64_t a) {
  return (v + a - 1) / a * a;
}

// ---- builder ---------------------------------------------------------------------------------

void check_signature_for_build(const ArgSignature& sig, const std::string& what) {
  if (sig.tensor_count > kMaxTaskTensors) {
    throw Error(StatusCode::InvalidArgument,
                what + " signature: tensor_count " + std::to_string(sig.tensor_count) +
                    " exceeds kMaxTaskTensors (" + std::to_string(kMaxTaskTensors) + ")");
  }
  if (sig.scalar_count > kMaxTaskScalars) {
    throw Error(StatusCode::InvalidArgument,
                what + " signature: scalar_count " + std::to_string(sig.scalar_count) +
                    " exceeds kMaxTaskScalars (" + std::to_string(kMaxTaskScalars) + ")");
  }
  for (int i = 0; i < sig.tensor_count; ++i) {
    if (static_cast<int>(sig.tags[i]) >= kArgTagCount) {
      throw Error(StatusCode::InvalidArgument,
                  what + " signature: tags[" + std::to_string(i) +
                      "]=" + std::to_string(static_cast<int>(sig.tags[i])) + " is not an ArgTag");
    }
  }
}

void check_object_for_build(ObjectKind kind, std::size_t size, const std::string& what) {
  if (kind == ObjectKind::SharedObject && (size == 0 || size > kMaxObjectBytes)) {
    throw Error(StatusCode::InvalidArgument,
                what + " object: " + std::to_string(size) + " bytes; a shared object must be 1.." +
                    std::to_string(kMaxObjectBytes) + " bytes (kMaxObjectBytes)");
  }
}

SignatureDesc encode_signature(const ArgSignature& sig) {
  SignatureDesc d{};
  d.tensor_count = sig.tensor_count;
  d.scalar_count = sig.scalar_count;
  // Tags past tensor_count stay zero so that equal signatures encode to equal bytes.
  for (int i = 0; i < sig.tensor_count; ++i) d.tags[i] = static_cast<uint8_t>(sig.tags[i]);
  return d;
}

std::vector<uint8_t> function_bytes(uint64_t addr, const char* what) {
  if (addr == 0) {
    throw Error(StatusCode::InvalidArgument, std::string(what) + ": function pointer is null");
  }
  std::vector<uint8_t> bytes(kInProcessObjectBytes);
  std::memcpy(bytes.data(), &addr, sizeof(addr));
  return bytes;
}

// ---- parser ----------------------------------------------------------------------------------

Status malformed(std::string message) {
  return Status(StatusCode::MalformedCallable, std::move(message));
}

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%016llx", static_cast<unsigned long long>(v));
  return buf;
}

template <class T>
T load(std::span<const uint8_t> bytes, uint64_t offset) {
  T v;
  std::memcpy(&v, bytes.data() + offset, sizeof(T));
  return v;
}

// Checks that [offset, offset + size) lies inside a container of `total` bytes, is aligned, and
// starts at or after `floor`, the end of what precedes it (`floor_name`).
Status check_range(const std::string& field, uint64_t offset, uint64_t size, uint64_t align,
                   uint64_t floor, const char* floor_name, uint64_t total, uint64_t* end) {
  if (offset % align != 0) {
    return malformed(field + ".offset=" + std::to_string(offset) + " is not " +
                     std::to_string(align) + "-byte aligned");
  }
  if (offset < floor) {
    return malformed(field + ".offset=" + std::to_string(offset) + " overlaps the " + floor_name +
                     " (which ends at " + std::to_string(floor) + ")");
  }
  if (__builtin_add_overflow(offset, size, end) || *end > total) {
    return malformed(field + ": offset " + std::to_string(offset) + " + size " +
                     std::to_string(size) + " exceeds the container size " + std::to_string(total));
  }
  return Status::ok();
}

Status decode_signature(const SignatureDesc& d, const std::string& field, ArgSignature* out) {
  if (d.tensor_count > kMaxTaskTensors) {
    return malformed(field + ".tensor_count=" + std::to_string(d.tensor_count) +
                     " exceeds kMaxTaskTensors (" + std::to_string(kMaxTaskTensors) + ")");
  }
  if (d.scalar_count > kMaxTaskScalars) {
    return malformed(field + ".scalar_count=" + std::to_string(d.scalar_count) +
                     " exceeds kMaxTaskScalars (" + std::to_string(kMaxTaskScalars) + ")");
  }
  *out = ArgSignature{};
  out->tensor_count = d.tensor_count;
  out->scalar_count = d.scalar_count;
  for (int i = 0; i < kMaxTaskTensors; ++i) {
    if (i < d.tensor_count && d.tags[i] >= kArgTagCount) {
      return malformed(field + ".tags[" + std::to_string(i) + "]=" + std::to_string(d.tags[i]) +
                       " is not an ArgTag (0.." + std::to_string(kArgTagCount - 1) + ")");
    }
    if (i >= d.tensor_count && d.tags[i] != 0) {
      return malformed(field + ".tags[" + std::to_string(i) + "]=" + std::to_string(d.tags[i]) +
                       " must be 0 past tensor_count " + std::to_string(d.tensor_count));
    }
    if (i < d.tensor_count) out->tags[i] = static_cast<ArgTag>(d.tags[i]);
  }
  for (std::size_t i = 0; i < sizeof(d.reserved); ++i) {
    if (d.reserved[i] != 0) {
      return malformed(field + ".reserved[" + std::to_string(i) +
                       "]=" + std::to_string(d.reserved[i]) + " must be 0");
    }
  }
  return Status::ok();
}

Status decode_object(std::span<const uint8_t> bytes, const ObjectDesc& d, const std::string& field,
                     uint64_t descriptors_end, ParsedObject* out) {
  if (d.kind != static_cast<uint32_t>(ObjectKind::SharedObject) &&
      d.kind != static_cast<uint32_t>(ObjectKind::InProcess)) {
    return malformed(field + ".kind=" + std::to_string(d.kind) +
                     " is not an object kind (1 = shared object, 2 = in-process function)");
  }
  if (d.reserved != 0) {
    return malformed(field + ".reserved=" + std::to_string(d.reserved) + " must be 0");
  }
  const auto kind = static_cast<ObjectKind>(d.kind);
  if (kind == ObjectKind::InProcess && d.size != kInProcessObjectBytes) {
    return malformed(field + ".size=" + std::to_string(d.size) +
                     " must be 8 for an in-process function");
  }
  if (kind == ObjectKind::SharedObject && (d.size == 0 || d.size > kMaxObjectBytes)) {
    return malformed(field + ".size=" + std::to_string(d.size) + " must be in [1, " +
                     std::to_string(kMaxObjectBytes) + "] (kMaxObjectBytes) for a shared object");
  }
  uint64_t end = 0;
  Status s = check_range(field, d.offset, d.size, kObjectAlign, descriptors_end, "descriptors",
                         bytes.size(), &end);
  if (!s.is_ok()) return s;
  out->kind = kind;
  out->bytes = bytes.subspan(d.offset, d.size);
  out->checksum = d.checksum;
  return Status::ok();
}

// Runs only after every descriptor was validated: these are the first reads of object bytes.
Status check_object_bytes(const ParsedObject& o, const std::string& field) {
  const uint64_t actual = content_hash64(o.bytes);
  if (actual != o.checksum) {
    return malformed(field + ": checksum " + hex(o.checksum) +
                     " does not match the object's bytes (" + hex(actual) +
                     "): the object was corrupted after the container was built");
  }
  if (o.kind == ObjectKind::InProcess && o.function_addr() == 0) {
    return malformed(field + ": in-process function address is null");
  }
  return Status::ok();
}

KernelDesc load_kernel_desc(std::span<const uint8_t> bytes, uint64_t offset, uint32_t version) {
  if (version >= 3) return load<KernelDesc>(bytes, offset);
  const auto old = load<KernelDescV2>(bytes, offset);
  KernelDesc desc{};
  desc.func_id = old.func_id;
  desc.core_type = old.core_type;
  std::memcpy(desc.reserved, old.reserved, sizeof(desc.reserved));
  desc.object = old.object;
  desc.signature = old.signature;
  return desc;
}

// One string of the strings area, checked for its range (`out` gets its bytes).
Status decode_string(std::span<const uint8_t> bytes, const StringDesc& d, const std::string& field,
                     uint64_t descriptors_end, std::string* out) {
  if (d.reserved != 0) {
    return malformed(field + ".reserved=" + std::to_string(d.reserved) + " must be 0");
  }
  if (d.size == 0) {
    if (d.offset != 0) {
      return malformed(field + ".offset=" + std::to_string(d.offset) + " must be 0 for no string");
    }
    out->clear();
    return Status::ok();
  }
  uint64_t end = 0;
  Status s =
      check_range(field, d.offset, d.size, 1, descriptors_end, "descriptors", bytes.size(), &end);
  if (!s.is_ok()) return s;
  out->assign(reinterpret_cast<const char*>(bytes.data() + d.offset), d.size);
  return Status::ok();
}

// A version 3 kernel's symbol (required for a shared object, absent for an in-process function)
// and display name (absent: the symbol).
Status decode_kernel_strings(std::span<const uint8_t> bytes, const KernelDesc& desc,
                             const std::string& field, uint64_t descriptors_end, ParsedKernel* k) {
  Status s = decode_string(bytes, desc.symbol, field + ".symbol", descriptors_end, &k->symbol);
  if (!s.is_ok()) return s;
  if (k->object.kind == ObjectKind::InProcess && !k->symbol.empty()) {
    return malformed(field + ".symbol.size=" + std::to_string(k->symbol.size()) +
                     " must be 0 for an in-process function");
  }
  if (k->object.kind == ObjectKind::SharedObject) {
    if (const char* problem = kernel_symbol_problem(k->symbol)) {
      return malformed(field + ".symbol " + problem);
    }
  }
  s = decode_string(bytes, desc.name, field + ".name", descriptors_end, &k->name);
  if (!s.is_ok()) return s;
  if (k->name.empty()) {
    k->name = k->symbol;
  } else if (const char* problem = kernel_name_problem(k->name)) {
    return malformed(field + ".name " + problem);
  }
  return Status::ok();
}

}  // namespace

const char* kernel_symbol_problem(std::string_view symbol) noexcept {
  if (symbol.empty()) return "is empty";
  if (symbol.size() > kMaxKernelSymbolBytes) {
    return "is longer than kMaxKernelSymbolBytes (255) characters";
  }
  auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!letter(symbol[0])) return "is not a C identifier (it must start with a letter or '_')";
  for (char c : symbol) {
    if (!letter(c) && !(c >= '0' && c <= '9')) {
      return "is not a C identifier (letters, digits and '_' only)";
    }
  }
  return nullptr;
}

const char* kernel_name_problem(std::string_view name) noexcept {
  if (name.empty()) return "is empty";
  if (name.size() > kMaxKernelNameBytes)
    return "is longer than kMaxKernelNameBytes (64) characters";
  for (char c : name) {
    if (c < ' ' || c > '~') return "is not printable ASCII (space to '~')";
  }
  return nullptr;
}

// ---- CallableBuilder -------------------------------------------------------------------------

CallableBuilder& CallableBuilder::orchestration_object(std::span<const uint8_t> so_bytes,
                                                       const ArgSignature& sig) {
  has_orchestration_ = true;
  orchestration_ = Object{ObjectKind::SharedObject, {so_bytes.begin(), so_bytes.end()}};
  orchestration_sig_ = sig;
  return *this;
}

CallableBuilder& CallableBuilder::orchestration_function(OrchestrationEntry fn,
                                                         const ArgSignature& sig) {
  has_orchestration_ = true;
  orchestration_ = Object{ObjectKind::InProcess,
                          function_bytes(reinterpret_cast<uint64_t>(fn), "orchestration_function")};
  orchestration_sig_ = sig;
  return *this;
}

CallableBuilder& CallableBuilder::kernel_object(int32_t func_id, CoreType core,
                                                std::span<const uint8_t> so_bytes,
                                                const ArgSignature& sig, std::string_view symbol,
                                                std::string_view name) {
  kernels_.push_back(Kernel{func_id, core,
                            Object{ObjectKind::SharedObject, {so_bytes.begin(), so_bytes.end()}},
                            sig, std::string(symbol), std::string(name)});
  return *this;
}

CallableBuilder& CallableBuilder::kernel_function(int32_t func_id, CoreType core, KernelEntry fn,
                                                  const ArgSignature& sig, std::string_view name) {
  kernels_.push_back(Kernel{
      func_id, core,
      Object{ObjectKind::InProcess,
             function_bytes(reinterpret_cast<uint64_t>(fn),
                            ("kernel_function(func_id=" + std::to_string(func_id) + ")").c_str())},
      sig, std::string(), std::string(name)});
  return *this;
}

std::vector<uint8_t> CallableBuilder::build() const {
  if (!has_orchestration_) {
    throw Error(StatusCode::EmptyCallable, "callable has no orchestration object or function");
  }
  if (kernels_.empty()) throw Error(StatusCode::EmptyCallable, "callable has no kernels");
  if (kernels_.size() > kMaxKernelsPerCallable) {
    throw Error(StatusCode::InvalidArgument,
                "callable has " + std::to_string(kernels_.size()) + " kernels, more than " +
                    std::to_string(kMaxKernelsPerCallable) + " (kMaxKernelsPerCallable)");
  }
  check_object_for_build(orchestration_.kind, orchestration_.bytes.size(), "orchestration");
  check_signature_for_build(orchestration_sig_, "orchestration");
  int first_kernel_with[kMaxFuncId];
  std::fill(std::begin(first_kernel_with), std::end(first_kernel_with), -1);
  for (std::size_t i = 0; i < kernels_.size(); ++i) {
    const Kernel& k = kernels_[i];
    const std::string what =
        "kernel " + std::to_string(i) + " (func_id " + std::to_string(k.func_id) + ")";
    if (k.func_id < 0 || k.func_id >= kMaxFuncId) {
      throw Error(StatusCode::InvalidArgument, what + ": func_id must be in [0, " +
                                                   std::to_string(kMaxFuncId) + ") (kMaxFuncId)");
    }
    if (first_kernel_with[k.func_id] >= 0) {
      throw Error(StatusCode::InvalidArgument, what + ": func_id already used by kernel " +
                                                   std::to_string(first_kernel_with[k.func_id]));
    }
    first_kernel_with[k.func_id] = static_cast<int>(i);
    if (static_cast<int>(k.core) >= kCoreTypeCount) {
      throw Error(StatusCode::InvalidArgument, what + ": core type " +
                                                   std::to_string(static_cast<int>(k.core)) +
                                                   " is not AIC, AIV or MIX");
    }
    check_object_for_build(k.object.kind, k.object.bytes.size(), what);
    check_signature_for_build(k.sig, what);
    if (k.object.kind == ObjectKind::SharedObject) {
      if (const char* problem = kernel_symbol_problem(k.symbol)) {
        throw Error(StatusCode::InvalidArgument,
                    what + ": symbol '" + k.symbol + "' " + problem +
                        "; name the extern \"C\" function the object exports");
      }
    }
    if (!k.name.empty()) {
      if (const char* problem = kernel_name_problem(k.name)) {
        throw Error(StatusCode::InvalidArgument,
                    what + ": display name '" + k.name + "' " + problem);
      }
    }
  }

  const uint64_t orch_desc_offset = sizeof(ContainerHeader);
  const uint64_t kernel_table_offset = orch_desc_offset + sizeof(OrchestrationDesc);
  uint64_t cursor = kernel_table_offset + kernels_.size() * sizeof(KernelDesc);
  // The strings area: each kernel's symbol and given name, packed.
  std::string strings;
  auto add_string = [&](const std::string& text) {
    if (text.empty()) return StringDesc{};
    const StringDesc desc{cursor + strings.size(), static_cast<uint32_t>(text.size()), 0};
    strings += text;
    return desc;
  };
  std::vector<std::pair<StringDesc, StringDesc>> kernel_strings;
  kernel_strings.reserve(kernels_.size());
  for (const Kernel& k : kernels_) {
    const StringDesc symbol = add_string(k.symbol);
    kernel_strings.emplace_back(symbol, add_string(k.name));
  }
  cursor += strings.size();
  // Objects: each distinct one once (several kernels of one object share its bytes).
  std::vector<const Object*> placed;
  std::vector<ObjectDesc> placed_descs;
  auto place = [&](const Object& o) {
    const uint64_t checksum = content_hash64(o.bytes);
    for (std::size_t i = 0; i < placed.size(); ++i) {
      if (placed[i]->kind == o.kind && placed_descs[i].checksum == checksum &&
          placed[i]->bytes == o.bytes) {
        return placed_descs[i];
      }
    }
    const uint64_t offset = align_up(cursor, kObjectAlign);
    cursor = offset + o.bytes.size();
    placed.push_back(&o);
    placed_descs.push_back(
        ObjectDesc{static_cast<uint32_t>(o.kind), 0, offset, o.bytes.size(), checksum});
    return placed_descs.back();
  };
  const ObjectDesc orch_object = place(orchestration_);
  std::vector<ObjectDesc> kernel_objects;
  kernel_objects.reserve(kernels_.size());
  for (const Kernel& k : kernels_) kernel_objects.push_back(place(k.object));

  std::vector<uint8_t> out(cursor, 0);
  ContainerHeader header{};
  std::memcpy(header.magic, kCallableMagic, sizeof(header.magic));
  header.version = kCallableVersion;
  header.header_size = sizeof(ContainerHeader);
  header.total_size = out.size();
  header.kernel_count = static_cast<uint32_t>(kernels_.size());
  header.orchestration_offset = orch_desc_offset;
  header.kernel_table_offset = kernel_table_offset;
  std::memcpy(out.data(), &header, sizeof(header));

  const OrchestrationDesc orch{orch_object, encode_signature(orchestration_sig_)};
  std::memcpy(out.data() + orch_desc_offset, &orch, sizeof(orch));
  for (std::size_t i = 0; i < placed.size(); ++i) {
    std::memcpy(out.data() + placed_descs[i].offset, placed[i]->bytes.data(),
                placed[i]->bytes.size());
  }
  std::memcpy(out.data() + kernel_table_offset + kernels_.size() * sizeof(KernelDesc),
              strings.data(), strings.size());
  for (std::size_t i = 0; i < kernels_.size(); ++i) {
    const Kernel& k = kernels_[i];
    KernelDesc desc{};
    desc.func_id = k.func_id;
    desc.core_type = static_cast<uint8_t>(k.core);
    desc.object = kernel_objects[i];
    desc.signature = encode_signature(k.sig);
    desc.symbol = kernel_strings[i].first;
    desc.name = kernel_strings[i].second;
    std::memcpy(out.data() + kernel_table_offset + i * sizeof(KernelDesc), &desc, sizeof(desc));
  }
  return out;
}

// ---- parse_callable --------------------------------------------------------------------------

uint64_t ParsedObject::function_addr() const noexcept {
  if (kind != ObjectKind::InProcess || bytes.size() != kInProcessObjectBytes) return 0;
  uint64_t addr = 0;
  std::memcpy(&addr, bytes.data(), sizeof(addr));
  return addr;
}

Status parse_callable(std::span<const uint8_t> bytes, ParsedCallable* out) {
  const uint64_t total = bytes.size();
  if (total < sizeof(ContainerHeader)) {
    return malformed("container is " + std::to_string(total) + " bytes, smaller than the " +
                     std::to_string(sizeof(ContainerHeader)) + "-byte header");
  }
  const auto header = load<ContainerHeader>(bytes, 0);
  if (std::memcmp(header.magic, kCallableMagic, sizeof(header.magic)) != 0) {
    return malformed("header.magic is not \"CHIPRTCB\": not a chip callable container");
  }
  if (header.version < kCallableOldestReadVersion || header.version > kCallableVersion) {
    return malformed(
        "header.version=" + std::to_string(header.version) + " is not supported (" +
        std::to_string(kCallableOldestReadVersion) + ".." + std::to_string(kCallableVersion) +
        " are" + (header.version == 1 ? "; version 1 containers carry no object checksums" : "") +
        "); rebuild the container with this runtime's CallableBuilder");
  }
  const std::size_t kernel_desc_bytes =
      header.version >= 3 ? sizeof(KernelDesc) : sizeof(KernelDescV2);
  if (header.header_size != sizeof(ContainerHeader)) {
    return malformed("header.header_size=" + std::to_string(header.header_size) + " must be " +
                     std::to_string(sizeof(ContainerHeader)));
  }
  if (header.total_size != total) {
    return malformed("header.total_size=" + std::to_string(header.total_size) +
                     " does not match the container size " + std::to_string(total) +
                     " (truncated or padded)");
  }
  if (header.reserved != 0) {
    return malformed("header.reserved=" + std::to_string(header.reserved) + " must be 0");
  }
  if (header.kernel_count > kMaxKernelsPerCallable) {
    return malformed("header.kernel_count=" + std::to_string(header.kernel_count) +
                     " exceeds kMaxKernelsPerCallable (" + std::to_string(kMaxKernelsPerCallable) +
                     ")");
  }

  uint64_t orch_end = 0;
  Status s =
      check_range("header.orchestration", header.orchestration_offset, sizeof(OrchestrationDesc),
                  kDescAlign, sizeof(ContainerHeader), "header", total, &orch_end);
  if (!s.is_ok()) return s;
  const uint64_t table_bytes = uint64_t{header.kernel_count} * kernel_desc_bytes;
  uint64_t table_end = 0;
  s = check_range("header.kernel_table", header.kernel_table_offset, table_bytes, kDescAlign,
                  sizeof(ContainerHeader), "header", total, &table_end);
  if (!s.is_ok()) return s;
  if (header.kernel_table_offset < orch_end && header.orchestration_offset < table_end) {
    return malformed("header.kernel_table_offset=" + std::to_string(header.kernel_table_offset) +
                     " overlaps the orchestration descriptor at " +
                     std::to_string(header.orchestration_offset));
  }
  if (header.kernel_count == 0) {
    return Status(StatusCode::EmptyCallable, "header.kernel_count=0: the callable has no kernels");
  }
  // Objects live after every descriptor.
  const uint64_t descriptors_end = std::max(orch_end, table_end);

  ParsedCallable parsed;
  const auto orch = load<OrchestrationDesc>(bytes, header.orchestration_offset);
  s = decode_object(bytes, orch.object, "orchestration.object", descriptors_end,
                    &parsed.orchestration);
  if (!s.is_ok()) return s;
  s = decode_signature(orch.signature, "orchestration.signature", &parsed.orchestration_signature);
  if (!s.is_ok()) return s;

  int first_kernel_with[kMaxFuncId];
  std::fill(std::begin(first_kernel_with), std::end(first_kernel_with), -1);
  parsed.version = header.version;
  parsed.kernels.resize(header.kernel_count);
  for (uint32_t i = 0; i < header.kernel_count; ++i) {
    const std::string field = "kernel[" + std::to_string(i) + "]";
    const uint64_t desc_offset = header.kernel_table_offset + uint64_t{i} * kernel_desc_bytes;
    const KernelDesc desc = load_kernel_desc(bytes, desc_offset, header.version);
    ParsedKernel& k = parsed.kernels[i];
    if (desc.func_id < 0 || desc.func_id >= kMaxFuncId) {
      return malformed(field + ".func_id=" + std::to_string(desc.func_id) + " is outside [0, " +
                       std::to_string(kMaxFuncId) + ")");
    }
    if (first_kernel_with[desc.func_id] >= 0) {
      return malformed(field + ".func_id=" + std::to_string(desc.func_id) + " duplicates kernel[" +
                       std::to_string(first_kernel_with[desc.func_id]) + "]");
    }
    first_kernel_with[desc.func_id] = static_cast<int>(i);
    if (desc.core_type >= kCoreTypeCount) {
      return malformed(field + ".core_type=" + std::to_string(desc.core_type) +
                       " is not AIC (0), AIV (1) or MIX (2)");
    }
    for (std::size_t r = 0; r < sizeof(desc.reserved); ++r) {
      if (desc.reserved[r] != 0) {
        return malformed(field + ".reserved[" + std::to_string(r) +
                         "]=" + std::to_string(desc.reserved[r]) + " must be 0");
      }
    }
    k.func_id = desc.func_id;
    k.core = static_cast<CoreType>(desc.core_type);
    s = decode_object(bytes, desc.object, field + ".object", descriptors_end, &k.object);
    if (!s.is_ok()) return s;
    s = decode_signature(desc.signature, field + ".signature", &k.signature);
    if (!s.is_ok()) return s;
    if (header.version < 3) {
      // Version 2: every shared-object kernel is `kernel_entry`, and is called so.
      if (k.object.kind == ObjectKind::SharedObject) k.symbol = k.name = kKernelSymbol;
      continue;
    }
    s = decode_kernel_strings(bytes, desc, field, descriptors_end, &k);
    if (!s.is_ok()) return s;
  }

  s = check_object_bytes(parsed.orchestration, "orchestration.object");
  if (!s.is_ok()) return s;
  for (uint32_t i = 0; i < header.kernel_count; ++i) {
    s = check_object_bytes(parsed.kernels[i].object, "kernel[" + std::to_string(i) + "] (func_id " +
                                                         std::to_string(parsed.kernels[i].func_id) +
                                                         ").object");
    if (!s.is_ok()) return s;
  }

  parsed.content_hash = content_hash64(bytes);
  // The kernel image hash covers what the kernels are, not where they sit (object offsets move
  // when the orchestration object changes size) nor how the container spelled them (a version 2
  // container and the version 3 one built from the same kernels hash alike).
  XXH3_state_t* state = XXH3_createState();
  if (state == nullptr) return Status(StatusCode::InternalError, "XXH3_createState failed");
  XXH3_64bits_reset(state);
  for (const ParsedKernel& k : parsed.kernels) {
    const SignatureDesc signature = encode_signature(k.signature);
    const uint64_t fields[] = {static_cast<uint64_t>(k.func_id),
                               static_cast<uint64_t>(k.core),
                               static_cast<uint64_t>(k.object.kind),
                               k.object.bytes.size(),
                               k.symbol.size(),
                               k.name.size()};
    XXH3_64bits_update(state, fields, sizeof(fields));
    XXH3_64bits_update(state, &signature, sizeof(signature));
    XXH3_64bits_update(state, k.symbol.data(), k.symbol.size());
    XXH3_64bits_update(state, k.name.data(), k.name.size());
    XXH3_64bits_update(state, k.object.bytes.data(), k.object.bytes.size());
  }
  parsed.kernel_image_hash = XXH3_64bits_digest(state);
  XXH3_freeState(state);

  *out = std::move(parsed);
  return Status::ok();
}

uint64_t content_hash64(std::span<const uint8_t> bytes) noexcept {
  return XXH3_64bits(bytes.data(), bytes.size());
}

}  // namespace chiprt
