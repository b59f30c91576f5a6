// The scheduler's view of one launch: the layout of the shared-state region, the validated graph
// image, and the start-of-run initialisation done by AICPU thread 0.
//
// The region's layout is the protocol header common/shared_layout.h (the host sizes and clears
// the region with it). host_build_graph: thread 0 formats everything after the cleared head
// (common::kSharedClearedBytes) itself. Each ready queue is formatted with
// the capacity its own tasks need (pow2 >= the tasks of its shape), inside the slot laid out for
// task_count, so a graph of one shape touches one queue's worth of cells.
//
// Lifetime: RunView is a per-thread value (pointers into the image and the region) rebuilt by
// every AICPU thread; it owns nothing. validate_launch and init_shared_state run on thread 0 only,
// before the start barrier opens.
#pragma once

#include <atomic>
#include <cstdint>

#include "chiprt/task_args.h"
#include "common/chip_launch.h"
#include "common/chip_services.h"
#include "common/graph_image.h"
#include "common/handshake.h"
#include "common/shared_layout.h"
#include "common/task_state.h"
#include "scheduler/ready_queue.h"

namespace chiprt::scheduler {

// The protocol (common/) the scheduler shares with the host, under the names the room uses.
using common::kQueueAic;
using common::kQueueAiv;
using common::kQueueCount;
using common::kQueueDummy;
using common::kQueueMix;
using common::SchedulerGlobals;
using common::shared_layout;
using common::SharedLayout;
using common::TaskState;

// tensormap_ringbuffer state the scheduler reaches through RunView (layout and protocol in
// scheduler/ring_state_view.h, owned by the ring runtime).
struct RingView;

struct RunView {
  common::ChipLaunchArgs* args = nullptr;
  // Ring runs only (nullptr for host_build_graph): completion goes through ring_release.
  RingView* ring = nullptr;
  // Public TaskId of each task index for messages (host_build_graph: the image's task_ids, -1 for
  // a scope fence; ring: per slot, -1 for an unused one); nullptr = the index itself.
  const int64_t* public_ids = nullptr;
  // AICPU threads [first_scheduler, thread_count) schedule; below are orchestrators (ring: 1
  // when threaded, 0 in serial mode where thread 0 alternates both roles).
  uint32_t first_scheduler = 0;
  const common::ChipServices* services = nullptr;
  common::SharedPrefix* prefix = nullptr;
  SchedulerGlobals* globals = nullptr;
  ReadyQueue* queues[kQueueCount] = {};
  std::atomic<uint32_t>* fanin_remaining = nullptr;
  std::atomic<uint32_t>* parts_remaining = nullptr;
  std::atomic<uint32_t>* next_block = nullptr;
  std::atomic<uint8_t>* task_state = nullptr;
  const common::TaskRecord* tasks = nullptr;
  const uint32_t* fanout = nullptr;
  const int64_t* task_args = nullptr;
  const uint32_t* initial_ready = nullptr;
  uint32_t initial_ready_count = 0;
  // host_build_graph, thread 0 only (validate_launch): tasks per ready queue, which bound what
  // each queue holds at once and so its formatted capacity.
  uint32_t queue_tasks[kQueueCount] = {};
  const uint64_t* kernel_table = nullptr;
  uint32_t task_count = 0;
  uint32_t thread_count = 0;
  // Serial launch: one host thread runs every AICPU role and, inline, every core, so per-task
  // counters and ready queues are touched by that thread alone and need no locked
  // read-modify-writes (several per task otherwise). Never set for a threaded launch.
  bool exclusive = false;

