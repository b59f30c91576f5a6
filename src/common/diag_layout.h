// Diagnostics region: the protocol between the chip-side collectors (cores, schedulers, the ring
// orchestrator) and the host collector that drains them (src/host). One region per run with any
// chip-side collector on, in device memory, named by ChipLaunchArgs::diag_addr (0 = all off: the
// chip then tests one pointer per event site and writes nothing).
//
//   [DiagRegionHeader] [DiagStream x stream_count] [DiagRecord rings] [args data arena]
//
// Streams: one per core (index = core number) and one per AICPU thread (index = cores +
// thread), each a single-producer / single-consumer ring of fixed 64-byte records. The producer
// (the one chip thread that owns the stream) writes records at `head`; the host collector reads
// from `tail` while the run goes on and after it ends. A full ring blocks its producer (it backs
// off through ChipServices and re-reads `tail`), as the reference does, so nothing is lost while
// the host drains; a producer that waited kDiagFullWaitMs without the host draining drops the
// record and counts it in `dropped` (with the reason in `drop_reason`), so a run never hangs on
// its diagnostics.
//
// Lifetime: the host zeroes the header and streams before the launch and fills the geometry;
// everything is read by the host until the run's collect step (also after a fault: the host
// reads the region before the device is reset).
//
// Threading: `head` has one writer (the producer, release store after the record), `tail` one
// writer (the host, release store after reading); each reads the other's with acquire. Records
// are plain data published by `head`. The args data arena is shared by all cores: a block of it is
// claimed with one fetch_add on `data_used`.
//
// Times are chip cycles (ChipServices::cycles, ChipLaunchArgs::clock_hz per second); the host
// maps them to its own clock with the anchor pairs it records (DiagRegionHeader::anchor_*).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace chiprt::common {

inline constexpr uint32_t kDiagMagic = 0x47445243;  // "CRDG"
inline constexpr uint32_t kDiagVersion = 1;
// How long a producer waits on a full ring for the host to drain before it drops a record.
inline constexpr uint64_t kDiagFullWaitMs = 2000;

// DiagRegionHeader::switches: which chip-side collectors are on.
enum DiagSwitch : uint32_t {
  kDiagTaskExec = 1u << 0,     // cores: TaskExec records (swimlane >= 1, task timing, deps)
  kDiagSchedEvents = 1u << 1,  // schedulers: Ready, Dispatch, Complete (swimlane >= 2, timing)
  kDiagLoopPhases = 1u << 2,   // schedulers: LoopPhase (swimlane >= 3)
  kDiagSubmitSpans = 1u << 3,  // ring orchestrator: Submit spans (swimlane >= 4, task timing)
  kDiagEdges = 1u << 4,        // ring orchestrator: Edge records (every logical dependency)
  kDiagScopeStats = 1u << 5,   // ring orchestrator: ScopeStats, RingWait records
  kDiagArgsMeta = 1u << 6,     // cores, block 0 of each task: TensorArg records
  kDiagArgsInputs = 1u << 7,   // cores: ArgData of input tensors before the kernel
  kDiagArgsOutputs = 1u << 8,  // cores: ArgData of output tensors after the kernel
  kDiagCounters = 1u << 9,     // cores: Counters records (ChipServices::read_counters)
};

