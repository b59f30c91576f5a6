#include "orchestrator/ring_orchestrator.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "common/kernel_block.h"
#include "common/progress.h"
#include "common/run_context.h"
#include "common/task_state.h"
#include "orchestrator/ring_allocators.h"
#include "orchestrator/task_dependencies.h"
#include "orchestrator/task_front.h"
#include "orchestrator/tensor_map.h"

namespace chiprt::orchestrator {
namespace {

constexpr uint8_t kStatePending = static_cast<uint8_t>(common::TaskState::Pending);
constexpr uint8_t kStateCompleted = static_cast<uint8_t>(common::TaskState::Completed);

constexpr uint64_t kOutputAlign = 64;
// When RingMemory::timeout_ms is 0: the scheduler timeout's default (protocol).
constexpr uint64_t kDefaultWaitTimeoutMs = common::kDefaultSchedulerTimeoutMs;
// Tensor-map writers are encoded handles: set << kSetShift | per-set sequence.
constexpr uint32_t kSetShift = 48;

uint64_t align_output(uint64_t bytes) {
  return (bytes + kOutputAlign - 1) & ~(kOutputAlign - 1);
}

TaskId encode_handle(uint32_t set, uint64_t seq) {
  return static_cast<TaskId>((uint64_t{set} << kSetShift) | seq);
}
uint32_t handle_set(TaskId handle) {
  return static_cast<uint32_t>(static_cast<uint64_t>(handle) >> kSetShift);
}
uint64_t handle_seq(TaskId handle) {
  return static_cast<uint64_t>(handle) & ((uint64_t{1} << kSetShift) - 1);
}

enum class RingKind { Window, Heap, Deps, Spill };

const char* ring_name(RingKind kind) {
  switch (kind) {
    case RingKind::Window:
      return "task window";
    case RingKind::Heap:
      return "output heap";
    case RingKind::Deps:
      return "dependency pool";
    case RingKind::Spill:
      return "spill storage";
  }
  return "ring";
}
const char* ring_unit(RingKind kind) {
  switch (kind) {
    case RingKind::Window:
      return "slots";
    case RingKind::Heap:
      return "bytes";
    case RingKind::Deps:
      return "entries";
    case RingKind::Spill:
      return "words";
  }
  return "units";
}
// The sizing knob of each ring (the spill storage is sized by the dependency pool).
std::string ring_knob(RingKind kind, uint32_t set) {
  const char* field = kind == RingKind::Window ? "task_window"
                      : kind == RingKind::Heap ? "heap_bytes"
                                               : "dep_pool";
  const char* env = kind == RingKind::Window ? "CHIPRT_RING_TASK_WINDOW"
                    : kind == RingKind::Heap ? "CHIPRT_RING_HEAP_BYTES"
                                             : "CHIPRT_RING_DEP_POOL";
  return "CallConfig::rings." + std::string(field) + "[" + std::to_string(set) + "] or " + env;
}

template <class F>
bool call_recheck(void* ctx) {
  return (*static_cast<F*>(ctx))();
}

}  // namespace

// Orchestrator-private state. Per set: the sequence counters, one FifoRing per shared ring, and
// the stack of slots holding a scope reference (only tasks of open scopes hold one, newest last).
// Per slot: what retiring it must release. Everything is sized at construction; per-submit work
// only touches these arrays and the tensor map's pools.
struct RingOrchestrator::State {
  struct SetState {
    common::RingSetGeometry geo{};
    uint64_t next_seq = 0;     // sequence of the next task of this set
    uint64_t retired_seq = 0;  // every task below is retired
    FifoRing heap;
    FifoRing deps;
    FifoRing spill;
    std::vector<uint64_t> holders;  // sequences of scope-reference holders, ascending
    std::size_t holder_count = 0;

    bool window_full() const { return next_seq - retired_seq >= geo.window; }
    uint32_t slot_of(uint64_t seq) const {
      return geo.slot_base + static_cast<uint32_t>(seq & (geo.window - 1));
    }
  };
  struct SlotInfo {
    uint64_t heap_mark = 0;
    uint64_t dep_mark = 0;
    uint64_t spill_mark = 0;
    uint64_t stamp = 0;         // collection that last listed this slot as a producer (dedupe)
    uint64_t retain_stamp = 0;  // collection that last listed it as a retained owner (dedupe)
    // Tensor-map entries it recorded (one per tracked argument and the predicate), for erasure.
    uint32_t entries[kMaxTaskTensors + 1] = {};
    uint32_t entry_count = 0;
    uint32_t depth = 0;
    bool holds_scope_ref = false;
  };
  // The scope rules are the front's; a frame is what the rings need of an open scope.
  struct ScopeFrame {
    uint64_t first_seq = 0;  // next_seq of the scope's set when it began
    // Diagnostics (kDiagScopeStats): the scope's number, tasks submitted in it (nested scopes
    // excluded), and the peak use of its set's rings while it was open.
    uint64_t number = 0;
    uint64_t tasks = 0;
    uint64_t peak_window = 0;
    uint64_t peak_heap = 0;
    uint64_t peak_deps = 0;
  };
  // What a wait loop watches: progress resets the no-progress clock.

  State(const RingMemory& memory, RingDriver& driver)
      : mem(memory), driver(driver), front(*memory.kernels) {}

  RingMemory mem;
  RingDriver& driver;
  TaskFront front;  // checks, scope rules, records, the error latch
  uint64_t submitted = 0;
  uint64_t manual_tasks = 0;
  uint64_t timeout_cycles = 0;
  TensorMap map;
  SetState sets[common::kRingDepths];
  std::vector<SlotInfo> info;
  std::vector<ScopeFrame> scopes;  // [0] is the implicit root scope, [d] the user scope at depth d
  std::vector<TaskId> producers;   // scratch: producer handles of the task being submitted
  std::vector<TaskId> retained;    // scratch: owners of the runtime outputs it reads
  PreparedArgs prepared;           // scratch: tensor-map descriptions of the task's arguments
  uint64_t collection = 0;         // stamp of the current producer collection
  uint64_t scopes_opened = 0;      // diagnostics: scopes numbered so far (the root is 0)
  // Diagnostics (kDiagEdges): the graph's logical dependencies, which `map` forgets as tasks
  // retire, and the scratch of one task's producers. Null while the switch is off.
  std::unique_ptr<TaskDependencies> logical;
  ProducerKinds logical_producers;

