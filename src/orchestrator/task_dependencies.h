// Task dependencies from tensor regions: which of a task's arguments look up and record what in
// the TensorMap. The one rule both orchestrators (host_build_graph's builder and the ring
// orchestrator) apply, so the variants derive the same edges:
//   - In arguments and the predicate flag are reads: they depend on the earlier writers of
//     overlapping regions and are recorded as readers;
//   - InOut and OutputExisting are writes: they depend on the earlier writers and readers of
//     overlapping regions (write-after-write, write-after-read) and are recorded as writers
//     (an InOut's read needs no reader entry: its writer entry orders every later access);
//   - Out names fresh memory: no lookup, recorded as the writer of its output;
//   - NoDep arguments are neither looked up nor recorded, and a caller in a manual scope calls
//     neither function (the opt-outs).
// Every lookup of a task precedes its records, so a task never depends on itself. Its writes are
// recorded before its reads: a write whose lookup met no entry then skips its search for entries
// to drop (TensorMap::Prepared), which a record in between would invalidate. A task reading a
// region it also writes keeps its reader entry beside its writer entry (no extra edge: both name
// the task).
//
// Lifetime/threading: stateless functions over the caller's map and scratch; the caller's thread.
#pragma once

#include <array>

#include "chiprt/task_args.h"
#include "orchestrator/task_checks.h"
#include "orchestrator/tensor_map.h"

namespace chiprt::orchestrator {

// Per-task scratch: the description of argument i (and, at kMaxTaskTensors, of the predicate)
// that its lookup made for its record. Reused across tasks without clearing.
using PreparedArgs = std::array<TensorMap::Prepared, kMaxTaskTensors + 1>;
inline constexpr int kPredicatePrepared = kMaxTaskTensors;

// Calls on_producer(TaskId) for every recorded task the task (`args`, viewed as `list`) must
// wait for; a producer may be reported more than once (callers deduplicate edges).
template <class OnProducer>
void lookup_task_producers(const TensorMap& map, const TaskArgs& args, const ArgList& list,
                           PreparedArgs* prepared, OnProducer&& on_producer) {
  if (args.has_predicate()) {
    map.lookup(args.predicate(), on_producer, &(*prepared)[kPredicatePrepared]);
  }
  for (int i = 0; i < list.tensor_count; ++i) {
    const ArgTag tag = list.tags[i];
    if (tag == ArgTag::In) {
      map.lookup(*list.tensors[i], on_producer, &(*prepared)[i]);
    } else if (tag == ArgTag::InOut || tag == ArgTag::OutputExisting) {
      map.lookup_write(*list.tensors[i], on_producer, &(*prepared)[i]);
    }
  }
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

}  // namespace chiprt::orchestrator
