// The prepare step of a tensormap_ringbuffer run: commit the rings' regions of the bank, copy the
// kernel table, the run's arguments and its user data for the chip-side orchestrator, write the
// launch arguments.
#include <memory>
#include <string>

#include "common/ring_layout.h"
#include "common/task_args_wire.h"
#include "host/device_runner.h"
#include "host/run_steps.h"

namespace chiprt::host {

void DeviceRunner::prepare_ring(PreparedLaunch& prepared, const RegisteredCallable& callable,
                                const TaskArgs& args, const common::KernelTable& kernel_table) {
  const RunPlan& plan = prepared.plan;
  last_ring_sizes_ = plan.rings;
  const common::RingLayout layout = common::ring_layout(plan.rings.sizes);
  const uint64_t shared_bytes = layout.total_bytes;
  if (shared_bytes == UINT64_MAX) {
    // resolve_ring_sizes applies the same rules as the layout, so this is a broken invariant.
    throw Error(StatusCode::InternalError,
                "the ring layout (common/ring_layout.h) rejects ring sizes the host resolved (" +
                    std::to_string(plan.rings.total_slots()) + " slots in all)");
  }

  const uint32_t bank = plan.bank;
  // The runtime-image region is left as committed (a later host_build_graph run reuses it); it is
  // named as committed, for the message of a failed commit.
  const ArenaSizes committed = arenas_.committed_sizes(bank);
  throw_if(arenas_.setup(bank, {plan.heap_bytes, shared_bytes, committed.runtime_image},
                         arena_regions(ArenaRegion::OutputHeap, ArenaRegion::SharedState)));
  const DeviceBuffer heap_region = arenas_.region(bank, ArenaRegion::OutputHeap);
  prepared.report.rings = plan.rings.used();
  prepared.report.output_heap_committed_bytes = arenas_.committed_sizes(bank).output_heap;
  const DeviceBuffer shared_region = arenas_.region(bank, ArenaRegion::SharedState);
  throw_if(memory_.memset(shared_region.addr, 0, layout.cleared_bytes));

  // Staging of one slot: launch args | phase buffer | kernel table | orchestration arguments |
  // user data. The orchestrator runs on the chip, so the user data it reads is this device copy
  // (kDeviceAlign-aligned, more than CallConfig::kUserDataAlign), never the caller's host bytes.
  static_assert(kDeviceAlign % CallConfig::kUserDataAlign == 0);
  const uint64_t user_data_bytes = plan.user_data.size();
  DeviceBuffer staging;
  throw_if(staging_.acquire(plan.slot,
                            kLaunchArgsBytes + kPhaseBufferBytes + kKernelInfoBytes +
                                kOrchestrationArgsBytes + round_up(user_data_bytes, kDeviceAlign),
                            &staging));
  const uint64_t launch_args_addr = staging.addr;
  const uint64_t phase_buffer_addr = launch_args_addr + kLaunchArgsBytes;
  const uint64_t kernel_info_addr = phase_buffer_addr + kPhaseBufferBytes;
  const uint64_t orchestration_args_addr = kernel_info_addr + kKernelInfoBytes;
  const uint64_t user_data_addr = orchestration_args_addr + kOrchestrationArgsBytes;
  throw_if(
      memory_.copy_to_device(kernel_info_addr, kernel_table.data(), sizeof(common::KernelTable)));
  auto wire = std::make_unique<common::TaskArgsWire>();
  common::encode_task_args(args, wire.get());
  throw_if(memory_.copy_to_device(orchestration_args_addr, wire.get(), sizeof(*wire)));
  if (user_data_bytes != 0) {
    throw_if(memory_.copy_to_device(user_data_addr, plan.user_data.data(), user_data_bytes));
  }
  common::ChipLaunchArgs& launch_args =
      start_launch_args(prepared, shared_region, shared_bytes, launch_args_addr, phase_buffer_addr);
  launch_args.orchestration_entry = callable.device_orchestration;
  launch_args.orchestration_args_addr = orchestration_args_addr;
  launch_args.user_data_addr = user_data_bytes != 0 ? user_data_addr : 0;
  launch_args.user_data_bytes = user_data_bytes;
  launch_args.run = next_run_number();
  launch_args.kernel_info_addr = kernel_info_addr;
  // Exactly the planned heap, even when the committed region is larger (reused while big
  // enough): the per-depth heaps are carved from it as sized.
  launch_args.heap_addr = heap_region.addr;
  launch_args.heap_size = plan.heap_bytes;
  launch_args.rings = plan.rings.sizes;
  write_launch_args(prepared);
}

}  // namespace chiprt::host
