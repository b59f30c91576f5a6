// RingView: the tensormap_ringbuffer section of the shared-state region as the scheduler sees it
// (pointers into the region), and RingLayout, where that section lies.
//
// Region of a ring run: the common part, shared_layout(total_slots) (scheduler/shared_state.h),
// then at align64 of its size, each array 64-byte aligned:
//   RingControl | RingSlot[total] | TaskRecord[total] | int64 slot_args[total * kSlotArgs]
//   | int64 public_ids[total] | DepEntry[sum of dep_pool] | uint32 spill[sum of dep_pool]
// (spill words per set = that set's dependency pool size). The slot protocol is in
// common/ring_state.h.
//
// Lifetime: a RingView is a per-thread value like RunView, rebuilt by every AICPU thread of the
// launch from the same layout; it owns nothing. ring_layout is a pure function (host and chip).
#pragma once

#include <cstdint>

#include "common/chip_launch.h"
#include "common/graph_image.h"
#include "common/ring_state.h"

namespace chiprt::scheduler {

// Per-depth size rules (the host resolves sizes and rejects invalid ones with InvalidConfig; the
// chip re-checks them before trusting the geometry). Same ranges as host/ring_sizing.h.
inline constexpr uint64_t kRingMinWindow = 16;
inline constexpr uint64_t kRingMaxWindow = uint64_t{1} << 20;
inline constexpr uint64_t kRingMinHeapBytes = 4096;
inline constexpr uint64_t kRingHeapAlign = 64;
inline constexpr uint64_t kRingMaxHeapBytes = uint64_t{1} << 40;
inline constexpr uint64_t kRingMinDepPool = 64;
inline constexpr uint64_t kRingMaxDepPool = uint64_t{1} << 26;

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
  // UINT64_MAX when the sizes break a rule of ring_sizes_problem (nothing else is then valid).
  uint64_t total_bytes = 0;
};

// Describes the first size rule `sizes` breaks into `message` (naming the depth, the field, the
// value and the rule) and returns true; false when every size is valid.
bool ring_sizes_problem(const common::RingSizes& sizes, char* message, uint64_t message_bytes);

RingLayout ring_layout(const common::RingSizes& sizes);

struct RingView {
  common::RingControl* control = nullptr;
  common::RingSlot* slots = nullptr;
  common::TaskRecord* records = nullptr;
  int64_t* slot_args = nullptr;
  int64_t* public_ids = nullptr;
  common::DepEntry* dep_pool = nullptr;
  uint32_t* spill = nullptr;
  uint32_t total_slots = 0;
};

// The view of a region laid out by `layout` at `region`.
RingView ring_view_at(uint8_t* region, const RingLayout& layout);

}  // namespace chiprt::scheduler
