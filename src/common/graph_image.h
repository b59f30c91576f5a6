// Graph image: the position-independent form of a host-built task graph (host_build_graph).
//
// The orchestrator (host side) writes it; the schedulers (chip side) read it in place after one
// copy to device memory. Every reference inside is an offset or index, never a pointer, so the
// image can be copied anywhere (and cached/replayed). Tensor arguments are stored as resolved
// device data addresses; each task's arguments are its argument block (common/kernel_block.h:
// context, tensor addresses, scalars, views; args_begin indexes its args[0]), whose views_addr
// is 0 (the core that copies the block for a kernel sets it). Layout, each section 8-byte aligned:
//   GraphImageHeader | TaskRecord[task_count] | uint32 fanout[fanout_count]
//   | int64 args[args_count] | uint32 initial_ready[initial_ready_count] | int64
//   task_ids[task_count]
// The header also names the run's output heap, which every record's skip-fill range lies in.
//
// Records are indexed by position (fanout and initial_ready name positions); task_ids maps each
// position to the public TaskId the orchestration function got for it (submit / submit_dummy /
// allocate), or -1 for a scope fence, the dependency-only task host_build_graph adds when a scope
// owning outputs ends. Fences are internal: the user's tasks are numbered 0.. in submission order
// without them, exactly as tensormap_ringbuffer numbers the same graph.
#pragma once

#include <cstdint>

namespace chiprt::common {

inline constexpr uint32_t kGraphImageMagic = 0x47524348;  // "HCRG"
// 3: argument blocks with views; 4: also task ids and skip-fill ranges.
inline constexpr uint32_t kGraphImageVersion = 4;

enum TaskFlags : uint8_t {
  kTaskFlagNone = 0,
  kTaskFlagDummy = 1,       // dependency-only: completes without dispatch to a core
  kTaskFlagPredicated = 2,  // predicate_addr / predicate_bytes are tested at dispatch
  // The stored argument block's context is complete (views_addr set, block_idx 0, block_num 1),
  // so a core passes the arguments to the kernel in place instead of copying them. Set by the
  // ring orchestrator for single-block tasks (slot argument storage is private to the task until
  // it completes); never in a graph image, whose arguments a replay reuses.
  kTaskFlagArgsInPlace = 4,
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
  // The run's output heap [output_heap_addr, + output_heap_size): runtime outputs, and so every
  // skip-fill range, lie in it.
  uint64_t output_heap_addr;
  uint64_t output_heap_size;
  uint64_t task_ids_offset;  // int64_t[task_count]: public TaskId per record, -1 = scope fence
  uint32_t user_task_count;  // records with a public id (task_count less the scope fences)
  uint32_t reserved;
};

// task_ids entry of a scope fence (no public id).
inline constexpr int64_t kScopeFenceId = -1;

// A skipped predicated task's outputs are zero-filled in granules of this many bytes (runtime
// outputs are 64-byte aligned, so the last granule's tail is the task's own alignment padding).
inline constexpr uint64_t kSkipFillGranuleBytes = 64;
// The most a predicated task's runtime outputs may take (the granule count is 32 bits).
inline constexpr uint64_t kMaxSkipFillBytes = uint64_t{UINT32_MAX} * kSkipFillGranuleBytes;

// One task as the schedulers see it. Also the record of a tensormap_ringbuffer task slot, so both
// variants share the dispatch code.
//   AIC / AIV task: func_id is the kernel, mix_aiv = {-1, -1}.
//   MIX task (core_type MIX): func_id is the AIC part, mix_aiv the two AIV parts; -1 = that core
//     of the cluster gets no work (it is still reserved, so the parts start together).
//   Dummy task: func_id -1, kTaskFlagDummy.
//   SPMD: block_num >= 2 runs the kernel (MIX: the cluster's parts) block_num times.
//   Predicated: the first predicate_bytes (1, 2, 4 or 8) at predicate_addr are read at dispatch;
//     zero = skip the task (no kernel runs; it completes and releases its consumers). A skipped
//     task's runtime outputs (Out) read as zeros: the dispatcher zero-fills skip_fill_granules x
//     kSkipFillGranuleBytes at skip_fill_addr (the task's packed output range; 0 granules: no
//     outputs) before it releases the consumers. Its inout / output_existing tensors keep their
//     contents. Set only on predicated tasks (TaskFront::encode_record).
struct TaskRecord {
  int32_t func_id;
  int32_t mix_aiv[2];
  uint8_t core_type;      // CoreType
  uint8_t flags;          // TaskFlags
  uint16_t arg_count;     // int64 kernel arguments (tensor addresses then scalars; the block's
                          // context holds how many are tensors)
  uint32_t block_num;     // >= 1
  uint32_t fanin_count;   // producers this task waits for (host_build_graph image only)
  uint32_t fanout_count;  // consumers to release on completion (image only)
  uint32_t fanout_begin;  // index into fanout[] (image only)
  uint32_t predicate_bytes;
  uint32_t skip_fill_granules;  // predicated tasks: 64-byte granules zero-filled when skipped
  uint64_t
      args_begin;  // args[0] of the task's block in args[] (ring: in the slot argument storage)
  uint64_t predicate_addr;
  uint64_t skip_fill_addr;  // predicated tasks with outputs: their packed range (64-byte aligned)
};
static_assert(sizeof(TaskRecord) == 64, "TaskRecord layout is part of the image format");

}  // namespace chiprt::common
