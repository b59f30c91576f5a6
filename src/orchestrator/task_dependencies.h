// Task dependencies from tensor regions: which of a task's arguments look up and record what in
// the TensorMap. The one rule both orchestrators (host_build_graph's builder and the ring
// orchestrator) apply, so the variants derive the same edges:
//   - In arguments and the predicate flag are reads: they depend on the earlier writers of
//     overlapping regions (RAW) and are recorded as readers;
//   - InOut and OutputExisting are writes: they depend on the earlier writers (WAW; an InOut,
//     which also reads, RAW as well) and readers (WAR) of overlapping regions and are recorded as
//     writers (an InOut's read needs no reader entry: its writer entry orders every later access;
//     a writer that a later reader of all its region already waited for is left out, see
//     TensorMap);
//   - Out names fresh memory: no lookup, recorded as the writer of its output;
//   - NoDep arguments are neither looked up nor recorded, and a caller in a manual scope calls
//     neither function (the opt-outs);
//   - TaskArgs::after names producers directly (kDependencyAfter), in manual scopes too.
// Every lookup of a task precedes its records, so a task never depends on itself. Its writes are
// recorded before its reads: a write whose lookup met no entry then skips its search for entries
// to drop (TensorMap::Prepared), which a record in between would invalidate. A task reading a
// region it also writes keeps its reader entry beside its writer entry (no extra edge: both name
// the task).
//
// TaskDependencies applies the rule to a whole graph: the logical dependencies, the edges of
// Worker::export_graph and of the diagnostics' deps.json. host_build_graph builds its graph from
// it; tensormap_ringbuffer's own map forgets a task when it retires (a retired producer needs no
// waiting for), so with the deps diagnostics on the ring orchestrator keeps a TaskDependencies
// beside its map, and both variants report the same edges.
//
// Lifetime/threading: the functions are stateless over the caller's map and scratch; the classes
// are described where they are declared. The caller's thread.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "chiprt/graph_export.h"
#include "chiprt/task_args.h"
#include "orchestrator/task_checks.h"
#include "orchestrator/tensor_map.h"

namespace chiprt::orchestrator {

// Per-task scratch: the description of argument i (and, at kMaxTaskTensors, of the predicate)
// that its lookup made for its record. Reused across tasks without clearing.
using PreparedArgs = std::array<TensorMap::Prepared, kMaxTaskTensors + 1>;
inline constexpr int kPredicatePrepared = kMaxTaskTensors;

// Calls on_producer(TaskId, DependencyKinds) for every recorded task the task (`args`, viewed as
// `list`) must wait for, with the kind of the hazard; a producer may be reported more than once
// (callers deduplicate edges, merging the kinds).
template <class OnProducer>
void lookup_task_producers(const TensorMap& map, const TaskArgs& args, const ArgList& list,
                           PreparedArgs* prepared, OnProducer&& on_producer) {
  auto on_read = [&](TaskId producer) { on_producer(producer, kDependencyRaw); };
  if (args.has_predicate()) {
    map.lookup(args.predicate(), on_read, &(*prepared)[kPredicatePrepared]);
  }
  for (int i = 0; i < list.tensor_count; ++i) {
    const ArgTag tag = list.tags[i];
    if (tag == ArgTag::In) {
      map.lookup(*list.tensors[i], on_read, &(*prepared)[i]);
    } else if (tag == ArgTag::InOut || tag == ArgTag::OutputExisting) {
      const DependencyKinds after_write =
          tag == ArgTag::InOut ? kDependencyRaw | kDependencyWaw : kDependencyWaw;
      map.lookup_write(
          *list.tensors[i],
          [&](TaskId producer, bool reader) {
            on_producer(producer, reader ? kDependencyWar : after_write);
          },
          &(*prepared)[i]);
    }
  }
}

// Calls on_producer(TaskId, kDependencyAfter) for every task `args` names with after() (public
// ids, as the function got them).
template <class OnProducer>
void lookup_after_producers(const TaskArgs& args, OnProducer&& on_producer) {
  for (int d = 0; d < args.dep_count(); ++d) on_producer(args.dep(d), kDependencyAfter);
}

// Records the task's accesses after lookup_task_producers filled `prepared` (and the task's Out
// tensors were placed); calls on_entry(uint32_t) with the id of every entry recorded, for
// TensorMap::erase_entry.
template <class OnEntry>
void record_task_accesses(TensorMap& map, TaskId task, const TaskArgs& args, const ArgList& list,
                          const PreparedArgs& prepared, OnEntry&& on_entry) {
  auto note = [&](uint32_t entry) {
    if (entry != TensorMap::kNoEntry) on_entry(entry);
  };
  for (int i = 0; i < list.tensor_count; ++i) {
    const ArgTag tag = list.tags[i];
    if (tag == ArgTag::Out) {
      note(map.record_write(*list.tensors[i], task));
    } else if (tag == ArgTag::InOut || tag == ArgTag::OutputExisting) {
      note(map.record_write(*list.tensors[i], task, prepared[i]));
    }
  }
  for (int i = 0; i < list.tensor_count; ++i) {
    if (list.tags[i] == ArgTag::In) note(map.record_read(*list.tensors[i], task, prepared[i]));
  }
  if (args.has_predicate()) {
    note(map.record_read(args.predicate(), task, prepared[kPredicatePrepared]));
  }
}

// The dependencies of one graph, in the caller's task ids: the rule above over a TensorMap that
// keeps every entry until a later write covers it or the runtime output it describes is released
// (its scope ended, so its memory may be handed to another output, which must not inherit its
// entries). after() edges are the caller's (lookup_after_producers): their ids are public ids.
//
// Lifetime/threading: one per graph build (clear() starts the next, storage kept); the
// orchestrating thread only. Grows with the regions tasks keep touching, like the builder's graph.
class TaskDependencies {
 public:
  void clear() noexcept {
    map_.clear();
    scope_outputs_.clear();
    scope_marks_.clear();
  }

