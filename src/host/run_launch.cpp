// The launch and wait steps of a run: start the chip-side programs on the prepared launch
// arguments, then wait for the launch as long as it makes progress (common/progress.h).
#include <algorithm>
#include <string>

#include "common/handshake.h"
#include "host/device_runner.h"
#include "host/run_steps.h"

namespace chiprt::host {
namespace {

const char* stage_name(LaunchStage stage) {
  switch (stage) {
    case LaunchStage::Prepared:
      return "prepared";
    case LaunchStage::Launched:
      return "launched";
    case LaunchStage::Finished:
      return "finished";
    case LaunchStage::Collected:
      return "collected";
  }
  return "invalid";
}

}  // namespace

void DeviceRunner::require_stage(const PreparedLaunch& prepared, LaunchStage stage,
                                 const char* step) const {
  if (prepared.stage == stage && prepared.needs_launch) return;
  const std::string run =
      std::string(step) + ": the run of callable " + std::to_string(prepared.callable_id);
  if (!prepared.needs_launch && prepared.stage == LaunchStage::Prepared) {
    throw Error(StatusCode::InternalError,
                run + " has nothing to launch (its graph has no tasks); collect it");
  }
  throw Error(StatusCode::InternalError,
              run + " is " + stage_name(prepared.stage) + "; " + step + " needs it " +
                  stage_name(stage) + " (the steps: prepare, launch, poll or wait, collect)");
}

uint64_t DeviceRunner::read_progress(const PreparedLaunch& prepared) {
  uint64_t sum = 0;
  uint32_t word = 0;
  const uint64_t shared_addr = prepared.shared_addr;
  if (platform_->load_device_word(common::orchestrator_beat_addr(shared_addr), &word).is_ok()) {
    sum += word;
  }
  for (uint32_t core = 0; core < std::min(geometry_.cores(), common::kMaxCores); ++core) {
    const uint64_t addr = common::core_starts_addr(shared_addr, core);
    if (platform_->load_device_word(addr, &word).is_ok()) sum += word;
  }
  return sum;
}

StatusCode DeviceRunner::peek_chip_code(const PreparedLaunch& prepared) {
  const uint64_t code_addr = common::launch_result_code_addr(prepared.launch_args_addr);
  uint32_t word = 0;
  return platform_->load_device_word(code_addr, &word).is_ok() ? static_cast<StatusCode>(word)
                                                               : StatusCode::Ok;
}

void DeviceRunner::launch(PreparedLaunch& prepared) {
  require_stage(prepared, LaunchStage::Prepared, "launch");
  const RunPlan& plan = prepared.plan;
  platform::LaunchRequest request;
  request.launch_args_addr = prepared.launch_args_addr;
  request.aicpu_threads = plan.shape.aicpu_threads;
  // Core numbering spans the whole device (AIV cores follow all AIC cores), so every core
  // takes part; the scheduler only dispatches to the run's clusters.
  request.cores = geometry_.cores();
  request.serial = plan.shape.serial;

  prepared.t_launch = RunClock::now();
  prepared.report.host_prepare_ns = ns_between(prepared.t_entry, prepared.t_launch);
  throw_if(platform_->launch(request));
  ++launches_;
  prepared.stage = LaunchStage::Launched;
  // The stream-sync timeout bounds a launch that stopped progressing, not a long one: the
  // deadline moves with every sample that shows progress.
  prepared.wait.watch =
      common::ProgressWatch(read_progress(prepared), 0, plan.stream_sync_timeout_ms);
  prepared.wait.drain_budget_ms = plan.stream_sync_timeout_ms;
}

bool DeviceRunner::poll(PreparedLaunch& prepared) {
  require_stage(prepared, LaunchStage::Launched, "poll");
  LaunchWait& state = prepared.wait;
  const uint64_t timeout_ms = prepared.plan.stream_sync_timeout_ms;
  auto since_launch_ms = [&]() {
    return ns_between(prepared.t_launch, RunClock::now()) / 1'000'000;
  };
  // Time left to the no-progress deadline as of the last sample.
  auto left_ms = [&]() -> uint64_t {
    const uint64_t now = since_launch_ms();
    const uint64_t deadline = state.watch.since() + timeout_ms;
    return now < deadline ? deadline - now : 0;
  };
  // AICPU threads first, then the cores. Once the chip latched an error (a scheduler gave up on a
  // stuck task) the rest gets only a short grace instead of the whole stream-sync timeout: the
  // cores, and, when kernels run on the AICPU threads, the thread stuck in that kernel. So the
  // AICPU threads are waited for in slices, reading the chip's status between them.
  // Samples before every verdict: a stall is declared only after a look at the counters.
  if (!state.watch.stalled(since_launch_ms(), [&] { return read_progress(prepared); })) {
    state.waited =
        platform_->wait_aicpu(std::min(std::max<uint64_t>(left_ms(), 1), kAicpuWaitSliceMs));
    if (state.waited.code() == StatusCode::StreamSyncTimeout) {
      if (peek_chip_code(prepared) == StatusCode::Ok) return false;  // still running
      state.chip_failed = true;
      state.drain_budget_ms = std::min(left_ms(), kFaultDrainGraceMs);
      state.waited = platform_->wait_aicpu(state.drain_budget_ms);
    }
  }
  if (state.waited.is_ok()) {
    if (!state.chip_failed) {
      state.drain_budget_ms = peek_chip_code(prepared) != StatusCode::Ok
                                  ? std::min(left_ms(), kFaultDrainGraceMs)
                                  : left_ms();
    }
    state.waited = platform_->wait(state.drain_budget_ms);
  }
  prepared.report.device_wall_ns = ns_between(prepared.t_launch, RunClock::now());
  prepared.stage = LaunchStage::Finished;
  if (!state.waited.is_ok() && state.waited.code() != StatusCode::StreamSyncTimeout) {
    throw Error(state.waited);
  }
  return true;
}

void DeviceRunner::wait(PreparedLaunch& prepared) {
  while (!poll(prepared)) {
  }
}

}  // namespace chiprt::host
