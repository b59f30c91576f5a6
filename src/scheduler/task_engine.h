// Task-slot state machine, readiness and completion fan-out, shared by every scheduler thread.
//
// All functions are lock-free and safe to call from any AICPU thread at once: each task becomes
// ready exactly once (the thread whose fetch_sub takes fanin_remaining to zero), is popped from a
// ready queue by exactly one thread, and completes exactly once. Dependency-only (dummy) tasks
// never reach a core: they go to the dummy queue and are completed by whichever thread drains it.
#pragma once

#include <cstdint>

#include "scheduler/shared_state.h"

namespace chiprt::scheduler {

// Bit per ready queue, for `pushed` masks.
inline constexpr uint32_t queue_bit(int queue) {
  return 1u << queue;
}
// Doorbell::wants bits: the parked owner has an idle core / a free pending slot for the shape of
// ready queue `queue`.
inline constexpr uint32_t idle_core_bit(int queue) {
  return 1u << queue;
}
inline constexpr uint32_t pending_slot_bit(int queue) {
  return 1u << (queue + 4);
}
inline int queue_of(const common::TaskRecord& task) {
  if ((task.flags & common::kTaskFlagDummy) != 0) return kQueueDummy;
  return task.core_type == static_cast<uint8_t>(CoreType::AIC) ? kQueueAic : kQueueAiv;
}

// Moves `task` from `from` to `to`; in debug builds asserts the slot was in `from`.
void transition(const RunView& view, uint32_t task, TaskState from, TaskState to);

// The task's fan-in reached zero (or it is an initial task): Pending -> Ready and pushed to the
// queue of its shape (or the dummy queue). ORs the queue bit into *pushed.
void make_ready(const RunView& view, uint32_t task, uint32_t* pushed);

// `task` finished on a core: Running -> Completed, releases its consumers, then completes any
// dummy tasks that became ready (iteratively, no recursion). Rings every doorbell when the last
// task of the run completes.
void complete_task(const RunView& view, uint32_t task, uint32_t* pushed);

// Completes every dummy task in the dummy queue, including those their completion releases.
void drain_dummies(const RunView& view, uint32_t* pushed);

// After pushing work (the AIC/AIV bits of `pushed`): rings the doorbells of other schedulers that
// are parked and want a shape whose queue is non-empty.
void wake_for_work(const RunView& view, uint32_t self, uint32_t pushed);

}  // namespace chiprt::scheduler
