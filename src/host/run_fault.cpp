// The end of a run whose device was lost (isolated platforms): the kernel, orchestration function
// or runtime thread that crashed, the kernel that ran past the op execute timeout, and the one
// place their messages are composed. The launch's handshake cells are read back through the
// platform (the device's memory outlives its process) to name the core's task and block.
#include <csignal>
#include <cstddef>
#include <cstring>
#include <string>

#include "common/handshake.h"
#include "common/signal_text.h"
#include "host/device_runner.h"
#include "host/run_steps.h"

namespace chiprt::host {
namespace {

// "raised SIGSEGV (invalid memory reference) at address 0x10", "called exit(3)".
std::string fault_event(const platform::DeviceFault& fault) {
  switch (fault.kind) {
    case platform::DeviceFault::Kind::Signal: {
      std::string text = "raised " + common::signal_text(fault.signal);
      if (fault.has_fault_addr && (fault.signal == SIGSEGV || fault.signal == SIGBUS)) {
        text += " at address " + hex(fault.fault_addr);
      }
      return text;
    }
    case platform::DeviceFault::Kind::Exit:
      return "called exit(" + std::to_string(fault.exit_code) + ")";
    case platform::DeviceFault::Kind::Killed:
      return "was killed by the host (" + fault.reason + ")";
    case platform::DeviceFault::Kind::None:
      break;
  }
  return "stopped";
}

// Reads `core`'s handshake cell of the launch at `shared_addr`: true when it shows the core
// executing a dispatched task (`payload`, read in any case, then names it). A cell the chip never
// set up (the device died before it took the launch) is zeroed memory, whose payload (block_num 0)
// names no task.
bool read_executing_cell(platform::Platform& platform, uint64_t shared_addr, uint32_t core,
                         common::DispatchPayload* payload) {
  if (core >= common::kMaxCores) return false;
  uint32_t executing = common::kTaskIdle;
  const uint64_t cell = common::core_cell_addr(shared_addr, core);
  if (!platform
           .copy_from_device(payload, cell + offsetof(common::HandshakeCell, running_payload),
                             sizeof(*payload))
           .is_ok() ||
      !platform.load_device_word(cell + offsetof(common::HandshakeCell, executing), &executing)
           .is_ok() ||
      executing == common::kTaskIdle || executing == common::kTaskExit) {
    return false;
  }
  return payload->block_num >= 1 && payload->block_idx < payload->block_num;
}

}  // namespace

std::string DeviceRunner::describe_core_task(const PreparedLaunch& prepared, uint32_t core,
                                             const uint64_t* task, const int32_t* func_id) {
  common::DispatchPayload payload{};
  // The cell describes the task when the core was executing one and it is the task named.
  const bool cell_valid = read_executing_cell(*platform_, prepared.shared_addr, core, &payload) &&
                          (task == nullptr || payload.task_id == *task) &&
                          (func_id == nullptr || payload.func_id == *func_id);
  const uint64_t task_id = task != nullptr ? *task : payload.task_id;
  const int32_t kernel = func_id != nullptr ? *func_id : payload.func_id;

  std::string text =
      "task " + std::to_string(task_id) + " (kernel func_id " + std::to_string(kernel);
  const RegisteredCallable* callable = callables_.find(prepared.callable_id);
  if (callable != nullptr && kernel >= 0 && kernel < kMaxFuncId &&
      callable->kernels[static_cast<std::size_t>(kernel)].present) {
    const RegisteredKernel& registered = callable->kernels[static_cast<std::size_t>(kernel)];
    if (!registered.name.empty() && registered.name != registered.symbol) {
      text += " '" + registered.name + "'";
    }
    text += !registered.symbol.empty() ? ", symbol " + registered.symbol : ", function kernel";
  }
  text += ") on core " + std::to_string(core);
  if (core < geometry_.cores()) {
    const bool aic = platform::core_type_of(geometry_, core) == CoreType::AIC;
    const uint32_t cluster = aic ? core : (core - geometry_.clusters) / 2;
    text +=
        std::string(" (") + (aic ? "AIC" : "AIV") + ", cluster " + std::to_string(cluster) + ")";
  }
  if (cell_valid) {
    text +=
        ", block " + std::to_string(payload.block_idx) + " of " + std::to_string(payload.block_num);
  }
  return text;
}

void DeviceRunner::throw_device_fault(PreparedLaunch& prepared, const std::string& chip_detail) {
  const LaunchWait& wait = prepared.wait;
  const platform::DeviceFault fault = platform_->device_fault();
  const std::string callable = "callable id " + std::to_string(prepared.callable_id);
  const std::string pid = fault.pid > 0 ? " (pid " + std::to_string(fault.pid) + ")" : "";
  StatusCode code = StatusCode::KernelCrashed;
  std::string body;
  if (wait.op_timeout_core >= 0) {
    code = StatusCode::OpExecuteTimeout;
    body = callable + ": " +
           describe_core_task(prepared, static_cast<uint32_t>(wait.op_timeout_core)) +
           ", ran longer than the op execute timeout (" +
           std::to_string(prepared.plan.op_execute_timeout_us) +
           " us, CHIPRT_OP_EXECUTE_TIMEOUT_US); the device process" + pid + " was killed";
    if (!chip_detail.empty()) body += "; the scheduler watchdog reported first: " + chip_detail;
  } else if (fault.kind == platform::DeviceFault::Kind::None ||
             fault.kind == platform::DeviceFault::Kind::Killed) {
    // Killed by someone else than this wait, or a platform that reported the loss without a
    // record: its own summary is all there is.
    code = wait.waited.code() == StatusCode::KernelCrashed ? StatusCode::KernelCrashed
                                                           : StatusCode::DeviceFaulted;
    body = callable + ": the device was lost: " + wait.waited.message();
    // The platform's summary usually names the reason already.
    if (fault.kind == platform::DeviceFault::Kind::Killed &&
        wait.waited.message().find(fault.reason) == std::string::npos) {
      body += " (" + fault.reason + ")";
    }
  } else {
    std::string subject;
    std::string executing_then;
    switch (fault.context_known ? fault.role : common::RunRole::None) {
      case common::RunRole::Kernel:
        subject = describe_core_task(prepared, fault.unit, &fault.task_id, &fault.func_id) + ",";
        break;
      case common::RunRole::ChipOrchestration:
        subject = "the orchestration function of callable " + std::to_string(prepared.callable_id) +
                  " on AICPU thread " + std::to_string(fault.unit);
        break;
      case common::RunRole::AicpuThread:
        subject = "AICPU thread " + std::to_string(fault.unit) +
                  ", in the chip's runtime (outside the orchestration function and any kernel),";
        break;
      case common::RunRole::CoreExecutor:
        subject = "core executor thread " + std::to_string(fault.unit) + ", outside any kernel,";
        break;
      default: {
        // Nothing recorded which thread died: name every core that was executing a task.
        subject = "the device process";
        for (uint32_t core = 0; core < std::min(geometry_.cores(), common::kMaxCores); ++core) {
          common::DispatchPayload payload{};
          if (!read_executing_cell(*platform_, prepared.shared_addr, core, &payload)) continue;
          executing_then +=
              (executing_then.empty() ? "" : "; ") + describe_core_task(prepared, core);
        }
        executing_then = executing_then.empty()
                             ? "; it recorded no thread, and no core was executing a task"
                             : "; it recorded no thread; executing then: " + executing_then;
        break;
      }
    }
    body = callable + ": device crash: " + subject + " " + fault_event(fault) + executing_then +
           (fault.pid > 0 ? " (device process pid " + std::to_string(fault.pid) + ")" : "");
  }
  abandon_after_fault(body);
  throw Error(code, body + "; device memory is lost; call " + options_.facade.reset_call);
}

}  // namespace chiprt::host
