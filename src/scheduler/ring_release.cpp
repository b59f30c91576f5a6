#include <atomic>

#include "common/ring_state.h"
#include "scheduler/ring_hooks.h"
#include "scheduler/ring_state_view.h"
#include "scheduler/task_engine.h"

namespace chiprt::scheduler {

void ring_release(const RunView& view, uint32_t slot, uint32_t* pushed, PassBuffer* local) {
  const RingView& ring = *view.ring;
  common::RingSlot& self = ring.slots[slot];
  // Consumers wired before the seal wait for this task; the orchestrator raised their fan-in
  // before pushing the entry, so the decrement that reaches zero makes the consumer ready exactly
  // once (the orchestrator's own guard decrement may be that one instead).
  common::fanout_seal_and_walk(self, ring.dep_pool, [&](uint32_t consumer) {
    if (view.count_down(view.fanin_remaining[consumer]) == 1) {
      make_ready(view, consumer, pushed, local);
    }
  });
  // producer_count / producers / spill_begin were written by the orchestrator before it
  // published this task; the ready-queue hand-off (and for a dummy the fan-in decrement) orders
  // them before this read.
  const uint32_t producers = self.producer_count;
  const uint32_t inline_count =
      producers < common::kInlineProducers ? producers : common::kInlineProducers;
  for (uint32_t i = 0; i < inline_count; ++i) {
    common::release_slot_ref(ring.slots[self.producers[i]]);
  }
  for (uint32_t i = common::kInlineProducers; i < producers; ++i) {
    common::release_slot_ref(
        ring.slots[ring.spill[self.spill_begin + (i - common::kInlineProducers)]]);
  }
  // The last touch of this slot: after it the orchestrator may retire and reuse it.
  common::release_slot_ref(self);
}

void ring_notify_orchestrator(const RunView& view) {
  // The releases and the completed counter were seq_cst; this load completes the Dekker
  // handshake with the orchestrator's park (RingDriver::wait), which re-checks both after
  // raising the flag.
  // Only a completion that reaches the orchestrator's wake target rings: its own increment is
  // visible to this thread, so the completer whose count reaches the target always sees it.
  const common::RingControl& control = *view.ring->control;
  if (control.orchestrator_waiting.load(std::memory_order_seq_cst) != 0 &&
      view.globals->completed.load(std::memory_order_relaxed) >=
          control.orchestrator_wake_at.load(std::memory_order_relaxed)) {
    view.prefix->doorbells[control.orchestrator_thread].ring(view.park_wake());
  }
}

}  // namespace chiprt::scheduler