  // ---- errors -------------------------------------------------------------------------------
  void fail(StatusCode code, std::string message) { front.latch(code, std::move(message)); }
  std::size_t depth() const { return front.scope_depth(); }

  // False once an error latched here or on the chip (which then latches here too).
  bool usable() {
    if (front.failed()) return false;
    if (driver.chip_failed()) {
      fail_from_chip();
      return false;
    }
    return true;
  }
  void fail_from_chip() {
    StatusCode code = StatusCode::InternalError;
    std::string detail = "an error latched on the chip";
    if (mem.args != nullptr) {
      code = static_cast<StatusCode>(mem.args->result.code.load(std::memory_order_acquire));
      detail = std::string(mem.args->result.detail,
                           strnlen(mem.args->result.detail, common::kResultDetailBytes));
    }
    if (code == StatusCode::Ok) code = StatusCode::InternalError;
    fail(code, "orchestration stopped: " + detail);
  }

  // ---- geometry -----------------------------------------------------------------------------
  bool init() {
    const common::RingControl& control = *mem.control;
    const uint64_t ms = mem.timeout_ms == 0 ? kDefaultWaitTimeoutMs : mem.timeout_ms;
    timeout_cycles = ms * (driver.clock_hz() / 1000 == 0 ? 1 : driver.clock_hz() / 1000);
    for (uint32_t d = 0; d < common::kRingDepths; ++d) {
      const common::RingSetGeometry& g = control.sets[d];
      auto bad = [&](const char* what) {
        fail(StatusCode::InternalError, "ring set of depth " + std::to_string(d) + ": " + what +
                                            " (ring geometry written by ring init is invalid)");
        return false;
      };
      if (g.window == 0 || (g.window & (g.window - 1)) != 0)
        return bad("window not a power of two");
      if (uint64_t{g.slot_base} + g.window > control.total_slots) return bad("slots out of range");
      if (g.heap_size % kOutputAlign != 0 || g.heap_base % kOutputAlign != 0 ||
          g.heap_base + g.heap_size > mem.heap_size) {
        return bad("heap range not 64-byte aligned or outside the run's heap");
      }
      SetState& set = sets[d];
      set.geo = g;
      set.heap = FifoRing(g.heap_size);
      set.deps = FifoRing(g.dep_size);
      set.spill = FifoRing(g.spill_size);
      set.holders.assign(g.window, 0);
    }
    info.assign(control.total_slots, SlotInfo{});
    for (uint32_t s = 0; s < control.total_slots; ++s) {
      mem.slots[s].fanout_head.store(common::kFanoutSealed, std::memory_order_relaxed);
      mem.slots[s].refs.store(0, std::memory_order_relaxed);
      mem.task_state[s].store(kStateCompleted, std::memory_order_relaxed);
      mem.public_ids[s] = -1;
    }
    producers.reserve(256);
    scopes.resize(8);
    if (mem.diag.on(common::kDiagEdges)) logical = std::make_unique<TaskDependencies>();
    return true;
  }

  uint32_t set_of_depth(std::size_t d) const {
    return static_cast<uint32_t>(std::min<std::size_t>(d, common::kRingDepths - 1));
  }

  bool handle_live(TaskId handle) const {
    const SetState& set = sets[handle_set(handle)];
    const uint64_t seq = handle_seq(handle);
    return seq >= set.retired_seq && seq < set.next_seq;
  }
  uint32_t handle_slot(TaskId handle) const {
    return sets[handle_set(handle)].slot_of(handle_seq(handle));
  }
  bool slot_completed(uint32_t slot) const {
    return mem.slots[slot].fanout_head.load(std::memory_order_acquire) == common::kFanoutSealed;
  }

