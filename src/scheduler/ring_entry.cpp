// AICPU entry of a tensormap_ringbuffer run: launch validation, ring initialisation, the
// RingDriver the orchestrator runs on, and the split of thread roles (see ring_hooks.h).
#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <exception>

#include "chiprt/callable.h"
#include "chiprt/task_args.h"
#include "common/handshake.h"
#include "common/progress.h"
#include "common/ring_state.h"
#include "common/task_args_wire.h"
#include "orchestrator/ring_orchestrator.h"
#include "scheduler/dispatch_loop.h"
#include "scheduler/ring_hooks.h"
#include "scheduler/ring_state_view.h"
#include "scheduler/shared_state.h"
#include "scheduler/task_engine.h"

namespace chiprt::scheduler {
namespace {

using common::ChipLaunchArgs;
using common::latch_chip_error;

// The orchestrator is AICPU thread 0 in both modes.
constexpr uint32_t kOrchestratorThread = 0;

// Whether thread 0 owns cores too (RunView::first_scheduler 0): always in serial mode, and in a
// threaded run when kicks run kernels inline (SimCoreExecution::Aicpu). There the AICPU threads
// are the chip's only compute, so an orchestrator that idled after orchestrating would leave a
// 2-thread run one thread of kernels; owning cores, it schedules them in its waits and after
// orchestrating. It needs a cluster of its own beside every scheduler's. With executor threads
// the cores compute and thread 0 stays a pure orchestrator, so no core waits on its submissions.
bool orchestrator_owns_cores(const ChipLaunchArgs& args, uint32_t thread_count) {
  return args.serial || (args.kicks_run_kernels && args.clusters >= thread_count);
}
// Re-checks before the orchestrator parks (threaded) or scheduling passes before it parks
// (serial); short: each costs far less than a futex round trip, but a park is what frees the
// host core on an oversubscribed host.
constexpr int kOrchestratorSpins = 64;
// Slice of the post-orchestration wait of a threaded run's thread 0 (re-checks the run's end).
constexpr uint64_t kDrainSliceNs = 50ull * 1000 * 1000;

#define CHIPRT_RING_INVALID(args, code, ...)              \
  do {                                                    \
    latch_chip_error(&(args)->result, code, __VA_ARGS__); \
    return false;                                         \
  } while (0)

bool aligned_nonnull(uint64_t addr, uint64_t align) {
  return addr != 0 && addr % align == 0;
}

// Thread 0: everything the ring run trusts about the launch arguments.
bool validate_ring_launch(ChipLaunchArgs* args, uint32_t thread_count, RingLayout* layout) {
  constexpr StatusCode kInternal = StatusCode::InternalError;
  if (args->variant != RuntimeVariant::TensormapRingbuffer) {
    CHIPRT_RING_INVALID(args, kInternal,
                        "ring AICPU entry called for runtime variant %u (needs "
                        "tensormap_ringbuffer)",
                        static_cast<unsigned>(args->variant));
  }
  if (args->serial && thread_count != 1) {
    CHIPRT_RING_INVALID(args, kInternal,
                        "serial tensormap_ringbuffer launch with %u AICPU threads (serial mode "
                        "needs exactly 1)",
                        thread_count);
  }
  if (!args->serial && thread_count < 2) {
    CHIPRT_RING_INVALID(args, StatusCode::InvalidConfig,
                        "tensormap_ringbuffer with %u AICPU thread needs at least 2 (1 "
                        "orchestrator + 1 scheduler); use more threads or serial mode",
                        thread_count);
  }
  if (args->clock_hz == 0) CHIPRT_RING_INVALID(args, kInternal, "ChipLaunchArgs::clock_hz is 0");
  if (args->device_clusters == 0 || args->device_clusters * 3 > common::kMaxCores) {
    CHIPRT_RING_INVALID(args, kInternal, "device_clusters %u is outside [1, %u]",
                        args->device_clusters, common::kMaxCores / 3);
  }
  if (args->clusters == 0 || args->clusters > args->device_clusters) {
    CHIPRT_RING_INVALID(args, kInternal, "clusters %u is outside [1, device_clusters %u]",
                        args->clusters, args->device_clusters);
  }
  if (args->kernel_table_addr == 0) {
    CHIPRT_RING_INVALID(args, kInternal, "ChipLaunchArgs::kernel_table_addr is null");
  }
  if (args->orchestration_entry == 0) {
    CHIPRT_RING_INVALID(args, kInternal, "ChipLaunchArgs::orchestration_entry is null");
  }
  if (!aligned_nonnull(args->orchestration_args_addr, alignof(common::TaskArgsWire))) {
    CHIPRT_RING_INVALID(args, kInternal,
                        "ChipLaunchArgs::orchestration_args_addr 0x%" PRIx64
                        " is null or not %zu-byte aligned",
                        args->orchestration_args_addr, alignof(common::TaskArgsWire));
  }
  if (args->user_data_bytes > CallConfig::kMaxUserDataBytes ||
      (args->user_data_bytes != 0 &&
       !aligned_nonnull(args->user_data_addr, CallConfig::kUserDataAlign))) {
    CHIPRT_RING_INVALID(args, kInternal,
                        "ChipLaunchArgs::user_data_addr 0x%" PRIx64 " with %" PRIu64
                        " bytes is not a %" PRIu64 "-byte aligned block of at most %" PRIu64
                        " bytes",
                        args->user_data_addr, args->user_data_bytes, CallConfig::kUserDataAlign,
                        CallConfig::kMaxUserDataBytes);
  }
  if (!aligned_nonnull(args->kernel_info_addr, alignof(common::KernelTable))) {
    CHIPRT_RING_INVALID(args, kInternal,
                        "ChipLaunchArgs::kernel_info_addr 0x%" PRIx64
                        " is null or not %zu-byte aligned",
                        args->kernel_info_addr, alignof(common::KernelTable));
  }
  char problem[common::kResultDetailBytes];
  if (ring_sizes_problem(args->rings, problem, sizeof(problem))) {
    CHIPRT_RING_INVALID(args, StatusCode::InvalidConfig, "%s", problem);
  }
  *layout = ring_layout(args->rings);
  if (!aligned_nonnull(args->heap_addr, kRingHeapAlign)) {
    CHIPRT_RING_INVALID(args, kInternal,
                        "ChipLaunchArgs::heap_addr 0x%" PRIx64 " is null or not 64-byte aligned",
                        args->heap_addr);
  }
  if (layout->heap_bytes > args->heap_size) {
    CHIPRT_RING_INVALID(args, StatusCode::InvalidConfig,
                        "the ring heaps of all depths need %" PRIu64
                        " bytes but the run's output heap has %" PRIu64
                        " (lower CallConfig::rings.heap_bytes or raise the output heap)",
                        layout->heap_bytes, args->heap_size);
  }
  if (layout->total_bytes > args->shared_size) {
    CHIPRT_RING_INVALID(args, kInternal,
                        "shared-state region has %" PRIu64 " bytes, rings of %u slots need %" PRIu64
                        " (size it with common::ring_shared_state_bytes)",
                        args->shared_size, layout->total_slots, layout->total_bytes);
  }
  return true;
}

// Every thread: the view of a ring run (validated by thread 0 before the barrier).
void attach_ring_view(ChipLaunchArgs* args, uint32_t thread_count, const RingLayout& layout,
                      RingView* ring, RunView* view) {
  auto* region = reinterpret_cast<uint8_t*>(static_cast<uintptr_t>(args->shared_addr));
  *ring = ring_view_at(region, layout);
  view->args = args;
  view->ring = ring;
  view->public_ids = ring->public_ids;
  view->first_scheduler = orchestrator_owns_cores(*args, thread_count) ? 0 : 1;
  view->services =
      reinterpret_cast<const common::ChipServices*>(static_cast<uintptr_t>(args->services_addr));
  bind_shared_region(args, layout.total_slots, view);
  view->tasks = ring->records;
  view->fanout = nullptr;
  view->task_args = ring->slot_args;
  view->initial_ready = nullptr;
  view->initial_ready_count = 0;
  view->kernel_table =
      reinterpret_cast<const uint64_t*>(static_cast<uintptr_t>(args->kernel_table_addr));
  view->task_count = layout.total_slots;
  view->thread_count = thread_count;
  view->exclusive = args->serial && thread_count == 1;
}

// Thread 0, before the barrier: the common scheduler state with every slot idle (Completed, so
// the watchdog skips it) and the ring geometry. The host zeroed the region; only non-zero
// initial values are written besides the counters.
void init_ring_state(const RunView& view, const RingLayout& layout) {
  auto* region = reinterpret_cast<uint8_t*>(static_cast<uintptr_t>(view.args->shared_addr));
  const SharedLayout common_layout = shared_layout(layout.total_slots);
  for (int q = 0; q < kQueueCount; ++q) {
    ReadyQueue::init(region + common_layout.queue_offset[q], common_layout.queue_capacity);
  }
  view.globals->completed.store(0, std::memory_order_relaxed);
  view.globals->published.store(0, std::memory_order_relaxed);
  view.globals->total.store(UINT64_MAX, std::memory_order_relaxed);
  const ChipLaunchArgs& args = *view.args;
  for (uint32_t core = 0; core < common::kMaxCores; ++core) {
    common::HandshakeCell& cell = view.prefix->cells[core];
    cell.running.store(common::kTaskIdle, std::memory_order_relaxed);
    cell.pending.store(common::kTaskIdle, std::memory_order_relaxed);
    // Core-written, but only once opened (after the barrier); zero would read as "executing
    // slot 0" to the watchdog.
    cell.executing.store(common::kTaskIdle, std::memory_order_relaxed);
    cell.owner = 0;
  }
  for (uint32_t i = 0; i < run_core_count(args); ++i) {
    const uint32_t core = run_core(args, i);
    view.prefix->cells[core].owner = owner_of(args, core, view.thread_count, view.first_scheduler);
  }
  const RingView& ring = *view.ring;
  for (uint32_t s = 0; s < layout.total_slots; ++s) {
    view.fanin_remaining[s].store(0, std::memory_order_relaxed);
    view.parts_remaining[s].store(0, std::memory_order_relaxed);
    view.next_block[s].store(0, std::memory_order_relaxed);
    view.task_state[s].store(static_cast<uint8_t>(TaskState::Completed), std::memory_order_relaxed);
    common::RingSlot& slot = ring.slots[s];
    slot.fanout_head.store(common::kFanoutSealed, std::memory_order_relaxed);
    slot.refs.store(0, std::memory_order_relaxed);
    slot.producer_count = 0;
    slot.spill_begin = 0;
    slot.sequence = 0;
    ring.public_ids[s] = -1;
  }
  common::RingControl& control = *ring.control;
  uint64_t slot_base = 0;
  uint64_t heap_base = 0;
  uint64_t dep_base = 0;
  for (uint32_t d = 0; d < common::kRingDepths; ++d) {
    common::RingSetGeometry& set = control.sets[d];
    // Bounded by ring_sizes_problem: every base and size fits its field.
    set.slot_base = static_cast<uint32_t>(slot_base);
    set.window = static_cast<uint32_t>(args.rings.task_window[d]);
    set.heap_base = heap_base;
    set.heap_size = args.rings.heap_bytes[d];
    set.dep_base = static_cast<uint32_t>(dep_base);
    set.dep_size = static_cast<uint32_t>(args.rings.dep_pool[d]);
    set.spill_base = static_cast<uint32_t>(dep_base);
    set.spill_size = static_cast<uint32_t>(args.rings.dep_pool[d]);
    slot_base += args.rings.task_window[d];
    heap_base += args.rings.heap_bytes[d];
    dep_base += args.rings.dep_pool[d];
  }
  control.total_slots = layout.total_slots;
  control.orchestrator_thread = kOrchestratorThread;
  control.orchestrator_waiting.store(0, std::memory_order_relaxed);
  control.orchestrator_wake_at.store(0, std::memory_order_relaxed);
}

// The orchestrator's side of the chip: readiness, progress, clock, and waiting. When thread 0
// owns cores (orchestrator_owns_cores) its waits run its dispatch loop over them; otherwise they
// park on its doorbell.
class ChipRingDriver final : public orchestrator::RingDriver {
 public:
  ChipRingDriver(const RunView& view, SchedulerThread* own_cores)
      : view_(view),
        control_(*view.ring->control),
        bell_(view.prefix->doorbells[kOrchestratorThread]),
        own_cores_(own_cores) {}

