// The launch and wait steps of a run: start the chip-side programs on the prepared launch
// arguments, then wait for the launch as long as it makes progress (common/progress.h). On an
// isolated platform the wait also enforces the op execute timeout (host-side samples of the
// cores' handshake cells between ~20 ms slices, no allocation) and kills a device it gives up on.
#include <algorithm>
#include <cstddef>
#include <string>

#include "common/handshake.h"
#include "host/device_runner.h"
#include "host/diag_collector.h"
#include "host/log.h"
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
  if (prepared.diag) {
    prepared.diag->host_span("prepare", prepared.t_entry, prepared.t_launch);
    prepared.diag->start();
  }
  const Status launched = platform_->launch(request);
  if (platform_->isolated() && (launched.code() == StatusCode::KernelCrashed ||
                                launched.code() == StatusCode::DeviceFaulted)) {
    // The device died while taking the launch (a chip-side orchestration function that crashed
    // at once): the run ends as if its wait had seen it.
    prepared.stage = LaunchStage::Finished;
    prepared.wait.device_lost = true;
    prepared.wait.waited = launched;
    throw_device_fault(prepared, {});
  }
  throw_if(launched);
  ++launches_;
  prepared.stage = LaunchStage::Launched;
  prepared.t_launched = RunClock::now();
  if (prepared.diag) prepared.diag->host_span("launch", prepared.t_launch, prepared.t_launched);
  // The stream-sync timeout bounds a launch that stopped progressing, not a long one: the
  // deadline moves with every sample that shows progress.
  prepared.wait.watch =
      common::ProgressWatch(read_progress(prepared), 0, plan.stream_sync_timeout_ms);
  prepared.wait.drain_budget_ms = plan.stream_sync_timeout_ms;
}

namespace {

// What a platform wait answers once the device is gone: it died (KernelCrashed) or was killed
// (DeviceFaulted); either way nothing more will run, so the wait is over.
bool device_gone(const Status& waited) {
  return waited.code() == StatusCode::KernelCrashed || waited.code() == StatusCode::DeviceFaulted;
}

}  // namespace

bool DeviceRunner::poll(PreparedLaunch& prepared, bool wakeable) {
  require_stage(prepared, LaunchStage::Launched, "poll");
  LaunchWait& state = prepared.wait;
  const uint64_t timeout_ms = prepared.plan.stream_sync_timeout_ms;
  const bool isolated = platform_->isolated();
  auto since_launch_ms = [&]() {
    return ns_between(prepared.t_launch, RunClock::now()) / 1'000'000;
  };
  // Time left to the no-progress deadline as of the last sample.
  auto left_ms = [&]() -> uint64_t {
    const uint64_t now = since_launch_ms();
    const uint64_t deadline = state.watch.since() + timeout_ms;
    return now < deadline ? deadline - now : 0;
  };
  auto enter = [&](WaitPhase phase) {
    state.phase = phase;
    state.phase_deadline_ms = since_launch_ms() + state.drain_budget_ms;
  };
  // The wait of the current grace or drain phase: in process one wait for the whole budget; on an
  // isolated platform slices of at most kAicpuWaitSliceMs, so the op-execute check runs between.
  auto phase_wait_ms = [&]() -> uint64_t {
    const uint64_t now = since_launch_ms();
    const uint64_t rest = state.phase_deadline_ms > now ? state.phase_deadline_ms - now : 0;
    return isolated ? std::min(std::max<uint64_t>(rest, 1), kAicpuWaitSliceMs) : rest;
  };
  auto finish = [&]() {
    // A platform that answered otherwise but reports its device dead: the device's end wins.
    if (isolated && !state.waited.is_ok() && !state.device_lost && state.op_timeout_core < 0 &&
        !state.killed_stuck &&
        platform_->device_fault().kind != platform::DeviceFault::Kind::None) {
      state.device_lost = true;
    }
    const RunClock::time_point t_finished = RunClock::now();
    prepared.report.device_wall_ns = ns_between(prepared.t_launch, t_finished);
    prepared.stage = LaunchStage::Finished;
    if (prepared.diag) prepared.diag->host_span("wait", prepared.t_launched, t_finished);
    if (!state.waited.is_ok() && state.waited.code() != StatusCode::StreamSyncTimeout &&
        !state.device_lost && state.op_timeout_core < 0) {
      throw Error(state.waited);
    }
    return true;
  };
  // A grace or drain wait timed out: an isolated platform waits on while its budget lasts, and
  // past it while a core still executes a kernel (its op-execute deadline ends the wait, with the
  // kernel named); then the launch is given up, and on an isolated platform the device is killed
  // so that no stuck thread keeps spinning.
  auto timed_out = [&]() {
    if (isolated && (since_launch_ms() < state.phase_deadline_ms || any_core_executing(state))) {
      return false;
    }
    if (isolated) kill_stuck_device(prepared);
    return finish();
  };

  // The op-execute check samples from the first slice on: a launch that ends within it (an empty
  // or short run) pays nothing for it, and a stuck kernel is seen at most one slice late.
  if (isolated) {
    const uint64_t now_ms = since_launch_ms();
    if (now_ms >= kAicpuWaitSliceMs && enforce_op_execute(prepared, now_ms)) return finish();
  }
  if (state.phase == WaitPhase::Aicpu) {
    // AICPU threads first, then the cores. Once the chip latched an error (a scheduler gave up on
    // a stuck task) the rest gets only a short grace instead of the whole stream-sync timeout: the
    // cores, and, when kernels run on the AICPU threads, the thread stuck in that kernel. So the
    // AICPU threads are waited for in slices, reading the chip's status between them.
    // Samples before every verdict: a stall is declared only after a look at the counters.
    if (state.watch.stalled(since_launch_ms(), [&] { return read_progress(prepared); })) {
      if (isolated) kill_stuck_device(prepared);
      return finish();
    }
    const uint64_t slice_ms = std::min(std::max<uint64_t>(left_ms(), 1), kAicpuWaitSliceMs);
    state.waited =
        wakeable ? platform_->wait_aicpu_wakeable(slice_ms) : platform_->wait_aicpu(slice_ms);
    if (device_gone(state.waited)) {
      state.device_lost = true;
      return finish();
    }
    if (state.waited.code() == StatusCode::StreamSyncTimeout) {
      if (peek_chip_code(prepared) == StatusCode::Ok) return false;  // still running
      state.chip_failed = true;
      state.drain_budget_ms = std::min(left_ms(), kFaultDrainGraceMs);
      enter(WaitPhase::AicpuGrace);
    } else if (state.waited.is_ok()) {
      state.drain_budget_ms = peek_chip_code(prepared) != StatusCode::Ok
                                  ? std::min(left_ms(), kFaultDrainGraceMs)
                                  : left_ms();
      enter(WaitPhase::Drain);
    } else {
      return finish();
    }
  }
  if (state.phase == WaitPhase::AicpuGrace) {
    state.waited = platform_->wait_aicpu(phase_wait_ms());
    if (device_gone(state.waited)) {
      state.device_lost = true;
      return finish();
    }
    if (state.waited.code() == StatusCode::StreamSyncTimeout) return timed_out();
    if (!state.waited.is_ok()) return finish();
    enter(WaitPhase::Drain);  // the same grace again, for the cores
  }
  state.waited = platform_->wait(phase_wait_ms());
  if (device_gone(state.waited)) {
    state.device_lost = true;
    return finish();
  }
  if (state.waited.code() == StatusCode::StreamSyncTimeout) return timed_out();
  return finish();
}

