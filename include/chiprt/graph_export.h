// GraphExport: the task graph a callable's orchestration builds, as host data.
//
// Worker::export_graph runs the orchestration on the host exactly as a host_build_graph run
// would (same argument checks, same dependency inference from tensor regions, same runtime
// output allocation) and returns the graph instead of launching it: every task in submission
// order with its kernel, its resolved kernel arguments and its consumers. The graph also holds
// host_build_graph's scope fences, the dependency-only tasks it adds when a scope that owned
// runtime outputs ends (they order the reuse of that memory): they stay nodes, marked scope_fence
// and without a TaskId, rather than being folded into edges (a fence between N users of a scope
// and M later tasks would become N x M edges). An executor runs them like any dummy task. Uses:
// looking at the dependencies chiprt inferred and why (consumer_kinds; the diagnostics' deps.json
// holds the same edges for a run on either variant), to_dot, and executing the very same
// graph on another runtime (`chiprt bench` runs the real-kernel rows' peers from it).
//
// Lifetime: a plain value, safe to copy and to read from any thread. The device addresses inside
// (tensor arguments, runtime outputs, kernel entries) are those of the Worker that exported it:
// runtime outputs live in that Worker's output heap and stay valid only until its next run or
// export; kernel entries stay valid while the callable is registered.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "chiprt/kernel.h"
#include "chiprt/task_args.h"
#include "chiprt/types.h"

namespace chiprt {

// Why a task waits for another, as Worker::export_graph (GraphExport::consumer_kinds) and the
// diagnostics' deps.json report each edge: a set of these bits, since one edge can have several
// reasons (an InOut after the task that wrote the region reads and writes after it: RAW and WAW;
// a task may also read one region another wrote and overwrite another it read). The first four
// are the user's dependencies, the same on both runtime variants; the last two are
// host_build_graph's internal ordering around its scope fences.
using DependencyKinds = uint8_t;
// Read after write: the task reads (In, InOut, the predicate) a region the producer wrote.
inline constexpr DependencyKinds kDependencyRaw = 1u << 0;
// Write after write: the task writes (InOut, OutputExisting) a region the producer wrote.
inline constexpr DependencyKinds kDependencyWaw = 1u << 1;
// Write after read: the task writes a region the producer read.
inline constexpr DependencyKinds kDependencyWar = 1u << 2;
// TaskArgs::after named the producer.
inline constexpr DependencyKinds kDependencyAfter = 1u << 3;
// host_build_graph: a task that used a scope's runtime outputs, before the fence of that scope.
inline constexpr DependencyKinds kDependencyScopeFence = 1u << 4;
// host_build_graph: a scope fence, before a task whose outputs reuse the memory it released.
inline constexpr DependencyKinds kDependencyHeapReuse = 1u << 5;
inline constexpr DependencyKinds kUserDependencies =
    kDependencyRaw | kDependencyWaw | kDependencyWar | kDependencyAfter;
inline constexpr DependencyKinds kInternalDependencies =
    kDependencyScopeFence | kDependencyHeapReuse;
inline constexpr int kDependencyKindCount = 6;
// Stable name of bit `bit` (kinds 1 << bit): "RAW", "WAW", "WAR", "after", "scope_fence",
// "heap_reuse"; "invalid" outside [0, kDependencyKindCount).
constexpr std::string_view dependency_kind_name(int bit) noexcept {
  constexpr std::string_view kNames[kDependencyKindCount] = {"RAW",   "WAW",         "WAR",
                                                             "after", "scope_fence", "heap_reuse"};
  return bit >= 0 && bit < kDependencyKindCount ? kNames[bit] : "invalid";
}

struct ExportedTask {
  // The TaskId submit / submit_dummy / allocate returned for this task (0.. in submission order,
  // as RunReport and every message name it); -1 for a scope fence, which has none.
  int64_t task_id = -1;
  // An internal dependency-only task of host_build_graph (see above); dummy is true as well.
  bool scope_fence = false;
  // The kernel's func_id; -1 for a dependency-only task (scope fences, submit_dummy, allocate),
  // which runs no kernel and only orders its producers before its consumers.
  int32_t func_id = -1;
  CoreType core_type = CoreType::AIV;
  // MIX tasks: the func_ids of the two AIV parts (-1: that core gets no work); {-1, -1} else.
  std::array<int32_t, 2> mix_aiv{-1, -1};
  uint32_t block_num = 1;  // SPMD blocks (>= 1); each block is one kernel call per part
  bool dummy = false;      // dependency-only (func_id == -1)
  // The task has a predicate (TaskArgs::predicate): its kernel runs only when the first
  // predicate_bytes at predicate_addr are not all zero when it is dispatched.
  bool predicated = false;
  uint32_t predicate_bytes = 0;
  uint64_t predicate_addr = 0;
  // A skipped predicated task's runtime outputs (Out) read as zeros: an executor that skips it
  // must zero [skip_fill_addr, skip_fill_addr + skip_fill_bytes) (its packed output range, whole
  // 64-byte granules) before it releases the consumers, as the chip's dispatcher does. 0 bytes:
  // nothing to fill (no predicate, or no runtime outputs). Its inout / output_existing tensors
  // keep their contents.
  uint64_t skip_fill_addr = 0;
  uint64_t skip_fill_bytes = 0;
  // Device addresses of the kernel entries, as the chip calls them (on the simulated chip these
  // are host function addresses of type void(int64_t*)): the task's kernel (AIC part for MIX)
  // and the MIX AIV parts; 0 where there is no kernel.
  uint64_t kernel_addr = 0;
  std::array<uint64_t, 2> mix_aiv_kernel_addr{0, 0};
  // The kernel's arguments as the kernel receives them (tensor data addresses, then scalars):
  // GraphExport::args [args_begin, args_begin + arg_count), the first tensor_count of them
  // tensors. They lie inside the task's argument block (chiprt/kernel.h): the task context in the
  // kernel::kTaskContextWords words before args_begin (views_addr 0, block_idx 0) and the views
  // (kernel::TensorView, tensor_count of them) right after the arguments.
  // GraphExport::kernel_args builds what a core passes the kernel for one block.
  uint64_t args_begin = 0;
  uint32_t arg_count = 0;
  uint32_t tensor_count = 0;
  // Tasks that wait for this one: GraphExport::consumers [consumers_begin, + consumer_count).
  uint64_t consumers_begin = 0;
  uint32_t consumer_count = 0;
  uint32_t producer_count = 0;  // tasks this one waits for
};

// The shape of an exported graph: how much parallelism its dependencies leave. A task's level is
// 1 + the largest level of its producers (sources: 1); `depth` is the largest level (the tasks on
// the longest dependency chain, dependency-only tasks included) and `max_width` the most tasks
// sharing one level.
struct GraphShape {
  uint64_t tasks = 0;
  uint64_t kernel_tasks = 0;
  uint64_t dependency_only_tasks = 0;  // dummy tasks (scope fences, submit_dummy, allocate)
  uint64_t scope_fences = 0;           // of those, the internal scope fences (no TaskId)
  uint64_t edges = 0;
  uint64_t sources = 0;  // tasks with no producer
  uint64_t sinks = 0;    // tasks with no consumer
  uint64_t depth = 0;
  uint64_t max_width = 0;
};

struct GraphExport {
  // Submission order, scope fences where their scope ended; a task's index (its position) is what
  // consumers name, its TaskId is task_id (equal to the index only while no fence precedes it).
  std::vector<ExportedTask> tasks;
  std::vector<int64_t> args;
  std::vector<uint32_t> consumers;  // task indices; every consumer comes after its producer
  // Why each consumer waits (DependencyKinds above), parallel to `consumers`: RAW, WAW, WAR and
  // after() on the edges between the user's tasks, scope_fence and heap_reuse on those of the scope
  // fences (never both). Filled by Worker::export_graph; a graph built by hand may leave it empty.
  std::vector<DependencyKinds> consumer_kinds;
  // The orchestration read or wrote tensor data on the host while building (get_tensor_data /
  // set_tensor_data): the graph is valid for the data it saw then.
  bool accessed_tensor_data = false;

