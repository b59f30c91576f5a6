// RunReport: what one run did and how long each phase took.
//
// Returned by Worker::run. Phase spans come from per-thread stamps the chip-side threads write
// during the run (reset every run) and are reduced by the host to a start offset (from the
// earliest stamped phase) and a span. Exceptions: GraphBuild of host_build_graph is measured on
// the host before the launch (its start_ns is 0 on its own timeline); Orchestration and
// PostOrchestration are stamped only by tensormap_ringbuffer. Plain value; safe to copy between
// threads.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "chiprt/ring_sizes.h"

namespace chiprt {

enum class Phase : uint8_t {
  RunWall = 0,        // first chip-side thread start to last thread end
  Preamble,           // thread start-up until the run's state is readable
  Load,               // reading the graph image / resolving kernels
  GraphBuild,         // building the graph (host orchestration time for host_build_graph)
  Orchestration,      // orchestration window (on-chip orchestration, tensormap_ringbuffer)
  Scheduling,         // first dispatch to last completion
  PostOrchestration,  // scheduling after orchestration finished
};
inline constexpr int kPhaseCount = 7;
std::string_view phase_name(Phase phase) noexcept;

struct PhaseSpan {
  bool present = false;
  uint64_t start_ns = 0;  // offset from the earliest stamped phase (RunWall: 0)
  uint64_t span_ns = 0;
};

struct RunReport {
  // The tasks the orchestration function submitted (submit, submit_dummy, allocate): the same on
  // both runtime variants for the same graph, and the ids they returned are 0..task_count-1.
  uint64_t task_count = 0;
  // Tasks the runtime added of its own, which the chip also ran: host_build_graph's scope fences
  // (one dependency-only task per ended scope that owned runtime outputs, ordering the reuse of
  // their memory); always 0 on tensormap_ringbuffer, which has none.
  uint64_t internal_task_count = 0;
  uint64_t host_prepare_ns = 0;  // Worker::run entry to launch (includes host graph build)
  uint64_t device_wall_ns = 0;   // launch to the chip reporting completion
  uint64_t host_total_ns = 0;    // Worker::run entry to return
  std::array<PhaseSpan, kPhaseCount> phases{};
  uint32_t aicpu_threads = 0;
  uint32_t cores = 0;
  bool serial = false;
  // CallConfig::measure_kernel_time: the sum over all cores of the kernels' execution time
  // (per-thread CPU time, see CallConfig), and whether it was measured (0 and false otherwise).
  uint64_t kernel_ns = 0;
  bool kernel_time_measured = false;
  // The rings a tensormap_ringbuffer run used per scope depth, as resolved from CallConfig::rings,
  // the CHIPRT_RING_* variables and the defaults; all zero for a host_build_graph run.
  ResolvedRingSizes rings;
  // Device bytes the run's output-heap arena had committed: host_build_graph's runtime outputs or
  // tensormap_ringbuffer's per-depth ring heaps come from it. The arena keeps the largest size a
  // run asked for and is reused while big enough, so this may exceed what the run itself needed.
  uint64_t output_heap_committed_bytes = 0;
  // CallConfig::diagnostics: the run's directory (output_dir/run-NNNN), "" when nothing was on;
  // and the chip-side records the collectors lost (0 unless a buffer stayed full; run.json and
  // the report say why).
  std::string diagnostics_dir;
  uint64_t diagnostics_records_dropped = 0;
  const PhaseSpan& phase(Phase p) const { return phases[static_cast<int>(p)]; }
};

// A run's or a graph's task count as chiprt states it everywhere (the CLI, report.html, the
// docs): "1,024 kernel tasks + 64 dependency-only", thousands separated, the dependency-only part
// only when there are some ("20 kernel tasks"). Kernel tasks run on cores; dependency-only tasks
// (submit_dummy, allocate) only order others.
std::string format_task_count(uint64_t kernel_tasks, uint64_t dependency_only_tasks);
// A count with its thousands separated by commas, as chiprt states counts: "1,984".
std::string format_count(uint64_t count);

}  // namespace chiprt