enum class DiagKind : uint16_t {
  None = 0,
  // core stream. task, block, func_id; begin/end: the kernel's call; value: block_num;
  // a: the task's scope depth when known (else 0).
  TaskExec = 1,
  // core stream, right after the TaskExec of the same block. a: instructions, b: cycles,
  // c: thread CPU ns of the kernel; value: DiagCounterValid bits.
  Counters = 2,
  // scheduler stream. begin = end: when the task became ready (its last producer completed, or
  // it was ready at submit); task; value: core type (chiprt::CoreType).
  Ready = 3,
  // scheduler stream. begin = end: when the scheduler wrote the task into a core's slot;
  // task, block, where = core.
  Dispatch = 4,
  // scheduler stream. begin = end: when the scheduler saw the block finish; task, block,
  // where = core.
  Complete = 5,
  // scheduler stream. begin/end; value: DiagLoopPhase.
  LoopPhase = 6,
  // orchestrator stream (tensormap_ringbuffer). begin/end of the submit call; task, func_id,
  // value: block_num; a: scope depth; b: chiprt::CoreType; c: 1 for a dependency-only task.
  Submit = 7,
  // orchestrator stream, one per (producer, consumer) pair the orchestration derived, whether or
  // not the producer completed or retired before the consumer's submission. task = consumer,
  // a = producer (public task ids); value: chiprt::DependencyKinds.
  Edge = 8,
  // orchestrator stream, when a scope ends (the run's outermost scope, number 0, at the run's
  // end; after a failure, every scope still open, innermost first, then the root). Scopes are
  // numbered in the order they open. task: scope number; value: scope depth; a: tasks submitted in
  // the scope (its nested scopes excluded); b: peak task-window slots in use in the ring set of its
  // depth while it was open (sampled after each submission and at its opening); c: peak heap bytes;
  // begin: peak dependency-pool entries; end: 0 when the scope ended, 1 when the run stopped inside
  // it. The host knows the capacities (RunReport::rings).
  ScopeStats = 9,
  // orchestrator stream. begin/end of one back-pressure wait (a ring without room for the task
  // being submitted; the spill storage's waits count as the dependency pool's); value: DiagRing;
  // a: scope depth; b: number of the innermost open scope; task: the task being submitted (its
  // public id).
  RingWait = 10,
  // core stream, block 0 of a task, before the kernel. task, func_id; begin: the task's block_num;
  // value: tensor index | (chiprt::ArgTag << 8) | (ndim << 16); a: buffer address; b:
  // start_offset (elements); c: dtype | element_bytes << 8. The tag comes from the view
  // (kernel::TensorView::tag). The next ceil(2 * ndim / 5) records are DiagKind::Continuation
  // records carrying shape0, stride0, shape1, ... in their 5 payload words (begin, end, a, b, c;
  // unused words 0).
  TensorArg = 11,
  // core stream, block 0 of a task, after its TensorArg records: Before for the views the task
  // reads (In, InOut, NoDep) before the kernel, After for those it writes (Out, InOut,
  // OutputExisting, NoDep) after block 0's kernel returned (other blocks of an SPMD task may still
  // run). task, func_id; value: tensor index | (DiagArgPhase << 8); a: offset of the bytes in the
  // args data arena (from DiagRegionHeader::data_addr); b: bytes copied (the view's elements,
  // gathered row-major); c: bytes the view has (b < c: the budget ran out, b is 0, and the bytes
  // count in data_refused).
  ArgData = 12,
  // Payload words of the record before it (see TensorArg).
  Continuation = 13,
};

enum DiagCounterValid : uint32_t {
  kDiagHaveInstructions = 1u << 0,
  kDiagHaveCycles = 1u << 1,
  kDiagHaveCpuTime = 1u << 2,
};

// Scheduler loop phases (swimlane level 3).
enum class DiagLoopPhase : uint32_t {
  Completions = 0,  // reaping finished blocks, fanning out to consumers
  Dispatch = 1,     // handing ready tasks to idle cores
  Park = 2,         // parked on the doorbell
  Orchestrate = 3,  // tensormap_ringbuffer: a scheduler thread helping the orchestrator (if any)
};

// The ring a back-pressure wait waited on.
enum class DiagRing : uint32_t { TaskWindow = 0, Heap = 1, DepPool = 2 };

enum class DiagArgPhase : uint32_t { Before = 0, After = 1 };

struct DiagRecord {
  uint16_t kind;   // DiagKind
  uint16_t where;  // core or AICPU thread the event concerns (see the kind)
  int32_t func_id;
  uint32_t block;
  uint32_t value;
  uint64_t task;  // public task id
  uint64_t begin;
  uint64_t end;
  uint64_t a;
  uint64_t b;
  uint64_t c;
};
static_assert(sizeof(DiagRecord) == 64);

struct alignas(64) DiagStream {
  // Written by the producer.
  std::atomic<uint64_t> head;     // records written (monotonic)
  std::atomic<uint64_t> dropped;  // records dropped after kDiagFullWaitMs
  std::atomic<uint64_t> full_waits;
  // Written by the host collector.
  alignas(64) std::atomic<uint64_t> tail;  // records consumed (monotonic)
  // Set by the host: where this stream's records lie and how many (a power of two).
  alignas(64) uint64_t records_addr;
  uint64_t capacity;
};
static_assert(sizeof(DiagStream) == 192);

struct alignas(64) DiagRegionHeader {
  uint32_t magic;
  uint32_t version;
  uint32_t switches;  // DiagSwitch bits
  uint32_t stream_count;
  uint32_t cores;  // streams [0, cores) belong to cores, [cores, stream_count) to AICPU threads
  uint32_t reserved;
  uint64_t streams_addr;  // DiagStream[stream_count]
  // The args data arena (kDiagArgsInputs / kDiagArgsOutputs): data_bytes at data_addr.
  uint64_t data_addr;
  uint64_t data_bytes;
  std::atomic<uint64_t> data_used;     // bytes claimed (may exceed data_bytes: a failed claim)
  std::atomic<uint64_t> data_refused;  // bytes of views that did not fit
  // Hardware counters: the first core whose counters could not be opened claims the flag and
  // copies the platform's reason (NUL-terminated) for the host's report.
  std::atomic<uint32_t> counters_refused;
  char counters_reason[236];
  // Time anchors written by the host: (host ns, chip cycles) read together, at launch and after.
  uint64_t anchor_host_ns[2];
  uint64_t anchor_cycles[2];
};

// Index of the stream of AICPU thread `thread`.
constexpr uint32_t diag_thread_stream(const DiagRegionHeader& header, uint32_t thread) {
  return header.cores + thread;
}

}  // namespace chiprt::common
