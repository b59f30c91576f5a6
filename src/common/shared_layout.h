// Layout of the shared-state region both sides agree on: the host sizes and clears it, the
// scheduler formats and uses it. Protocol header: constexpr, no pointers, no behaviour.
//
// Region (each section 64-byte aligned):
//   SharedPrefix          start barrier | HandshakeCell[kMaxCores] | Doorbell[kMaxAicpuThreads]
//                         | orchestrator beat (common/handshake.h)
//   SchedulerGlobals      completed / published / total task counters
//   ready queue AIC       capacity = pow2 >= task_count (a task is in a queue at most once at a
//   ready queue AIV         time: SPMD tasks are pushed back only after being popped)
//   ready queue MIX       same capacity
//   ready queue dummy     same capacity: dependency-only tasks waiting to be completed inline
//   uint32[task_count]    fanin_remaining
//   uint32[task_count]    parts_remaining: core dispatches left to finish (set at ready)
//   uint32[task_count]    next_block: SPMD blocks claimed so far
//   uint8[task_count]     TaskState (common/task_state.h)
// A tensormap_ringbuffer run appends its ring section (common/ring_layout.h).
//
// host_build_graph: the host zeroes only kSharedClearedBytes (prefix and globals); thread 0
// formats everything after them (the region grows with the graph, and zeroing megabytes the chip
// rewrites anyway is a per-run cost of every replay).
//
// Threading: pure functions and constants; SchedulerGlobals lives in the region (atomics).
#pragma once

#include <atomic>
#include <cstdint>

#include "common/handshake.h"

namespace chiprt::common {

constexpr uint64_t align64(uint64_t value) {
  return (value + 63) & ~uint64_t{63};
}

// Ready-queue index per core shape; the dummy queue follows.
inline constexpr int kQueueAic = 0;
inline constexpr int kQueueAiv = 1;
inline constexpr int kQueueMix = 2;
inline constexpr int kQueueDummy = 3;
inline constexpr int kQueueCount = 4;

struct alignas(64) SchedulerGlobals {
  std::atomic<uint64_t> completed;
  // Tasks made visible to the schedulers so far (host_build_graph: all, at init; ring: raised by
  // the orchestrator after each submit). The watchdog only fires while published > completed.
  alignas(64) std::atomic<uint64_t> published;
  // Tasks of the whole run: host_build_graph sets it at init; the ring orchestrator keeps it at
  // UINT64_MAX until the orchestration function returned, then stores the submitted count (and
  // rings every doorbell when everything already completed).
  std::atomic<uint64_t> total;
};

// A ready queue's memory (scheduler/ready_queue.h): a control block of three cache lines (mask,
// enqueue and dequeue positions), then one 16-byte cell (sequence, value) per entry.
inline constexpr uint64_t kReadyQueueControlBytes = 192;
inline constexpr uint64_t kReadyQueueCellBytes = 16;
// Smallest power of two >= max(min_items, 2).
constexpr uint64_t ready_queue_capacity_for(uint64_t min_items) {
  uint64_t capacity = 2;
  while (capacity < min_items) capacity <<= 1;
  return capacity;
}
constexpr uint64_t ready_queue_bytes(uint64_t capacity) {
  return kReadyQueueControlBytes + capacity * kReadyQueueCellBytes;
}

struct SharedLayout {
  uint64_t globals_offset = 0;
  uint64_t queue_capacity = 0;
  uint64_t queue_offset[kQueueCount] = {};
  uint64_t fanin_offset = 0;
  uint64_t parts_offset = 0;
  uint64_t next_block_offset = 0;
  uint64_t state_offset = 0;
  uint64_t total_bytes = 0;  // UINT64_MAX when task_count is beyond what the image can index
};

// Where each section of a region laid out for `task_count` tasks lies.
constexpr SharedLayout shared_layout(uint64_t task_count) {
  SharedLayout layout;
  if (task_count >= kMaxRunTasks) {
    layout.total_bytes = UINT64_MAX;
    return layout;
  }
  uint64_t offset = align64(sizeof(SharedPrefix));
  layout.globals_offset = offset;
  offset += align64(sizeof(SchedulerGlobals));
  layout.queue_capacity = ready_queue_capacity_for(task_count);
  for (int q = 0; q < kQueueCount; ++q) {
    layout.queue_offset[q] = offset;
    offset += align64(ready_queue_bytes(layout.queue_capacity));
  }
  layout.fanin_offset = offset;
  offset += align64(task_count * sizeof(uint32_t));
  layout.parts_offset = offset;
  offset += align64(task_count * sizeof(uint32_t));
  layout.next_block_offset = offset;
  offset += align64(task_count * sizeof(uint32_t));
  layout.state_offset = offset;
  offset += align64(task_count * sizeof(uint8_t));
  layout.total_bytes = offset;
  return layout;
}

// Bytes a host_build_graph run of `task_count` tasks needs (0 tasks: no launch, no region).
constexpr uint64_t shared_state_bytes(uint64_t task_count) {
  return task_count == 0 ? 0 : shared_layout(task_count).total_bytes;
}

// Bytes at the start of the region the host zeroes before a host_build_graph launch (the
// handshake prefix and the counters); the chip formats the rest.
inline constexpr uint64_t kSharedClearedBytes =
    align64(sizeof(SharedPrefix)) + align64(sizeof(SchedulerGlobals));

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t));
static_assert(sizeof(std::atomic<uint8_t>) == sizeof(uint8_t));
static_assert(shared_layout(1).queue_offset[0] == kSharedClearedBytes);
static_assert(shared_layout(kMaxRunTasks).total_bytes == UINT64_MAX);

}  // namespace chiprt::common
