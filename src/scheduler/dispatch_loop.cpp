#include "scheduler/dispatch_loop.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <iterator>

namespace chiprt::scheduler {
namespace {

using common::ChipLaunchArgs;
using common::latch_chip_error;

// Bounded wait for exit acknowledgements after an error: a core stuck in a kernel never answers.
constexpr uint64_t kErrorExitWaitMs = 1000;
// Loop iterations without progress before parking (each re-checks every source of work).
constexpr int kSpinBeforePark = 256;
// Collecting passes between two reads of the clock for the Scheduling phase's end stamp.
constexpr uint64_t kCompletionStampInterval = 64;
// Completions a threaded pass keeps counting locally before it adds them to the shared counter;
// the rest is added as soon as a pass makes no progress (so at the latest when the run is done).
constexpr uint64_t kCompletionFlushBatch = 64;
// Freed cores a collecting pass of run() refills at once (refill_freed_core) before it lets the
// rest of the pass run. A pass the threaded ring orchestrator makes while it waits (step()
// outside run()) refills fewer: with kernels inline a long chain would keep it from submitting
// while the other schedulers idle. A serial launch has nobody else to keep busy.
constexpr uint32_t kRefillsPerPass = 256;
constexpr uint32_t kRefillsPerOrchestratorPass = 16;
constexpr uint32_t kWorkQueueBits =
    queue_bit(kQueueAic) | queue_bit(kQueueAiv) | queue_bit(kQueueMix);

}  // namespace

uint64_t ms_to_cycles(uint64_t ms, uint64_t hz) {
  return static_cast<uint64_t>(static_cast<unsigned __int128>(ms) * hz / 1000);
}
uint64_t cycles_to_ns(uint64_t cycles, uint64_t hz) {
  const unsigned __int128 ns = static_cast<unsigned __int128>(cycles) * 1000000000ull / hz;
  return ns > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(ns);
}

PhaseStamps::PhaseStamps(const ChipLaunchArgs& args, uint32_t thread) {
  if (args.phase_buffer_addr != 0) {
    auto* buffer =
        reinterpret_cast<common::PhaseBuffer*>(static_cast<uintptr_t>(args.phase_buffer_addr));
    row_ = buffer->stamps[thread];
  }
}

SchedulerThread::SchedulerThread(const RunView& view, uint32_t self)
    : view_(view),
      args_(*view.args),
      self_(self),
      bell_(view.prefix->doorbells[self]),
      diag_(common::DiagWriter::thread_stream(*view.args, *view.services, self)) {
  uint32_t link_of_core[common::kMaxCores];
  std::fill(std::begin(link_of_core), std::end(link_of_core), UINT32_MAX);
  for (uint32_t i = 0; i < run_core_count(args_); ++i) {
    const uint32_t core = run_core(args_, i);
    if (owner_of(args_, core, view.thread_count, view.first_scheduler) != self) continue;
    link_of_core[core] = link_count_;
    links_[link_count_++].attach(&view.prefix->cells[core], core,
                                 is_aic_core(args_, core) ? kQueueAic : kQueueAiv);
  }
  for (uint32_t c = 0; c < args_.clusters; ++c) {
    const uint32_t aic = link_of_core[c];
    if (aic == UINT32_MAX) continue;
    const uint32_t aiv = args_.device_clusters + 2 * c;
    const Cluster cluster{{aic, link_of_core[aiv], link_of_core[aiv + 1]}};
    for (const uint32_t link : cluster.links) {
      if (link != UINT32_MAX) cluster_of_link_[link] = cluster_count_;
    }
    clusters_[cluster_count_++] = cluster;
  }
  unopened_ = link_count_;
  lean_ = view.ring == nullptr || view.exclusive || self == 0;
  std::fill(std::begin(held_), std::end(held_), common::kTaskIdle);
  batching_ = !view.exclusive;
  refills_per_pass_ = view.exclusive ? kRefillsPerPass : kRefillsPerOrchestratorPass;  // run(): all
  schedulers_ = std::max(1u, view.thread_count - std::min(view.first_scheduler, view.thread_count));
  restart_watchdog();
}

uint64_t SchedulerThread::progress_signature() const {
  return view_.globals->completed.load(std::memory_order_acquire) +
         common::chip_progress_counters(*view_.prefix, 3 * args_.device_clusters);
}

void SchedulerThread::restart_watchdog() {
  last_completed_ = view_.globals->completed.load(std::memory_order_acquire);
  watch_.restart(progress_signature(), view_.now(),
                 ms_to_cycles(scheduler_timeout_ms(args_), args_.clock_hz));
}

void SchedulerThread::kick(const CoreLink& link) {
  view_.services->kick_core(view_.services->ctx, link.core());
}

// When a kick runs the kernel inline on this thread (kicks_run_kernels) this pass may run several
// kernels back to back: wake a parked scheduler for work still queued before each kick, not only
// after the pass. Costs a few loads when no scheduler is parked. With executor threads a kick
// returns at once and the pass ends soon, so the wake-up after the pass suffices.
void SchedulerThread::share_surplus(int queue) {
  if (!args_.kicks_run_kernels || view_.exclusive) return;
  wake_for_work(view_, self_, queue_bit(queue));
}

void SchedulerThread::note_dispatch(const CoreLink& link, const common::DispatchPayload& payload) {
  const uint64_t t = diag_.now();
  diag_.put(common::DiagKind::Dispatch, static_cast<uint16_t>(link.core()), payload.task_id, t, t,
            payload.func_id, payload.block_idx, payload.block_num);
}

bool SchedulerThread::step() {
  bool progress = open_ready_cores();
  uint32_t pushed = 0;
  progress |= collect_finishes(&pushed);
  if (!view_.all_completed() && !view_.failed()) {
    progress |= dispatch(&pushed);
  } else if (batching_) {
    return_local(&pushed);
  }
  if ((pushed & kWorkQueueBits) != 0) wake_for_work(view_, self_, pushed & kWorkQueueBits);
  return progress;
}

void SchedulerThread::run(PhaseStamps* stamps) {
  refills_per_pass_ = kRefillsPerPass;
  for (uint32_t i = 0; i < link_count_; ++i) kick(links_[i]);  // solicit ready reports
  restart_watchdog();
  int idle_spins = 0;
  const bool phases = diag_.on(common::kDiagLoopPhases);
  while (!view_.failed()) {
    const uint64_t pass_start = phases ? diag_.now() : 0;
    const bool progress = step();
    if (phases && progress) {
      diag_.put(common::DiagKind::LoopPhase, static_cast<uint16_t>(self_), 0, pass_start,
                diag_.now(), -1, 0, static_cast<uint32_t>(common::DiagLoopPhase::Dispatch));
    }
    if (view_.all_completed()) break;
    if (progress) {
      idle_spins = 0;
      continue;
    }
    if (local_.completions != 0) {
      flush_completions(view_, &local_);
      last_completion_ = view_.now();
      continue;
    }
    if (watchdog_expired()) break;
    if (++idle_spins < kSpinBeforePark) {
      cpu_relax();
      continue;
    }
    idle_spins = 0;
    const uint64_t park_start = phases ? diag_.now() : 0;
    park();
    if (phases) {
      diag_.put(common::DiagKind::LoopPhase, static_cast<uint16_t>(self_), 0, park_start,
                diag_.now(), -1, 0, static_cast<uint32_t>(common::DiagLoopPhase::Park));
    }
  }
  flush_completions(view_, &local_);  // a failed run's count, for the report
  if (successor_dispatches_ != 0) {
    std::atomic_ref<uint64_t>(view_.args->result.successor_dispatches)
        .fetch_add(successor_dispatches_, std::memory_order_relaxed);
  }
  if (first_dispatch_ != 0) {
    stamps->stamp(Phase::Scheduling, first_dispatch_, std::max(first_dispatch_, last_completion_));
  }
  shut_down();
}

bool SchedulerThread::open_ready_cores() {
  if (unopened_ == 0) return false;
  bool opened = false;
  for (uint32_t i = 0; i < link_count_; ++i) {
    CoreLink& link = links_[i];
    if (!link.opened() && link.reported_ready()) {
      link.open();
      --unopened_;
      kick(link);
      opened = true;
    }
  }
  return opened;
}

bool SchedulerThread::collect_finishes(uint32_t* pushed) {
  bool any = false;
  uint32_t task = 0;
  uint32_t refills = 0;
  PassBuffer* local = batching_ ? &local_ : nullptr;
  for (uint32_t word = 0; word < std::size(busy_); ++word) {
    for (uint64_t bits = lean_ ? busy_[word] : ~uint64_t{0}; bits != 0; bits &= bits - 1) {
      const uint32_t i = word * 64 + static_cast<uint32_t>(__builtin_ctzll(bits));
      if (i >= link_count_) break;
      // `at` follows the successor fast path to the core it refilled (a cluster mate when the
      // successor has the other shape), then comes back to link i for the rest of its finishes.
      uint32_t at = i;
      for (;;) {
        CoreLink& link = links_[at];
        if (!link.take_finished(&task)) {
          if (at == i) break;
          if (link.outstanding() == 0) busy_[at / 64] &= ~(uint64_t{1} << (at % 64));
          at = i;
          continue;
        }
        if (diag_.on(common::kDiagSchedEvents)) {
          const uint64_t t = diag_.now();
          diag_.put(common::DiagKind::Complete, static_cast<uint16_t>(link.core()),
                    static_cast<uint64_t>(view_.public_id(task)), t, t);
        }
        finish_dispatch(view_, task, pushed, local);
        any = true;
        if (refills < refills_per_pass_ && refill_freed_core(&at, pushed)) ++refills;
      }
      if (links_[i].outstanding() == 0) busy_[word] &= ~(uint64_t{1} << (i % 64));
    }
  }
  if (local != nullptr) {
    if (local->completions >= kCompletionFlushBatch) flush_completions(view_, local);
    share_released(pushed);
  }
  // The clock read costs as much as a task's bookkeeping: stamp the last completion only every
  // kCompletionStampInterval collecting passes and when the run is complete (the phase end is
  // exact for a finished run, and at most that many passes early for a failed one).
  if (any && (collecting_passes_++ % kCompletionStampInterval == 0 || view_.all_completed())) {
    last_completion_ = view_.now();
  }
  return any;
}

void SchedulerThread::fill_slot(uint32_t index, uint32_t task,
                                const common::DispatchPayload& payload, bool running) {
  CoreLink& link = links_[index];
  if (running) {
    link.dispatch_running(task, payload);
  } else {
    link.dispatch_pending(task, payload);
  }
  if (diag_.on(common::kDiagSchedEvents)) note_dispatch(link, payload);
  mark_busy(index);
}

// The successor fast path: the core whose finish was just collected is idle, so a task that
// finish made ready goes straight into its running slot (or, when the task has the other shape,
// into an idle cluster mate's): transition, payload, kick, with no ready-queue round trip and no
// scan of the other cores. When the kick runs the kernel inline, collect_finishes collects that
// finish next, so a chain runs completion to dispatch on one thread. Threaded, only when that
// task is all this pass holds (a chain): several released tasks are shared first
// (share_released), so the other schedulers get theirs without waiting for this one. Serial, any
// ready task is taken from the queues, the freed core's shape first (there is nobody to share
// with). Bounded per pass (kRefillsPerPass) so that the other cores' finishes, the completion
// count and the watchdog are still seen.
bool SchedulerThread::refill_freed_core(uint32_t* at, uint32_t* pushed) {
  const uint32_t freed = *at;
  if (!links_[freed].running_free() || view_.failed()) return false;
  const int own = links_[freed].queue();
  const int other = own == kQueueAic ? kQueueAiv : kQueueAic;
  int queue = own;
  if (batching_) {
    const uint32_t own_count = local_.ready[own].count;
    const uint32_t other_count = local_.ready[other].count;
    if (own_count + other_count != 1 || held_[own] != common::kTaskIdle ||
        held_[other] != common::kTaskIdle) {
      return false;
    }
    if (other_count == 1) queue = other;
    if (local_.completions >= kCompletionFlushBatch) flush_completions(view_, &local_);
  } else if (held_[own] == common::kTaskIdle && view_.queues[own]->size_hint() == 0) {
    if (held_[other] == common::kTaskIdle && view_.queues[other]->size_hint() == 0) return false;
    queue = other;
  }
  uint32_t target = freed;
  if (queue != own) {
    target = idle_cluster_mate(freed, queue);
    if (target == UINT32_MAX) return false;
  }
  uint32_t task = 0;
  const bool took = take_task(queue, &task, pushed);
  if (batching_ && local_.ready[queue].count == 0) local_.ready[queue].head = 0;
  if (!took) return false;
  fill_slot(target, task, payload_of(task, view_.tasks[task].func_id, claim_block(queue, task)),
            true);
  ++successor_dispatches_;
  *at = target;
  kick(links_[target]);
  return true;
}

uint32_t SchedulerThread::idle_cluster_mate(uint32_t link, int queue) const {
  const Cluster& cluster = clusters_[cluster_of_link_[link]];
  for (const uint32_t mate : cluster.links) {
    if (mate != UINT32_MAX && links_[mate].queue() == queue && links_[mate].running_free()) {
      return mate;
    }
  }
  return UINT32_MAX;
}

common::DispatchPayload SchedulerThread::payload_of(uint32_t task, int32_t func_id,
                                                    uint32_t block) const {
  const common::TaskRecord& record = view_.tasks[task];
  common::DispatchPayload payload{};
  payload.kernel_addr = view_.kernel_table[func_id];
  payload.args_addr = reinterpret_cast<uintptr_t>(view_.task_args + record.args_begin);
  payload.func_id = func_id;
  payload.arg_count = record.arg_count;
  payload.args_in_place = (record.flags & common::kTaskFlagArgsInPlace) != 0 ? 1 : 0;
  payload.block_idx = block;
  payload.block_num = record.block_num;
  payload.task_id = static_cast<uint64_t>(view_.public_id(task));
  return payload;
}

bool SchedulerThread::take_task(int queue, uint32_t* task, uint32_t* pushed) {
  if (held_[queue] != common::kTaskIdle) {
    *task = held_[queue];
    return true;
  }
  while (batching_ && queue <= kQueueAiv ? next_local(queue, task) : view_.pop(queue, task)) {
    const common::TaskRecord& record = view_.tasks[*task];
    // A SPMD task is popped once per batch of blocks; only the first pop starts it.
    if (!single_dispatch(record) && view_.next_block[*task].load(std::memory_order_relaxed) != 0) {
      return true;
    }
    if ((record.flags & common::kTaskFlagPredicated) != 0 && !predicate_true(record)) {
      zero_skipped_outputs(record);  // its consumers read zeros, not stale heap bytes
      complete_task(view_, *task, pushed, TaskState::Ready);  // skipped: releases its consumers
      ++skipped_;
      continue;
    }
    transition(view_, *task, TaskState::Ready, TaskState::Running);
    if (first_dispatch_ == 0) first_dispatch_ = view_.now();
    return true;
  }
  return false;
}

uint32_t SchedulerThread::claim_block(int queue, uint32_t task) {
  const common::TaskRecord& record = view_.tasks[task];
  if (single_dispatch(record)) return 0;
  // Only the thread holding the task (popped, not yet pushed back) claims its blocks; the queue
  // hand-off orders the claims of successive holders.
  const uint32_t block = view_.next_block[task].load(std::memory_order_relaxed);
  view_.next_block[task].store(block + 1, std::memory_order_relaxed);
  held_[queue] = block + 1 < record.block_num ? task : common::kTaskIdle;
  return block;
}

void SchedulerThread::return_held(uint32_t* pushed) {
  for (int q = 0; q < kQueueCount; ++q) {
    if (held_[q] == common::kTaskIdle) continue;
    if (!view_.push(q, held_[q])) {
      latch_chip_error(&view_.args->result, StatusCode::InternalError,
                       "ready queue %d full while returning SPMD task %lld (capacity %llu)", q,
                       static_cast<long long>(view_.public_id(held_[q])),
                       static_cast<unsigned long long>(view_.queues[q]->capacity()));
      common::ring_all_doorbells(view_.prefix, view_.park_wake());
    }
    *pushed |= queue_bit(q);
    held_[q] = common::kTaskIdle;
  }
}

uint32_t SchedulerThread::free_slots(int queue) const {
  uint32_t free = 0;
  for (uint32_t i = 0; i < link_count_; ++i) {
    const CoreLink& link = links_[i];
    if (link.queue() != queue || !link.opened()) continue;
    if (link.running_free()) {
      free += 2;
    } else if (link.pending_free()) {
      free += 1;
    }
  }
  return free;
}

uint32_t SchedulerThread::fair_take(uint64_t available, uint32_t free) const {
  uint64_t take = available;
  if (args_.kicks_run_kernels) take = (available + schedulers_ - 1) / schedulers_;
  return static_cast<uint32_t>(std::min<uint64_t>(take, free));
}

void SchedulerThread::push_local(int queue, const uint32_t* tasks, uint32_t count,
                                 uint32_t* pushed) {
  if (count == 0) return;
  // Capacity >= the tasks of the queue's shape, each queued at most once: cannot fail unless the
  // shared state was corrupted.
  if (!view_.push_batch(queue, tasks, count)) {
    latch_chip_error(&view_.args->result, StatusCode::InternalError,
                     "ready queue %d full while pushing %u tasks (capacity %llu)", queue, count,
                     static_cast<unsigned long long>(view_.queues[queue]->capacity()));
    common::ring_all_doorbells(view_.prefix, view_.park_wake());
    return;
  }
  *pushed |= queue_bit(queue);
}

void SchedulerThread::share_released(uint32_t* pushed) {
  uint32_t shared = 0;
  for (int q : {kQueueAic, kQueueAiv}) {
    PassBuffer::Local& local = local_.ready[q];
    if (local.count == 0) continue;
    // One released task (a chain) is always this thread's next: the core whose finish released
    // it is free, and a task it cannot place goes back to the queue at the end of the pass.
    const uint32_t keep = local.count == 1 ? 1 : fair_take(local.count, free_slots(q));
    push_local(q, local.tasks + local.head + keep, local.count - keep, &shared);
    local.count = keep;
  }
  // Wake parked schedulers before this pass runs kernels inline, not after.
  if (shared != 0) wake_for_work(view_, self_, shared);
  *pushed |= shared;
}

bool SchedulerThread::next_local(int queue, uint32_t* task) {
  PassBuffer::Local& local = local_.ready[queue];
  if (local.count == 0) {
    if (drained_[queue]) return false;
    // The queue's positions first: when it is empty (a chain, whose next task this thread kept)
    // the pass neither counts its free slots nor tries a claim.
    const uint64_t queued = view_.queues[queue]->size_hint();
    const uint32_t want =
        queued == 0 ? 0 : std::min(fair_take(queued, free_slots(queue)), PassBuffer::kCapacity);
    local.head = 0;
    local.count = want == 0 ? 0 : view_.pop_batch(queue, local.tasks, want);
    if (local.count == 0) {
      drained_[queue] = true;  // the other cores of this shape need not look again this pass
      return false;
    }
    share_surplus(queue);
  }
  *task = local.tasks[local.head++];
  --local.count;
  return true;
}

void SchedulerThread::return_local(uint32_t* pushed) {
  for (int q : {kQueueAic, kQueueAiv}) {
    PassBuffer::Local& local = local_.ready[q];
    push_local(q, local.tasks + local.head, local.count, pushed);
    local.head = 0;
    local.count = 0;
  }
}

// One block of a MIX task goes to a cluster only when each of its three cores has a free slot,
// so the parts start together (never a partial cluster). Parts without a kernel get no dispatch.
bool SchedulerThread::dispatch_mix(uint32_t* pushed) {
  // Most graphs have no MIX task: skip the cluster scan while the queue looks empty (a push this
  // misses is taken by the next pass; parking re-checks the queue with seq_cst loads).
  if (lean_ && held_[kQueueMix] == common::kTaskIdle && view_.queues[kQueueMix]->size_hint() == 0) {
    return false;
  }
  bool any = false;
  for (uint32_t c = 0; c < cluster_count_; ++c) {
    const Cluster& cluster = clusters_[c];
    if (!links_[cluster.links[0]].has_free_slot() || !links_[cluster.links[1]].has_free_slot() ||
        !links_[cluster.links[2]].has_free_slot()) {
      continue;
    }
    uint32_t task = 0;
    if (!take_task(kQueueMix, &task, pushed)) break;
    const common::TaskRecord& record = view_.tasks[task];
    const int32_t funcs[3] = {record.func_id, record.mix_aiv[0], record.mix_aiv[1]};
    const uint32_t block = claim_block(kQueueMix, task);
    common::DispatchPayload payloads[3];
    for (int k = 0; k < 3; ++k) {
      if (funcs[k] != -1) payloads[k] = payload_of(task, funcs[k], block);
    }
    share_surplus(kQueueMix);
    // The record is not read past this point: the last part may finish (and the task complete)
    // as soon as it is handed out.
    for (int k = 0; k < 3; ++k) {
      if (funcs[k] == -1) continue;
      const uint32_t index = cluster.links[k];
      fill_slot(index, task, payloads[k], links_[index].running_free());
      kick(links_[index]);
    }
    any = true;
  }
  return any;
}

// MIX first (it needs whole clusters), then idle cores (running slots, cores in index order),
// then busy cores' pending slots. Work this thread cannot take stays queued; the caller wakes
// parked schedulers that can (a scheduler never defers its own free slots to others: on an
// oversubscribed host the wake-up hand-off costs far more than running the task on a core that
// is about to be free).
bool SchedulerThread::dispatch(uint32_t* pushed) {
  const uint64_t skipped_before = skipped_;
  bool any = dispatch_mix(pushed);
  drained_[kQueueAic] = false;
  drained_[kQueueAiv] = false;
  uint32_t task = 0;
  // Queues take_task found empty in this call: the other cores of that shape skip them (a pass
  // of a chain would otherwise try every idle core). A skipped task's completion may push work,
  // so that forgets them.
  const uint32_t skip_when_empty = lean_ ? queue_bit(kQueueAic) | queue_bit(kQueueAiv) : 0;
  const uint32_t both_shapes = queue_bit(kQueueAic) | queue_bit(kQueueAiv);
  uint32_t empty = 0;
  for (int pass = 0; pass < 2 && (empty & skip_when_empty) != both_shapes; ++pass) {
    for (uint32_t i = 0; i < link_count_ && (empty & skip_when_empty) != both_shapes; ++i) {
      CoreLink& link = links_[i];
      const int queue = link.queue();
      if ((empty & skip_when_empty & queue_bit(queue)) != 0) continue;
      const bool free_slot = pass == 0 ? link.running_free() : link.pending_free();
      if (!free_slot) continue;
      const uint64_t skipped = skipped_;
      const bool took = take_task(queue, &task, pushed);
      if (skipped_ != skipped) empty = 0;
      if (!took) {
        empty |= queue_bit(queue);
        continue;
      }
      fill_slot(i, task, payload_of(task, view_.tasks[task].func_id, claim_block(queue, task)),
                pass == 0);
      if (!batching_) share_surplus(queue);
      kick(link);
      any = true;
    }
  }
  return_held(pushed);
  if (batching_) return_local(pushed);
  // Skipped (predicate false) tasks completed: that is progress too.
  return any || skipped_ != skipped_before;
}

uint32_t SchedulerThread::wanted_queues() const {
  uint32_t wants = 0;
  for (uint32_t i = 0; i < link_count_; ++i) {
    if (links_[i].running_free()) wants |= idle_core_bit(links_[i].queue());
    if (links_[i].pending_free()) wants |= pending_slot_bit(links_[i].queue());
  }
  for (uint32_t c = 0; c < cluster_count_; ++c) {
    const Cluster& cluster = clusters_[c];
    if (links_[cluster.links[0]].has_free_slot() && links_[cluster.links[1]].has_free_slot() &&
        links_[cluster.links[2]].has_free_slot()) {
      wants |= idle_core_bit(kQueueMix) | pending_slot_bit(kQueueMix);
      break;
    }
  }
  return wants;
}

bool SchedulerThread::has_work(uint32_t wants) const {
  if (view_.failed() || view_.all_completed()) return true;
  for (uint32_t i = 0; i < link_count_; ++i) {
    const CoreLink& link = links_[i];
    if (link.has_new_finish() || (!link.opened() && link.reported_ready())) return true;
  }
  for (int q : {kQueueAic, kQueueAiv, kQueueMix}) {
    if ((wants & (idle_core_bit(q) | pending_slot_bit(q))) != 0 &&
        view_.queues[q]->maybe_nonempty()) {
      return true;
    }
  }
  return false;
}

void SchedulerThread::park() {
  const uint32_t wants = wanted_queues();
  const uint32_t seen = bell_.prepare_park(wants);
  if (has_work(wants)) {
    bell_.unpark();
    return;
  }
  const uint64_t now = view_.now();
  const uint64_t deadline = watch_.next_check();  // the watchdog's next sample or its deadline
  const uint64_t wait_cycles = deadline > now ? deadline - now : 0;
  bell_.wait(seen, std::max<uint64_t>(cycles_to_ns(wait_cycles, args_.clock_hz), 1000000),
             view_.park_wake());
}

// True (after latching SchedulerTimeout) when the launch made no progress (common/progress.h: no
// task completed, no kernel started, the orchestration function neither submitted nor returned)
// for the timeout. The completed count is read on every call (it is read anyway); the other
// counters, one per core, only when a sample is due.
bool SchedulerThread::watchdog_expired() {
  const uint64_t completed = view_.globals->completed.load(std::memory_order_acquire);
  const uint64_t now = view_.now();
  if (completed != last_completed_) {
    last_completed_ = completed;
    watch_.note_progress(now);
    return false;
  }
  if (!watch_.stalled(now, [this] { return progress_signature(); })) return false;
  report_stuck(now);
  common::ring_all_doorbells(view_.prefix, view_.park_wake());
  return true;
}

// host_build_graph passes count completions locally and add them to the shared counter in
// batches, so a thread stuck in a kernel may hold some: the task states are exact. A ring run
// counts each completion at once (its slots are reused, so their states are no count).
uint64_t SchedulerThread::completed_tasks() const {
  if (view_.ring != nullptr) return view_.globals->completed.load(std::memory_order_acquire);
  uint64_t completed = 0;
  for (uint32_t t = 0; t < view_.task_count; ++t) {
    completed += view_.task_state[t].load(std::memory_order_relaxed) ==
                 static_cast<uint8_t>(TaskState::Completed);
  }
  return completed;
}

void SchedulerThread::report_stuck(uint64_t now) {
  ChipLaunchArgs& args = *view_.args;
  const unsigned long long timeout_ms = scheduler_timeout_ms(args);
  const unsigned long long published = view_.globals->published.load(std::memory_order_acquire);
  const uint64_t completed = completed_tasks();
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
    const long long id = view_.public_id(stuck_task);
    const unsigned long long ago_ms =
        cycles_to_ns(now > since ? now - since : 0, args.clock_hz) / 1000000;
    if (latch_chip_error(&args.result, StatusCode::SchedulerTimeout,
                         "no progress for %llu ms: task %lld (func_id %d) running on core %u (%s) "
                         "since %llu ms ago; %llu of %llu tasks completed",
                         timeout_ms, id, func_id, stuck_core,
                         is_aic_core(args, stuck_core) ? "aic" : "aiv", ago_ms,
                         static_cast<unsigned long long>(completed), published)) {
      args.result.stuck_task = id;
      args.result.stuck_func_id = func_id;
      args.result.stuck_core = static_cast<int32_t>(stuck_core);
      args.result.stall_kind = static_cast<uint32_t>(common::SchedulerStall::RunningTaskStalled);
    }
    return;
  }
  // A ring run whose orchestration function is still running with every submitted task done.
  if (view_.ring != nullptr && completed >= published &&
      view_.globals->total.load(std::memory_order_acquire) == UINT64_MAX) {
    if (latch_chip_error(&args.result, StatusCode::SchedulerTimeout,
                         "no progress for %llu ms (orchestrator starved: nothing to schedule): "
                         "the orchestration function (AICPU thread 0) has neither submitted a "
                         "task nor returned; tasks submitted: %llu, all completed",
                         timeout_ms, published)) {
      args.result.stall_kind = static_cast<uint32_t>(common::SchedulerStall::OrchestratorStarved);
    }
    return;
  }
  // Nothing runs: name the first task that has not completed and why it waits.
  for (uint32_t t = 0; t < view_.task_count; ++t) {
    const auto state = static_cast<TaskState>(view_.task_state[t].load(std::memory_order_relaxed));
    if (state == TaskState::Completed) continue;
    const char* why = state == TaskState::Pending ? "is not ready"
                      : state == TaskState::Ready ? "is ready but was never dispatched"
                                                  : "was dispatched but never started";
    const int32_t func_id = view_.tasks[t].func_id;
    const long long id = view_.public_id(t);
    // A scope fence has no TaskId: named as what it is (it waits for the scope's tasks).
    char label[64];
    if (view_.scope_fence(t)) {
      std::snprintf(label, sizeof(label), "a scope fence (dependency-only, internal)");
    } else {
      std::snprintf(label, sizeof(label), "task %lld (func_id %d)", id, func_id);
    }
    // Ready (or dispatched) work with every eligible core idle is the scheduler's stall; a task
    // that is not ready with nothing running is a dependency deadlock.
    const bool deadlock = state == TaskState::Pending;
    const char* kind = deadlock ? "dependency deadlock" : "ready work but every eligible core idle";
    if (latch_chip_error(&args.result, StatusCode::SchedulerTimeout,
                         "no progress for %llu ms (%s): %s %s (%u producers outstanding) and no "
                         "core is running a task; %llu of %llu tasks completed",
                         timeout_ms, kind, label, why,
                         view_.fanin_remaining[t].load(std::memory_order_relaxed),
                         static_cast<unsigned long long>(completed), published)) {
      args.result.stuck_task = id;
      args.result.stuck_func_id = func_id;
      args.result.stuck_core = -1;
      args.result.stall_kind =
          static_cast<uint32_t>(deadlock ? common::SchedulerStall::DependencyDeadlock
                                         : common::SchedulerStall::ReadyButCoresIdle);
    }
    return;
  }
  latch_chip_error(&args.result, StatusCode::SchedulerTimeout,
                   "no progress for %llu ms with %llu of %llu tasks completed", timeout_ms,
                   static_cast<unsigned long long>(completed), published);
}