  // The live task of set d with public id `id`, as a handle, or kNoTask.
  TaskId resolve_in_set(uint32_t d, TaskId id) const {
    const SetState& set = sets[d];
    uint64_t lo = set.retired_seq;
    uint64_t hi = set.next_seq;
    while (lo < hi) {  // public ids grow with the sequence inside a set
      const uint64_t mid = lo + (hi - lo) / 2;
      const int64_t pid = mem.public_ids[set.slot_of(mid)];
      if (pid == id) return encode_handle(d, mid);
      if (pid < id) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return kNoTask;
  }
  // The live task with public id `id`, as a handle, or kNoTask when it retired already.
  TaskId resolve_public(TaskId id) const {
    for (uint32_t d = 0; d < common::kRingDepths; ++d) {
      const TaskId handle = resolve_in_set(d, id);
      if (handle != kNoTask) return handle;
    }
    return kNoTask;
  }

  // A runtime output whose scope ended (its memory may already belong to a later output) must
  // not reach a later task. Outputs are recognised by their heap range and owner.
  // Whether `t` is a runtime output whose scope ended (recognised by its heap range and owner).
  bool released_output(const Tensor& t) const {
    if (t.buffer.size == 0 || t.owner_task < 0 ||
        static_cast<uint64_t>(t.owner_task) >= submitted) {
      return false;
    }
    for (uint32_t d = 0; d < common::kRingDepths; ++d) {
      const uint64_t begin = mem.heap_addr + sets[d].geo.heap_base;
      if (t.buffer.addr < begin || t.buffer.addr - begin >= sets[d].geo.heap_size) continue;
      const TaskId owner = resolve_in_set(d, t.owner_task);
      return owner == kNoTask || !info[handle_slot(owner)].holds_scope_ref;
    }
    return false;
  }
  // A released output's memory may already belong to a later output: it must not reach a task.
  // False (the front latched InvalidTask naming it) when an argument or the predicate is one.
  bool check_released_outputs(uint64_t id, const TaskSpec* spec, const TaskArgs& args,
                              const ArgList& refs) {
    for (int i = 0; i < refs.tensor_count; ++i) {
      const Tensor& t = *refs.tensors[i];
      // The first test of released_output, inline: most arguments are no runtime output.
      if (t.owner_task >= 0 && refs.tags[i] != ArgTag::Out && released_output(t)) {
        front.latch(TaskFront::released_output(id, spec, args, static_cast<int8_t>(i)));
        return false;
      }
    }
    if (args.has_predicate() && released_output(args.predicate())) {
      front.latch(TaskFront::released_output(id, spec, args, kPredicateArg));
      return false;
    }
    return true;
  }

  // ---- messages -----------------------------------------------------------------------------
  std::string slot_label(uint32_t slot) const {
    const common::TaskRecord& r = mem.records[slot];
    std::string label = "task " + std::to_string(mem.public_ids[slot]);
    if (r.flags & common::kTaskFlagDummy) return label + " (dummy)";
    if (r.core_type == static_cast<uint8_t>(CoreType::MIX)) {
      return label + " (mix " + std::to_string(r.func_id) + "/" + std::to_string(r.mix_aiv[0]) +
             "/" + std::to_string(r.mix_aiv[1]) + ")";
    }
    return label + " (func_id " + std::to_string(r.func_id) + ")";
  }
  std::string slot_description(uint32_t slot) const {
    const uint8_t state = mem.task_state[slot].load(std::memory_order_acquire);
    std::string text = slot_label(slot) + ", state " + std::string(common::task_state_name(state));
    if (slot_completed(slot)) {
      const uint32_t refs = mem.slots[slot].refs.load(std::memory_order_acquire);
      text += ", still retained by " + std::to_string(refs) + " reference(s)";
      if (info[slot].holds_scope_ref) text += " including its open scope's";
    }
    return text;
  }
  uint64_t cycles_to_ms(uint64_t cycles) const {
    const uint64_t per_ms = driver.clock_hz() / 1000;
    return per_ms == 0 ? cycles : cycles / per_ms;
  }

  // ---- waiting ------------------------------------------------------------------------------
  // The no-progress bound of every wait follows the launch's progress (common/progress.h), not
  // only completions: a wait for a long kernel that is running is not a timeout.
  common::ProgressWatch start_progress() const {
    return common::ProgressWatch(driver.progress(), driver.now(), timeout_cycles);
  }
  // Samples the launch's progress; true when the no-progress bound passed.
  bool timed_out(common::ProgressWatch* watch) const {
    const uint64_t now = driver.now();
    return watch->stalled(now, [this] { return driver.progress(); });
  }

  // The completed count at which completers ring the waiting orchestrator's doorbell (read by
  // ring_notify_orchestrator; published by the driver's seq_cst raise of orchestrator_waiting).
  void set_wake_target(uint64_t completed_target) {
    mem.control->orchestrator_wake_at.store(completed_target, std::memory_order_relaxed);
  }

  // ---- retirement ---------------------------------------------------------------------------
  // Retires the oldest slots of set d whose references all dropped; returns how many.
  uint64_t retire_set(uint32_t d) {
    SetState& set = sets[d];
    uint64_t retired = 0;
    while (set.retired_seq < set.next_seq) {
      const uint64_t seq = set.retired_seq;
      const uint32_t slot = set.slot_of(seq);
      if (mem.slots[slot].refs.load(std::memory_order_acquire) != 0) break;
      SlotInfo& si = info[slot];
      const TaskId handle = encode_handle(d, seq);
      for (uint32_t k = 0; k < si.entry_count; ++k) map.erase_entry(si.entries[k], handle);
      si.entry_count = 0;
      set.heap.release_to(si.heap_mark);
      set.deps.release_to(si.dep_mark);
      set.spill.release_to(si.spill_mark);
      ++set.retired_seq;
      ++retired;
    }
    return retired;
  }
  uint64_t retire_all() {
    uint64_t retired = 0;
    for (uint32_t d = 0; d < common::kRingDepths; ++d) retired += retire_set(d);
    return retired;
  }

  // ---- diagnostics (kDiagScopeStats) -----------------------------------------------------
  // The RingWait record of one back-pressure wait, put when the wait ends (either way).
  class RingWaitSpan {
   public:
    RingWaitSpan(State& state, RingKind kind, uint64_t task_id)
        : state_(state), kind_(kind), task_id_(task_id) {
      if (state_.mem.diag.on(common::kDiagScopeStats)) begin_ = state_.mem.diag.now();
    }
    ~RingWaitSpan() {
      if (begin_ == 0) return;
      // The spill storage is sized by the dependency pool: its waits are the pool's.
      const common::DiagRing ring = kind_ == RingKind::Window ? common::DiagRing::TaskWindow
                                    : kind_ == RingKind::Heap ? common::DiagRing::Heap
                                                              : common::DiagRing::DepPool;
      const std::size_t depth = state_.depth();
      state_.mem.diag.put(common::DiagKind::RingWait, 0, task_id_, begin_, state_.mem.diag.now(),
                          -1, 0, static_cast<uint32_t>(ring), depth, state_.scopes[depth].number);
    }
    RingWaitSpan(const RingWaitSpan&) = delete;
    RingWaitSpan& operator=(const RingWaitSpan&) = delete;

   private:
    State& state_;
    RingKind kind_;
    uint64_t task_id_;
    uint64_t begin_ = 0;
  };

  // After a task took its room: the innermost scope's task count and its set's peaks.
  void note_scope_use(const SetState& set) {
    ++scopes[depth()].tasks;
    note_ring_use(scopes[depth()], set);
  }
  static void note_ring_use(ScopeFrame& frame, const SetState& set) {
    frame.peak_window = std::max(frame.peak_window, set.next_seq - set.retired_seq);
    frame.peak_heap = std::max(frame.peak_heap, set.heap.used());
    frame.peak_deps = std::max(frame.peak_deps, set.deps.used());
  }
  // The ScopeStats record of the scope at `scope_depth`, which ends (or, `ended` false, is still
  // open when the run stopped). A parent sharing its set (depths past the last set) saw the same
  // occupancy while it was open: it inherits the peaks.
  void put_scope_stats(std::size_t scope_depth, bool ended) {
    const ScopeFrame& frame = scopes[scope_depth];
    mem.diag.put(common::DiagKind::ScopeStats, 0, frame.number, frame.peak_deps, ended ? 0 : 1, -1,
                 0, static_cast<uint32_t>(scope_depth), frame.tasks, frame.peak_window,
                 frame.peak_heap);
    if (scope_depth == 0 || set_of_depth(scope_depth - 1) != set_of_depth(scope_depth)) return;
    ScopeFrame& parent = scopes[scope_depth - 1];
    parent.peak_window = std::max(parent.peak_window, frame.peak_window);
    parent.peak_heap = std::max(parent.peak_heap, frame.peak_heap);
    parent.peak_deps = std::max(parent.peak_deps, frame.peak_deps);
  }

  // Waits until `try_take` succeeds on ring `kind` of set d (back-pressure). Fails with
  // RingDeadlock when the set's oldest task holds the reference of an open scope (nothing can
  // free it before this allocation returns), WaitTimeout when nothing completes or retires for
  // the timeout.
  template <class TryTake>
  bool acquire(uint32_t d, RingKind kind, uint64_t ring_size, uint64_t task_id,
               TryTake&& try_take) {
    if (try_take()) return true;
    RingWaitSpan wait_span(*this, kind, task_id);
    SetState& set = sets[d];
    common::ProgressWatch progress = start_progress();
    for (;;) {
      // The completed count before looking for room: a completion after this read either shows
      // in retire_all() or reaches the wake target below (seen + 1 at least). Read after
      // retire_all(), a completion in between would count in `seen` without freeing anything
      // here, and when it was the last outstanding task the target would be unreachable: the
      // orchestrator slept to its deadline (a lost wake-up).
      const uint64_t seen = driver.completed();
      if (retire_all() > 0) {
        progress = start_progress();
        if (try_take()) return true;
        continue;
      }
      if (set.retired_seq == set.next_seq) {
        fail(StatusCode::InternalError, std::string(ring_name(kind)) + " of depth " +
                                            std::to_string(d) + " cannot place a request of task " +
                                            std::to_string(task_id) +
                                            " although every task of the set retired");
        return false;
      }
      const uint32_t head = set.slot_of(set.retired_seq);
      if (info[head].holds_scope_ref) {
        fail(StatusCode::RingDeadlock,
             "task " + std::to_string(task_id) + " needs room in the " + ring_name(kind) +
                 " of depth " + std::to_string(d) + " (" + std::to_string(ring_size) + " " +
                 ring_unit(kind) + "), which is full; its oldest task, " + slot_description(head) +
                 ", holds outputs of the scope at depth " + std::to_string(info[head].depth) +
                 " that is still open, so nothing can be freed before that scope ends; raise " +
                 ring_knob(kind, d) +
                 (info[head].depth == 0
                      // The root scope ends only when the function returns.
                      ? ", or wrap the outputs in a chiprt::Scope so that they are released "
                        "when it ends"
                      : ", or end the scope sooner"));
        return false;
      }
      if (driver.chip_failed()) {
        fail_from_chip();
        return false;
      }
      if (timed_out(&progress)) {
        fail(StatusCode::WaitTimeout, "task " + std::to_string(task_id) + " waited " +
                                          std::to_string(cycles_to_ms(timeout_cycles)) +
                                          " ms without progress for room in the " +
                                          ring_name(kind) + " of depth " + std::to_string(d) +
                                          " (" + std::to_string(ring_size) + " " + ring_unit(kind) +
                                          "); its oldest task is " + slot_description(head));
        return false;
      }
      // Hysteresis: sleep until a batch of completions (a quarter of the set's unretired tasks:
      // a quarter of the window when the window is full, single tasks when few large ones fill
      // the heap) could be retired rather than waking per task. Every published task completes
      // (or an error rings the doorbell), so a target capped at the submitted count cannot
      // oversleep.
      const uint64_t batch = std::max<uint64_t>(1, (set.next_seq - set.retired_seq) / 4);
      uint64_t target = std::min(seen + batch, submitted);
      if (target <= seen) target = seen + 1;
      set_wake_target(target);
      auto recheck = [&] { return driver.completed() >= target || driver.chip_failed(); };
      driver.wait(progress.next_check(), &call_recheck<decltype(recheck)>, &recheck);
    }
  }

  // Waits until `done()` holds. `waited_on()` returns the slot named on timeout.
  template <class Done, class WaitedOn>
  bool wait_until(const char* what, Done&& done, WaitedOn&& waited_on) {
    common::ProgressWatch progress = start_progress();
    for (;;) {
      // Before the condition, for the reason given in acquire(): a task that completes between
      // a false done() and this read would leave the wait with no completion left to end it.
      const uint64_t seen = driver.completed();
      if (done()) return true;
      retire_all();
      if (driver.chip_failed()) {
        fail_from_chip();
        return false;
      }
      if (timed_out(&progress)) {
        fail(StatusCode::WaitTimeout,
             std::string(what) + " waited " + std::to_string(cycles_to_ms(timeout_cycles)) +
                 " ms without progress for " + slot_description(waited_on()) + " to complete");
        return false;
      }
      set_wake_target(seen + 1);  // any completion may be the one waited for
      auto recheck = [&] { return driver.completed() != seen || driver.chip_failed(); };
      driver.wait(progress.next_check(), &call_recheck<decltype(recheck)>, &recheck);
    }
  }

  // ---- submission ---------------------------------------------------------------------------
  // Starts collecting producers into `producers` (each live task at most once).
  void begin_collection() {
    producers.clear();
    retained.clear();
    ++collection;
  }
  void add_producer(TaskId handle) {
    if (!handle_live(handle)) return;
    SlotInfo& si = info[handle_slot(handle)];
    if (si.stamp == collection) return;
    si.stamp = collection;
    producers.push_back(handle);
  }
  void lookup_writers(const Tensor& tensor) {
    map.lookup(tensor, [&](TaskId writer) { add_producer(writer); });
  }
  // A runtime output's memory belongs to the task that allocated it and is reused once that task
  // retires. A task reading the output retains the owner (its slot, so its heap range) until it
  // completes, whether or not it also depends on it (InOut chains depend on a later writer).
  // Only owners are retained: a dependency alone needs no reference, as the consumer cannot run
  // before the producer completed and the producer's slot is only read when it completes (its
  // fan-out entries belong to the consumers). That keeps the orchestrator and the completing
  // scheduler off each other's slot lines for user-buffer dependencies (wavefront tiles).
  void retain_owner(const Tensor& t) {
    if (t.buffer.size == 0 || t.owner_task < 0) return;
    for (uint32_t d = 0; d < common::kRingDepths; ++d) {
      const uint64_t begin = mem.heap_addr + sets[d].geo.heap_base;
      if (t.buffer.addr < begin || t.buffer.addr - begin >= sets[d].geo.heap_size) continue;
      const TaskId owner = resolve_in_set(d, t.owner_task);
      if (owner == kNoTask || !handle_live(owner)) return;
      SlotInfo& si = info[handle_slot(owner)];
      if (si.retain_stamp == collection) return;
      si.retain_stamp = collection;
      retained.push_back(owner);
      return;
    }
  }

  // The common path of submit / submit_dummy / allocate. `spec` is null for dummy and
  // allocation-only tasks.
  TaskId add_task(const TaskSpec* spec, TaskArgs& args, const ArgList& refs) {
    const uint64_t id = submitted;
    const uint32_t d = set_of_depth(depth());
    SetState& set = sets[d];
    const bool manual = front.in_manual_scope();

    const int tensor_count = refs.tensor_count;
    const int scalar_count = args.scalar_count();
    const auto& tags = refs.tags;
    const auto& tensors = refs.tensors;

    // Outputs are packed into one heap range per task.
    uint64_t heap_bytes = 0;  // saturates: any sum above the heap is rejected the same way
    for (int i = 0; i < tensor_count; ++i) {
      if (tags[i] != ArgTag::Out) continue;
      const uint64_t bytes = output_bytes(*tensors[i]);
      const uint64_t aligned = bytes > UINT64_MAX - kOutputAlign ? UINT64_MAX : align_output(bytes);
      heap_bytes = aligned > UINT64_MAX - heap_bytes ? UINT64_MAX : heap_bytes + aligned;
    }
    if (heap_bytes > set.heap.capacity()) {
      fail(StatusCode::HeapExhausted,
           task_label(id, spec) + ": its outputs need " + std::to_string(heap_bytes) +
               " bytes (each 64-byte aligned, packed per task) but the output heap of depth " +
               std::to_string(d) + " holds " + std::to_string(set.heap.capacity()) +
               " bytes; raise " + ring_knob(RingKind::Heap, d) +
               " (or CallConfig::output_heap_bytes)");
      return kNoTask;
    }

    begin_collection();
    for (int k = 0; k < args.dep_count(); ++k) {
      const TaskId handle = resolve_public(args.dep(k));
      if (handle != kNoTask) add_producer(handle);
    }
    if (!manual) {
      lookup_task_producers(map, args, refs, &prepared,
                            [&](TaskId producer, DependencyKinds) { add_producer(producer); });
    }
    // `producers` are dependencies; `retained` the owners of the runtime outputs it reads.
    for (int i = 0; i < tensor_count; ++i) {
      if (tags[i] != ArgTag::Out) retain_owner(*tensors[i]);
    }
    if (args.has_predicate()) retain_owner(args.predicate());
    if (producers.size() > set.deps.capacity()) {
      // Many readers of a region it writes: those that completed already need no entry (the
      // wiring below skips them too), so only the running ones count against the pool.
      std::erase_if(producers, [&](TaskId h) { return slot_completed(handle_slot(h)); });
    }
    const uint64_t wanted = producers.size();
    const uint64_t spill_wanted =
        retained.size() > common::kInlineProducers ? retained.size() - common::kInlineProducers : 0;
    if (wanted > set.deps.capacity() || spill_wanted > set.spill.capacity()) {
      const bool deps = wanted > set.deps.capacity();
      fail(StatusCode::CapacityExceeded,
           task_label(id, spec) +
               (deps ? " has " + std::to_string(wanted) +
                           " producers still to complete (its after() tasks and the earlier "
                           "writers and readers of its regions)"
                     : " reads the outputs of " + std::to_string(retained.size()) + " tasks") +
               " but the " + ring_name(deps ? RingKind::Deps : RingKind::Spill) + " of depth " +
               std::to_string(d) + " holds " +
               std::to_string(deps ? set.deps.capacity() : set.spill.capacity()) + " " +
               ring_unit(deps ? RingKind::Deps : RingKind::Spill) + "; raise " +
               ring_knob(RingKind::Deps, d));
      return kNoTask;
    }

    // Back-pressure: each ring in turn (holding earlier grants never blocks retirement).
    if (!acquire(d, RingKind::Window, set.geo.window, id, [&] { return !set.window_full(); })) {
      return kNoTask;
    }
    uint64_t heap_offset = 0;
    if (heap_bytes > 0 && !acquire(d, RingKind::Heap, set.heap.capacity(), id,
                                   [&] { return set.heap.allocate(heap_bytes, &heap_offset); })) {
      return kNoTask;
    }
    uint64_t dep_offset = 0;
    if (wanted > 0 && !acquire(d, RingKind::Deps, set.deps.capacity(), id,
                               [&] { return set.deps.allocate(wanted, &dep_offset); })) {
      return kNoTask;
    }
    uint64_t spill_offset = 0;
    if (spill_wanted > 0 && !acquire(d, RingKind::Spill, set.spill.capacity(), id, [&] {
          return set.spill.allocate(spill_wanted, &spill_offset);
        })) {
      return kNoTask;
    }
    // Producers may have retired while this task waited: they completed, so they are no
    // dependency (and retired owners' outputs are no longer readable anyway).
    auto drop_retired = [&](std::vector<TaskId>& handles) {
      std::size_t kept = 0;
      for (const TaskId h : handles) {
        if (handle_live(h)) handles[kept++] = h;
      }
      handles.resize(kept);
    };
    drop_retired(producers);
    drop_retired(retained);
    const std::size_t dependencies = producers.size();

    const uint64_t seq = set.next_seq;
    const uint32_t slot = set.slot_of(seq);
    common::RingSlot& rs = mem.slots[slot];
    SlotInfo& si = info[slot];
    const bool holds_scope_ref = heap_bytes > 0;
    const TaskId handle = encode_handle(d, seq);

    // Outputs: placed in the packed range, written back into the caller's args.
    const uint64_t heap_base = mem.heap_addr + set.geo.heap_base;
    uint64_t cursor = heap_offset;
    for (int i = 0; i < tensor_count; ++i) {
      if (tags[i] != ArgTag::Out) continue;
      Tensor& t = *tensors[i];
      const uint64_t bytes = output_bytes(t);
      t = make_output(t, heap_base + cursor, bytes, static_cast<TaskId>(id), front.memory().run());
      cursor += align_output(bytes);
    }

    // The record the dispatch code reads.
    common::TaskRecord& r = mem.records[slot];
    TaskFront::encode_record(spec, &args, static_cast<uint16_t>(tensor_count + scalar_count), &r);
    r.args_begin = uint64_t{slot} * kSlotArgs + common::kContextWords;
    int64_t* slot_args = mem.slot_args + r.args_begin;
    // The slot's address is known here, so the context is complete: a single-block task's core
    // hands the kernel this storage directly (no per-task copy of the arguments).
    common::write_kernel_block(
        slot_args, tensors.data(), tensor_count, args, r.block_num,
        reinterpret_cast<uintptr_t>(slot_args + tensor_count + scalar_count));
    if (spec != nullptr && r.block_num == 1) r.flags |= common::kTaskFlagArgsInPlace;
    mem.public_ids[slot] = static_cast<int64_t>(id);

    // The slot: references, retained producers, and the fan-in guard that keeps it unpublished
    // while producers are wired.
    const auto producer_count = static_cast<uint32_t>(retained.size());
    rs.fanout_head.store(common::kFanoutEmpty, std::memory_order_relaxed);
    rs.refs.store(1u + (holds_scope_ref ? 1u : 0u), std::memory_order_relaxed);
    rs.sequence = seq;
    rs.producer_count = producer_count;
    rs.spill_begin = set.geo.spill_base + static_cast<uint32_t>(spill_offset);
    for (uint32_t k = 0; k < producer_count; ++k) {
      const uint32_t p = handle_slot(retained[k]);
      mem.slots[p].refs.fetch_add(1, std::memory_order_relaxed);
      if (k < common::kInlineProducers) {
        rs.producers[k] = p;
      } else {
        mem.spill[rs.spill_begin + (k - common::kInlineProducers)] = p;
      }
    }
    std::atomic<uint32_t>& fanin = mem.fanin_remaining[slot];
    fanin.store(1, std::memory_order_relaxed);
    // Release: a watchdog that sees Pending (acquire) also sees the public id written above.
    mem.task_state[slot].store(kStatePending, std::memory_order_release);

    uint32_t used_entries = 0;
    for (uint32_t k = 0; k < dependencies; ++k) {
      common::RingSlot& producer = mem.slots[handle_slot(producers[k])];
      if (producer.fanout_head.load(std::memory_order_acquire) == common::kFanoutSealed) continue;
      const uint32_t entry = set.geo.dep_base + static_cast<uint32_t>(dep_offset) + used_entries;
      mem.dep_pool[entry].consumer = slot;
      fanin.fetch_add(1, std::memory_order_relaxed);
      if (common::fanout_push(producer, mem.dep_pool, entry)) {
        ++used_entries;
      } else {
        fanin.fetch_sub(1, std::memory_order_relaxed);  // sealed meanwhile: the entry is reused
      }
    }
    if (wanted > 0) set.deps.shrink_last(wanted - used_entries);
    if (spill_wanted > 0) {
      const uint64_t spill_used =
          producer_count > common::kInlineProducers ? producer_count - common::kInlineProducers : 0;
      set.spill.shrink_last(spill_wanted - spill_used);
    }

    // Orchestrator bookkeeping: what retirement releases.
    si.heap_mark = set.heap.release_mark();
    si.dep_mark = set.deps.release_mark();
    si.spill_mark = set.spill.release_mark();
    si.entry_count = 0;
    si.depth = static_cast<uint32_t>(depth());
    si.holds_scope_ref = holds_scope_ref;
    if (!manual) {
      record_task_accesses(map, handle, args, refs, prepared,
                           [&](uint32_t entry) { si.entries[si.entry_count++] = entry; });
    } else {
      ++manual_tasks;
    }
    if (logical) note_logical_edges(id, args, refs, manual);
    if (holds_scope_ref) set.holders[set.holder_count++] = seq;
    set.next_seq = seq + 1;
    submitted = id + 1;
    if (mem.diag.on(common::kDiagScopeStats)) note_scope_use(set);

    // Drop the guard: the task is ready now unless a producer is still running.
    if (fanin.fetch_sub(1, std::memory_order_acq_rel) == 1) driver.publish_ready(slot);
    driver.note_submitted(submitted);
    retire_all();
    return static_cast<TaskId>(id);
  }

  // Diagnostics (kDiagEdges): the Edge records of task `id`, every dependency the orchestration
  // derives for it (task_dependencies.h) whether or not the producer completed or retired since,
  // with its kinds; then its accesses and outputs join the logical map.
  void note_logical_edges(uint64_t id, const TaskArgs& args, const ArgList& refs, bool manual) {
    logical_producers.clear();
    auto add = [&](TaskId producer, DependencyKinds kinds) {
      logical_producers.add(producer, kinds);
    };
    lookup_after_producers(args, add);
    if (!manual) logical->lookup(args, refs, add);
    for (const ProducerKinds::Producer& p : logical_producers.merged()) {
      mem.diag.put(common::DiagKind::Edge, 0, id, 0, 0, -1, 0, p.kinds,
                   static_cast<uint64_t>(p.task));
    }
    if (!manual) logical->record(static_cast<TaskId>(id), args, refs);
    for (int i = 0; i < refs.tensor_count; ++i) {
      if (refs.tags[i] == ArgTag::Out) logical->note_output(*refs.tensors[i]);
    }
  }

  // Drops the scope references of the tasks the scope at `scope_depth` allocated outputs for.
  void end_scope_refs(std::size_t scope_depth) {
    const uint32_t d = set_of_depth(scope_depth);
    SetState& set = sets[d];
    const uint64_t first = scopes[scope_depth].first_seq;
    while (set.holder_count > 0 && set.holders[set.holder_count - 1] >= first) {
      const uint32_t slot = set.slot_of(set.holders[--set.holder_count]);
      info[slot].holds_scope_ref = false;
      common::release_slot_ref(mem.slots[slot]);
    }
  }

  // ---- tensor data --------------------------------------------------------------------------
  bool check_data_call(const char* call, const Tensor& tensor, const void* data, uint64_t bytes) {
    if (!front.accept_data_call(call, tensor, data, bytes)) return false;
    if (released_output(tensor)) {
      front.latch(TaskFront::released_output(call, tensor));
      return false;
    }
    return true;
  }

  // Waits for every submitted task to complete (set_tensor_data; get after manual tasks).
  bool wait_all(const char* what) {
    const uint64_t target = submitted;
    return wait_until(
        what, [&] { return driver.completed() >= target; },
        [&] {
          // The oldest unfinished task is the most useful name.
          uint32_t best = 0;
          int64_t best_id = INT64_MAX;
          for (const SetState& set : sets) {
            for (uint64_t seq = set.retired_seq; seq < set.next_seq; ++seq) {
              const uint32_t slot = set.slot_of(seq);
              if (!slot_completed(slot) && mem.public_ids[slot] < best_id) {
                best_id = mem.public_ids[slot];
                best = slot;
                break;
              }
            }
          }
          return best;
        });
  }

  // Calls fn(element byte offset from the buffer start) in row-major order of the view.
  template <class Fn>
  static void for_each_row(const Tensor& t, Fn&& fn) {
    const uint32_t n = t.ndim;
    const uint64_t eb = t.element_bytes();
    const bool inner_contiguous = t.strides[n - 1] == 1;
    const uint64_t row_elems = inner_contiguous ? t.shape[n - 1] : 1;
    const uint32_t outer = inner_contiguous ? n - 1 : n;
    uint64_t index[kMaxTensorDims] = {};
    for (;;) {
      uint64_t offset = t.start_offset;
      for (uint32_t k = 0; k < outer; ++k) offset += index[k] * t.strides[k];
      fn(offset * eb, row_elems * eb);
      uint32_t k = outer;
      while (k > 0) {
        --k;
        if (++index[k] < t.shape[k]) break;
        index[k] = 0;
        if (k == 0) return;
      }
      if (outer == 0) return;
    }
  }
};

RingOrchestrator::RingOrchestrator(const RingMemory& memory, RingDriver& driver)
    : state_(std::make_unique<State>(memory, driver)) {
  state_->init();
}

RingOrchestrator::~RingOrchestrator() = default;

Status RingOrchestrator::run(OrchestrationEntry entry, const TaskArgs& args) {
  State& s = *state_;
  const Status geometry = s.front.error();  // init() may have refused the ring geometry
  s.front.reset(
      s.mem.run != 0 ? RunMemory(args, {s.mem.heap_addr, s.mem.heap_size}, s.mem.run) : RunMemory(),
      {s.mem.user_data, static_cast<std::size_t>(s.mem.user_data_bytes)});
  s.front.latch(geometry);
  s.scopes[0] = State::ScopeFrame{};
  s.scopes_opened = 0;
  if (s.logical) s.logical->clear();
  if (!s.front.failed()) s.front.run(entry, *this, args, common::RunRole::ChipOrchestration);
  if (!s.front.failed()) {
    s.end_scope_refs(0);  // the implicit root scope ends with the function
    s.retire_all();
  }
  // The statistics of the scopes still open (after a failure: what they saw up to there; their
  // records say they did not end), innermost first, then the root's.
  if (s.mem.diag.on(common::kDiagScopeStats)) {
    for (std::size_t depth = s.depth(); depth > 0; --depth) s.put_scope_stats(depth, false);
    s.put_scope_stats(0, !s.front.failed());
  }
  return s.front.error();
}

uint64_t RingOrchestrator::submitted() const noexcept {
  return state_->submitted;
}

std::size_t RingOrchestrator::tensor_map_entries() const noexcept {
  return state_->map.entry_count();
}

std::size_t RingOrchestrator::tensor_map_buffers() const noexcept {
  return state_->map.buffer_count();
}

namespace {

// Diagnostics: the Submit span of one submit call (swimlane level 4, task timing).
class SubmitSpan {
 public:
  SubmitSpan(common::DiagWriter& diag, const TaskSpec* spec, std::size_t depth)
      : diag_(diag), spec_(spec), depth_(depth) {
    if (diag_.on(common::kDiagSubmitSpans)) begin_ = diag_.now();
  }
  // The task's public id (kNoTask: refused, no span).
  TaskId finish(TaskId task) {
    if (begin_ == 0 || task == kNoTask) return task;
    diag_.put(common::DiagKind::Submit, 0, static_cast<uint64_t>(task), begin_, diag_.now(),
              spec_ != nullptr ? spec_->func_id : -1, 0, spec_ != nullptr ? spec_->block_num : 1,
              depth_, static_cast<uint64_t>(spec_ != nullptr ? spec_->core : CoreType::AIV),
              spec_ == nullptr ? 1 : 0);
    return task;
  }

