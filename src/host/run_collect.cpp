// The collect step of a run: the chip's verdict (an error becomes chiprt::Error, abandoning the
// device after a watchdog or stream timeout), the device phases and kernel time, the report.
#include <algorithm>
#include <array>
#include <cstring>
#include <string>

#include "common/handshake.h"
#include "host/device_runner.h"
#include "host/diag_collector.h"
#include "host/run_steps.h"

namespace chiprt::host {

RunReport DeviceRunner::collect(PreparedLaunch& prepared) {
  if (!prepared.diag) return collect_chip(prepared);
  RunReport report;
  const RunClock::time_point t_collect = RunClock::now();
  try {
    report = collect_chip(prepared);
  } catch (const Error& e) {
    prepared.diag->host_span("read-back", t_collect, RunClock::now());
    fail_diagnostics(prepared, e);
  }
  prepared.diag->host_span("read-back", t_collect, RunClock::now());
  std::shared_ptr<DiagCollector> diag = std::move(prepared.diag);
  report.diagnostics_records_dropped = diag->records_dropped();
  // finish_chip read everything the files need: the region goes before any write may throw.
  diag->release_region();
  if (prepared.plan.diagnostics.background_write) {
    report.diagnostics_dir = diag->reserve_directory();
    report.host_total_ns = ns_between(prepared.t_entry, RunClock::now());
    diag_writes_.push(report.diagnostics_dir, [diag, written = report] {
      diag->write_files(&written, nullptr);
      return std::string();
    });
    return report;
  }
  report.diagnostics_dir = diag->write(&report, nullptr, nullptr);
  report.host_total_ns = ns_between(prepared.t_entry, RunClock::now());
  return report;
}

RunReport DeviceRunner::collect_chip(PreparedLaunch& prepared) {
  RunReport& report = prepared.report;
  if (!prepared.needs_launch && prepared.stage == LaunchStage::Prepared) {
    // Nothing for the chip to do: the run was over when it was prepared.
    prepared.stage = LaunchStage::Collected;
    report.host_prepare_ns = ns_between(prepared.t_entry, RunClock::now());
    report.host_total_ns = report.host_prepare_ns;
    return std::move(report);
  }
  require_stage(prepared, LaunchStage::Finished, "collect");
  prepared.stage = LaunchStage::Collected;
  const RunPlan& plan = prepared.plan;
  const LaunchWait& wait = prepared.wait;

  // Read the chip's verdict even when the stream did not drain: a scheduler that gave up on a
  // stuck task latched its name there, which says more than the stream timeout.
  common::ChipLaunchArgs& result = *prepared.launch_args;
  const StatusCode code =
      memory_.copy_from_device(&result, prepared.launch_args_addr, sizeof(common::ChipLaunchArgs))
              .is_ok()
          ? static_cast<StatusCode>(result.result.code.load(std::memory_order_acquire))
          : StatusCode::Ok;
  // Diagnostics are read before a fault may abandon the device (and its memory with it).
  if (prepared.diag) prepared.diag->finish_chip(&result.result);
  if (wait.device_lost || wait.op_timeout_core >= 0) {
    std::string chip_detail;
    if (code != StatusCode::Ok) {
      const char* detail = result.result.detail;
      chip_detail.assign(detail, strnlen(detail, common::kResultDetailBytes));
    }
    throw_device_fault(prepared, chip_detail);
  }
  const bool stream_timed_out = !wait.waited.is_ok();
  if (code != StatusCode::Ok || stream_timed_out) {
    // An orchestrator error reads as host_build_graph reports it (no launch prefix).
    const bool orchestration_error = code != StatusCode::Ok && result.result.from_orchestration;
    std::string message = orchestration_error
                              ? std::string()
                              : "callable id " + std::to_string(prepared.callable_id) + ": ";
    StatusCode thrown = code;
    if (code != StatusCode::Ok) {
      const char* detail = result.result.detail;
      const std::string text(detail, strnlen(detail, common::kResultDetailBytes));
      message += text.empty() ? std::string(status_info(code).detail) : text;
      if (stream_timed_out) {
        message += "; the launch then did not drain within " +
                   std::to_string(wait.drain_budget_ms) + " ms (a chip thread is still inside " +
                   (result.result.stuck_core >= 0 ? "the kernel named above"
                                                  : "a kernel or the orchestration function") +
                   ")";
      }
    } else {
      thrown = StatusCode::StreamSyncTimeout;
      message += "the launch made no progress for " + std::to_string(plan.stream_sync_timeout_ms) +
                 " ms (no kernel started, no task submitted) and its chip threads did not "
                 "return; nothing on the chip reported an error (every scheduler thread is "
                 "stuck: in a kernel running on it, or in an orchestration function that never "
                 "returns)";
    }
    // Only the chip's own watchdog abandons the device: an orchestration function may throw an
    // Error with any code, SchedulerTimeout included, and that fails the run like on
    // host_build_graph.
    if (stream_timed_out || (code == StatusCode::SchedulerTimeout && !orchestration_error)) {
      if (wait.killed_stuck) message += "; the device process was killed";
      abandon_after_fault(message);
      message += "; device " + std::to_string(device_id_) +
                 " abandoned, further runs are refused until " + options_.facade.reset_call;
    }
    throw Error(thrown, message);
  }

  // No error and not every thread accepted: the chip did not recognise the launch arguments (a
  // corrupted block), so nothing ran; that is no success.
  uint32_t accepted = 0;
  throw_if(
      platform_->load_device_word(common::threads_accepted_addr(prepared.shared_addr), &accepted));
  if (accepted != plan.shape.aicpu_threads) {
    throw Error(StatusCode::InternalError,
                "callable id " + std::to_string(prepared.callable_id) + ": the chip accepted the " +
                    "launch arguments on " + std::to_string(accepted) + " of " +
                    std::to_string(plan.shape.aicpu_threads) +
                    " AICPU threads and reported no error (the block at device address " +
                    hex(prepared.launch_args_addr) + " has magic " + hex(result.magic) +
                    ", expected " + hex(common::kLaunchMagic) +
                    "); the launch arguments were not recognised, so the run did not execute");
  }

  common::PhaseBuffer phases;
  throw_if(memory_.copy_from_device(&phases, prepared.phase_buffer_addr, kPhaseBufferBytes));
  std::array<PhaseSpan, kPhaseCount> device_phases{};
  common::reduce_phase_buffer(phases, plan.shape.aicpu_threads, geometry_.clock_hz, &device_phases);
  for (int p = 0; p < kPhaseCount; ++p) {
    // GraphBuild of host_build_graph is the host's orchestration time, measured before.
    if (p == static_cast<int>(Phase::GraphBuild) && !device_phases[p].present) continue;
    report.phases[p] = device_phases[p];
  }
  if (plan.shape.measure_kernel_time) {
    // The accumulators start at zero: they live in the handshake cells of the SharedPrefix, which
    // the host zeroes before every launch (the core protocol needs it too).
    report.kernel_ns = read_kernel_ns(prepared.shared_addr, geometry_.cores());
    report.kernel_time_measured = true;
  }
  if (plan.variant == RuntimeVariant::TensormapRingbuffer) {
    // Every submitted task completes in a successful run, so the chip's completion count is the
    // number of tasks the orchestration submitted.
    report.task_count = result.result.tasks_completed;
  } else {
    // The chip accepted the image, so it passed its checks: replays may launch it prevalidated.
    const HostGraphRun& run = prepared.host_graph;
    if (run.cached) arenas_.mark_prebuilt_validated(plan.bank, run.replay_key);
    if (run.prevalidated) ++prevalidated_launches_;
  }
  report.host_total_ns = ns_between(prepared.t_entry, RunClock::now());
  return std::move(report);
}

uint64_t DeviceRunner::read_kernel_ns(uint64_t shared_addr, uint32_t cores) {
  const uint32_t readable = std::min(cores, common::kMaxCores);
  uint64_t sum = 0;
  for (uint32_t core = 0; core < readable; ++core) {
    // Only the accumulator is read, not the whole cell (its atomics are not copyable values).
    uint64_t core_ns = 0;
    throw_if(memory_.copy_from_device(&core_ns, common::core_kernel_ns_addr(shared_addr, core),
                                      sizeof(core_ns)));
    sum += core_ns;
  }
  return sum;
}

}  // namespace chiprt::host