bool DeviceRunner::any_core_executing(const LaunchWait& state) const {
  for (uint32_t core = 0; core < std::min(geometry_.cores(), common::kMaxCores); ++core) {
    if (state.cores[core].executing != common::kTaskIdle) return true;
  }
  return false;
}

bool DeviceRunner::enforce_op_execute(PreparedLaunch& prepared, uint64_t now_ms) {
  LaunchWait& state = prepared.wait;
  const uint64_t limit_us = prepared.plan.op_execute_timeout_us;
  for (uint32_t core = 0; core < std::min(geometry_.cores(), common::kMaxCores); ++core) {
    const uint64_t cell = common::core_cell_addr(prepared.shared_addr, core);
    uint32_t executing = common::kTaskIdle;
    uint32_t starts = 0;
    if (!platform_->load_device_word(cell + offsetof(common::HandshakeCell, executing), &executing)
             .is_ok() ||
        !platform_->load_device_word(common::core_starts_addr(prepared.shared_addr, core), &starts)
             .is_ok()) {
      continue;
    }
    CoreWatch& watch = state.cores[core];
    if (executing == common::kTaskIdle || executing == common::kTaskExit) {
      watch.executing = common::kTaskIdle;
      continue;
    }
    // A new task, or the same slot's next kernel start: its time counts from now.
    if (executing != watch.executing || starts != watch.starts) {
      watch = CoreWatch{executing, starts, now_ms};
      continue;
    }
    if ((now_ms - watch.since_ms) * 1000 <= limit_us) continue;
    // Cold path from here: the run ends with OpExecuteTimeout (composed in collect).
    state.op_timeout_core = static_cast<int32_t>(core);
    const std::string reason = "op execute timeout: core " + std::to_string(core) +
                               " ran one kernel longer than " + std::to_string(limit_us) + " us";
    state.waited = Status(StatusCode::OpExecuteTimeout, reason);
    const Status killed = platform_->kill_device(reason);
    if (!killed.is_ok()) {
      CHIPRT_LOG_WARN("killing the device after an op execute timeout: %s",
                      killed.to_string().c_str());
    }
    return true;
  }
  return false;
}

void DeviceRunner::kill_stuck_device(PreparedLaunch& prepared) {
  prepared.wait.killed_stuck = true;
  const Status killed = platform_->kill_device("the host gave up on the launch of callable id " +
                                               std::to_string(prepared.callable_id) +
                                               " with chip threads still stuck");
  if (!killed.is_ok()) {
    CHIPRT_LOG_WARN("killing the stuck device: %s", killed.to_string().c_str());
  }
}

void DeviceRunner::wait(PreparedLaunch& prepared) {
  while (!poll(prepared)) {
  }
}

}  // namespace chiprt::host