 private:
  common::DiagWriter& diag_;
  const TaskSpec* spec_;
  std::size_t depth_;
  uint64_t begin_ = 0;
};

}  // namespace

TaskId RingOrchestrator::submit(const TaskSpec& spec, TaskArgs& args) {
  State& s = *state_;
  if (!s.usable()) return kNoTask;
  SubmitSpan span(s.mem.diag, &spec, s.depth());
  ArgList refs;
  if (!s.front.accept_task(s.submitted, &spec, args, &refs) ||
      !s.check_released_outputs(s.submitted, &spec, args, refs)) {
    return kNoTask;
  }
  return span.finish(s.add_task(&spec, args, refs));
}

TaskId RingOrchestrator::submit_dummy(TaskArgs& args) {
  State& s = *state_;
  if (!s.usable()) return kNoTask;
  SubmitSpan span(s.mem.diag, nullptr, s.depth());
  ArgList refs;
  if (!s.front.accept_task(s.submitted, nullptr, args, &refs) ||
      !s.check_released_outputs(s.submitted, nullptr, args, refs)) {
    return kNoTask;
  }
  return span.finish(s.add_task(nullptr, args, refs));
}

TaskId RingOrchestrator::allocate(TaskArgs& outputs) {
  State& s = *state_;
  if (!s.usable()) return kNoTask;
  SubmitSpan span(s.mem.diag, nullptr, s.depth());
  ArgList refs;
  if (!s.front.accept_allocation(s.submitted, outputs, &refs)) return kNoTask;
  return span.finish(s.add_task(nullptr, outputs, refs));
}

void RingOrchestrator::scope_begin(ScopeMode mode) {
  State& s = *state_;
  if (!s.usable() || !s.front.open_scope(mode, s.submitted)) return;
  const std::size_t depth = s.depth();
  if (depth >= s.scopes.size()) s.scopes.resize(depth * 2);
  State::ScopeFrame& frame = s.scopes[depth];
  frame = State::ScopeFrame{};
  frame.first_seq = s.sets[s.set_of_depth(depth)].next_seq;
  frame.number = ++s.scopes_opened;
  if (s.logical) s.logical->scope_begin();
  // Tasks of an earlier scope at this depth may still hold the set's rings.
  if (s.mem.diag.on(common::kDiagScopeStats)) s.note_ring_use(frame, s.sets[s.set_of_depth(depth)]);
}

void RingOrchestrator::scope_end() {
  State& s = *state_;
  if (!s.usable() || s.depth() == 0) {
    ScopeMode closed;
    if (!s.front.failed()) s.front.close_scope(s.submitted, &closed);  // ScopeMismatch
    return;
  }
  s.end_scope_refs(s.depth());
  if (s.logical) s.logical->scope_end();
  if (s.mem.diag.on(common::kDiagScopeStats)) s.put_scope_stats(s.depth(), true);
  ScopeMode closed;
  s.front.close_scope(s.submitted, &closed);
  s.retire_all();
}

void RingOrchestrator::get_tensor_data(const Tensor& tensor, void* dst, uint64_t bytes) {
  State& s = *state_;
  if (!s.usable() || !s.check_data_call("get_tensor_data", tensor, dst, bytes)) return;
  if (s.manual_tasks > 0) {
    // Writes of manual-scope tasks are not in the tensor map: wait for everything.
    if (!s.wait_all("get_tensor_data")) return;
  } else {
    s.begin_collection();
    s.lookup_writers(tensor);
    for (const TaskId writer : s.producers) {
      const uint32_t slot = s.handle_slot(writer);
      const uint64_t seq = handle_seq(writer);
      const uint32_t set = handle_set(writer);
      const bool ok = s.wait_until(
          "get_tensor_data",
          [&] { return s.sets[set].retired_seq > seq || s.slot_completed(slot); },
          [&] { return slot; });
      if (!ok) return;
    }
  }
  auto* out = static_cast<uint8_t*>(dst);
  const auto* base = reinterpret_cast<const uint8_t*>(static_cast<uintptr_t>(tensor.buffer.addr));
  if (bytes == 0) return;
  State::for_each_row(tensor, [&](uint64_t offset, uint64_t row_bytes) {
    std::memcpy(out, base + offset, row_bytes);
    out += row_bytes;
  });
}

void RingOrchestrator::set_tensor_data(const Tensor& tensor, const void* src, uint64_t bytes) {
  State& s = *state_;
  if (!s.usable() || !s.check_data_call("set_tensor_data", tensor, src, bytes)) return;
  if (!s.wait_all("set_tensor_data")) return;
  auto* base = reinterpret_cast<uint8_t*>(static_cast<uintptr_t>(tensor.buffer.addr));
  const auto* in = static_cast<const uint8_t*>(src);
  if (bytes == 0) return;
  State::for_each_row(tensor, [&](uint64_t offset, uint64_t row_bytes) {
    std::memcpy(base + offset, in, row_bytes);
    in += row_bytes;
  });
}

bool RingOrchestrator::failed() const {
  return state_->front.failed();
}

Status RingOrchestrator::error() const {
  return state_->front.error();
}

uint64_t RingOrchestrator::task_count() const {
  return state_->submitted;
}

uint32_t RingOrchestrator::cluster_count() const {
  return state_->mem.clusters;
}

std::span<const std::byte> RingOrchestrator::user_data() const {
  return state_->front.user_data();
}

}  // namespace chiprt::orchestrator
