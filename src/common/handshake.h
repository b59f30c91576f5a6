// Handshake protocol between the schedulers (AICPU) and the compute cores (AICore), and the
// fixed-layout prefix of the orchestrator<->scheduler shared-state region that both sides find
// without any other table.
//
// Lifetime: every object here lives inside the shared-state region of one launch
// (ChipLaunchArgs::shared_addr). The host zeroes the region before the launch; all-zero is a valid
// state of every object (barrier closed, cells Closed/Offline, doorbells quiet). AICPU thread 0
// then initialises the scheduler-written fields and opens the start barrier.
//
// Threading: each HandshakeCell has exactly one scheduler writer (the thread that owns the core)
// and one core writer (core_service, which the platform never runs concurrently for one core).
// Scheduler-written and core-written fields sit on different cache lines. Every hand-over is a
// release store (or stronger) read by an acquire load; plain (payload) fields are published by the
// slot store that follows them. Stores that may end a scheduler's park (status, finished_count)
// are seq_cst, see Doorbell.
//
// Protocol of one core (S = owning scheduler, C = core_service):
//   1. C, when serviced while `control == kCoreClosed`: status = kCoreReady, rings S's doorbell.
//   2. S sees kCoreReady: control = kCoreOpen, kick.
//   3. Dispatch. S tracks dispatched/finished counts (outstanding = dispatched - finished_count).
//      outstanding == 0: S writes running_payload, then running = task id (release), kick.
//      outstanding == 1 and pending == kTaskIdle: S writes pending_payload, then pending = id.
//      A busy core is so handed its next task in advance. S never writes a non-idle slot.
//   4. C takes `running` (or, if running is idle and pending holds a task, re-reads running —
//      S may have filled running and then pending since C's first look — and only if running
//      is still idle promotes pending first):
//      ack: executing = id, started_cycles = now, starts += 1 (release); runs the kernel;
//      executing = idle.
//   5. C finishes: promotes pending into running (copies the payload, running = pending id,
//      pending = kTaskIdle) or sets running = kTaskIdle; only then finished_task = id and
//      finished_count += 1 (seq_cst), and rings S. Tasks of one core finish in dispatch order, so
//      S maps the n-th finish to the n-th dispatch.
//   6. Exit: S sets control = kCoreExit and kicks. C drops any slot it has not started, sets
//      executing = kTaskExit (the exit acknowledgement id), status = kCoreExited, rings S.
// A core stuck inside a kernel never reaches 6; the scheduler waits for the exit ack with a bound.
#pragma once

#include <atomic>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <type_traits>

#include "chiprt/status.h"
#include "chiprt/task_args.h"
#include "common/chip_launch.h"
#include "common/kernel_block.h"
#include "common/park_wake.h"

