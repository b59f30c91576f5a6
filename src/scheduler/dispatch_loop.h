// The dispatch loop of one scheduler thread over the cores it owns (both runtime variants), and
// the per-thread phase stamps it records.
//
// A SchedulerThread owns the clusters c with owner_of(...) == self (whole clusters, so MIX tasks
// can take all three cores of one). step() is one pass: open cores that reported ready, collect
// finishes (completing tasks and releasing consumers), dispatch ready work to free slots (MIX
// first, all three cores of a cluster at once; then AIC/AIV; SPMD tasks block by block, pushed
// back to their queue while blocks remain) and wake parked schedulers for work this thread
// cannot take. In a threaded launch a pass batches what it shares with the other schedulers
// (PassBuffer): consumers its completions released are kept for its own free slots up to a fair
// share (the rest pushed in one batch), ready tasks are popped in batches sized to its free
// slots (a fair share of the queue when kernels run inline on this thread), and completions are
// added to the shared counter once per pass. A pass costs what its work needs (see lean_): it
// collects from the cores with dispatches outstanding only and stops trying a queue it found
// empty. run() loops step() with a bounded spin, parks on the thread's doorbell, runs the
// watchdog and finally shuts the cores down.
//
// Lifetime and threading: constructed on its AICPU thread after the start barrier, used only by
// that thread; `view` must outlive it. No allocation after construction.
#pragma once

#include <cstdint>

#include "common/chip_launch.h"
#include "common/diag_writer.h"
#include "common/handshake.h"
#include "common/progress.h"
#include "scheduler/core_link.h"
#include "scheduler/shared_state.h"
#include "scheduler/task_engine.h"

namespace chiprt::scheduler {

// The no-progress bound (default when ChipLaunchArgs::scheduler_timeout_ms is 0): protocol.
using common::kDefaultSchedulerTimeoutMs;
using common::scheduler_timeout_ms;

// A spin-wait hint to the CPU (bounded spins before parking).
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}
// AICPU threads other than 0: wait for thread 0 to open the start barrier (parks through the
// platform's ParkWake, bounded by the scheduler timeout). Returns true when the shared state is
// ready.
bool wait_for_start(common::ChipLaunchArgs* args, uint32_t thread_index);
// ChipResult::tasks_completed is plain data the host reads after the launch; every thread
// publishes the count it saw last, keeping the largest.
void publish_tasks_completed(common::ChipLaunchArgs* args, uint64_t completed);
uint64_t ms_to_cycles(uint64_t ms, uint64_t hz);
uint64_t cycles_to_ns(uint64_t cycles, uint64_t hz);

// This thread's row of the launch's phase buffer (none when the launch has no buffer).
class PhaseStamps {
 public:
  PhaseStamps(const common::ChipLaunchArgs& args, uint32_t thread);
  void stamp(Phase phase, uint64_t start, uint64_t end) {
    if (row_ == nullptr) return;
    row_[static_cast<int>(phase)].start = start;
    row_[static_cast<int>(phase)].end = end;
  }

 private:
  common::PhaseStamp* row_ = nullptr;
};

class SchedulerThread {
 public:
  SchedulerThread(const RunView& view, uint32_t self);

  // One pass (see above). Returns whether anything progressed (a core opened, a finish was
  // collected, a task was dispatched or skipped).
  bool step();
  // Runs until every task completed (RunView::all_completed) or an error latched, then
  // shut_down(). Stamps the Scheduling phase.
  void run(PhaseStamps* stamps);
  // Orders every owned core to exit and waits (bounded) for the acknowledgements.
  void shut_down();
  // True (after latching SchedulerTimeout, naming the stuck task, kernel or orchestration
  // function) when the launch made no progress (common/progress.h) for the scheduler timeout.
  // Also usable by a thread that owns no cores.
  bool watchdog_expired();

 private:
  struct Cluster {
    uint32_t links[3];  // AIC, AIV0, AIV1 link indices
  };

