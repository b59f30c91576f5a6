// RingView: the tensormap_ringbuffer section of the shared-state region as the scheduler sees it
// (pointers into the region laid out by common::ring_layout, common/ring_layout.h). The slot
// protocol is in common/ring_state.h.
//
// Lifetime: a RingView is a per-thread value like RunView, rebuilt by every AICPU thread of the
// launch from the same layout; it owns nothing.
#pragma once

#include <cstdint>

#include "common/chip_launch.h"
#include "common/graph_image.h"
#include "common/ring_layout.h"
#include "common/ring_state.h"

namespace chiprt::scheduler {

// The ring section's layout and size rules are the protocol header common/ring_layout.h.
using common::kRingHeapAlign;
using common::ring_layout;
using common::ring_sizes_problem;
using common::RingLayout;

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
