#include <cinttypes>
#include <cstdio>

#include "orchestrator/ring_orchestrator.h"
#include "scheduler/ring_hooks.h"
#include "scheduler/ring_state_view.h"
#include "scheduler/shared_state.h"

namespace chiprt::scheduler {
namespace {

constexpr uint64_t align64(uint64_t v) {
  return (v + 63) & ~uint64_t{63};
}

}  // namespace

bool ring_sizes_problem(const common::RingSizes& sizes, char* message, uint64_t message_bytes) {
  const auto fail = [&](uint32_t depth, const char* field, uint64_t value, const char* rule) {
    std::snprintf(message, message_bytes,
                  "ring %s of depth %u is %" PRIu64
                  ": it must be %s (set CallConfig::rings or CHIPRT_RING_*)",
                  field, depth, value, rule);
    return true;
  };
  for (uint32_t d = 0; d < common::kRingDepths; ++d) {
    const uint64_t window = sizes.task_window[d];
    if (window < kRingMinWindow || window > kRingMaxWindow || (window & (window - 1)) != 0) {
      return fail(d, "task_window", window, "a power of two in [16, 1048576]");
    }
    const uint64_t heap = sizes.heap_bytes[d];
    if (heap < kRingMinHeapBytes || heap % kRingHeapAlign != 0 || heap > kRingMaxHeapBytes) {
      return fail(d, "heap_bytes", heap, "a multiple of 64 in [4096, 1099511627776]");
    }
    const uint64_t dep = sizes.dep_pool[d];
    if (dep < kRingMinDepPool || dep > kRingMaxDepPool) {
      return fail(d, "dep_pool", dep, "in [64, 67108864]");
    }
  }
  return false;
}

RingLayout ring_layout(const common::RingSizes& sizes) {
  RingLayout layout;
  char unused[8];
  if (ring_sizes_problem(sizes, unused, sizeof(unused))) {
    layout.total_bytes = UINT64_MAX;
    return layout;
  }
  // Bounded by the rules above: at most 4 x 2^20 slots and 4 x 2^26 dependency entries, so no
  // sum below overflows and every index fits the uint32 fields of the slot protocol.
  uint64_t total = 0;
  for (uint32_t d = 0; d < common::kRingDepths; ++d) {
    total += sizes.task_window[d];
    layout.dep_entries += sizes.dep_pool[d];
    layout.heap_bytes += sizes.heap_bytes[d];
  }
  layout.spill_words = layout.dep_entries;
  layout.total_slots = static_cast<uint32_t>(total);
  const SharedLayout common_layout = shared_layout(total);
  if (common_layout.total_bytes == UINT64_MAX) {
    layout.total_bytes = UINT64_MAX;
    return layout;
  }
  uint64_t offset = align64(common_layout.total_bytes);
  layout.control_offset = offset;
  offset += align64(sizeof(common::RingControl));
  layout.slots_offset = offset;
  offset += align64(total * sizeof(common::RingSlot));
  layout.records_offset = offset;
  offset += align64(total * sizeof(common::TaskRecord));
  layout.slot_args_offset = offset;
  offset += align64(total * orchestrator::kSlotArgs * sizeof(int64_t));
  layout.public_ids_offset = offset;
  offset += align64(total * sizeof(int64_t));
  layout.dep_offset = offset;
  offset += align64(layout.dep_entries * sizeof(common::DepEntry));
  layout.spill_offset = offset;
  offset += align64(layout.spill_words * sizeof(uint32_t));
  layout.total_bytes = offset;
  return layout;
}

RingView ring_view_at(uint8_t* region, const RingLayout& layout) {
  RingView view;
  view.control = reinterpret_cast<common::RingControl*>(region + layout.control_offset);
  view.slots = reinterpret_cast<common::RingSlot*>(region + layout.slots_offset);
  view.records = reinterpret_cast<common::TaskRecord*>(region + layout.records_offset);
  view.slot_args = reinterpret_cast<int64_t*>(region + layout.slot_args_offset);
  view.public_ids = reinterpret_cast<int64_t*>(region + layout.public_ids_offset);
  view.dep_pool = reinterpret_cast<common::DepEntry*>(region + layout.dep_offset);
  view.spill = reinterpret_cast<uint32_t*>(region + layout.spill_offset);
  view.total_slots = layout.total_slots;
  return view;
}

uint64_t ring_shared_state_bytes(const common::RingSizes& sizes) {
  return ring_layout(sizes).total_bytes;
}

}  // namespace chiprt::scheduler