namespace chiprt::common {

// Reserved task ids (TaskRecord indices are < 0xFFFFFFFE; the image's task_count is validated).
inline constexpr uint32_t kTaskIdle = 0xFFFFFFFFu;     // empty slot / core not executing
inline constexpr uint32_t kTaskExit = 0xFFFFFFFEu;     // `executing` value of a core that exited
inline constexpr uint32_t kMaxRunTasks = 0xFFFFFFFEu;  // task ids are < this

// HandshakeCell::control (scheduler -> core).
inline constexpr uint32_t kCoreClosed = 0;
inline constexpr uint32_t kCoreOpen = 1;
inline constexpr uint32_t kCoreExit = 2;
// HandshakeCell::status (core -> scheduler).
inline constexpr uint32_t kCoreOffline = 0;
inline constexpr uint32_t kCoreReady = 1;
inline constexpr uint32_t kCoreExited = 2;

// What a core needs to run one task. Written by the scheduler before the slot store. The task's
// argument block (common/kernel_block.h) lies around args_addr.
struct DispatchPayload {
  uint64_t kernel_addr;  // KernelEntry, 0 when the kernel table has no entry for func_id
  uint64_t args_addr;    // args[0] of the task's stored block (graph image or ring slot)
  int32_t func_id;
  uint16_t arg_count;      // tensors + scalars
  uint16_t args_in_place;  // 1: the stored context is complete (kTaskFlagArgsInPlace)
  uint32_t block_idx;
  uint32_t block_num;
  // The task's public TaskId (what the user's submit returned), which messages name: the task
  // index the core is handed counts host_build_graph's scope fences and is a slot on
  // tensormap_ringbuffer.
  uint64_t task_id;
};

struct alignas(64) HandshakeCell {
  // Written by the owning scheduler (thread 0 before the start barrier).
  std::atomic<uint32_t> control;
  std::atomic<uint32_t> running;  // task id or kTaskIdle
  std::atomic<uint32_t> pending;  // task id or kTaskIdle
  uint32_t owner;                 // scheduler thread index; set before the barrier opens
  DispatchPayload pending_payload;
  // running_payload is written by the scheduler (core idle) and by the core (promotion).
  alignas(64) DispatchPayload running_payload;
  // Written by the core.
  alignas(64) std::atomic<uint32_t> status;
  std::atomic<uint32_t> executing;  // task id being run, kTaskIdle, or kTaskExit
  std::atomic<uint32_t> finished_task;
  // Kernels this core started in the launch (one writer: relaxed load + store); a change is
  // progress to every watchdog (common/progress.h). Read by observers while the launch runs.
  std::atomic<uint32_t> starts;
  std::atomic<uint64_t> finished_count;
  std::atomic<uint64_t> started_cycles;  // chip cycles when `executing` was acknowledged
  // ChipLaunchArgs::measure_kernel_time: this core's summed kernel CPU time in ns. Only this
  // core's core_service writes it (relaxed load + store, no RMW: one writer); the host reads it
  // after the launch completed. On the core's own cache line, so cores never share it.
  std::atomic<uint64_t> kernel_ns;
};
static_assert(sizeof(HandshakeCell) == 192);

// One per scheduler thread. The owner parks on it; cores (finish, ready, exit) and other
// schedulers (work pushed that the owner wants, run end, error) ring it. Ringing costs one load
// unless the owner is parked, so it is cheap on the hot path. Sleeping and waking go through the
// platform's ParkWake (common/park_wake.h), touched only when the owner is parked.
//
// `word` holds both the parked flag (bit 0) and a wake sequence (bits 1..), so clearing the flag
// always changes the value the parker futex-waits on. (With a separate flag and sequence, a
// ringer late from an earlier park could clear the flag of the next park after the parker had
// read the sequence: a later ringer then saw no flag and skipped the wake, and the parker slept
// through its work until the watchdog's timeout.)
//
// Lost-wakeup freedom (Dekker, with sequentially consistent operations only, no fences): the
// parker sets the flag with a seq_cst RMW, re-checks every source of work, then futex-waits on
// the value it set; a ringer publishes its work with a seq_cst store or RMW, then loads `word`
// and, if the flag is set, clears it while bumping the sequence (one CAS) and wakes. Either the
// ringer sees the flag or the parker sees the work; and a flag cleared after the parker set it
// changed `word`, so the parker's wait returns at once. Every publication that may end a park
// (finished_count, core status, ready-queue cells, the completed counter, the error code) is
// therefore seq_cst, and so are the parker's re-check loads.
struct alignas(64) Doorbell {
  static constexpr uint32_t kParkedBit = 1;
  static constexpr uint32_t kSequenceStep = 2;

  std::atomic<uint32_t> word;
  std::atomic<uint32_t> wants;  // what the parked owner could take (bits set by the scheduler)

