// Callable containers of format version 2, written exactly as the version 2 CallableBuilder wrote
// them (header, orchestration descriptor, 64-byte kernel descriptors without symbols or names,
// then each object 64-byte aligned), so the tests prove that today's runtime still reads them.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "chiprt/callable.h"
#include "common/callable_format.h"

namespace chiprt::test {

struct V2Object {
  ObjectKind kind = ObjectKind::SharedObject;
  std::vector<uint8_t> bytes;
};
inline V2Object v2_object(std::vector<uint8_t> shared_object) {
  return {ObjectKind::SharedObject, std::move(shared_object)};
}
// An in-process function (8 bytes: its address).
inline V2Object v2_function(uint64_t addr) {
  V2Object o{ObjectKind::InProcess, std::vector<uint8_t>(sizeof(addr))};
  std::memcpy(o.bytes.data(), &addr, sizeof(addr));
  return o;
}

struct V2Kernel {
  int32_t func_id = 0;
  CoreType core = CoreType::AIV;
  V2Object object;
  ArgSignature sig;
};

inline SignatureDesc v2_signature(const ArgSignature& sig) {
  SignatureDesc d{};
  d.tensor_count = sig.tensor_count;
  d.scalar_count = sig.scalar_count;
  for (int i = 0; i < sig.tensor_count; ++i) d.tags[i] = static_cast<uint8_t>(sig.tags[i]);
  return d;
}

inline std::vector<uint8_t> version2_container(const V2Object& orchestration,
                                               const ArgSignature& orchestration_sig,
                                               const std::vector<V2Kernel>& kernels) {
  const uint64_t table = sizeof(ContainerHeader) + sizeof(OrchestrationDesc);
  uint64_t cursor = table + kernels.size() * sizeof(KernelDescV2);
  auto place = [&](const V2Object& o) {
    const uint64_t offset = (cursor + kObjectAlign - 1) / kObjectAlign * kObjectAlign;
    cursor = offset + o.bytes.size();
    return ObjectDesc{static_cast<uint32_t>(o.kind), 0, offset, o.bytes.size(),
                      content_hash64(o.bytes)};
  };
  const ObjectDesc orch = place(orchestration);
  std::vector<ObjectDesc> objects;
  for (const V2Kernel& k : kernels) objects.push_back(place(k.object));
  std::vector<uint8_t> out(cursor, 0);
  ContainerHeader header{};
  std::memcpy(header.magic, kCallableMagic, sizeof(header.magic));
  header.version = 2;
  header.header_size = sizeof(ContainerHeader);
  header.total_size = out.size();
  header.kernel_count = static_cast<uint32_t>(kernels.size());
  header.orchestration_offset = sizeof(ContainerHeader);
  header.kernel_table_offset = table;
  std::memcpy(out.data(), &header, sizeof(header));
  const OrchestrationDesc orch_desc{orch, v2_signature(orchestration_sig)};
  std::memcpy(out.data() + sizeof(ContainerHeader), &orch_desc, sizeof(orch_desc));
  std::memcpy(out.data() + orch.offset, orchestration.bytes.data(), orchestration.bytes.size());
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    KernelDescV2 desc{};
    desc.func_id = kernels[i].func_id;
    desc.core_type = static_cast<uint8_t>(kernels[i].core);
    desc.object = objects[i];
    desc.signature = v2_signature(kernels[i].sig);
    std::memcpy(out.data() + table + i * sizeof(KernelDescV2), &desc, sizeof(desc));
    std::memcpy(out.data() + objects[i].offset, kernels[i].object.bytes.data(),
                kernels[i].object.bytes.size());
  }
  return out;
}

}  // namespace chiprt::test
