#include "common/task_args_wire.h"

#include <xxhash.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

namespace chiprt::common {
namespace {

// A new Tensor field must be carried by TensorWire (and bump kTaskArgsWireVersion).
static_assert(sizeof(Tensor) == 128, "Tensor changed: update TensorWire and the wire version");

void encode_tensor(const Tensor& t, uint8_t tag, TensorWire* out) {
  out->buffer_addr = t.buffer.addr;
  out->buffer_size = t.buffer.size;
  out->start_offset = t.start_offset;
  for (int d = 0; d < kMaxTensorDims; ++d) {
    out->shape[d] = t.shape[d];
    out->strides[d] = t.strides[d];
  }
  out->owner_task = t.owner_task;
  out->ndim = t.ndim;
  out->version = t.version;
  out->owner_run = t.owner_run;
  out->dtype = static_cast<uint8_t>(t.dtype);
  out->tag = tag;
}

Tensor decode_tensor(const TensorWire& w) {
  Tensor t;
  t.buffer.addr = w.buffer_addr;
  t.buffer.size = w.buffer_size;
  t.start_offset = w.start_offset;
  for (int d = 0; d < kMaxTensorDims; ++d) {
    t.shape[d] = w.shape[d];
    t.strides[d] = w.strides[d];
  }
  t.owner_task = w.owner_task;
  t.ndim = w.ndim;
  t.version = w.version;
  t.owner_run = w.owner_run;
  t.dtype = static_cast<DataType>(w.dtype);
  return t;
}

Status refuse(const std::string& what) {
  return Status(StatusCode::InternalError, "orchestration arguments (TaskArgs wire v" +
                                               std::to_string(kTaskArgsWireVersion) + "): " + what);
}

// Rank and dtype a decoded tensor must have (Tensor::make and TaskArgs::out enforce them).
Status check_tensor(const TensorWire& w, const std::string& name) {
  if (w.ndim > static_cast<uint32_t>(kMaxTensorDims)) {
    return refuse(name + " has rank " + std::to_string(w.ndim) + ", above " +
                  std::to_string(kMaxTensorDims));
  }
  if (element_size(static_cast<DataType>(w.dtype)) == 0) {
    return refuse(name + " has dtype value " + std::to_string(w.dtype) + ", not a DataType");
  }
  return Status::ok();
}

}  // namespace

uint64_t task_args_wire_checksum(const TaskArgsWire& wire) noexcept {
  TaskArgsWireHeader header = wire.header;
  header.checksum = 0;
  const uint64_t seed = XXH3_64bits(&header, sizeof(header));
  const auto* bytes = reinterpret_cast<const uint8_t*>(&wire);
  return XXH3_64bits_withSeed(bytes + sizeof(TaskArgsWireHeader),
                              sizeof(TaskArgsWire) - sizeof(TaskArgsWireHeader), seed);
}

void encode_task_args(const TaskArgs& args, TaskArgsWire* out) noexcept {
  std::memset(out, 0, sizeof(*out));
  out->header.magic = kTaskArgsWireMagic;
  out->header.version = kTaskArgsWireVersion;
  out->header.bytes = sizeof(TaskArgsWire);
  out->header.tensor_count = static_cast<uint8_t>(args.tensor_count());
  out->header.scalar_count = static_cast<uint8_t>(args.scalar_count());
  out->header.dep_count = static_cast<uint8_t>(args.dep_count());
  out->header.has_predicate = args.has_predicate() ? 1 : 0;
  for (int i = 0; i < args.tensor_count(); ++i) {
    encode_tensor(args.tensor(i), static_cast<uint8_t>(args.tag(i)), &out->tensors[i]);
  }
  for (int i = 0; i < args.scalar_count(); ++i) out->scalars[i] = args.scalar_bits(i);
  for (int i = 0; i < args.dep_count(); ++i) out->deps[i] = args.dep(i);
  if (args.has_predicate()) encode_tensor(args.predicate(), 0, &out->predicate);
  out->header.checksum = task_args_wire_checksum(*out);
}

Status decode_task_args(const TaskArgsWire& wire, TaskArgs* out) noexcept {
  const TaskArgsWireHeader& h = wire.header;
  char magic[16];
  std::snprintf(magic, sizeof(magic), "0x%08x", h.magic);
  if (h.magic != kTaskArgsWireMagic) {
    return refuse(std::string("magic ") + magic +
                  " is not \"CTAW\" (0x57415443): not a TaskArgs "
                  "block");
  }
  if (h.version != kTaskArgsWireVersion) {
    return refuse("version " + std::to_string(h.version) + " is not the supported version " +
                  std::to_string(kTaskArgsWireVersion) + " (host and chip runtime differ)");
  }
  if (h.bytes != sizeof(TaskArgsWire)) {
    return refuse("size " + std::to_string(h.bytes) + " is not " +
                  std::to_string(sizeof(TaskArgsWire)) + " bytes");
  }
  if (h.checksum != task_args_wire_checksum(wire)) {
    return refuse("checksum mismatch: the block was changed after the host wrote it");
  }
  if (h.tensor_count > kMaxTaskTensors || h.scalar_count > kMaxTaskScalars ||
      h.dep_count > kMaxExplicitDeps || h.has_predicate > 1) {
    return refuse("counts (" + std::to_string(h.tensor_count) + " tensors, " +
                  std::to_string(h.scalar_count) + " scalars, " + std::to_string(h.dep_count) +
                  " deps, predicate " + std::to_string(h.has_predicate) + ") exceed the limits (" +
                  std::to_string(kMaxTaskTensors) + ", " + std::to_string(kMaxTaskScalars) + ", " +
                  std::to_string(kMaxExplicitDeps) + ", 1)");
  }
  for (int i = 0; i < h.tensor_count; ++i) {
    const std::string name = "tensor " + std::to_string(i);
    if (wire.tensors[i].tag >= kArgTagCount) {
      return refuse(name + " has tag value " + std::to_string(wire.tensors[i].tag) +
                    ", not an ArgTag");
    }
    if (Status s = check_tensor(wire.tensors[i], name); !s) return s;
  }
  if (h.has_predicate != 0) {
    if (Status s = check_tensor(wire.predicate, "the predicate"); !s) return s;
  }
  // The counts, tags and tensors passed the checks the public builders make; any refusal left is
  // theirs (a buffer-less tensor that is no Out, a float predicate), reported as such.
  try {
    out->clear();
    for (int i = 0; i < h.tensor_count; ++i) {
      out->add(static_cast<ArgTag>(wire.tensors[i].tag), decode_tensor(wire.tensors[i]));
    }
    for (int i = 0; i < h.scalar_count; ++i) out->add_scalar_bits(wire.scalars[i]);
    for (int i = 0; i < h.dep_count; ++i) out->after(wire.deps[i]);
    if (h.has_predicate != 0) out->when(decode_tensor(wire.predicate));
  } catch (const Error& e) {
    return refuse(e.message());
  } catch (const std::exception& e) {
    return refuse(e.what());
  }
  return Status::ok();
}

}  // namespace chiprt::common