  // Whether the owner is parked or about to be (a seq_cst load: the ringer's side of Dekker).
  bool parked() const { return (word.load(std::memory_order_seq_cst) & kParkedBit) != 0; }
  // Call after publishing the work with a seq_cst store or RMW. Only the ringer whose CAS clears
  // the flag makes the wake-up system call; ringers after it, until the owner parks again, cost
  // one load: the owner is already waking (it needs microseconds to run again, and a producer may
  // ring many times in that window) and re-checks every source of work before it parks again.
  void ring(const ParkWake& park_wake) {
    ring_observed(word.load(std::memory_order_seq_cst), park_wake);
  }
  // ring() given the value of `word` the caller loaded earlier (seq_cst, after its publication):
  // however late the CAS comes, it either wakes the park it observed or changes the value any
  // later park waits on.
  void ring_observed(uint32_t current, const ParkWake& park_wake) {
    while ((current & kParkedBit) != 0) {
      if (word.compare_exchange_weak(current, (current & ~kParkedBit) + kSequenceStep,
                                     std::memory_order_seq_cst, std::memory_order_seq_cst)) {
        park_wake.wake(&word);
        return;
      }
    }
  }
  // Parker protocol, step 1: announce; returns the value to wait on. The caller then re-checks
  // for work (seq_cst loads) and either calls unpark() or wait().
  uint32_t prepare_park(uint32_t want_mask) {
    wants.store(want_mask, std::memory_order_relaxed);  // published by the RMW below
    return word.fetch_or(kParkedBit, std::memory_order_seq_cst) | kParkedBit;
  }
  void wait(uint32_t seen, uint64_t timeout_ns, const ParkWake& park_wake) {
    park_wake.park(&word, seen, timeout_ns);
    unpark();
  }
  // An RMW, not a store: a store of the old value could undo a ringer's sequence bump.
  void unpark() { word.fetch_and(~kParkedBit, std::memory_order_relaxed); }
};
static_assert(sizeof(Doorbell) == 64);

// Start barrier values (SharedPrefix::init_state).
inline constexpr uint32_t kInitPending = 0;
inline constexpr uint32_t kInitDone = 1;
inline constexpr uint32_t kInitFailed = 2;

// The fixed-layout start of the shared-state region. The scheduler room appends its own sections
// (ready queues, per-task counters) after it; see scheduler/shared_state.h.
struct SharedPrefix {
  alignas(64) std::atomic<uint32_t> init_state;  // start barrier, a ParkWake word
  alignas(64) HandshakeCell cells[kMaxCores];    // indexed by device core number
  Doorbell doorbells[kMaxAicpuThreads];          // indexed by scheduler thread
  // Bumped by the tensormap_ringbuffer orchestrator on every submission and when the
  // orchestration function returns (one writer); progress to every watchdog (common/progress.h).
  alignas(64) std::atomic<uint32_t> orchestrator_beat;
  // AICPU threads that recognised the launch arguments (magic, thread count and index, regions)
  // and ran the launch. A block the chip does not recognise gets no error latched into it (it may
  // not be a launch block at all), so the host compares this with the threads it launched instead
  // of reading "no error" as success. Read by the host with an atomic load: a thread stuck in a
  // kernel may still be running.
  std::atomic<uint32_t> threads_accepted;
};
static_assert(sizeof(SharedPrefix) % 64 == 0);

inline SharedPrefix* shared_prefix(const ChipLaunchArgs& args) {
  return reinterpret_cast<SharedPrefix*>(static_cast<uintptr_t>(args.shared_addr));
}

// Wakes every scheduler (run end, error). Safe to call from any chip thread after the barrier.
inline void ring_all_doorbells(SharedPrefix* prefix, const ParkWake& park_wake) {
  for (Doorbell& d : prefix->doorbells) d.ring(park_wake);
}

// Device addresses of the prefix fields observers read while a launch runs (the host reads them
// through the platform: it never dereferences the region at `shared_addr`).
static_assert(std::is_standard_layout_v<SharedPrefix> && std::is_standard_layout_v<HandshakeCell>);
constexpr uint64_t orchestrator_beat_addr(uint64_t shared_addr) {
  return shared_addr + offsetof(SharedPrefix, orchestrator_beat);
}
constexpr uint64_t threads_accepted_addr(uint64_t shared_addr) {
  return shared_addr + offsetof(SharedPrefix, threads_accepted);
}
constexpr uint64_t core_cell_addr(uint64_t shared_addr, uint32_t core) {
  return shared_addr + offsetof(SharedPrefix, cells) + uint64_t{core} * sizeof(HandshakeCell);
}
// HandshakeCell::starts of `core` (a 32-bit word: read it with Platform::load_device_word).
constexpr uint64_t core_starts_addr(uint64_t shared_addr, uint32_t core) {
  return core_cell_addr(shared_addr, core) + offsetof(HandshakeCell, starts);
}
// HandshakeCell::kernel_ns of `core` (64 bits, read after the launch completed).
constexpr uint64_t core_kernel_ns_addr(uint64_t shared_addr, uint32_t core) {
  return core_cell_addr(shared_addr, core) + offsetof(HandshakeCell, kernel_ns);
}
static_assert(sizeof(HandshakeCell::starts) == sizeof(uint32_t));
static_assert(sizeof(HandshakeCell::kernel_ns) == sizeof(uint64_t));

inline bool chip_error_latched(const ChipResult& result) {
  return result.code.load(std::memory_order_seq_cst) != 0;
}

// Latches `code` with a formatted detail if no error latched before (first error wins). Returns
// true for the winner, which alone writes detail and the stuck_* fields. No allocation.
[[gnu::format(printf, 3, 4)]] inline bool latch_chip_error(ChipResult* result, StatusCode code,
                                                           const char* format, ...) {
  int32_t expected = 0;
  if (!result->code.compare_exchange_strong(expected, static_cast<int32_t>(code),
                                            std::memory_order_seq_cst)) {
    return false;
  }
  va_list list;
  va_start(list, format);
  const int length = std::vsnprintf(result->detail, sizeof(result->detail), format, list);
  va_end(list);
  // A cut message says so (an orchestration function may throw any amount of text).
  constexpr char kCut[] = " [...]";
  if (length >= static_cast<int>(sizeof(result->detail))) {
    std::memcpy(result->detail + sizeof(result->detail) - sizeof(kCut), kCut, sizeof(kCut));
  }
  return true;
}

}  // namespace chiprt::common
