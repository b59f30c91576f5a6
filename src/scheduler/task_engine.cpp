#include "scheduler/task_engine.h"

#include <cassert>

#include "scheduler/ring_hooks.h"

namespace chiprt::scheduler {
namespace {

// Fan-out of one completed task, then the run's completed counter. A ring slot may be retired
// and reused as soon as ring_release dropped its last reference: nothing touches it afterwards.
void release_consumers(const RunView& view, uint32_t task, uint32_t* pushed, PassBuffer* local) {
  if (view.ring != nullptr) {
    ring_release(view, task, pushed, local);
  } else {
    const common::TaskRecord& record = view.tasks[task];
    for (uint32_t i = 0; i < record.fanout_count; ++i) {
      const uint32_t consumer = view.fanout[record.fanout_begin + i];
      // validate_edges checked fanin_count against the fan-out lists: a consumer with one
      // producer is released by this task alone, without a locked decrement (a chain's every
      // task); the store keeps the watchdog's report exact.
      if (view.tasks[consumer].fanin_count == 1) {
        view.fanin_remaining[consumer].store(0, std::memory_order_relaxed);
        make_ready(view, consumer, pushed, local);
      } else if (view.count_down(view.fanin_remaining[consumer]) == 1) {
        make_ready(view, consumer, pushed, local);
      }
    }
    // host_build_graph: nobody waits on single completions (the ring orchestrator does), so the
    // pass counts them and publishes the sum.
    if (local != nullptr) {
      ++local->completions;
      return;
    }
  }
  std::atomic<uint64_t>& completed = view.globals->completed;
  const uint64_t done = view.exclusive ? completed.load(std::memory_order_relaxed) + 1
                                       : completed.fetch_add(1, std::memory_order_seq_cst) + 1;
  if (view.exclusive) completed.store(done, std::memory_order_relaxed);
  // The ring orchestrator's waits re-check this counter: its wake-up must follow the count.
  if (view.ring != nullptr) ring_notify_orchestrator(view);
  if (done >= view.globals->total.load(std::memory_order_seq_cst)) {
    common::ring_all_doorbells(view.prefix, view.park_wake());
  }
}

}  // namespace

void transition(const RunView& view, uint32_t task, TaskState from, TaskState to) {
#ifdef NDEBUG
  static_cast<void>(from);
  view.task_state[task].store(static_cast<uint8_t>(to), std::memory_order_relaxed);
#else
  const uint8_t previous =
      view.task_state[task].exchange(static_cast<uint8_t>(to), std::memory_order_relaxed);
  assert(previous == static_cast<uint8_t>(from) && "task slot state machine violated");
  static_cast<void>(previous);
#endif
}

void make_ready(const RunView& view, uint32_t task, uint32_t* pushed, PassBuffer* local) {
  transition(view, task, TaskState::Pending, TaskState::Ready);
  const common::TaskRecord& record = view.tasks[task];
  const int queue = queue_of(record);
  if (!single_dispatch(record)) {
    // Published to the popper by the queue push.
    view.parts_remaining[task].store(record.block_num * parts_of(record),
                                     std::memory_order_relaxed);
    view.next_block[task].store(0, std::memory_order_relaxed);
  }
  if (local != nullptr && local->keep_ready(queue, task)) return;
  // Capacity >= task_count and every task is pushed at most once, so this cannot fail unless the
  // shared state was corrupted.
  if (!view.push(queue, task)) {
    common::latch_chip_error(&view.args->result, StatusCode::InternalError,
                             "ready queue %d full while pushing task %u (capacity %llu)", queue,
                             task, static_cast<unsigned long long>(view.queues[queue]->capacity()));
    common::ring_all_doorbells(view.prefix, view.park_wake());
    return;
  }
  *pushed |= queue_bit(queue);
}

void drain_dummies(const RunView& view, uint32_t* pushed, PassBuffer* local) {
  uint32_t dummy = 0;
  while (view.pop(kQueueDummy, &dummy)) {
    transition(view, dummy, TaskState::Ready, TaskState::Completed);
    release_consumers(view, dummy, pushed, local);
  }
}

void complete_task(const RunView& view, uint32_t task, uint32_t* pushed, TaskState from,
                   PassBuffer* local) {
  transition(view, task, from, TaskState::Completed);
  release_consumers(view, task, pushed, local);
  if ((*pushed & queue_bit(kQueueDummy)) != 0) drain_dummies(view, pushed, local);
}

void flush_completions(const RunView& view, PassBuffer* local) {
  if (local->completions == 0) return;
  const uint64_t count = local->completions;
  local->completions = 0;
  const uint64_t done = view.globals->completed.fetch_add(count, std::memory_order_seq_cst) + count;
  if (done >= view.globals->total.load(std::memory_order_seq_cst)) {
    common::ring_all_doorbells(view.prefix, view.park_wake());
  }
}

void wake_for_work(const RunView& view, uint32_t self, uint32_t pushed) {
  // The pushes were seq_cst stores; the seq_cst parked-flag loads below complete the Dekker
  // handshake with a parking scheduler (see common::Doorbell). Whether a queue still holds work
  // is asked only once some scheduler sleeps: the queue heads are lines the other schedulers
  // write all the time, the doorbell one they write only when they park.
  uint32_t available = 0;
  bool looked = false;
  for (uint32_t t = view.first_scheduler; t < view.thread_count; ++t) {
    if (t == self) continue;
    common::Doorbell& bell = view.prefix->doorbells[t];
    if (!bell.parked()) continue;
    if (!looked) {
      looked = true;
      for (int q : {kQueueAic, kQueueAiv, kQueueMix}) {
        if ((pushed & queue_bit(q)) != 0 && view.queues[q]->maybe_nonempty()) {
          available |= idle_core_bit(q) | pending_slot_bit(q);
        }
      }
    }
    if ((bell.wants.load(std::memory_order_relaxed) & available) != 0) bell.ring(view.park_wake());
  }
}

}  // namespace chiprt::scheduler