  void kick(const CoreLink& link);
  // Links with dispatches not yet collected: the only ones a finish can come from.
  void mark_busy(uint32_t link) { busy_[link / 64] |= uint64_t{1} << (link % 64); }
  void share_surplus(int queue);
  bool open_ready_cores();
  bool collect_finishes(uint32_t* pushed);
  // After a finish on link *at: dispatches a task that finish made ready onto the freed core or
  // an idle cluster mate (the successor fast path, see the definition) and sets *at to the link
  // it dispatched to. Returns whether it dispatched.
  bool refill_freed_core(uint32_t* at, uint32_t* pushed);
  // A link of `link`'s cluster taking `queue` whose core is idle, or UINT32_MAX.
  uint32_t idle_cluster_mate(uint32_t link, int queue) const;
  bool dispatch(uint32_t* pushed);
  // Diagnostics: a Dispatch record of the payload just handed to `link`'s core.
  void note_dispatch(const CoreLink& link, const common::DispatchPayload& payload);
  // Puts `payload` of `task` into the running slot of link `index` (its pending slot when
  // `running` is false), notes it and marks the link busy. The caller kicks the core once nothing
  // else must come first (a kick may run the kernel inline on this thread). Always inlined: it is
  // on every dispatch, and a call cost the successor fast path ~20 instructions per task.
  [[gnu::always_inline]] inline void fill_slot(uint32_t index, uint32_t task,
                                               const common::DispatchPayload& payload,
                                               bool running);
  bool dispatch_mix(uint32_t* pushed);
  // Takes the next task of `queue` (the one this pass holds first). Predicated tasks whose
  // predicate is false are completed here and skipped. Returns false when none is left.
  bool take_task(int queue, uint32_t* task, uint32_t* pushed);
  // Claims the next block of `task` (held by this thread); keeps holding it while blocks remain.
  uint32_t claim_block(int queue, uint32_t task);
  void return_held(uint32_t* pushed);
  // Free slots (running + pending) of the cores taking `queue`.
  uint32_t free_slots(int queue) const;
  // How many of `available` ready tasks this thread takes for `free` slots of its own: all that
  // fit, but only a fair share when kernels run inline on the scheduler threads (a thread runs
  // what it takes one after the other, so taking more than its share idles the others).
  uint32_t fair_take(uint64_t available, uint32_t free) const;
  // After collecting: keeps this thread's share of the released AIC / AIV tasks and pushes the
  // rest in one batch per queue.
  void share_released(uint32_t* pushed);
  // Next task of the pass's local batch of `queue`, refilled from the shared queue.
  bool next_local(int queue, uint32_t* task);
  // Pushes back local tasks this pass did not dispatch.
  void return_local(uint32_t* pushed);
  void push_local(int queue, const uint32_t* tasks, uint32_t count, uint32_t* pushed);
  common::DispatchPayload payload_of(uint32_t task, int32_t func_id, uint32_t block) const;
  uint32_t wanted_queues() const;
  bool has_work(uint32_t wants) const;
  void park();
  void report_stuck(uint64_t now);
  uint64_t completed_tasks() const;
  // The launch's progress counters (common/progress.h) with the completed count.
  uint64_t progress_signature() const;
  void restart_watchdog();

  const RunView& view_;
  const common::ChipLaunchArgs& args_;
  uint32_t self_;
  common::Doorbell& bell_;
  common::DiagWriter diag_;  // this thread's diagnostics stream (inactive when off)
  CoreLink links_[common::kMaxCores];
  uint32_t link_count_ = 0;
  uint32_t unopened_ = 0;  // links whose core has not been opened yet
  // Passes visit only busy cores and skip queues found empty (and the MIX scan while its queue
  // is empty). Off on the schedulers of a threaded ring run other than thread 0: measured, their
  // leaner passes made ring wavefront ~25% slower with ~1.6x the context switches (probably as
  // they take more of the orchestrator's tasks and their completions wake it more often), while
  // lean passes on thread 0 cost nothing there.
  bool lean_ = true;
  // Bit per link (index into links_) with outstanding dispatches, so a pass visits the cores
  // that can finish, not every owned core (a chain keeps one of them busy).
  uint64_t busy_[(common::kMaxCores + 63) / 64] = {};
  Cluster clusters_[common::kMaxCores / 3];
  uint32_t cluster_of_link_[common::kMaxCores] = {};  // index into clusters_
  uint32_t cluster_count_ = 0;
  // A SPMD task popped by this pass with blocks left (kTaskIdle when none), per queue.
  uint32_t held_[kQueueCount];
  // Threaded launches only (`batching_`): the pass's local tasks and completion count.
  bool batching_ = false;
  uint32_t schedulers_ = 1;           // scheduler threads sharing the queues
  bool drained_[2] = {false, false};  // AIC / AIV queue found empty by this dispatch
  PassBuffer local_;
  common::ProgressWatch watch_;  // in chip cycles
  uint64_t last_completed_ = 0;
  uint64_t first_dispatch_ = 0;
  uint64_t last_completion_ = 0;
  uint64_t collecting_passes_ = 0;     // passes of collect_finishes that took a finish
  uint64_t skipped_ = 0;               // predicated tasks skipped (completed at pop)
  uint64_t successor_dispatches_ = 0;  // refill_freed_core's dispatches
  // Refills per collecting pass: kRefillsPerOrchestratorPass until run() starts (the passes the
  // threaded ring orchestrator makes in its waits), else kRefillsPerPass.
  uint32_t refills_per_pass_ = 0;
};

}  // namespace chiprt::scheduler