  void publish_ready(uint32_t slot) override {
    uint32_t pushed = 0;
    make_ready(view_, slot, &pushed);
    if ((pushed & queue_bit(kQueueDummy)) != 0) {
      // Dependency-only tasks never reach a core: complete them here, like a completing
      // scheduler. Their consumers may be many tasks: wake every scheduler that can take one.
      drain_dummies(view_, &pushed);
      wake_for_work(view_, kOrchestratorThread, pushed);
      return;
    }
    wake_one_scheduler(queue_of(view_.tasks[slot]));
  }

  void note_submitted(uint64_t submitted) override {
    view_.globals->published.store(submitted, std::memory_order_release);
    beat();
  }
  // Progress to every watchdog (common/progress.h); this thread is the beat's only writer.
  void beat() {
    std::atomic<uint32_t>& beat = view_.prefix->orchestrator_beat;
    beat.store(beat.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  uint64_t progress() const override {
    return completed() +
           common::chip_progress_counters(*view_.prefix, 3 * view_.args->device_clusters);
  }

  // seq_cst: the orchestrator's park re-checks read it after announcing the park (Doorbell).
  uint64_t completed() const override {
    return view_.globals->completed.load(std::memory_order_seq_cst);
  }

  void wait(uint64_t deadline_cycles, bool (*recheck)(void*), void* recheck_ctx) override {
    if (own_cores_ != nullptr) {
      wait_scheduling(deadline_cycles, recheck, recheck_ctx);
    } else {
      wait_threaded(deadline_cycles, recheck, recheck_ctx);
    }
  }

  uint64_t now() const override { return view_.now(); }
  uint64_t clock_hz() const override { return view_.args->clock_hz; }
  bool chip_failed() const override { return view_.failed(); }

 private:
  // Parks on the orchestrator's doorbell until rung or the deadline. `also_ready` is re-checked
  // after announcing the park (seq_cst, see common::Doorbell) besides the caller's recheck.
  template <class AlsoReady>
  void park(uint64_t deadline_cycles, bool (*recheck)(void*), void* recheck_ctx,
            AlsoReady&& also_ready) {
    control_.orchestrator_waiting.store(1, std::memory_order_seq_cst);
    const uint32_t seen = bell_.prepare_park(0);
    const uint64_t now = view_.now();
    if (view_.failed() || now >= deadline_cycles || recheck(recheck_ctx) || also_ready()) {
      bell_.unpark();
    } else {
      const uint64_t ns = cycles_to_ns(deadline_cycles - now, view_.args->clock_hz);
      bell_.wait(seen, std::max<uint64_t>(ns, 1), view_.park_wake());
    }
    control_.orchestrator_waiting.store(0, std::memory_order_relaxed);
  }

  void wait_threaded(uint64_t deadline_cycles, bool (*recheck)(void*), void* recheck_ctx) {
    for (int i = 0; i < kOrchestratorSpins; ++i) {
      if (view_.failed() || recheck(recheck_ctx) || view_.now() >= deadline_cycles) return;
      cpu_relax();
    }
    park(deadline_cycles, recheck, recheck_ctx, [] { return false; });
  }

  // One scheduling pass over thread 0's cores; when nothing moved for a few passes, parks on
  // this thread's doorbell, which the cores it owns ring on every finish and ready report (and
  // completers, while orchestrator_waiting is set). A pass run after announcing the park is the
  // re-check of the cores (its loads of finish counts and core status).
  void wait_scheduling(uint64_t deadline_cycles, bool (*recheck)(void*), void* recheck_ctx) {
    for (int i = 0; i < kOrchestratorSpins; ++i) {
      if (own_cores_->step() || view_.failed() || recheck(recheck_ctx)) return;
      if (view_.now() >= deadline_cycles) return;
      cpu_relax();
    }
    park(deadline_cycles, recheck, recheck_ctx, [this] { return own_cores_->step(); });
  }

  // One task was pushed onto `queue` (a seq_cst store): one parked scheduler that can take it is
  // enough. Waking every parked scheduler per submission (wake_for_work) makes the others park
  // again empty-handed, which on an oversubscribed host costs more than the submission itself.
  // Schedulers that are awake re-check the queues before parking (Doorbell's Dekker), so they need
  // no wake-up. Starts after the last one woken, spreading a stream of submissions over the
  // schedulers. Serial mode has no other scheduler.
  void wake_one_scheduler(int queue) {
    const uint32_t first = view_.first_scheduler;
    const uint32_t count = view_.thread_count;
    if (count <= first + (first == kOrchestratorThread ? 1u : 0u)) return;
    const uint32_t wanted = idle_core_bit(queue) | pending_slot_bit(queue);
    for (uint32_t i = 0; i < count - first; ++i) {
      const uint32_t t = first + (next_wake_ + i) % (count - first);
      if (t == kOrchestratorThread) continue;
      common::Doorbell& bell = view_.prefix->doorbells[t];
      if (bell.parked() && (bell.wants.load(std::memory_order_relaxed) & wanted) != 0) {
        bell.ring(view_.park_wake());
        next_wake_ = t + 1 - first;
        return;
      }
    }
  }

  const RunView& view_;
  common::RingControl& control_;
  common::Doorbell& bell_;
  SchedulerThread* own_cores_;  // thread 0's dispatch loop when it owns cores, else null
  uint32_t next_wake_ = 0;      // rotation of wake_one_scheduler, relative to first_scheduler
};

// Thread 0: runs the orchestration function, latches its error and publishes the run's total.
// Returns the cycle count when the function (and the orchestrator's end-of-run work) finished.
uint64_t orchestrate(const RunView& view, SchedulerThread* own_cores, PhaseStamps* stamps) {
  ChipLaunchArgs* args = view.args;
  const RingView& ring = *view.ring;
  orchestrator::RingMemory memory;
  memory.args = args;
  memory.control = ring.control;
  memory.slots = ring.slots;
  memory.dep_pool = ring.dep_pool;
  memory.spill = ring.spill;
  memory.records = ring.records;
  memory.slot_args = ring.slot_args;
  memory.public_ids = ring.public_ids;
  memory.fanin_remaining = view.fanin_remaining;
  memory.task_state = view.task_state;
  memory.heap_addr = args->heap_addr;
  memory.heap_size = args->heap_size;
  memory.run = args->run;
  memory.kernels =
      reinterpret_cast<const common::KernelTable*>(static_cast<uintptr_t>(args->kernel_info_addr));
  memory.user_data =
      reinterpret_cast<const std::byte*>(static_cast<uintptr_t>(args->user_data_addr));
  memory.user_data_bytes = args->user_data_bytes;
  memory.clusters = args->clusters;
  memory.timeout_ms = common::scheduler_timeout_ms(*args);
  memory.diag = common::DiagWriter::thread_stream(*args, *view.services, 0);
  const auto entry =
      reinterpret_cast<OrchestrationEntry>(static_cast<uintptr_t>(args->orchestration_entry));
  // The run's arguments cross in their wire format; a block this runtime did not write (another
  // version, corrupted) fails the run before the function is called.
  TaskArgs orchestration_args;
  const Status decoded =
      common::decode_task_args(*reinterpret_cast<const common::TaskArgsWire*>(
                                   static_cast<uintptr_t>(args->orchestration_args_addr)),
                               &orchestration_args);
  if (!decoded.is_ok()) {
    latch_chip_error(&args->result, decoded.code(), "%s", decoded.message().c_str());
    view.globals->total.store(0, std::memory_order_seq_cst);
    common::ring_all_doorbells(view.prefix, view.park_wake());
    return view.now();
  }

  ChipRingDriver driver(view, own_cores);
  const uint64_t start = view.now();
  uint64_t submitted = 0;
  try {
    orchestrator::RingOrchestrator orchestrator(memory, driver);
    const Status status = orchestrator.run(entry, orchestration_args);
    submitted = orchestrator.submitted();
    if (!status.is_ok() &&
        latch_chip_error(&args->result, status.code(), "%s", status.message().c_str())) {
      args->result.from_orchestration = true;
    }
  } catch (const std::exception& e) {
    // run() converts the function's exceptions; what reaches here is the orchestrator's own
    // failure (allocation of its bookkeeping).
    latch_chip_error(&args->result, StatusCode::InternalError,
                     "tensormap_ringbuffer orchestrator failed: %s", e.what());
  }
  driver.beat();  // the function returned: progress
  const uint64_t end = view.now();
  stamps->stamp(Phase::Orchestration, start, end);
  // Dekker with the completer's check in complete_task: either it sees the total or this load
  // sees its completion; whoever sees both ends the run.
  view.globals->total.store(submitted, std::memory_order_seq_cst);
  if (view.failed() || view.globals->completed.load(std::memory_order_seq_cst) >= submitted) {
    common::ring_all_doorbells(view.prefix, view.park_wake());
  }
  return end;
}

// Threaded thread 0 without cores, after orchestrating: parks until the schedulers drained the
// run (or it failed); the last completion and every error ring all doorbells.
void wait_for_drain(const RunView& view) {
  common::Doorbell& bell = view.prefix->doorbells[kOrchestratorThread];
  // The orchestrator watches too: when kernels run on the scheduler threads
  // (SimCoreExecution::Aicpu), a kernel that never returns blocks its scheduler, and with a
  // single scheduler nobody else would name it. Owns no cores (they all belong to schedulers).
  SchedulerThread watchdog(view, kOrchestratorThread);
  while (!view.failed() && !view.all_completed()) {
    if (watchdog.watchdog_expired()) break;
    const uint32_t seen = bell.prepare_park(0);
    if (view.failed() || view.all_completed()) {
      bell.unpark();
      break;
    }
    bell.wait(seen, kDrainSliceNs, view.park_wake());
  }
}

}  // namespace

void ring_aicpu_entry(ChipLaunchArgs* args, uint32_t thread_index, uint32_t thread_count) {
  if (!precheck_launch(args, thread_index, thread_count)) return;
  const auto& services =
      *reinterpret_cast<const common::ChipServices*>(static_cast<uintptr_t>(args->services_addr));
  const uint64_t entry = services.cycles(services.ctx);
  PhaseStamps stamps(*args, thread_index);
  common::SharedPrefix* prefix = common::shared_prefix(*args);
  RingLayout layout;
  RingView ring;
  RunView view;
  if (thread_index == 0) {
    bool ok = validate_ring_launch(args, thread_count, &layout);
    if (ok) {
      attach_ring_view(args, thread_count, layout, &ring, &view);
      init_ring_state(view, layout);
    }
    const uint64_t ready = services.cycles(services.ctx);
    stamps.stamp(Phase::Preamble, entry, ready);
    prefix->init_state.store(ok ? common::kInitDone : common::kInitFailed,
                             std::memory_order_release);
    services.park_wake.wake(&prefix->init_state);
    if (!ok) {
      stamps.stamp(Phase::RunWall, entry, services.cycles(services.ctx));
      return;
    }
    if (view.first_scheduler == kOrchestratorThread) {
      SchedulerThread scheduler(view, kOrchestratorThread);
      // Solicit its cores' ready reports now: the orchestrator's waits schedule before run().
      for (uint32_t i = 0; i < run_core_count(*args); ++i) {
        const uint32_t core = run_core(*args, i);
        if (prefix->cells[core].owner == kOrchestratorThread) {
          services.kick_core(services.ctx, core);
        }
      }
      const uint64_t orchestrated = orchestrate(view, &scheduler, &stamps);
      scheduler.run(&stamps);
      stamps.stamp(Phase::PostOrchestration, orchestrated, services.cycles(services.ctx));
    } else {
      const uint64_t orchestrated = orchestrate(view, nullptr, &stamps);
      wait_for_drain(view);
      stamps.stamp(Phase::PostOrchestration, orchestrated, services.cycles(services.ctx));
    }
  } else {
    if (!wait_for_start(args, thread_index)) {
      stamps.stamp(Phase::RunWall, entry, services.cycles(services.ctx));
      return;
    }
    attach_ring_view(args, thread_count, ring_layout(args->rings), &ring, &view);
    SchedulerThread scheduler(view, thread_index);
    scheduler.run(&stamps);
  }
  publish_tasks_completed(args, view.globals->completed.load(std::memory_order_acquire));
  stamps.stamp(Phase::RunWall, entry, services.cycles(services.ctx));
}

}  // namespace chiprt::scheduler
