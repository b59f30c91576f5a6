#include "scheduler/chip_entry.h"

#include <algorithm>
#include <atomic>
#include <cinttypes>

#include "common/handshake.h"
#include "scheduler/core_link.h"
#include "scheduler/shared_state.h"
#include "scheduler/task_engine.h"

namespace chiprt::scheduler {
namespace {

using common::ChipLaunchArgs;
using common::latch_chip_error;

constexpr uint64_t kDefaultSchedulerTimeoutMs = 10000;
// Bounded wait for exit acknowledgements after an error: a core stuck in a kernel never answers.
constexpr uint64_t kErrorExitWaitMs = 1000;
// Loop iterations without progress before parking (each re-checks every source of work).
constexpr int kSpinBeforePark = 256;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

uint64_t timeout_ms_of(const ChipLaunchArgs& args) {
  return args.scheduler_timeout_ms == 0 ? kDefaultSchedulerTimeoutMs : args.scheduler_timeout_ms;
}
uint64_t ms_to_cycles(uint64_t ms, uint64_t hz) {
  return static_cast<uint64_t>(static_cast<unsigned __int128>(ms) * hz / 1000);
}
uint64_t cycles_to_ns(uint64_t cycles, uint64_t hz) {
  const unsigned __int128 ns = static_cast<unsigned __int128>(cycles) * 1000000000ull / hz;
  return ns > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(ns);
}

class PhaseStamps {
 public:
  PhaseStamps(const ChipLaunchArgs& args, uint32_t thread) {
    if (args.phase_buffer_addr != 0) {
      auto* buffer =
          reinterpret_cast<common::PhaseBuffer*>(static_cast<uintptr_t>(args.phase_buffer_addr));
      row_ = buffer->stamps[thread];
    }
  }
  void stamp(Phase phase, uint64_t start, uint64_t end) {
    if (row_ == nullptr) return;
    row_[static_cast<int>(phase)].start = start;
    row_[static_cast<int>(phase)].end = end;
  }

 private:
  common::PhaseStamp* row_ = nullptr;
};

// One AICPU thread's dispatch loop over the cores it owns.
class SchedulerThread {
 public:
  SchedulerThread(const RunView& view, uint32_t self)
      : view_(view), args_(*view.args), self_(self), bell_(view.prefix->doorbells[self]) {
    for (uint32_t i = 0; i < run_core_count(args_); ++i) {
      const uint32_t core = run_core(args_, i);
      if (owner_of(args_, core, view.thread_count) != self) continue;
      links_[link_count_++].attach(&view.prefix->cells[core], core,
                                   is_aic_core(args_, core) ? kQueueAic : kQueueAiv);
    }
    timeout_cycles_ = ms_to_cycles(timeout_ms_of(args_), args_.clock_hz);
  }

  // Runs until every task completed or an error latched, then tells the cores to exit.
  void run(PhaseStamps* stamps) {
    for (uint32_t i = 0; i < link_count_; ++i) kick(links_[i]);  // solicit ready reports
    last_completed_ = view_.globals->completed.load(std::memory_order_acquire);
    last_progress_ = view_.now();
    int idle_spins = 0;
    while (!view_.failed()) {
      bool progress = open_ready_cores();
      uint32_t pushed = 0;
      progress |= collect_finishes(&pushed);
      if (view_.all_completed()) break;
      progress |= dispatch();
      const uint32_t wake = pushed & (queue_bit(kQueueAic) | queue_bit(kQueueAiv));
      if (wake != 0) wake_for_work(view_, self_, wake);
      if (progress) {
        idle_spins = 0;
        continue;
      }
      if (watchdog_expired()) break;
      if (++idle_spins < kSpinBeforePark) {
        cpu_relax();
        continue;
      }
      idle_spins = 0;
      park();
    }
    if (first_dispatch_ != 0) {
      stamps->stamp(Phase::Scheduling, first_dispatch_,
                    std::max(first_dispatch_, last_completion_));
    }
    shutdown_cores();
  }

 private:
  void kick(const CoreLink& link) { view_.services->kick_core(view_.services->ctx, link.core()); }

  bool open_ready_cores() {
    bool opened = false;
    for (uint32_t i = 0; i < link_count_; ++i) {
      CoreLink& link = links_[i];
      if (!link.opened() && link.reported_ready()) {
        link.open();
        kick(link);
        opened = true;
      }
    }
    return opened;
  }

