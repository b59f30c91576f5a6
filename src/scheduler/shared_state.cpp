#include "scheduler/shared_state.h"

#include <algorithm>
#include <cinttypes>
#include <iterator>

#include "chiprt/orchestration.h"

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

// Section [offset, offset + count * elem) lies inside `total`, offset 8-aligned, no overflow.
bool section_fits(uint64_t offset, uint64_t count, uint64_t elem, uint64_t total) {
  if (offset % 8 != 0 || offset > total) return false;
  if (count > (total - offset) / elem) return false;
  return true;
}

bool func_ok(int32_t func_id) {
  return func_id >= 0 && func_id < kMaxFuncId;
}

// Core type, kernels (MIX: each part -1 or valid, at least one), block count and predicate of a
// task that runs on cores.
bool validate_record_kernels(ChipLaunchArgs* args, uint32_t t, const TaskRecord& task) {
  if (task.core_type == static_cast<uint8_t>(CoreType::MIX)) {
    const int32_t parts[3] = {task.func_id, task.mix_aiv[0], task.mix_aiv[1]};
    for (int32_t f : parts) {
      if (f != -1 && !func_ok(f)) {
        CHIPRT_INVALID(args, "task %u: MIX part func_id %d is outside [0, %d) and not -1", t, f,
                       kMaxFuncId);
      }
    }
    if (parts[0] == -1 && parts[1] == -1 && parts[2] == -1) {
      CHIPRT_INVALID(args, "task %u: MIX task with every part -1", t);
    }
  } else if (task.core_type == static_cast<uint8_t>(CoreType::AIC) ||
             task.core_type == static_cast<uint8_t>(CoreType::AIV)) {
    if (!func_ok(task.func_id)) {
      CHIPRT_INVALID(args, "task %u: func_id %d is outside [0, %d)", t, task.func_id, kMaxFuncId);
    }
  } else {
    CHIPRT_INVALID(args, "task %u: core_type %u is not AIC (0), AIV (1) or MIX (2)", t,
                   task.core_type);
  }
  if (task.block_num < 1 || task.block_num > kMaxBlockNum) {
    CHIPRT_INVALID(args, "task %u: block_num %u is outside [1, %u]", t, task.block_num,
                   kMaxBlockNum);
  }
  if ((task.flags & common::kTaskFlagPredicated) != 0) {
    const uint32_t b = task.predicate_bytes;
    if (task.predicate_addr == 0 || (b != 1 && b != 2 && b != 4 && b != 8)) {
      CHIPRT_INVALID(args,
                     "task %u: predicate at 0x%" PRIx64
                     " with %u bytes (needs a non-null address and 1, 2, 4 or 8 bytes)",
                     t, task.predicate_addr, b);
    }
  }
  return true;
}

bool validate_image(ChipLaunchArgs* args, RunView* view) {
  if (args->image_addr == 0 || args->image_addr % 8 != 0) {
    CHIPRT_INVALID(args, "graph image address 0x%" PRIx64 " is null or not 8-byte aligned",
                   args->image_addr);
  }
  if (args->image_size < sizeof(GraphImageHeader)) {
    CHIPRT_INVALID(args, "graph image size %" PRIu64 " is smaller than its header (%zu bytes)",
                   args->image_size, sizeof(GraphImageHeader));
  }
  const auto* base = reinterpret_cast<const uint8_t*>(static_cast<uintptr_t>(args->image_addr));
  const auto* header = reinterpret_cast<const GraphImageHeader*>(base);
  if (header->magic != common::kGraphImageMagic) {
    CHIPRT_INVALID(args, "graph image magic 0x%08x is not 0x%08x: not a graph image", header->magic,
                   common::kGraphImageMagic);
  }
  if (header->version != common::kGraphImageVersion) {
    CHIPRT_INVALID(args, "graph image version %u is not the supported version %u", header->version,
                   common::kGraphImageVersion);
  }
  const uint64_t total = header->total_size;
  if (total > args->image_size || total < sizeof(GraphImageHeader)) {
    CHIPRT_INVALID(args,
                   "graph image total_size %" PRIu64
                   " is outside [header size %zu, image_size %" PRIu64 "]",
                   total, sizeof(GraphImageHeader), args->image_size);
  }
  if (header->task_count >= common::kMaxRunTasks) {
    CHIPRT_INVALID(args, "graph image task_count %u exceeds the limit %u", header->task_count,
                   common::kMaxRunTasks - 1);
  }
  if (!section_fits(header->tasks_offset, header->task_count, sizeof(TaskRecord), total)) {
    CHIPRT_INVALID(args,
                   "graph image tasks section (offset %" PRIu64 ", %u records) exceeds %" PRIu64
                   " bytes or is misaligned",
                   header->tasks_offset, header->task_count, total);
  }
  if (!section_fits(header->fanout_offset, header->fanout_count, sizeof(uint32_t), total)) {
    CHIPRT_INVALID(args,
                   "graph image fanout section (offset %" PRIu64 ", %" PRIu64
                   " entries) exceeds %" PRIu64 " bytes or is misaligned",
                   header->fanout_offset, header->fanout_count, total);
  }
  if (!section_fits(header->args_offset, header->args_count, sizeof(int64_t), total)) {
    CHIPRT_INVALID(args,
                   "graph image args section (offset %" PRIu64 ", %" PRIu64
                   " entries) exceeds %" PRIu64 " bytes or is misaligned",
                   header->args_offset, header->args_count, total);
  }
  if (!section_fits(header->initial_ready_offset, header->initial_ready_count, sizeof(uint32_t),
                    total)) {
    CHIPRT_INVALID(args,
                   "graph image initial_ready section (offset %" PRIu64
                   ", %u entries) exceeds %" PRIu64 " bytes or is misaligned",
                   header->initial_ready_offset, header->initial_ready_count, total);
  }
  view->task_count = header->task_count;
  view->tasks = reinterpret_cast<const TaskRecord*>(base + header->tasks_offset);
  view->fanout = reinterpret_cast<const uint32_t*>(base + header->fanout_offset);
  view->task_args = reinterpret_cast<const int64_t*>(base + header->args_offset);
  view->initial_ready = reinterpret_cast<const uint32_t*>(base + header->initial_ready_offset);
  view->initial_ready_count = header->initial_ready_count;

  const SharedLayout layout = shared_layout(header->task_count);
  if (args->shared_size < layout.total_bytes) {
    CHIPRT_INVALID(args,
                   "shared-state region has %" PRIu64 " bytes, %u tasks need %" PRIu64
                   " (size it with common::shared_state_bytes)",
                   args->shared_size, header->task_count, layout.total_bytes);
  }

  std::fill(std::begin(view->queue_tasks), std::end(view->queue_tasks), 0u);
  // A prevalidated image's per-task records are counted by format_prevalidated instead.
  if (args->image_prevalidated) return true;
  for (uint32_t t = 0; t < header->task_count; ++t) {
    const TaskRecord& task = view->tasks[t];
    const bool dummy = (task.flags & common::kTaskFlagDummy) != 0;
    if (!dummy && !validate_record_kernels(args, t, task)) return false;
    ++view->queue_tasks[queue_of(task)];
    if (task.arg_count > kMaxKernelArgs) {
      CHIPRT_INVALID(args, "task %u: arg_count %u exceeds the kernel argument limit %u", t,
                     task.arg_count, kMaxKernelArgs);
    }
    if (task.args_begin > header->args_count ||
        task.arg_count > header->args_count - task.args_begin) {
      CHIPRT_INVALID(args,
                     "task %u: args [%" PRIu64 ", +%u) exceed the image's %" PRIu64 " arguments", t,
                     task.args_begin, task.arg_count, header->args_count);
    }
    if (task.fanout_begin > header->fanout_count ||
        task.fanout_count > header->fanout_count - task.fanout_begin) {
      CHIPRT_INVALID(args, "task %u: fanout [%u, +%u) exceeds the image's %" PRIu64 " entries", t,
                     task.fanout_begin, task.fanout_count, header->fanout_count);
    }
  }
  return true;
}

