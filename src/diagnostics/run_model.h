// RunModel: everything the collectors saw of one run, on one time base (ns from the run's start,
// the host's Worker::run entry), in host memory. The host collector (src/host) builds it from
// the chip's diagnostics region and its own stamps; the writers (artifacts.h) turn it into the
// files of the run directory, and the readers rebuild it from those files (`chiprt report`), so
// the analysis (analysis.h) and the page (report_html.h) work from either.
//
// Compact on purpose: a million-task run holds a few records per task, so names live in tables
// (kernels by func_id) and per-task rows are plain numbers.
//
// Lifetime and threading: a plain value, built on one thread, then read-only.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "chiprt/diagnostics.h"
#include "chiprt/graph_export.h"
#include "chiprt/task_args.h"
#include "chiprt/types.h"

namespace chiprt::diagnostics {

// A time that was not recorded (its switch was off, or the run failed first).
inline constexpr uint64_t kNoTime = std::numeric_limits<uint64_t>::max();

// Where the chip part of a trace lies: AICPU threads and cores (grouped by cluster).
struct ChipShape {
  uint32_t aicpu_threads = 0;
  uint32_t orchestrator_threads = 0;  // tensormap_ringbuffer: thread 0 orchestrates
  uint32_t clusters = 0;              // clusters the run used
  uint32_t device_clusters = 0;       // core numbering: AIC c = cluster c, AIV 2k/2k+1 after
  uint32_t cores = 0;                 // device cores (device_clusters * 3)
  // Host threads that ran the kernels (a simulated chip runs its cores on host threads: 1
  // serial, the AICPU threads when kicks run kernels, else the executor pool); 0 where the
  // cores are the chip's own (nothing to count) or it was not recorded.
  uint32_t kernel_threads = 0;
  // Every host thread the simulated chip ran: the AICPU threads, plus the executor pool where
  // kernels do not run on the AICPU threads (1 serial); 0 where not recorded (then the sum of the
  // two above, which counts AICPU threads that ran kernels twice).
  uint32_t host_threads = 0;
  uint32_t chip_host_threads() const noexcept {
    return host_threads != 0 ? host_threads : aicpu_threads + kernel_threads;
  }
};
// How busy the host was while the run ran: the 1-minute load average when the chip started and
// when it stopped (negative: not known), and the host's hardware threads (0: not known).
struct HostLoad {
  double start = -1;
  double end = -1;
  uint32_t hardware_threads = 0;
  // The load reached the hardware threads at the start or the end: other work competed with the
  // run for the CPUs (the rule `chiprt bench` uses too).
  bool loaded() const noexcept {
    return hardware_threads > 0 && (start >= hardware_threads || end >= hardware_threads);
  }
};
// The cluster and lane (0 AIC, 1 AIV0, 2 AIV1) of core `core` (platform::Geometry numbering:
// cores [0, clusters) are AIC, then two AIV per cluster).
struct CoreSlot {
  uint32_t cluster = 0;
  uint32_t lane = 0;
};
CoreSlot core_slot(const ChipShape& shape, uint32_t core);
std::string core_label(const ChipShape& shape, uint32_t core);  // "AIV0 c3 (core 27)"

struct KernelName {
  int32_t func_id = -1;
  std::string symbol;  // the symbol the kernel was resolved as; "" for a function or unknown
  CoreType core_type = CoreType::AIV;
  std::string name;  // its display name; "" when it has none (the symbol is shown, or func N)
};

// A host-side phase of the run (the host track of the trace).
struct HostSpan {
  std::string name;  // prepare, graph_build, orchestration, upload, launch, wait, read_back
  uint64_t begin_ns = 0;
  uint64_t end_ns = 0;
};

// One task the orchestration submitted (a node of deps.json).
struct TaskNode {
  uint64_t task = 0;  // public id (what submit returned)
  int32_t func_id = -1;
  uint32_t block_num = 1;
  uint32_t scope_depth = 0;
  CoreType core_type = CoreType::AIV;
  bool dependency_only = false;  // submit_dummy / a scope fence
  bool internal = false;         // added by the runtime (host_build_graph's scope fences)
  uint64_t submit_begin_ns = kNoTime;
  uint64_t submit_end_ns = kNoTime;
  uint64_t ready_ns = kNoTime;
};

// A dependency: `consumer` waited for `producer`. The user's edges (kinds in
// kUserDependencies) are the same on both variants; host_build_graph's edges to and from its scope
// fences (kInternalDependencies) complete the graph it executed. kinds 0: not recorded (a
// deps.json of an older version).
struct Edge {
  uint64_t producer = 0;
  uint64_t consumer = 0;
  DependencyKinds kinds = 0;
};

// One executed block of a task (a row of tasks.csv; one per task unless SPMD).
struct BlockRun {
  uint64_t task = 0;
  uint32_t block = 0;
  int32_t core = -1;  // -1: never ran
  uint64_t dispatch_ns = kNoTime;
  uint64_t start_ns = kNoTime;
  uint64_t end_ns = kNoTime;       // kNoTime with start_ns set: still running when the run ended
  uint64_t complete_ns = kNoTime;  // when its scheduler saw it finish
};

struct SchedulerEvent {
  enum class Kind : uint8_t { Dispatch, Complete };
  Kind kind = Kind::Dispatch;
  uint32_t thread = 0;
  int32_t core = -1;
  uint64_t task = 0;
  uint32_t block = 0;
  uint64_t t_ns = 0;
};

struct ThreadSpan {  // scheduler loop phases, orchestrator submit spans, ring waits
  enum class Kind : uint8_t { LoopPhase, Submit, RingWait };
  Kind kind = Kind::LoopPhase;
  uint32_t thread = 0;
  uint32_t what = 0;  // DiagLoopPhase, DiagRing (ring waits), unused for submits
  uint64_t task = 0;  // submits and ring waits
  uint64_t begin_ns = 0;
  uint64_t end_ns = 0;
};

struct ScopeStat {
  uint64_t scope = 0;  // opening order, 0 = the run's outermost scope
  uint32_t depth = 0;
  uint64_t tasks = 0;
  uint64_t peak_task_window = 0;
  uint64_t peak_heap_bytes = 0;
  uint64_t peak_dep_pool = 0;
  uint64_t task_window_capacity = 0;
  uint64_t heap_capacity = 0;
  uint64_t dep_pool_capacity = 0;
  uint64_t waits[3] = {};    // back-pressure waits per DiagRing
  uint64_t wait_ns[3] = {};  // their total time
};

struct TensorArgRecord {
  uint64_t task = 0;
  uint32_t index = 0;       // position among the task's tensor arguments
  ArgTag tag = ArgTag::In;  // how the task uses it (chiprt/task_args.h)
  uint64_t buffer_addr = 0;
  uint64_t start_offset = 0;  // elements
  DataType dtype = DataType::F32;
  std::vector<uint64_t> shape;
  std::vector<uint64_t> strides;
  // Data in args.bin (levels 2-3): offset and bytes of the view's elements gathered row-major;
  // bytes 0 with wanted_bytes > 0: left out (the budget ran out).
  struct Data {
    bool present = false;
    uint64_t offset = 0;
    uint64_t bytes = 0;
    uint64_t wanted_bytes = 0;
  };
  Data before;  // inputs, before the kernel ran
  Data after;   // outputs, after it ran
};

struct TaskCounters {
  uint64_t task = 0;
  uint32_t block = 0;
  int32_t core = -1;
  uint32_t valid = 0;  // common::DiagCounterValid bits
  uint64_t instructions = 0;
  uint64_t cycles = 0;
  uint64_t cpu_ns = 0;
};

struct RunError {
  int32_t code = 0;  // StatusCode
  std::string name;
  std::string message;
  std::string hint;
  std::string stall;  // SchedulerTimeout: "running_task_stalled", ... ("" otherwise)
  int64_t stuck_task = -1;
  int32_t stuck_core = -1;
};

struct RunModel {
  // What ran.
  uint32_t run_number = 0;  // the NNNN of run-NNNN
  int32_t callable_id = -1;
  std::string variant;  // "host_build_graph" / "tensormap_ringbuffer"
  bool serial = false;
  bool isolated = false;
  DiagnosticsConfig config;  // the switches (output_dir as given)
  ChipShape shape;
  std::vector<KernelName> kernels;
  // Time base: ns from the run start; the chip's cycles were mapped through these anchor pairs.
  uint64_t clock_hz = 0;
  std::vector<std::pair<uint64_t, uint64_t>> anchors;  // (host ns from run start, chip cycles)
  uint64_t wall_ns = 0;                                // run start to the end of read-back
  HostLoad host_load;

  std::vector<HostSpan> host_spans;
  std::vector<TaskNode> nodes;  // by public task id order
  std::vector<Edge> edges;      // user and internal edges (deps.json lists them apart)
  bool have_edges = false;      // the dependency graph was collected
  std::vector<BlockRun> blocks;
  std::vector<SchedulerEvent> scheduler_events;
  std::vector<ThreadSpan> thread_spans;
  std::vector<ScopeStat> scopes;
  std::vector<TensorArgRecord> args;
  std::vector<TaskCounters> counters;
  std::string counters_note;  // why counters are CPU time only ("" when hardware counters worked)

  uint64_t records_received = 0;
  uint64_t records_dropped = 0;
  std::string drop_reason;         // "" when nothing was dropped
  std::vector<std::string> notes;  // anything else the reader should know (what was left out)
  std::optional<RunError> error;

  const KernelName* kernel(int32_t func_id) const;
  // "gemm_tile (func 3)": the display name, else the symbol; "func 3" with neither.
  std::string kernel_label(int32_t func_id) const;
};

}  // namespace chiprt::diagnostics
