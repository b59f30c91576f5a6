// TaskDag: a task graph as predecessor lists in a topological order plus one body that runs task
// i. It is what a peer runtime (runners.h DagRunner) executes for two kinds of rows: the random
// DAG row (empty bodies, workloads.h) and the real-kernel rows (a Worker::export_graph graph whose
// bodies call the chip kernels, kernel_graph.h), so each peer writes its DAG code once.
//
// A plain view: the lists and the body's context belong to the caller and must outlive the run.
// The body is called from the peer's worker threads, once per task, each call after the calls of
// all the task's predecessors returned; it must not throw.
#pragma once

#include <cstdint>
#include <span>

namespace chiprt::perf {

struct TaskDag {
  uint64_t tasks = 0;
  // Task i's predecessors: preds[offsets[i] .. offsets[i + 1]), each below i (offsets has
  // tasks + 1 entries).
  const uint64_t* offsets = nullptr;
  const uint64_t* preds = nullptr;
  void (*body)(void* context, uint64_t task) noexcept = nullptr;
  void* context = nullptr;

  std::span<const uint64_t> predecessors(uint64_t task) const noexcept {
    return {preds + offsets[task], offsets[task + 1] - offsets[task]};
  }
  void run(uint64_t task) const noexcept { body(context, task); }
};

}  // namespace chiprt::perf