// Counts incoming edges into fanin_remaining and compares with every TaskRecord::fanin_count, so
// each task reaches zero exactly once; checks initial_ready is exactly the fan-in-zero set.
bool validate_edges(ChipLaunchArgs* args, const RunView& view) {
  // The host does not zero the per-task arrays (see shared_cleared_bytes): start the counts and
  // the duplicate markers here.
  for (uint32_t t = 0; t < view.task_count; ++t) {
    view.fanin_remaining[t].store(0, std::memory_order_relaxed);
    view.task_state[t].store(0, std::memory_order_relaxed);
  }
  for (uint32_t t = 0; t < view.task_count; ++t) {
    const TaskRecord& task = view.tasks[t];
    for (uint32_t i = 0; i < task.fanout_count; ++i) {
      const uint32_t consumer = view.fanout[task.fanout_begin + i];
      if (consumer >= view.task_count) {
        CHIPRT_INVALID(args, "task %u: fanout entry %u names task %u, but the image has %u tasks",
                       t, i, consumer, view.task_count);
      }
      // Thread 0 alone touches the shared state before the start barrier opens, so a plain
      // load and store suffice (a locked read-modify-write per edge costs several times more).
      std::atomic<uint32_t>& counter = view.fanin_remaining[consumer];
      counter.store(counter.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    }
  }
  uint32_t sources = 0;
  for (uint32_t t = 0; t < view.task_count; ++t) {
    const uint32_t counted = view.fanin_remaining[t].load(std::memory_order_relaxed);
    if (counted != view.tasks[t].fanin_count) {
      CHIPRT_INVALID(args, "task %u: fanin_count %u, but %u fanout entries name it", t,
                     view.tasks[t].fanin_count, counted);
    }
    if (counted == 0) ++sources;
  }
  if (sources != view.initial_ready_count) {
    CHIPRT_INVALID(args, "graph image lists %u initial_ready tasks, but %u tasks have fanin 0",
                   view.initial_ready_count, sources);
  }
  for (uint32_t i = 0; i < view.initial_ready_count; ++i) {
    const uint32_t t = view.initial_ready[i];
    if (t >= view.task_count || view.tasks[t].fanin_count != 0) {
      CHIPRT_INVALID(args, "initial_ready[%u] = %u is not a task with fanin 0", i, t);
    }
    // The state byte doubles as a duplicate detector; init_shared_state resets it.
    if (view.task_state[t].load(std::memory_order_relaxed) != 0) {
      CHIPRT_INVALID(args, "initial_ready lists task %u twice", t);
    }
    view.task_state[t].store(1, std::memory_order_relaxed);
  }
  return true;
}

// The per-task state validate_image and validate_edges leave behind, for an image that passed
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
  if (!validate_image(args, view)) return false;
  bind_shared_region(args, view->task_count, view);
  if (args->image_prevalidated) {
    format_prevalidated(view);
    return true;
  }
  return validate_edges(args, *view);
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
  // validate_edges left fanin_remaining == fanin_count; reset the duplicate markers
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
