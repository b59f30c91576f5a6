// Graph image: the position-independent form of a host-built task graph (host_build_graph).
//
// The orchestrator (host side) writes it; the schedulers (chip side) read it in place after one
// copy to device memory. Every reference inside is an offset or index, never a pointer, so the
// image can be copied anywhere (and cached/replayed). Tensor arguments are stored as resolved
// device data addresses. Layout, each section 8-byte aligned:
//   GraphImageHeader | TaskRecord[task_count] | uint32 fanout[fanout_count]
//   | int64 args[args_count] | uint32 initial_ready[initial_ready_count]
#pragma once

#include <cstdint>

namespace chiprt::common {

inline constexpr uint32_t kGraphImageMagic = 0x47524348;  // "HCRG"
inline constexpr uint32_t kGraphImageVersion = 1;

enum TaskFlags : uint8_t {
  kTaskFlagNone = 0,
  kTaskFlagDummy = 1,  // dependency-only: completes without dispatch to a core
};

struct GraphImageHeader {
  uint32_t magic;
  uint32_t version;
  uint64_t total_size;  // bytes, including this header
  uint32_t task_count;
  uint32_t initial_ready_count;
  uint64_t tasks_offset;   // TaskRecord[task_count]
  uint64_t fanout_offset;  // uint32_t[fanout_count]
  uint64_t fanout_count;
  uint64_t args_offset;  // int64_t[args_count]
  uint64_t args_count;
  uint64_t initial_ready_offset;  // uint32_t[initial_ready_count]: tasks with fanin_count == 0
};

struct TaskRecord {
  int32_t func_id;        // -1 for dummy tasks
  uint8_t core_type;      // CoreType
  uint8_t flags;          // TaskFlags
  uint16_t arg_count;     // int64 kernel arguments (tensor addresses then scalars)
  uint32_t fanin_count;   // producers this task waits for
  uint32_t fanout_count;  // consumers to release on completion
  uint32_t fanout_begin;  // index into fanout[]
  uint32_t reserved;
  uint64_t args_begin;  // index into args[]
};
static_assert(sizeof(TaskRecord) == 32, "TaskRecord layout is part of the image format");

}  // namespace chiprt::common