  bool collect_finishes(uint32_t* pushed) {
    bool any = false;
    uint32_t task = 0;
    for (uint32_t i = 0; i < link_count_; ++i) {
      while (links_[i].take_finished(&task)) {
        complete_task(view_, task, pushed);
        any = true;
      }
    }
    if (any) last_completion_ = view_.now();
    return any;
  }

  common::DispatchPayload payload_of(uint32_t task) const {
    const common::TaskRecord& record = view_.tasks[task];
    common::DispatchPayload payload{};
    payload.kernel_addr = view_.kernel_table[record.func_id];
    payload.args_addr = reinterpret_cast<uintptr_t>(view_.task_args + record.args_begin);
    payload.func_id = record.func_id;
    payload.arg_count = record.arg_count;
    payload.block_idx = 0;
    payload.block_num = 1;
    return payload;
  }

  // Idle cores first (running slots, cores in index order), then busy cores' pending slots. Work
  // this thread cannot take stays queued; the caller wakes parked schedulers that can (a
  // scheduler never defers its own free slots to others: on an oversubscribed host the wake-up
  // hand-off costs far more than running the task on a core that is about to be free).
  bool dispatch() {
    bool any = false;
    uint32_t task = 0;
    for (int pass = 0; pass < 2; ++pass) {
      for (uint32_t i = 0; i < link_count_; ++i) {
        CoreLink& link = links_[i];
        const bool free_slot = pass == 0 ? link.running_free() : link.pending_free();
        if (!free_slot) continue;
        if (!view_.queues[link.queue()]->pop(&task)) continue;
        transition(view_, task, TaskState::Ready, TaskState::Running);
        if (first_dispatch_ == 0) first_dispatch_ = view_.now();
        if (pass == 0) {
          link.dispatch_running(task, payload_of(task));
        } else {
          link.dispatch_pending(task, payload_of(task));
        }
        kick(link);
        any = true;
      }
    }
    return any;
  }

  // Doorbell::wants of this thread: idle-core bits and pending-slot bits per shape.
  uint32_t wanted_queues() const {
    uint32_t wants = 0;
    for (uint32_t i = 0; i < link_count_; ++i) {
      if (links_[i].running_free()) wants |= idle_core_bit(links_[i].queue());
      if (links_[i].pending_free()) wants |= pending_slot_bit(links_[i].queue());
    }
    return wants;
  }

  bool has_work(uint32_t wants) const {
    if (view_.failed() || view_.all_completed()) return true;
    for (uint32_t i = 0; i < link_count_; ++i) {
      const CoreLink& link = links_[i];
      if (link.has_new_finish() || (!link.opened() && link.reported_ready())) return true;
    }
    for (int q : {kQueueAic, kQueueAiv}) {
      if ((wants & (idle_core_bit(q) | pending_slot_bit(q))) != 0 &&
          view_.queues[q]->maybe_nonempty()) {
        return true;
      }
    }
    return false;
  }

  // Parks on the doorbell until rung or until the watchdog deadline.
  void park() {
    const uint32_t wants = wanted_queues();
    const uint32_t seen = bell_.prepare_park(wants);
    if (has_work(wants)) {
      bell_.unpark();
      return;
    }
    const uint64_t now = view_.now();
    const uint64_t deadline = last_progress_ + timeout_cycles_;
    const uint64_t wait_cycles = deadline > now ? deadline - now : 0;
    bell_.wait(seen, std::max<uint64_t>(cycles_to_ns(wait_cycles, args_.clock_hz), 1000000));
  }

  // True (after latching SchedulerTimeout) when no task completed anywhere for the timeout.
  bool watchdog_expired() {
    const uint64_t completed = view_.globals->completed.load(std::memory_order_acquire);
    const uint64_t now = view_.now();
    if (completed != last_completed_) {
      last_completed_ = completed;
      last_progress_ = now;
      return false;
    }
    if (now - last_progress_ < timeout_cycles_) return false;
    report_stuck(now, completed);
    common::ring_all_doorbells(view_.prefix);
    return true;
  }

