// Where the tensormap_ringbuffer section of the shared-state region lies, and the size rules its
// ring sizes obey. Protocol header: the host sizes the region with ring_layout(); the chip
// re-checks the sizes (ring_sizes_problem) and finds every array at the same offsets.
//
// Region of a ring run: the common part, shared_layout(total_slots) (common/shared_layout.h),
// then at align64 of its size, each array 64-byte aligned:
//   RingControl | RingSlot[total] | TaskRecord[total] | int64 public_ids[total]
//   | DepEntry[sum of dep_pool] | uint32 spill[sum of dep_pool]
//   | int64 slot_args[total * kRingSlotArgs]
// (spill words per set = that set's dependency pool size). The slot protocol is in
// common/ring_state.h. A ring run zeroes the region before the launch up to the slot arguments
// (RingLayout::cleared_bytes): a slot's argument block is written before its task is published
// and read only after, so the largest part of the region (a 243-word block per slot) is never
// cleared.
//
// Threading: pure functions and constants.
#pragma once

#include <cstdint>

#include "chiprt/ring_sizes.h"
#include "common/chip_launch.h"
#include "common/graph_image.h"
#include "common/handshake.h"
#include "common/ring_state.h"
#include "common/shared_layout.h"

namespace chiprt::common {

// Per-depth size rules: the public ones (chiprt/ring_sizes.h; the host resolves sizes and rejects
// invalid ones with InvalidConfig), re-checked by the chip before it trusts the geometry.
inline constexpr uint64_t kRingMinWindow = kMinRingTaskWindow;
inline constexpr uint64_t kRingMaxWindow = kMaxRingTaskWindow;
inline constexpr uint64_t kRingMinHeapBytes = chiprt::kMinRingHeapBytes;
inline constexpr uint64_t kRingHeapAlign = kRingHeapGranule;
inline constexpr uint64_t kRingMaxHeapBytes = chiprt::kMaxRingHeapBytes;
inline constexpr uint64_t kRingMinDepPool = chiprt::kMinRingDepPool;
// Keeps every dependency-entry index of all four sets below the fanout sentinels (2^32 - 2).
inline constexpr uint64_t kRingMaxDepPool = chiprt::kMaxRingDepPool;
static_assert(kRingMaxDepPool * 4 < (uint64_t{1} << 32) - 2);

// Argument words per ring slot: the largest argument block (common/kernel_block.h: context,
// arguments, views), so a core runs a single-block task's arguments in place. A slot's block
// starts at slot * kRingSlotArgs; its args[0] (TaskRecord::args_begin) kContextWords later.
inline constexpr uint32_t kRingSlotArgs = kMaxKernelBlockWords;

enum class RingSizeRule : uint8_t { Ok = 0, TaskWindow = 1, HeapBytes = 2, DepPool = 3 };

// The first rule `sizes` breaks (and at which depth), or Ok.
constexpr RingSizeRule ring_size_rule_broken(const RingSizes& sizes, uint32_t* depth = nullptr) {
  for (uint32_t d = 0; d < kRingDepths; ++d) {
    if (depth != nullptr) *depth = d;
    const uint64_t window = sizes.task_window[d];
    if (window < kRingMinWindow || window > kRingMaxWindow || (window & (window - 1)) != 0) {
      return RingSizeRule::TaskWindow;
    }
    const uint64_t heap = sizes.heap_bytes[d];
    if (heap < kRingMinHeapBytes || heap % kRingHeapAlign != 0 || heap > kRingMaxHeapBytes) {
      return RingSizeRule::HeapBytes;
    }
    const uint64_t dep = sizes.dep_pool[d];
    if (dep < kRingMinDepPool || dep > kRingMaxDepPool) return RingSizeRule::DepPool;
  }
  return RingSizeRule::Ok;
}

// Describes the first size rule `sizes` breaks into `message` (naming the depth, the field, the
// value and the rule) and returns true; false when every size is valid. No allocation.
bool ring_sizes_problem(const RingSizes& sizes, char* message, uint64_t message_bytes);

struct RingLayout {
  uint32_t total_slots = 0;
  uint64_t dep_entries = 0;  // sum of dep_pool
  uint64_t spill_words = 0;  // sum of dep_pool
  uint64_t heap_bytes = 0;   // sum of heap_bytes
  uint64_t control_offset = 0;
  uint64_t slots_offset = 0;
  uint64_t records_offset = 0;
  uint64_t slot_args_offset = 0;
  uint64_t public_ids_offset = 0;
  uint64_t dep_offset = 0;
  uint64_t spill_offset = 0;
  uint64_t cleared_bytes = 0;  // the host zeroes [0, cleared_bytes): all but the slot arguments
  // UINT64_MAX when the sizes break a rule of ring_size_rule_broken (nothing else is then valid).
  uint64_t total_bytes = 0;
};

constexpr RingLayout ring_layout(const RingSizes& sizes) {
  RingLayout layout;
  if (ring_size_rule_broken(sizes) != RingSizeRule::Ok) {
    layout.total_bytes = UINT64_MAX;
    return layout;
  }
  // Bounded by the rules above: at most 4 x 2^20 slots and 4 x 2^26 dependency entries, so no
  // sum below overflows and every index fits the uint32 fields of the slot protocol.
  uint64_t total = 0;
  for (uint32_t d = 0; d < kRingDepths; ++d) {
    total += sizes.task_window[d];
    layout.dep_entries += sizes.dep_pool[d];
    layout.heap_bytes += sizes.heap_bytes[d];
  }
  layout.spill_words = layout.dep_entries;
  layout.total_slots = static_cast<uint32_t>(total);
  uint64_t offset = align64(shared_layout(total).total_bytes);
  layout.control_offset = offset;
  offset += align64(sizeof(RingControl));
  layout.slots_offset = offset;
  offset += align64(total * sizeof(RingSlot));
  layout.records_offset = offset;
  offset += align64(total * sizeof(TaskRecord));
  layout.public_ids_offset = offset;
  offset += align64(total * sizeof(int64_t));
  layout.dep_offset = offset;
  offset += align64(layout.dep_entries * sizeof(DepEntry));
  layout.spill_offset = offset;
  offset += align64(layout.spill_words * sizeof(uint32_t));
  layout.slot_args_offset = offset;
  layout.cleared_bytes = offset;
  offset += align64(total * kRingSlotArgs * sizeof(int64_t));
  layout.total_bytes = offset;
  return layout;
}

// Bytes of shared state a ring run with these sizes needs; UINT64_MAX for invalid sizes.
constexpr uint64_t ring_shared_state_bytes(const RingSizes& sizes) {
  return ring_layout(sizes).total_bytes;
}

}  // namespace chiprt::common