  uint64_t now() const { return services->cycles(services->ctx); }
  const common::ParkWake& park_wake() const { return services->park_wake; }
  bool failed() const { return common::chip_error_latched(args->result); }
  // Tasks of the run so far are done and no more will come (ring: total stays UINT64_MAX until
  // the orchestration function returned).
  bool all_completed() const {
    return globals->completed.load(std::memory_order_seq_cst) >=
           globals->total.load(std::memory_order_seq_cst);
  }
  // The TaskId a message should name for task index `task`.
  int64_t public_id(uint32_t task) const {
    return public_ids != nullptr ? public_ids[task] : static_cast<int64_t>(task);
  }
  // A host_build_graph scope fence: internal, it has no TaskId to name.
  bool scope_fence(uint32_t task) const {
    return ring == nullptr && public_id(task) == common::kScopeFenceId;
  }
  // Decrements a per-task counter; returns the value before.
  uint32_t count_down(std::atomic<uint32_t>& counter) const {
    if (exclusive) {
      const uint32_t value = counter.load(std::memory_order_relaxed);
      counter.store(value - 1, std::memory_order_relaxed);
      return value;
    }
    return counter.fetch_sub(1, std::memory_order_acq_rel);
  }
  bool push(int queue, uint32_t task) const {
    return exclusive ? queues[queue]->push_exclusive(task) : queues[queue]->push(task);
  }
  bool pop(int queue, uint32_t* task) const {
    return exclusive ? queues[queue]->pop_exclusive(task) : queues[queue]->pop(task);
  }
  // Batched forms for threaded launches (one claim of the shared position per batch).
  bool push_batch(int queue, const uint32_t* tasks, uint32_t count) const {
    if (!exclusive) return queues[queue]->push_batch(tasks, count);
    for (uint32_t i = 0; i < count; ++i) {
      if (!queues[queue]->push_exclusive(tasks[i])) return false;
    }
    return true;
  }
  uint32_t pop_batch(int queue, uint32_t* tasks, uint32_t max) const {
    if (!exclusive) return queues[queue]->pop_batch(tasks, max);
    uint32_t count = 0;
    while (count < max && queues[queue]->pop_exclusive(&tasks[count])) ++count;
    return count;
  }
};

// Checks any thread can do before touching the region: launch magic, thread index/count, region
// address and minimum size. Latches InternalError and returns false on failure (when `args` is
// readable at all).
bool precheck_launch(common::ChipLaunchArgs* args, uint32_t thread_index, uint32_t thread_count);

// Thread 0: validates the launch arguments and the whole graph image (every offset, count, index
// and the fan-in counts against the fan-out lists) and fills `view`. Latches InternalError (or
// UnsupportedFeature) with a message naming the field on failure and returns false.
bool validate_launch(common::ChipLaunchArgs* args, uint32_t thread_count, RunView* view);

// Thread 0, after validate_launch: formats queues and counters, sets up the handshake cells of
// the run's cores, pushes the initial ready tasks (initial dummies complete at once).
void init_shared_state(const RunView& view);

// Points the view's prefix, globals, ready queues and per-task arrays into the region laid out by
// shared_layout(task_count) (both variants; the ring section follows it).
void bind_shared_region(common::ChipLaunchArgs* args, uint32_t task_count, RunView* view);

// Every other thread, after the barrier opened: rebuilds the view without re-validating.
void attach_view(common::ChipLaunchArgs* args, uint32_t thread_count, RunView* view);

// Cores of the run: AIC c for c < clusters, AIV device_clusters + 2c (+1).
inline uint32_t run_core_count(const common::ChipLaunchArgs& args) {
  return args.clusters * 3;
}
inline uint32_t run_core(const common::ChipLaunchArgs& args, uint32_t i) {
  return i < args.clusters ? i : args.device_clusters + (i - args.clusters);
}
inline uint32_t cluster_of(const common::ChipLaunchArgs& args, uint32_t core) {
  return core < args.device_clusters ? core : (core - args.device_clusters) / 2;
}
inline bool is_aic_core(const common::ChipLaunchArgs& args, uint32_t core) {
  return core < args.device_clusters;
}
// The scheduler thread owning `core`: cluster c belongs to first + c % (threads - first).
inline uint32_t owner_of(const common::ChipLaunchArgs& args, uint32_t core, uint32_t threads,
                         uint32_t first_scheduler = 0) {
  return first_scheduler + cluster_of(args, core) % (threads - first_scheduler);
}

}  // namespace chiprt::scheduler
