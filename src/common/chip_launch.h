// Launch arguments: the one block of device memory the host fills before a launch and the chip
// reads (and writes its result into). Shared by src/host (writer) and the chip rooms
// (src/scheduler, src/aicore) as the protocol between the two sides. Plain data only: addresses
// are device addresses.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "chiprt/call_config.h"
#include "chiprt/run_report.h"
#include "chiprt/status.h"
#include "chiprt/types.h"

namespace chiprt::common {

inline constexpr uint32_t kLaunchMagic = 0x4C435243;  // "CRCL"
inline constexpr uint32_t kMaxAicpuThreads = 8;
inline constexpr uint32_t kMaxCores = 72;  // 24 clusters x 3
// The scheduler's no-progress bound when ChipLaunchArgs::scheduler_timeout_ms is 0; also the
// host's default for CHIPRT_SCHEDULER_TIMEOUT_MS.
inline constexpr uint64_t kDefaultSchedulerTimeoutMs = 10000;
// The host's default bound on a launch that makes no progress (CHIPRT_STREAM_SYNC_TIMEOUT_MS).
inline constexpr uint64_t kDefaultStreamSyncTimeoutMs = 30000;
// Room for a whole ring error (RingDeadlock names the ring, its size, the head task and the
// knobs to raise: ~400 characters).
inline constexpr uint32_t kResultDetailBytes = 1024;

// Per-thread phase stamps in chip cycles; 0 = not stamped. The host resets the buffer before every
// run; each AICPU thread writes only its own row (plain stores, read after the launch completed).
struct PhaseStamp {
  uint64_t start = 0;
  uint64_t end = 0;
};
struct PhaseBuffer {
  PhaseStamp stamps[kMaxAicpuThreads][kPhaseCount];
};
// Reduces per-thread stamps: per phase the earliest start and latest end; offsets from the earliest
// stamped phase other than RunWall. `hz` converts cycles to ns.
void reduce_phase_buffer(const PhaseBuffer& buffer, uint32_t threads, uint64_t hz,
                         std::array<PhaseSpan, kPhaseCount>* out);

// Written by the chip; read by the host after the launch. The first failing thread wins the
// `code` CAS; later failures are dropped (errors latch).
struct ChipResult {
  std::atomic<int32_t> code{0};  // StatusCode
  // Set by the winner when the error is the tensormap_ringbuffer orchestrator's (a submission
  // check, a ring, the orchestration function): the host then reports `detail` as the message
  // host_build_graph gives for the same error, without the launch's "callable id N: " prefix.
  bool from_orchestration = false;
  char detail[kResultDetailBytes]{};
  uint64_t tasks_completed = 0;
  // Tasks the scheduler threads dispatched onto the core whose finish had just made them ready,
  // without a ready-queue round trip (the successor fast path); each thread adds its count as it
  // ends.
  uint64_t successor_dispatches = 0;
  int64_t stuck_task = -1;
  int32_t stuck_func_id = -1;
  int32_t stuck_core = -1;
  // SchedulerTimeout: which stall the watchdog saw (SchedulerStall), 0 for other errors.
  uint32_t stall_kind = 0;
};

// The sub-classes of SchedulerTimeout, in ChipResult::stall_kind, the error message and
// diagnostics (run.json).
enum class SchedulerStall : uint32_t {
  None = 0,
  RunningTaskStalled = 1,   // a task is running and does not finish (named with its core)
  ReadyButCoresIdle = 2,    // ready work, but every eligible core idle
  DependencyDeadlock = 3,   // tasks pending with nothing ready or running
  OrchestratorStarved = 4,  // the orchestrator is not submitting (nothing else to do)
};

// Ring sizes of one tensormap_ringbuffer run, one set per scope depth (depth >= kRingDepths - 1
// shares the last set). Resolved by the host from CallConfig::rings, CHIPRT_RING_* and defaults.
inline constexpr uint32_t kRingDepths = 4;
struct RingSizes {
  uint64_t task_window[kRingDepths] = {};  // task slots, power of two
  uint64_t heap_bytes[kRingDepths] = {};   // output heap bytes, multiple of 64
  uint64_t dep_pool[kRingDepths] = {};     // dependency-list entries
};

struct ChipLaunchArgs {
  uint32_t magic = kLaunchMagic;
  RuntimeVariant variant = RuntimeVariant::HostBuildGraph;
  bool serial = false;
  // CallConfig::measure_kernel_time: cores add each kernel's CPU time to
  // HandshakeCell::kernel_ns. Sits in the padding before aicpu_threads (layout unchanged).
  bool measure_kernel_time = false;
  // platform::Geometry::kicks_run_kernels: a kick runs the kernel inline on the scheduler.
  bool kicks_run_kernels = false;
  uint32_t aicpu_threads = 0;
  uint32_t clusters = 0;  // clusters this run uses; cores are numbered as in platform::Geometry
  uint32_t device_clusters = 0;
  // host_build_graph replay: this exact image passed the chip's structural checks in an earlier
  // launch of this runner and has not been rewritten since, so thread 0 only formats its per-task
  // state from it (the checks guard against malformed images from the host; the bytes are those
  // it checked). Sits in the padding before image_addr (layout unchanged).
  bool image_prevalidated = false;
  uint64_t image_addr = 0;  // graph image (host_build_graph), see common/graph_image.h
  uint64_t image_size = 0;
  // tensormap_ringbuffer: AICPU thread 0 runs the orchestration function at
  // orchestration_entry (OrchestrationEntry) with the arguments encoded at orchestration_args_addr
  // (common::TaskArgsWire, common/task_args_wire.h);
  // kernel_info_addr holds the common::KernelTable it validates submissions against; runtime
  // outputs come from [heap_addr, heap_addr + heap_size), carved into one heap per depth set.
  uint64_t orchestration_entry = 0;
  uint64_t orchestration_args_addr = 0;
  // tensormap_ringbuffer: the run's copy of CallConfig::user_data, user_data_bytes (at most
  // CallConfig::kMaxUserDataBytes) at user_data_addr (CallConfig::kUserDataAlign-aligned; 0 when
  // there are none), which the orchestration function reads (Orchestration::user_data).
  uint64_t user_data_addr = 0;
  uint64_t user_data_bytes = 0;
  // The run's number (host: unique in the process, non-zero): the orchestrator stamps the runtime
  // outputs with it and bounds the tasks' memory by the run's arguments and heap
  // (orchestrator::RunMemory). 0 (chip-side tests driving a launch directly) bounds nothing.
  uint32_t run = 0;
  uint64_t kernel_info_addr = 0;
  uint64_t heap_addr = 0;
  uint64_t heap_size = 0;
  RingSizes rings;
  // Orchestrator <-> scheduler shared state (common/shared_layout.h, common/ring_layout.h).
  uint64_t shared_addr = 0;
  uint64_t shared_size = 0;
  uint64_t kernel_table_addr = 0;  // uint64_t[kMaxFuncId]: kernel entry per func_id, 0 = none
  uint64_t phase_buffer_addr = 0;  // PhaseBuffer
  uint64_t services_addr = 0;      // common::ChipServices
  uint64_t scheduler_timeout_ms = 0;
  uint64_t clock_hz = 0;
  // The run's diagnostics region (common/diag_layout.h), 0 when no chip-side collector is on.
  uint64_t diag_addr = 0;
  ChipResult result;
};

// The no-progress bound of the chip's watchdogs for this launch.
constexpr uint64_t scheduler_timeout_ms(const ChipLaunchArgs& args) {
  return args.scheduler_timeout_ms == 0 ? kDefaultSchedulerTimeoutMs : args.scheduler_timeout_ms;
}

// The device address of the launch's status word (ChipResult::code) in the launch-arguments block
// at `launch_args_addr`: the one field the host may read while chip threads run (an atomic load,
// Platform::load_device_word).
static_assert(std::is_standard_layout_v<ChipLaunchArgs> && std::is_standard_layout_v<ChipResult>);
static_assert(sizeof(ChipResult::code) == sizeof(uint32_t));
constexpr uint64_t launch_result_code_addr(uint64_t launch_args_addr) {
  return launch_args_addr + offsetof(ChipLaunchArgs, result) + offsetof(ChipResult, code);
}
// The device address of ChipLaunchArgs::shared_addr in the block at `launch_args_addr`.
constexpr uint64_t launch_shared_addr_addr(uint64_t launch_args_addr) {
  return launch_args_addr + offsetof(ChipLaunchArgs, shared_addr);
}

}  // namespace chiprt::common