  // Words of storage GraphExport::kernel_args needs: the task context and the most arguments.
  static constexpr std::size_t kKernelArgsWords =
      kernel::kTaskContextWords + kMaxTaskTensors + kMaxTaskScalars;

  std::span<const int64_t> args_of(const ExportedTask& task) const noexcept {
    return {args.data() + task.args_begin, task.arg_count};
  }
  // The views of the task's tensor arguments (in `args`; valid while this GraphExport lives).
  const kernel::TensorView* views_of(const ExportedTask& task) const noexcept {
    return reinterpret_cast<const kernel::TensorView*>(args.data() + task.args_begin +
                                                       task.arg_count);
  }
  // What a core passes the kernel of `task` for SPMD block `block`: writes the task context and
  // the arguments into `storage` (kKernelArgsWords words) and returns the `args` pointer to call
  // the kernel with. The context's views_addr points at views_of(task), so `storage` is valid
  // while this GraphExport lives and is not moved. A kernel may overwrite its arguments: build
  // them again for each call. The task must have passed the graph's checks (arg_count at most
  // kMaxTaskTensors + kMaxTaskScalars, its block inside `args`).
  int64_t* kernel_args(const ExportedTask& task, uint32_t block, int64_t* storage) const noexcept;
  std::span<const uint32_t> consumers_of(const ExportedTask& task) const noexcept {
    return {consumers.data() + task.consumers_begin, task.consumer_count};
  }
  // The kinds of the edges consumers_of(task) lists, in the same order (empty when
  // consumer_kinds is).
  std::span<const DependencyKinds> kinds_of(const ExportedTask& task) const noexcept {
    if (consumer_kinds.size() != consumers.size()) return {};
    return {consumer_kinds.data() + task.consumers_begin, task.consumer_count};
  }
  uint64_t edge_count() const noexcept { return consumers.size(); }
  // Counts, depth and widest level (see GraphShape); linear in tasks + edges.
  GraphShape shape() const;
  // The graph in Graphviz DOT: one node per task (named by its index) labelled with its TaskId
  // and func_id, or "fence" for a scope fence (dummy tasks dashed), one edge per dependency.
  std::string to_dot() const;
};

}  // namespace chiprt
