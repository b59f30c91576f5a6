// The wire format of a run's orchestration arguments: how a chiprt::TaskArgs crosses from the host
// to the chip (tensormap_ringbuffer: the chip-side orchestrator calls the orchestration function
// with them). A fixed-layout protocol struct, independent of the public class's layout, so the
// public TaskArgs may change (and the C and Python APIs be built on it) without the device
// reading a different struct than the host wrote.
//
// Format v1 (little-endian, the struct below byte for byte, 8-byte aligned):
//   header   magic "CTAW", version, bytes (sizeof(TaskArgsWire)), tensor/scalar/dep counts,
//            has_predicate, checksum (task_args_wire_checksum: XXH3-64 of the whole block, the
//            checksum field read as 0)
//   tensors  TensorWire[kMaxTaskTensors] (128 bytes each: tag, dtype, ndim, buffer, offset, shape,
//   strides,
//            owner task, version, owner run; entries past tensor_count are zero)
//   scalars  uint64[kMaxTaskScalars], deps int64[kMaxExplicitDeps], predicate TensorWire
// A change of any field is a new version; the decoder refuses every version but its own.
//
// Threading: pure functions; encode writes only `out`, decode only `out`/`message`.
#pragma once

#include <cstddef>
#include <cstdint>

#include "chiprt/status.h"
#include "chiprt/task_args.h"

namespace chiprt::common {

inline constexpr uint32_t kTaskArgsWireMagic = 0x57415443;  // "CTAW"
inline constexpr uint32_t kTaskArgsWireVersion = 1;

struct TensorWire {
  uint64_t buffer_addr;
  uint64_t buffer_size;
  uint64_t start_offset;
  uint64_t shape[kMaxTensorDims];
  uint64_t strides[kMaxTensorDims];
  int64_t owner_task;
  uint32_t ndim;
  uint32_t version;
  uint32_t owner_run;
  uint8_t dtype;
  uint8_t tag;  // ArgTag (0 for the predicate)
  uint8_t reserved[2];
};
static_assert(sizeof(TensorWire) == 128 && alignof(TensorWire) == 8);
static_assert(offsetof(TensorWire, shape) == 24 && offsetof(TensorWire, owner_task) == 104);

struct TaskArgsWireHeader {
  uint32_t magic;
  uint32_t version;
  uint32_t bytes;  // sizeof(TaskArgsWire) of the writer's version
  uint8_t tensor_count;
  uint8_t scalar_count;
  uint8_t dep_count;
  uint8_t has_predicate;
  uint64_t checksum;  // task_args_wire_checksum
};
static_assert(sizeof(TaskArgsWireHeader) == 24);

struct TaskArgsWire {
  TaskArgsWireHeader header;
  TensorWire tensors[kMaxTaskTensors];
  uint64_t scalars[kMaxTaskScalars];
  int64_t deps[kMaxExplicitDeps];
  TensorWire predicate;
};
static_assert(sizeof(TaskArgsWire) == 24 + 16 * 128 + 16 * 8 + 8 * 8 + 128);
static_assert(offsetof(TaskArgsWire, tensors) == 24 && offsetof(TaskArgsWire, scalars) == 2072 &&
              offsetof(TaskArgsWire, deps) == 2200 && offsetof(TaskArgsWire, predicate) == 2264);

// XXH3-64 of every byte of `wire` with its checksum field taken as 0.
uint64_t task_args_wire_checksum(const TaskArgsWire& wire) noexcept;

// Writes `args` into `out` (every byte, padding included, so equal arguments encode equally).
void encode_task_args(const TaskArgs& args, TaskArgsWire* out) noexcept;

// Checks `wire` (magic, version, size, checksum, every count, tag, dtype and rank) and rebuilds
// the TaskArgs into `out`. InternalError naming the first field that is wrong: the block is not
// (or no longer) what a host of this version wrote. Never throws.
Status decode_task_args(const TaskArgsWire& wire, TaskArgs* out) noexcept;

}  // namespace chiprt::common