  void report_stuck(uint64_t now, uint64_t completed) {
    ChipLaunchArgs& args = *view_.args;
    const unsigned long long timeout_ms = timeout_ms_of(args);
    // The task running longest on any core of the run.
    uint32_t stuck_core = UINT32_MAX;
    uint32_t stuck_task = common::kTaskIdle;
    uint64_t since = 0;
    for (uint32_t i = 0; i < run_core_count(args); ++i) {
      const uint32_t core = run_core(args, i);
      const common::HandshakeCell& cell = view_.prefix->cells[core];
      const uint32_t task = cell.executing.load(std::memory_order_acquire);
      if (task >= view_.task_count) continue;
      const uint64_t started = cell.started_cycles.load(std::memory_order_relaxed);
      if (stuck_core == UINT32_MAX || started < since) {
        stuck_core = core;
        stuck_task = task;
        since = started;
      }
    }
    if (stuck_core != UINT32_MAX) {
      const int32_t func_id = view_.tasks[stuck_task].func_id;
      const unsigned long long ago_ms =
          cycles_to_ns(now > since ? now - since : 0, args.clock_hz) / 1000000;
      if (latch_chip_error(&args.result, StatusCode::SchedulerTimeout,
                           "no progress for %llu ms: task %u (func_id %d) running on core %u (%s) "
                           "since %llu ms ago; %llu of %u tasks completed",
                           timeout_ms, stuck_task, func_id, stuck_core,
                           is_aic_core(args, stuck_core) ? "aic" : "aiv", ago_ms,
                           static_cast<unsigned long long>(completed), view_.task_count)) {
        args.result.stuck_task = stuck_task;
        args.result.stuck_func_id = func_id;
        args.result.stuck_core = static_cast<int32_t>(stuck_core);
      }
      return;
    }
    // Nothing runs: name the first task that has not completed and why it waits.
    for (uint32_t t = 0; t < view_.task_count; ++t) {
      const auto state =
          static_cast<TaskState>(view_.task_state[t].load(std::memory_order_relaxed));
      if (state == TaskState::Completed) continue;
      const char* why = state == TaskState::Pending ? "is not ready"
                        : state == TaskState::Ready ? "is ready but was never dispatched"
                                                    : "was dispatched but never started";
      const int32_t func_id = view_.tasks[t].func_id;
      if (latch_chip_error(&args.result, StatusCode::SchedulerTimeout,
                           "no progress for %llu ms: task %u (func_id %d) %s (%u of %u producers "
                           "outstanding) and no core is running a task; %llu of %u tasks completed",
                           timeout_ms, t, func_id, why,
                           view_.fanin_remaining[t].load(std::memory_order_relaxed),
                           view_.tasks[t].fanin_count, static_cast<unsigned long long>(completed),
                           view_.task_count)) {
        args.result.stuck_task = t;
        args.result.stuck_func_id = func_id;
        args.result.stuck_core = -1;
      }
      return;
    }
    latch_chip_error(&args.result, StatusCode::SchedulerTimeout,
                     "no progress for %llu ms with %llu of %u tasks completed", timeout_ms,
                     static_cast<unsigned long long>(completed), view_.task_count);
  }

  // Orders every owned core to exit and waits (bounded) for the acknowledgements.
  void shutdown_cores() {
    const bool failed = view_.failed();
    for (uint32_t i = 0; i < link_count_; ++i) {
      links_[i].order_exit();
      kick(links_[i]);
    }
    const uint64_t wait_ms =
        failed ? std::min(timeout_ms_of(args_), kErrorExitWaitMs) : timeout_ms_of(args_);
    const uint64_t deadline = view_.now() + ms_to_cycles(wait_ms, args_.clock_hz);
    int idle_spins = 0;
    for (;;) {
      uint32_t waiting = UINT32_MAX;
      for (uint32_t i = 0; i < link_count_ && waiting == UINT32_MAX; ++i) {
        if (!links_[i].exit_acked()) waiting = i;
      }
      if (waiting == UINT32_MAX) return;
      const uint64_t now = view_.now();
      if (now >= deadline) {
        if (!failed) {
          latch_chip_error(&view_.args->result, StatusCode::SchedulerTimeout,
                           "core %u did not acknowledge the exit order within %llu ms",
                           links_[waiting].core(), static_cast<unsigned long long>(wait_ms));
          common::ring_all_doorbells(view_.prefix);
        }
        return;
      }
      if (++idle_spins < kSpinBeforePark) {
        cpu_relax();
        continue;
      }
      idle_spins = 0;
      const uint32_t seen = bell_.prepare_park(0);
      if (links_[waiting].exit_acked()) {
        bell_.unpark();
        continue;
      }
      bell_.wait(seen, std::max<uint64_t>(cycles_to_ns(deadline - now, args_.clock_hz), 1000000));
    }
  }

