#include "scheduler/ring_hooks.h"
#include "scheduler/ring_state_view.h"

namespace chiprt::scheduler {

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

}  // namespace chiprt::scheduler
