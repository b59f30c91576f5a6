// The points where the shared dispatch code (dispatch loop, task engine) hands a
// tensormap_ringbuffer task to the ring runtime. Implemented in src/scheduler/ring_*.cpp.
//
// Threading: ring_release runs on any scheduler thread (and on the orchestrator thread in serial
// mode), concurrently for different slots; it is lock-free.
#pragma once

#include <cstdint>

#include "common/chip_launch.h"
#include "scheduler/shared_state.h"

namespace chiprt::scheduler {

struct PassBuffer;  // scheduler/task_engine.h

// `slot` completed (every block/part finished, or it was skipped / a dummy): seals and walks its
// fan-out list (consumers whose fan-in reaches zero go through make_ready), releases the producers
// it retained and its own completion reference. Called by complete_task instead of the
// graph-image fan-out; complete_task counts the completion afterwards and then wakes the
// orchestrator (ring_notify_orchestrator). `local` (may be null) as in make_ready.
void ring_release(const RunView& view, uint32_t slot, uint32_t* pushed, PassBuffer* local);

// After complete_task counted a ring task's completion (the completed counter, a seq_cst RMW):
// rings the orchestrator's doorbell when RingControl::orchestrator_waiting is set. The
// orchestrator's waits re-check the counter and slot references, so the wake-up follows both.
void ring_notify_orchestrator(const RunView& view);

// AICPU entry of a ring run (aicpu_entry forwards here when args->variant is
// TensormapRingbuffer): thread 0 initialises and runs the orchestration function, the others
// schedule; in serial mode thread 0 alternates orchestration and scheduling.
void ring_aicpu_entry(common::ChipLaunchArgs* args, uint32_t thread_index, uint32_t thread_count);

}  // namespace chiprt::scheduler
