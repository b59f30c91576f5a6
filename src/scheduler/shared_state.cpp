#include "scheduler/shared_state.h"

#include <algorithm>
#include <cinttypes>
#include <iterator>

#include "chiprt/orchestration.h"

#include "common/graph_image_validate.h"
#include "scheduler/task_engine.h"

namespace chiprt::scheduler {
namespace {

using common::ChipLaunchArgs;
using common::GraphImageHeader;
using common::kInitDone;
using common::kTaskIdle;
using common::latch_chip_error;
using common::TaskRecord;

#define CHIPRT_INVALID(args, ...)                                              \
  do {                                                                         \
    latch_chip_error(&(args)->result, StatusCode::InternalError, __VA_ARGS__); \
    return false;                                                              \
  } while (0)

// The image's verdict as the run's error (the message the host would give for the same image).
[[gnu::cold]] bool latch_image_verdict(ChipLaunchArgs* args, const common::ImageVerdict& verdict) {
  char message[common::kResultDetailBytes];
  common::format_image_verdict(verdict, message, sizeof(message));
  CHIPRT_INVALID(args, "%s", message);
}

// The header (common/graph_image_validate.h, replays included) and the shared region's size; fills
// the view's image pointers.
bool validate_image(ChipLaunchArgs* args, RunView* view, GraphImageHeader* header) {
  const auto* base = reinterpret_cast<const uint8_t*>(static_cast<uintptr_t>(args->image_addr));
  const common::ImageVerdict verdict =
      common::check_graph_image_header(base, args->image_size, header);
  if (!verdict.ok()) return latch_image_verdict(args, verdict);
  view->task_count = header->task_count;
  view->tasks = reinterpret_cast<const TaskRecord*>(base + header->tasks_offset);
  view->fanout = reinterpret_cast<const uint32_t*>(base + header->fanout_offset);
  view->task_args = reinterpret_cast<const int64_t*>(base + header->args_offset);
  view->initial_ready = reinterpret_cast<const uint32_t*>(base + header->initial_ready_offset);
  view->initial_ready_count = header->initial_ready_count;
  view->public_ids = reinterpret_cast<const int64_t*>(base + header->task_ids_offset);

  const SharedLayout layout = shared_layout(header->task_count);
  if (args->shared_size < layout.total_bytes) {
    CHIPRT_INVALID(args,
                   "shared-state region has %" PRIu64 " bytes, %u tasks need %" PRIu64
                   " (size it with common::shared_state_bytes)",
                   args->shared_size, header->task_count, layout.total_bytes);
  }

  std::fill(std::begin(view->queue_tasks), std::end(view->queue_tasks), 0u);
  return true;
}

// Every record and edge (common/graph_image_validate.h); leaves fanin_remaining == fanin_count and
// the tasks per ready queue counted.
bool validate_tasks(ChipLaunchArgs* args, RunView* view, const GraphImageHeader& header) {
  const auto* base = reinterpret_cast<const uint8_t*>(static_cast<uintptr_t>(args->image_addr));
  const common::ImageVerdict verdict = common::check_graph_image_tasks(
      base, header, view->fanin_remaining,
      [view](uint32_t, const TaskRecord& task) { ++view->queue_tasks[queue_of(task)]; });
  return verdict.ok() || latch_image_verdict(args, verdict);
}

// The per-task state validate_tasks leaves behind, for an image that passed
// them before (ChipLaunchArgs::image_prevalidated): tasks per ready queue, fan-in counts, Pending
// states. One pass, no checks.
void format_prevalidated(RunView* view) {
  for (uint32_t t = 0; t < view->task_count; ++t) {
    const TaskRecord& task = view->tasks[t];
    ++view->queue_tasks[queue_of(task)];
    view->fanin_remaining[t].store(task.fanin_count, std::memory_order_relaxed);
    view->task_state[t].store(static_cast<uint8_t>(TaskState::Pending), std::memory_order_relaxed);
  }
}

}  // namespace

void bind_shared_region(ChipLaunchArgs* args, uint32_t task_count, RunView* view) {
  auto* region = reinterpret_cast<uint8_t*>(static_cast<uintptr_t>(args->shared_addr));
  const SharedLayout layout = shared_layout(task_count);
  view->prefix = common::shared_prefix(*args);
  view->globals = reinterpret_cast<SchedulerGlobals*>(region + layout.globals_offset);
  for (int q = 0; q < kQueueCount; ++q) {
    view->queues[q] = ReadyQueue::at(region + layout.queue_offset[q]);
  }
  view->fanin_remaining = reinterpret_cast<std::atomic<uint32_t>*>(region + layout.fanin_offset);
  view->parts_remaining = reinterpret_cast<std::atomic<uint32_t>*>(region + layout.parts_offset);
  view->next_block = reinterpret_cast<std::atomic<uint32_t>*>(region + layout.next_block_offset);
  view->task_state = reinterpret_cast<std::atomic<uint8_t>*>(region + layout.state_offset);
}

bool precheck_launch(ChipLaunchArgs* args, uint32_t thread_index, uint32_t thread_count) {
  if (args == nullptr || args->magic != common::kLaunchMagic) return false;
  if (thread_count == 0 || thread_count > common::kMaxAicpuThreads) {
    CHIPRT_INVALID(args, "AICPU thread count %u is outside [1, %u]", thread_count,
                   common::kMaxAicpuThreads);
  }
  if (args->aicpu_threads != thread_count) {
    CHIPRT_INVALID(args,
                   "ChipLaunchArgs::aicpu_threads is %u but the launch started %u AICPU threads",
                   args->aicpu_threads, thread_count);
  }
  if (thread_index >= thread_count) {
    CHIPRT_INVALID(args, "AICPU thread index %u is not below the thread count %u", thread_index,
                   thread_count);
  }
  if (args->shared_addr == 0 || args->shared_addr % 64 != 0 ||
      args->shared_size < sizeof(common::SharedPrefix)) {
    CHIPRT_INVALID(args,
                   "shared-state region (address 0x%" PRIx64 ", %" PRIu64
                   " bytes) is null, not 64-byte aligned or smaller than its %zu-byte prefix",
                   args->shared_addr, args->shared_size, sizeof(common::SharedPrefix));
  }
  if (args->services_addr == 0) CHIPRT_INVALID(args, "ChipLaunchArgs::services_addr is null");
  const auto* services =
      reinterpret_cast<const common::ChipServices*>(static_cast<uintptr_t>(args->services_addr));
  if (!services->complete()) {
    CHIPRT_INVALID(args, "ChipServices at 0x%" PRIx64 " lacks kick_core, cycles or park_wake",
                   args->services_addr);
  }
  return true;
}

bool validate_launch(ChipLaunchArgs* args, uint32_t thread_count, RunView* view) {
  view->args = args;
  view->thread_count = thread_count;
  view->exclusive = args->serial && thread_count == 1;
  view->services =
      reinterpret_cast<const common::ChipServices*>(static_cast<uintptr_t>(args->services_addr));
  if (args->variant != RuntimeVariant::HostBuildGraph) {
    latch_chip_error(&args->result, StatusCode::UnsupportedFeature,
                     "runtime variant %u: the graph-image scheduler runs host_build_graph (1); "
                     "tensormap_ringbuffer (2) launches go to the ring entry",
                     static_cast<unsigned>(args->variant));
    return false;
  }
  if (args->serial && thread_count != 1) {
    CHIPRT_INVALID(args, "serial launch with %u AICPU threads (serial mode needs exactly 1)",
                   thread_count);
  }
  if (args->clock_hz == 0) CHIPRT_INVALID(args, "ChipLaunchArgs::clock_hz is 0");
  if (args->device_clusters == 0 || args->device_clusters * 3 > common::kMaxCores) {
    CHIPRT_INVALID(args, "device_clusters %u is outside [1, %u]", args->device_clusters,
                   common::kMaxCores / 3);
  }
  if (args->clusters == 0 || args->clusters > args->device_clusters) {
    CHIPRT_INVALID(args, "clusters %u is outside [1, device_clusters %u]", args->clusters,
                   args->device_clusters);
  }
  if (args->kernel_table_addr == 0)
    CHIPRT_INVALID(args, "ChipLaunchArgs::kernel_table_addr is null");
  view->kernel_table =
      reinterpret_cast<const uint64_t*>(static_cast<uintptr_t>(args->kernel_table_addr));
  GraphImageHeader header;
  if (!validate_image(args, view, &header)) return false;
  bind_shared_region(args, view->task_count, view);
  if (args->image_prevalidated) {
    format_prevalidated(view);
    return true;
  }
  return validate_tasks(args, view, header);
}

void attach_view(ChipLaunchArgs* args, uint32_t thread_count, RunView* view) {
  view->args = args;
  view->thread_count = thread_count;
  view->exclusive = args->serial && thread_count == 1;
  view->services =
      reinterpret_cast<const common::ChipServices*>(static_cast<uintptr_t>(args->services_addr));
  view->kernel_table =
      reinterpret_cast<const uint64_t*>(static_cast<uintptr_t>(args->kernel_table_addr));
  const auto* base = reinterpret_cast<const uint8_t*>(static_cast<uintptr_t>(args->image_addr));
  const auto* header = reinterpret_cast<const GraphImageHeader*>(base);
  view->task_count = header->task_count;
  view->tasks = reinterpret_cast<const TaskRecord*>(base + header->tasks_offset);
  view->fanout = reinterpret_cast<const uint32_t*>(base + header->fanout_offset);
  view->task_args = reinterpret_cast<const int64_t*>(base + header->args_offset);
  view->initial_ready = reinterpret_cast<const uint32_t*>(base + header->initial_ready_offset);
  view->initial_ready_count = header->initial_ready_count;
  view->public_ids = reinterpret_cast<const int64_t*>(base + header->task_ids_offset);
  bind_shared_region(args, view->task_count, view);
}

void init_shared_state(const RunView& view) {
  const SharedLayout layout = shared_layout(view.task_count);
  auto* region = reinterpret_cast<uint8_t*>(static_cast<uintptr_t>(view.args->shared_addr));
  for (int q = 0; q < kQueueCount; ++q) {
    // A task is in its queue at most once at a time, so its shape's task count bounds the queue.
    ReadyQueue::init(region + layout.queue_offset[q],
                     ReadyQueue::capacity_for(view.queue_tasks[q]));
  }
  view.globals->completed.store(0, std::memory_order_relaxed);
  view.globals->published.store(view.task_count, std::memory_order_relaxed);
  view.globals->total.store(view.task_count, std::memory_order_relaxed);
  // validate_tasks left fanin_remaining == fanin_count; the states are the host's garbage
  // (format_prevalidated already set every state Pending).
  if (!view.args->image_prevalidated) {
    for (uint32_t t = 0; t < view.task_count; ++t) {
      view.task_state[t].store(static_cast<uint8_t>(TaskState::Pending), std::memory_order_relaxed);
    }
  }
  const common::ChipLaunchArgs& args = *view.args;
  for (uint32_t core = 0; core < common::kMaxCores; ++core) {
    common::HandshakeCell& cell = view.prefix->cells[core];
    cell.running.store(kTaskIdle, std::memory_order_relaxed);
    cell.pending.store(kTaskIdle, std::memory_order_relaxed);
    // Core-written, but a core writes it only once opened (after this barrier); zero would read
    // as "executing task 0" to the watchdog.
    cell.executing.store(kTaskIdle, std::memory_order_relaxed);
    cell.owner = 0;
  }
  for (uint32_t i = 0; i < run_core_count(args); ++i) {
    const uint32_t core = run_core(args, i);
    view.prefix->cells[core].owner = owner_of(args, core, view.thread_count, view.first_scheduler);
  }
  uint32_t pushed = 0;
  for (uint32_t i = 0; i < view.initial_ready_count; ++i) {
    make_ready(view, view.initial_ready[i], &pushed);
  }
  drain_dummies(view, &pushed);
}

}  // namespace chiprt::scheduler
