#include "kernel_graph.h"

#include <time.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <string>

#include "chiprt/kernel.h"
#include "chiprt/status.h"
#include "chiprt/task_args.h"

namespace chiprt::perf {

namespace {

// The most kernel arguments a chip task carries (the scheduler's kMaxKernelArgs).
constexpr uint32_t kMaxKernelArgs = kMaxTaskTensors + kMaxTaskScalars;

using KernelEntry = void (*)(int64_t*);

uint64_t thread_cpu_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

std::string task_name(uint64_t index, const ExportedTask& task) {
  return "task " + std::to_string(index) + " (func_id " + std::to_string(task.func_id) + ")";
}

}  // namespace

KernelDag::KernelDag(const GraphExport& graph) : graph_(graph) {
  const uint64_t n = graph.tasks.size();
  std::vector<std::vector<uint64_t>> preds(n);
  for (uint64_t i = 0; i < n; ++i) {
    const ExportedTask& task = graph.tasks[i];
    if (task.args_begin + task.arg_count > graph.args.size() ||
        task.consumers_begin + task.consumer_count > graph.consumers.size()) {
      throw Error(StatusCode::InvalidArgument,
                  task_name(i, task) + " has arguments [" + std::to_string(task.args_begin) +
                      ", +" + std::to_string(task.arg_count) + ") or consumers [" +
                      std::to_string(task.consumers_begin) + ", +" +
                      std::to_string(task.consumer_count) + ") beyond the graph's " +
                      std::to_string(graph.args.size()) + " arguments / " +
                      std::to_string(graph.consumers.size()) +
                      " consumer entries; export the graph again with Worker::export_graph");
    }
    if (!task.dummy) {
      // The kernel's argument block: its task context before the arguments, its views after.
      if (task.args_begin < kernel::kTaskContextWords || task.tensor_count > task.arg_count ||
          task.args_begin + task.arg_count +
                  uint64_t{task.tensor_count} * kernel::kTensorViewWords >
              graph.args.size()) {
        throw Error(StatusCode::InvalidArgument,
                    task_name(i, task) + " has arguments [" + std::to_string(task.args_begin) +
                        ", +" + std::to_string(task.arg_count) + ") with " +
                        std::to_string(task.tensor_count) +
                        " tensors, without room for its task context before them or its views "
                        "after them in the graph's " +
                        std::to_string(graph.args.size()) +
                        " arguments; export the graph again with Worker::export_graph");
      }
      if (task.core_type == CoreType::MIX) {
        throw Error(StatusCode::UnsupportedFeature,
                    task_name(i, task) +
                        " is a MIX task; the peer runtimes of `chiprt bench` run AIC and AIV "
                        "tasks only (a MIX task's parts must run together on one core group); "
                        "run this graph on chiprt");
      }
      if (task.kernel_addr == 0) {
        throw Error(StatusCode::UnknownFuncId,
                    task_name(i, task) +
                        " has no kernel entry (kernel_addr 0); register the callable that "
                        "provides the func_id before exporting");
      }
      if (task.arg_count > kMaxKernelArgs) {
        throw Error(StatusCode::InvalidArgument,
                    task_name(i, task) + " has " + std::to_string(task.arg_count) +
                        " kernel arguments, above the limit " + std::to_string(kMaxKernelArgs) +
                        " (kMaxTaskTensors + kMaxTaskScalars)");
      }
      if (task.block_num == 0) {
        throw Error(StatusCode::InvalidArgument,
                    task_name(i, task) + " has block_num 0; a task runs at least one block");
      }
      if (task.predicated) {
        const uint32_t b = task.predicate_bytes;
        if (task.predicate_addr == 0 || (b != 1 && b != 2 && b != 4 && b != 8)) {
          throw Error(StatusCode::InvalidArgument,
                      task_name(i, task) + " has a predicate of " + std::to_string(b) +
                          " bytes at address " + std::to_string(task.predicate_addr) +
                          "; a predicate is 1, 2, 4 or 8 bytes at a non-zero address");
        }
      }
    }
    for (const uint32_t consumer : graph.consumers_of(task)) {
      if (consumer <= i || consumer >= n) {
        throw Error(StatusCode::InvalidArgument,
                    task_name(i, task) + " lists consumer " + std::to_string(consumer) +
                        "; consumers come after their producer and below the task count " +
                        std::to_string(n));
      }
      preds[consumer].push_back(i);
    }
  }
  offsets_.reserve(n + 1);
  offsets_.push_back(0);
  for (std::vector<uint64_t>& list : preds) {
    // Producers arrive in increasing order; a repeated edge is one dependency.
    list.erase(std::unique(list.begin(), list.end()), list.end());
    preds_.insert(preds_.end(), list.begin(), list.end());
    offsets_.push_back(preds_.size());
  }
}

TaskDag KernelDag::dag() noexcept {
  TaskDag dag;
  dag.tasks = graph_.tasks.size();
  dag.offsets = offsets_.data();
  dag.preds = preds_.data();
  dag.body = run_task;
  dag.context = this;
  return dag;
}

void KernelDag::reset_counters() noexcept {
  kernel_ns_.store(0, std::memory_order_relaxed);
  kernel_calls_.store(0, std::memory_order_relaxed);
  skipped_.store(0, std::memory_order_relaxed);
  faulted_.store(false, std::memory_order_relaxed);
  const std::lock_guard<std::mutex> lock(fault_mutex_);
  fault_.clear();
}

void KernelDag::run_task(void* context, uint64_t index) noexcept {
  auto* self = static_cast<KernelDag*>(context);
  const ExportedTask& task = self->graph_.tasks[index];
  if (task.dummy) return;
  if (task.predicated && !kernel::predicate_holds(task.predicate_addr, task.predicate_bytes)) {
    // A skipped task's outputs read as zeros (graph_export.h), before its consumers run.
    if (task.skip_fill_bytes != 0) {
      std::memset(reinterpret_cast<void*>(static_cast<uintptr_t>(task.skip_fill_addr)), 0,
                  task.skip_fill_bytes);
    }
    self->skipped_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const auto entry = reinterpret_cast<KernelEntry>(static_cast<uintptr_t>(task.kernel_addr));
  int64_t storage[GraphExport::kKernelArgsWords];
  uint64_t spent = 0;
  uint64_t calls = 0;
  for (uint32_t block = 0; block < task.block_num; ++block) {
    // Per call, as a core builds its copy: a kernel may scribble on its argument array.
    int64_t* args = self->graph_.kernel_args(task, block, storage);
    try {
      const uint64_t start = thread_cpu_ns();
      entry(args);
      spent += thread_cpu_ns() - start;
      ++calls;
    } catch (...) {
      self->record_fault(index);
      break;
    }
  }
  self->kernel_ns_.fetch_add(spent, std::memory_order_relaxed);
  self->kernel_calls_.fetch_add(calls, std::memory_order_relaxed);
}

void KernelDag::record_fault(uint64_t index) noexcept {
  if (faulted_.exchange(true, std::memory_order_relaxed)) return;
  try {
    const std::lock_guard<std::mutex> lock(fault_mutex_);
    fault_ = "kernel of " + task_name(index, graph_.tasks[index]) +
             " threw an exception on the peer runtime";
  } catch (...) {
    // Out of memory for the message: throw_if_faulted still reports the fault.
  }
}

void KernelDag::throw_if_faulted() const {
  if (!faulted_.load(std::memory_order_relaxed)) return;
  const std::lock_guard<std::mutex> lock(fault_mutex_);
  throw Error(StatusCode::KernelFault,
              fault_.empty() ? "a kernel threw an exception on the peer runtime" : fault_);
}

RunReport run_graph_export(DagRunner& runner, const GraphExport& graph) {
  KernelDag kernel_dag(graph);
  const uint64_t wall_ns = runner.run_dag(kernel_dag.dag());
  kernel_dag.throw_if_faulted();
  RunReport report;
  // As the chip reports it: the user's tasks, and scope fences as internal tasks.
  const GraphShape shape = graph.shape();
  report.task_count = shape.tasks - shape.scope_fences;
  report.internal_task_count = shape.scope_fences;
  report.host_total_ns = wall_ns;
  report.kernel_ns = kernel_dag.kernel_ns();
  report.kernel_time_measured = true;
  return report;
}

}  // namespace chiprt::perf