  // Calls on_producer(TaskId, DependencyKinds) for every recorded task the task must wait for
  // (lookup_task_producers). Called once per task, before record().
  template <class OnProducer>
  void lookup(const TaskArgs& args, const ArgList& list, OnProducer&& on_producer) {
    lookup_task_producers(map_, args, list, &prepared_, on_producer);
  }
  // Records the accesses of the task looked up last as `task`, once its Out tensors were placed.
  void record(TaskId task, const TaskArgs& args, const ArgList& list) {
    record_task_accesses(map_, task, args, list, prepared_, [](uint32_t) {});
  }

  // Scopes, as the orchestration opens and ends them (manual ones too). Runtime outputs placed
  // while a scope is open are released when it ends: their entries are forgotten then.
  void scope_begin() { scope_marks_.push_back(scope_outputs_.size()); }
  // The runtime output `t` (an Out tensor once placed) of a task.
  void note_output(const Tensor& t) {
    if (!scope_marks_.empty() && t.buffer.size > 0) scope_outputs_.push_back(t.buffer.addr);
  }
  void scope_end() noexcept {
    if (scope_marks_.empty()) return;
    const std::size_t mark = scope_marks_.back();
    scope_marks_.pop_back();
    for (std::size_t i = mark; i < scope_outputs_.size(); ++i) map_.erase_buffer(scope_outputs_[i]);
    scope_outputs_.resize(mark);
  }

  const TensorMap& map() const noexcept { return map_; }
  uint64_t retained_bytes() const noexcept {
    return map_.retained_bytes() + capacity_bytes(scope_outputs_) + capacity_bytes(scope_marks_);
  }

 private:
  TensorMap map_;
  PreparedArgs prepared_{};               // scratch of the task being added
  std::vector<uint64_t> scope_outputs_;   // buffer addresses of outputs placed in open scopes
  std::vector<std::size_t> scope_marks_;  // per open scope: scope_outputs_' size when it began
};

// One task's producers with the kinds of their edges, each producer once (the kinds of repeated
// reports merged). The scratch keeps its storage between tasks.
class ProducerKinds {
 public:
  struct Producer {
    TaskId task;
    DependencyKinds kinds;
  };
  void clear() noexcept { list_.clear(); }
  void add(TaskId task, DependencyKinds kinds) { list_.push_back({task, kinds}); }
  // The producers in ascending id order, each once.
  std::span<const Producer> merged() {
    std::sort(list_.begin(), list_.end(),
              [](const Producer& a, const Producer& b) { return a.task < b.task; });
    std::size_t kept = 0;
    for (const Producer& p : list_) {
      if (kept > 0 && list_[kept - 1].task == p.task) {
        list_[kept - 1].kinds |= p.kinds;
      } else {
        list_[kept++] = p;
      }
    }
    list_.resize(kept);
    return list_;
  }

 private:
  std::vector<Producer> list_;
};

}  // namespace chiprt::orchestrator
