#include "scheduler/chip_entry.h"

#include <algorithm>
#include <atomic>
#include <cinttypes>

#include "common/handshake.h"
#include "scheduler/dispatch_loop.h"
#include "scheduler/ring_hooks.h"
#include "scheduler/shared_state.h"

namespace chiprt::scheduler {
namespace {

using common::ChipLaunchArgs;
using common::latch_chip_error;

}  // namespace

void aicpu_entry(void* launch_args, uint32_t thread_index, uint32_t thread_count) {
  auto* args = static_cast<ChipLaunchArgs*>(launch_args);
  if (!precheck_launch(args, thread_index, thread_count)) return;
  common::shared_prefix(*args)->threads_accepted.fetch_add(1, std::memory_order_relaxed);
  if (args->variant == RuntimeVariant::TensormapRingbuffer) {
    ring_aicpu_entry(args, thread_index, thread_count);
    return;
  }
  const auto& services =
      *reinterpret_cast<const common::ChipServices*>(static_cast<uintptr_t>(args->services_addr));
  const uint64_t entry = services.cycles(services.ctx);
  PhaseStamps stamps(*args, thread_index);
  common::SharedPrefix* prefix = common::shared_prefix(*args);
  RunView view;
  if (thread_index == 0) {
    const uint64_t load_start = services.cycles(services.ctx);
    bool ok = validate_launch(args, thread_count, &view);
    if (ok) init_shared_state(view);
    ok = ok && !common::chip_error_latched(args->result);
    const uint64_t ready = services.cycles(services.ctx);
    stamps.stamp(Phase::Load, load_start, ready);
    stamps.stamp(Phase::Preamble, entry, ready);
    prefix->init_state.store(ok ? common::kInitDone : common::kInitFailed,
                             std::memory_order_release);
    services.park_wake.wake(&prefix->init_state);
    if (!ok) {
      stamps.stamp(Phase::RunWall, entry, services.cycles(services.ctx));
      return;
    }
  } else {
    if (!wait_for_start(args, thread_index)) {
      stamps.stamp(Phase::RunWall, entry, services.cycles(services.ctx));
      return;
    }
    attach_view(args, thread_count, &view);
  }
  SchedulerThread thread(view, thread_index);
  thread.run(&stamps);
  publish_tasks_completed(args, view.globals->completed.load(std::memory_order_acquire));
  stamps.stamp(Phase::RunWall, entry, services.cycles(services.ctx));
}

}  // namespace chiprt::scheduler
