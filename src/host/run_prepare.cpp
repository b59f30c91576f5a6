// The prepare step's shared part: the checks and bind of every orchestrating call, the dispatch
// to the variant's preparation and the launch arguments both variants start from.
#include <atomic>
#include <memory>
#include <string>

#include "host/device_runner.h"
#include "host/diag_collector.h"
#include "host/run_steps.h"

namespace chiprt::host {

uint32_t next_run_number() {
  static std::atomic<uint32_t> last{0};
  uint32_t run = last.fetch_add(1, std::memory_order_relaxed) + 1;
  while (run == 0) run = last.fetch_add(1, std::memory_order_relaxed) + 1;
  return run;
}

const RegisteredCallable& DeviceRunner::prepare_orchestration(const char* what, int32_t callable_id,
                                                              const TaskArgs& args,
                                                              RuntimeVariant variant, uint32_t slot,
                                                              common::KernelTable* kernel_table) {
  if (Status status = callables_.check_registered(callable_id); !status.is_ok()) {
    throw Error(status.code(), std::string(what) + ": " + status.message());
  }
  // A registration serves both variants: the orchestration entry this variant needs is loaded on
  // its first use.
  throw_if(callables_.prepare_orchestration(callable_id, variant));
  const RegisteredCallable* callable = callables_.find(callable_id);
  check_signature(*callable, args);
  check_argument_buffers(args);
  throw_if(callables_.bind(callable_id, kernel_table_addr(slot), kernel_table));
  return *callable;
}

PreparedLaunch DeviceRunner::prepare(const RunPlan& plan, int32_t callable_id, const TaskArgs& args,
                                     RunClock::time_point t_entry, bool* started) {
  PreparedLaunch prepared;
  prepared.plan = plan;
  prepared.callable_id = callable_id;
  prepared.t_entry = t_entry;
  prepared.report.aicpu_threads = plan.shape.aicpu_threads;
  prepared.report.cores = plan.shape.cores;
  prepared.report.serial = plan.shape.serial;
  common::KernelTable kernel_table{};
  const RegisteredCallable& callable =
      prepare_orchestration("run", callable_id, args, plan.variant, plan.slot, &kernel_table);
  if (started != nullptr) *started = true;
  if (plan.diagnostics.any()) {
    prepared.diag = std::make_shared<DiagCollector>(memory_, *platform_, plan, geometry_, callable,
                                                    t_entry, diag_stream_records_);
  }
  try {
    if (plan.variant == RuntimeVariant::TensormapRingbuffer) {
      prepare_ring(prepared, callable, args, kernel_table);
    } else {
      prepare_host_graph(prepared, callable, args, kernel_table);
    }
  } catch (const Error& e) {
    fail_diagnostics(prepared, e);
  }
  return prepared;
}

common::ChipLaunchArgs& DeviceRunner::start_launch_args(PreparedLaunch& prepared,
                                                        const DeviceBuffer& shared_region,
                                                        uint64_t shared_bytes,
                                                        uint64_t launch_args_addr,
                                                        uint64_t phase_buffer_addr) const {
  const RunPlan& plan = prepared.plan;
  prepared.needs_launch = true;
  prepared.launch_args_addr = launch_args_addr;
  prepared.phase_buffer_addr = phase_buffer_addr;
  prepared.shared_addr = shared_region.addr;
  prepared.launch_args = std::make_unique<common::ChipLaunchArgs>();
  common::ChipLaunchArgs& launch_args = *prepared.launch_args;
  launch_args.variant = plan.variant;
  launch_args.serial = plan.shape.serial;
  launch_args.measure_kernel_time = plan.shape.measure_kernel_time;
  launch_args.kicks_run_kernels = geometry_.kicks_run_kernels;
  launch_args.aicpu_threads = plan.shape.aicpu_threads;
  launch_args.clusters = plan.shape.clusters;
  launch_args.device_clusters = geometry_.clusters;
  launch_args.shared_addr = shared_region.addr;
  launch_args.shared_size = shared_bytes;
  launch_args.kernel_table_addr = kernel_table_addr(plan.slot);
  launch_args.phase_buffer_addr = phase_buffer_addr;
  launch_args.services_addr = services_addr_;
  launch_args.scheduler_timeout_ms = plan.scheduler_timeout_ms;
  launch_args.clock_hz = geometry_.clock_hz;
  if (prepared.diag) launch_args.diag_addr = prepared.diag->region_addr();
  return launch_args;
}

void DeviceRunner::write_launch_args(const PreparedLaunch& prepared) {
  throw_if(memory_.copy_to_device(prepared.launch_args_addr, prepared.launch_args.get(),
                                  sizeof(common::ChipLaunchArgs)));
  // Reset every run so stamps of an earlier run never leak into this one's reduction.
  throw_if(memory_.memset(prepared.phase_buffer_addr, 0, kPhaseBufferBytes));
}

void DeviceRunner::fail_diagnostics(PreparedLaunch& prepared, const Error& error) {
  if (!prepared.diag) throw;
  std::shared_ptr<DiagCollector> diag = std::move(prepared.diag);
  diag->finish_chip(prepared.launch_args ? &prepared.launch_args->result : nullptr);
  std::string write_error;
  const std::string dir = diag->write(nullptr, &error, &write_error);
  if (!faulted_) diag->release_region();
  std::string message = error.message();
  message += dir.empty() ? "; the diagnostics directory could not be written: " + write_error
                         : "; diagnostics of the failed run: " + dir;
  throw Error(error.code(), message);
}

void DeviceRunner::drop_diagnostics(PreparedLaunch& prepared) noexcept {
  std::shared_ptr<DiagCollector> diag = std::move(prepared.diag);
  if (diag != nullptr && !faulted_) diag->release_region();
}

}  // namespace chiprt::host
