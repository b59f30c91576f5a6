// Analysis of a RunModel: the critical path through the measured graph and what each of its
// steps waited for, per-kernel statistics, per-core utilisation, and a verdict on what bounded the
// run. Pure functions of the model (no clock, no I/O), so they are tested on hand-built graphs
// with given times.
//
// The critical path: over the executed graph (nodes, edges; a task's span is its first block's
// start to its last block's end), the chain of tasks ending at the task that finished last, each
// step going back to the producer that finished last before the step's task became ready (a
// task without such a producer starts the path). Each step's gap between the end of its
// predecessor on the path (or the run start) and its own start is split into what it waited for:
//   orchestrator: not yet submitted (submit end after the predecessor's end)
//   data:         submitted, a producer not yet finished (up to ready_ns)
//   scheduler:    ready, a core was free, not yet dispatched (ready to dispatch)
//   core:         ready, but every eligible core was busy (counted from the cores' busy spans)
//   core:         (also) dispatched to a core still running another block (its pending slot)
//   launch:       dispatched, not yet started (the handshake)
// Parts whose times were not recorded are reported as "unmeasured".
//
// Threading: pure; safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "diagnostics/run_model.h"

namespace chiprt::diagnostics {

enum class WaitKind : uint8_t { Orchestrator, Data, Scheduler, Core, Launch, Unmeasured };
inline constexpr int kWaitKinds = 6;
const char* wait_kind_name(WaitKind kind);  // "orchestrator", "data", ...

struct PathStep {
  uint64_t task = 0;
  int32_t func_id = -1;
  int32_t core = -1;      // the core of its first block
  uint64_t start_ns = 0;  // first block start
  uint64_t end_ns = 0;    // last block end
  uint64_t gap_ns = 0;    // from the predecessor's end (or the run's first start) to start_ns
  uint64_t waited_ns[kWaitKinds] = {};        // the gap split by cause (sums to gap_ns)
  WaitKind main_wait = WaitKind::Unmeasured;  // the largest part (Unmeasured when gap 0)
};

struct KernelStat {
  int32_t func_id = -1;
  std::string label;
  uint64_t count = 0;  // blocks
  uint64_t total_ns = 0;
  uint64_t mean_ns = 0;
  uint64_t p50_ns = 0;
  uint64_t p99_ns = 0;
  uint64_t max_ns = 0;
};

struct CoreUse {
  uint32_t core = 0;
  std::string label;
  uint64_t blocks = 0;
  uint64_t busy_ns = 0;    // the time it ran a block (finished blocks)
  double utilisation = 0;  // busy / the chip's active span (first start to last end)
};

// What bounded the run. A failed run's verdict is its failure (Failed). Otherwise the cause whose
// share of the critical path (with waits) is at least kDominantShare: kernel time (Kernels), the
// orchestrator's submissions (Orchestration, or Ring when the orchestrator blocked on full rings
// for at least kRingShare of that wait), scheduler latency (Scheduling), cores all busy
// (TooFewCores), waits whose cause was not measured (Unknown, also: no task finished); none that
// reaches it: NoDominantCause. docs/report.md lists them for users.
enum class Bound : uint8_t {
  Orchestration,
  Scheduling,
  Kernels,
  Ring,
  TooFewCores,
  Unknown,
  Failed,
  NoDominantCause,
};
const char* bound_name(Bound bound);  // "orchestration", ..., "failed", "no_dominant_cause"
inline constexpr double kDominantShare = 0.5;
inline constexpr double kRingShare = 0.5;

struct Analysis {
  std::vector<PathStep> path;       // first step first
  uint64_t path_ns = 0;             // sum of the path's task spans
  uint64_t path_with_waits_ns = 0;  // first start to last end along the path
  uint64_t chip_span_ns = 0;        // first block start to last block end
  uint64_t wall_ns = 0;             // RunModel::wall_ns
  uint64_t task_time_ns = 0;        // sum of all block spans
  // The cores' busy time (their blocks' execution, finished blocks) over the chip span: how many
  // cores ran a block at an average instant, so never more than the cores that ran blocks.
  double parallelism = 0;
  uint64_t waited_ns[kWaitKinds] = {};  // sums over the path
  std::vector<KernelStat> kernels;      // by total time, largest first
  std::vector<CoreUse> cores;           // cores that ran something, by core number
  Bound bound = Bound::Unknown;
  std::string verdict;  // one line, e.g. "kernels: the critical path is 93% kernel time ..."
  std::vector<std::string> caveats;  // e.g. "no dependency graph collected: path from timing only"
};

Analysis analyze(const RunModel& model);

// "456 ns", "12.3 us", "1.234 ms", "2.500 s" (the summary, critical_path.md and the page).
std::string format_duration_ns(uint64_t ns);

// The cores of the clusters the run used (shape.cores when the clusters were not recorded).
uint32_t run_cores(const ChipShape& shape);
// "parallelism 3.21 of 24 cores (2 host threads ran kernels)".
std::string parallelism_text(const RunModel& model, const Analysis& analysis);

// The short text `chiprt run --diag` and `chiprt report` print.
std::string format_summary(const RunModel& model, const Analysis& analysis,
                           const std::string& run_dir);

}  // namespace chiprt::diagnostics