  const RunView& view_;
  const ChipLaunchArgs& args_;
  uint32_t self_;
  common::Doorbell& bell_;
  CoreLink links_[common::kMaxCores];
  uint32_t link_count_ = 0;
  uint64_t timeout_cycles_ = 0;
  uint64_t last_completed_ = 0;
  uint64_t last_progress_ = 0;
  uint64_t first_dispatch_ = 0;
  uint64_t last_completion_ = 0;
};

// Non-zero threads: wait for thread 0 to open the start barrier (futex, bounded by the watchdog
// timeout). Returns true when the shared state is ready.
bool wait_for_start(ChipLaunchArgs* args, uint32_t thread_index) {
  common::SharedPrefix* prefix = common::shared_prefix(*args);
  const uint64_t timeout_ms = timeout_ms_of(*args);
  constexpr uint64_t kSliceMs = 50;
  for (uint64_t waited_ms = 0;; waited_ms += kSliceMs) {
    const uint32_t state = prefix->init_state.load(std::memory_order_acquire);
    if (state == common::kInitDone) return true;
    if (state == common::kInitFailed || common::chip_error_latched(args->result)) return false;
    if (waited_ms >= timeout_ms) {
      latch_chip_error(&args->result, StatusCode::InternalError,
                       "AICPU thread %u: thread 0 did not initialise the shared state within %llu "
                       "ms",
                       thread_index, static_cast<unsigned long long>(timeout_ms));
      return false;
    }
    common::futex_wait(&prefix->init_state, common::kInitPending, kSliceMs * 1000000ull);
  }
}

// ChipResult::tasks_completed is plain data the host reads after the launch; every thread
// publishes the count it saw last, keeping the largest.
void publish_tasks_completed(ChipLaunchArgs* args, uint64_t completed) {
  std::atomic_ref<uint64_t> slot(args->result.tasks_completed);
  uint64_t current = slot.load(std::memory_order_relaxed);
  while (current < completed &&
         !slot.compare_exchange_weak(current, completed, std::memory_order_relaxed)) {
  }
}

}  // namespace

uint64_t shared_state_bytes(uint64_t task_count, uint32_t cores) {
  // Handshake cells are laid out for kMaxCores at a fixed offset, indexed by device core number,
  // so a core finds its cell before initialisation; `cores` therefore does not change the size.
  static_cast<void>(cores);
  return shared_layout(task_count).total_bytes;
}

void aicpu_entry(void* launch_args, uint32_t thread_index, uint32_t thread_count) {
  auto* args = static_cast<ChipLaunchArgs*>(launch_args);
  if (!precheck_launch(args, thread_index, thread_count)) return;
  const auto& services =
      *reinterpret_cast<const platform::ChipServices*>(static_cast<uintptr_t>(args->services_addr));
  const uint64_t entry = services.cycles(services.ctx);
  PhaseStamps stamps(*args, thread_index);
  common::SharedPrefix* prefix = common::shared_prefix(*args);
  RunView view;
  if (thread_index == 0) {
    const uint64_t load_start = services.cycles(services.ctx);
    bool ok = validate_launch(args, thread_count, &view);
    if (ok) init_shared_state(view);
    ok = ok && !common::chip_error_latched(args->result);
    const uint64_t ready = services.cycles(services.ctx);
    stamps.stamp(Phase::Load, load_start, ready);
    stamps.stamp(Phase::Preamble, entry, ready);
    prefix->init_state.store(ok ? common::kInitDone : common::kInitFailed,
                             std::memory_order_release);
    common::futex_wake_all(&prefix->init_state);
    if (!ok) {
      stamps.stamp(Phase::RunWall, entry, services.cycles(services.ctx));
      return;
    }
  } else {
    if (!wait_for_start(args, thread_index)) {
      stamps.stamp(Phase::RunWall, entry, services.cycles(services.ctx));
      return;
    }
    attach_view(args, thread_count, &view);
  }
  SchedulerThread thread(view, thread_index);
  thread.run(&stamps);
  publish_tasks_completed(args, view.globals->completed.load(std::memory_order_acquire));
  stamps.stamp(Phase::RunWall, entry, services.cycles(services.ctx));
}

}  // namespace chiprt::scheduler
