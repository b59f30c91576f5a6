// PreparedLaunch: one run between DeviceRunner::prepare and DeviceRunner::collect: its plan,
// where its launch arguments and phase buffer lie on the device, what the host already knows of
// its report, and the state of the wait for it.
//
// A run's steps: prepare (checks, bind, orchestration or launch arguments, everything the chip
// needs written to the device) -> launch -> poll until true, or wait -> collect (the chip's
// verdict, phases, report). Everything a run needs between its steps lives here, not in the
// runner, so two prepared launches can be held at once (pipelined runs, Worker::submit: prepare
// run N+1 while run N executes) provided they use different pipeline slots and arena banks (a
// prepare writes the slot's staging buffer and kernel table and the bank's regions); the Worker's
// pipeline alternates them (src/host/worker.cpp).
//
// Lifetime: made by prepare, then driven by the same runner's launch/poll/wait/collect in that
// order (a step out of order is InternalError); dropped after collect, or without launching when
// a step threw. Movable, not copyable. Threading: used by the one thread driving the run.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "chiprt/run_report.h"
#include "chiprt/status.h"
#include "common/chip_launch.h"
#include "common/handshake.h"
#include "common/progress.h"
#include "host/run_plan.h"

namespace chiprt::host {

enum class LaunchStage : uint8_t {
  Prepared = 0,  // written to the device; not launched
  Launched = 1,  // running: poll / wait
  Finished = 2,  // the wait is over (drained, or given up on): collect
  Collected = 3,
};

// Which part of the launch the wait is in: its AICPU threads; their grace after the chip latched
// an error; the drain of the cores after the AICPU threads returned.
enum class WaitPhase : uint8_t { Aicpu, AicpuGrace, Drain };

// What the host last saw a core execute (isolated platforms: the op-execute check), and since
// when (ms after the launch).
struct CoreWatch {
  uint32_t executing = common::kTaskIdle;
  uint32_t starts = 0;
  uint64_t since_ms = 0;
};

// The host's wait for a launch (common/progress.h): the progress watch and what the wait found.
struct LaunchWait {
  common::ProgressWatch watch;
  // The last wait's status: Ok once drained; StreamSyncTimeout while (or when it stopped) not.
  Status waited{StatusCode::StreamSyncTimeout, "the launch made no progress"};
  // How long the last part of the wait (the rest of the launch after the AICPU threads, or after
  // the chip latched an error) was given.
  uint64_t drain_budget_ms = 0;
  bool chip_failed = false;  // the chip latched an error while its AICPU threads ran
  WaitPhase phase = WaitPhase::Aicpu;
  uint64_t phase_deadline_ms = 0;  // ms after the launch: the end of the grace or drain budget
  // The platform reported the device dead (KernelCrashed) or killed (DeviceFaulted): `waited`
  // holds its status, Platform::device_fault() the record.
  bool device_lost = false;
  // Isolated platforms: the core whose kernel ran past the op execute timeout (the host killed
  // the device), or -1.
  int32_t op_timeout_core = -1;
  // Isolated platforms: the host killed the device because chip threads were still stuck when
  // the wait gave up on the launch.
  bool killed_stuck = false;
  std::array<CoreWatch, common::kMaxCores> cores{};  // isolated platforms only
};

// host_build_graph: what the collect step does with the replay cache.
struct HostGraphRun {
  std::vector<uint8_t> replay_key;  // replay_graph runs
  bool cached = false;              // the launched image is its bank's cached one
  bool prevalidated = false;        // launched with ChipLaunchArgs::image_prevalidated
};

class DiagCollector;  // host/diag_collector.h

struct PreparedLaunch {
  using Clock = std::chrono::steady_clock;

  RunPlan plan;
  int32_t callable_id = -1;
  LaunchStage stage = LaunchStage::Prepared;
  // false: nothing for the chip to do (a graph of no tasks); collect only finishes the report.
  bool needs_launch = false;
  Clock::time_point t_entry;     // the run's start (RunReport::host_prepare_ns counts from it)
  Clock::time_point t_launch;    // set by launch
  Clock::time_point t_launched;  // the platform took the launch (diagnostics' host spans)
  // The launch arguments as written to the device at launch_args_addr (in the slot's staging
  // buffer); collect reads the chip's result back into it.
  std::unique_ptr<common::ChipLaunchArgs> launch_args;
  uint64_t launch_args_addr = 0;
  uint64_t phase_buffer_addr = 0;
  uint64_t shared_addr = 0;  // the bank's shared-state region (the progress counters)
  HostGraphRun host_graph;
  LaunchWait wait;
  // Filled as the steps learn it: the shape and (host_build_graph) the task count and the graph
  // build phase at prepare, the device timings at the end of the wait, the rest at collect.
  RunReport report;
  // RunPlan::diagnostics.any(): the run's collector (made by prepare; collect writes the run
  // directory, and every step that throws writes it with the error first).
  std::shared_ptr<DiagCollector> diag;
};

}  // namespace chiprt::host
