// Task-slot state machine, readiness and completion fan-out, shared by every scheduler thread.
//
// All functions are lock-free and safe to call from any AICPU thread at once: each task becomes
// ready exactly once (the thread whose fetch_sub takes fanin_remaining to zero), is popped from a
// ready queue by exactly one thread, and completes exactly once. Dependency-only (dummy) tasks
// never reach a core: they go to the dummy queue and are completed by whichever thread drains it.
//
// A task runs as block_num blocks (SPMD) of `parts` core dispatches each (MIX: its kernels that
// are not -1, else 1); parts_remaining counts the dispatches left to finish and the finish that
// takes it to zero completes the task. Single-dispatch tasks complete without touching it.
#pragma once

#include <cstdint>
#include <cstring>

#include "common/predicate.h"
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
  if (task.core_type == static_cast<uint8_t>(CoreType::AIC)) return kQueueAic;
  return task.core_type == static_cast<uint8_t>(CoreType::MIX) ? kQueueMix : kQueueAiv;
}
// Core dispatches per block: the MIX parts with a kernel, else 1.
inline uint32_t parts_of(const common::TaskRecord& task) {
  if (task.core_type != static_cast<uint8_t>(CoreType::MIX)) return 1;
  return (task.func_id != -1) + (task.mix_aiv[0] != -1) + (task.mix_aiv[1] != -1);
}
// Whether the task completes with its one and only dispatch (no parts counting).
inline bool single_dispatch(const common::TaskRecord& task) {
  return task.block_num == 1 && task.core_type != static_cast<uint8_t>(CoreType::MIX);
}
// The predicate of a predicated task: its first predicate_bytes at predicate_addr, non-zero = run.
inline bool predicate_true(const common::TaskRecord& task) {
  return common::predicate_holds(task.predicate_addr, task.predicate_bytes);
}
// A skipped predicated task's runtime outputs read as zeros (common/graph_image.h): zero-fills
// its packed output range. Called once per task (at its first pop, SPMD and MIX alike) and
// before it completes, so its consumers, released by the completion, see the zeros.
inline void zero_skipped_outputs(const common::TaskRecord& task) {
  if (task.skip_fill_granules == 0) return;
  std::memset(reinterpret_cast<void*>(static_cast<uintptr_t>(task.skip_fill_addr)), 0,
              uint64_t{task.skip_fill_granules} * common::kSkipFillGranuleBytes);
}

// What one scheduler pass of a threaded launch collects instead of publishing each item at once:
// AIC / AIV tasks its completions made ready (kept for its own free cores or pushed to the shared
// queues in one batch) and host_build_graph completions not yet added to the completed counter
// (one read-modify-write of that shared line per pass instead of one per task). Owned and used
// by one SchedulerThread; empty again at the end of every pass, so nothing is hidden from the
// other schedulers while its owner parks. No allocation.
struct PassBuffer {
  // Two slots (running + pending) per core a thread can own.
  static constexpr uint32_t kCapacity = 2 * common::kMaxCores;
  struct Local {
    uint32_t tasks[kCapacity];
    uint32_t head = 0;
    uint32_t count = 0;
  };
  Local ready[2];  // indexed by kQueueAic / kQueueAiv
  uint64_t completions = 0;

  // Keeps `task` when it has an AIC / AIV shape and there is room; false: publish it instead.
  bool keep_ready(int queue, uint32_t task) {
    if (queue != kQueueAic && queue != kQueueAiv) return false;
    Local& local = ready[queue];
    if (local.head + local.count >= kCapacity) return false;
    local.tasks[local.head + local.count++] = task;
    return true;
  }
};

// Moves `task` from `from` to `to`; in debug builds asserts the slot was in `from`.
void transition(const RunView& view, uint32_t task, TaskState from, TaskState to);

// The task's fan-in reached zero (or it is an initial task): Pending -> Ready, parts_remaining and
// next_block set, pushed to the queue of its shape (or the dummy queue). ORs the queue bit into
// *pushed. With `local`, an AIC / AIV task is kept there instead (no push, no bit).
void make_ready(const RunView& view, uint32_t task, uint32_t* pushed, PassBuffer* local = nullptr);

// `task` is done (every dispatch finished, or it was skipped / a dummy): `from` -> Completed,
// releases its consumers (ring: ring_release), counts the completion, then completes any dummy
// tasks that became ready (iteratively, no recursion). Rings every doorbell when the last task of
// the run completes. With `local`, released AIC / AIV consumers are kept there and a
// host_build_graph completion is only counted there (flush_completions publishes it).
void complete_task(const RunView& view, uint32_t task, uint32_t* pushed,
                   TaskState from = TaskState::Running, PassBuffer* local = nullptr);

// One dispatch of `task` finished on a core; completes the task when it was the last.
inline void finish_dispatch(const RunView& view, uint32_t task, uint32_t* pushed,
                            PassBuffer* local = nullptr) {
  if (single_dispatch(view.tasks[task]) || view.count_down(view.parts_remaining[task]) == 1) {
    complete_task(view, task, pushed, TaskState::Running, local);
  }
}

// Adds the completions counted in `local` to the run's completed counter (one seq_cst RMW) and
// rings every doorbell when that completes the run.
void flush_completions(const RunView& view, PassBuffer* local);

// Completes every dummy task in the dummy queue, including those their completion releases.
void drain_dummies(const RunView& view, uint32_t* pushed, PassBuffer* local = nullptr);

// After pushing work (the AIC/AIV/MIX bits of `pushed`): rings the doorbells of other schedulers
// that are parked and want a shape whose queue is non-empty.
void wake_for_work(const RunView& view, uint32_t self, uint32_t pushed);

}  // namespace chiprt::scheduler