void SchedulerThread::shut_down() {
  const bool failed = view_.failed();
  for (uint32_t i = 0; i < link_count_; ++i) {
    links_[i].order_exit();
    kick(links_[i]);
  }
  const uint64_t timeout_ms = scheduler_timeout_ms(args_);
  const uint64_t wait_ms = failed ? std::min(timeout_ms, kErrorExitWaitMs) : timeout_ms;
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
        common::ring_all_doorbells(view_.prefix, view_.park_wake());
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
    bell_.wait(seen, std::max<uint64_t>(cycles_to_ns(deadline - now, args_.clock_hz), 1000000),
               view_.park_wake());
  }
}

bool wait_for_start(ChipLaunchArgs* args, uint32_t thread_index) {
  common::SharedPrefix* prefix = common::shared_prefix(*args);
  const auto& services =
      *reinterpret_cast<const common::ChipServices*>(static_cast<uintptr_t>(args->services_addr));
  const uint64_t timeout_ms = scheduler_timeout_ms(*args);
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
    services.park_wake.park(&prefix->init_state, common::kInitPending, kSliceMs * 1000000ull);
  }
}

void publish_tasks_completed(ChipLaunchArgs* args, uint64_t completed) {
  std::atomic_ref<uint64_t> slot(args->result.tasks_completed);
  uint64_t current = slot.load(std::memory_order_relaxed);
  while (current < completed &&
         !slot.compare_exchange_weak(current, completed, std::memory_order_relaxed)) {
  }
}

}  // namespace chiprt::scheduler
