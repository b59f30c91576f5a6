// The one structural validator of a graph image (common/graph_image.h), run by the host before
// it copies an image to the device and by the chip (scheduler thread 0, before the start barrier)
// before it trusts one: both sides apply the same rules, so an image one side refuses the other
// refuses too, with the same message.
//
// Two steps, so the chip can size and bind its shared state between them:
//   check_graph_image_header  pointer, size, magic, version, total_size, task_count limit, the five
//                             sections (aligned, in order, not overlapping, inside total_size),
//                             the output heap range (no wrap-around).
//                             Cheap; the chip runs it on every launch, trusted replays included.
//   check_graph_image_tasks   every record (its argument block: context, counts, views; its
//                             skip-fill range: a predicated task's, 64-byte aligned, inside the
//                             output heap; its public task id: the next user id, or -1 on a dummy
//                             task, a scope fence), every fanout entry (only later tasks: the graph
//                             is acyclic), every fanin_count against the entries naming the task,
//                             user_task_count (the tasks with a public id), and initial_ready
//                             (exactly the fan-in-zero tasks, in increasing order). One pass over
//                             the records, one over initial_ready; no allocation.
// Both return an ImageVerdict, plain data naming the broken rule and the values involved (no
// strings), so the chip can run them; format_image_verdict turns a verdict into the message on the
// cold path. validate_graph_image is the host's one-call form returning a Status.
//
// Pure functions of the image bytes and the counter storage the caller passes: no state,
// thread-safe for distinct storage, never read outside [data, data + size). An image is produced by
// the runtime itself, so a broken rule is a runtime bug or memory corruption (InternalError).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "chiprt/orchestration.h"
#include "chiprt/status.h"
#include "chiprt/task_args.h"
#include "chiprt/types.h"
#include "common/graph_image.h"
#include "common/handshake.h"
#include "common/kernel_block.h"  // kMaxKernelArgs, the argument block

namespace chiprt::common {

// The rule an image breaks. The verdict's `task` and `values` hold what its message quotes.
enum class ImageRule : uint8_t {
  Ok,
  Address,         // values: address
  HeaderSize,      // values: size, header bytes
  Magic,           // values: magic
  Version,         // values: version
  TotalSize,       // values: total_size, size
  TaskCount,       // values: task_count
  TasksSection,    // values: offset, count, total_size (the next three alike)
  FanoutSection,   //
  ArgsSection,     //
  ReadySection,    //
  TaskIdsSection,  //
  OutputHeap,      // values: output_heap_addr, output_heap_size
  CoreType,        // task; values: core_type
  Flags,           // task; values: flags
  BlockNum,        // task; values: block_num
  DummyKernels,    // task; values: func_id, mix_aiv[0], mix_aiv[1] (as int32)
  MixPart,         // task; values: func_id (as int32)
  MixEmpty,        // task
  FuncId,          // task; values: func_id (as int32)
  NonMixAiv,       // task; values: mix_aiv[0], mix_aiv[1] (as int32)
  Predicate,       // task; values: predicate_addr, predicate_bytes
  SkipFillRange,   // task; values: skip_fill_addr, skip_fill_granules, flags
  ArgCount,        // task; values: arg_count
  ArgRange,        // task; values: args_begin, arg_count, args_count
  ContextRange,    // task; values: args_begin (no room for the task context before it)
  ContextCounts,   // task; values: tensor_count, scalar_count (the context's), arg_count
  ViewRange,       // task; values: first view word, tensor_count, args_count
  ViewDescriptor,  // task; values: tensor index, dtype | element_bytes << 8, ndim
  FanoutRange,     // task; values: fanout_begin, fanout_count (record), fanout_count (header)
  FanoutTarget,    // task; values: entry index, named task, task_count
  FaninCount,      // task; values: fanin_count, entries naming it
  ReadyCount,      // values: initial_ready_count, tasks with fanin_count 0
  ReadyRange,      // task = list index; values: entry, task_count
  ReadyOrder,      // task = list index; values: entry, entry before it
  ReadyProducers,  // task = list index; values: entry, its fanin_count
  TaskId,          // task; values: its task_ids entry, the next user id, flags
  UserTaskCount,   // values: user_task_count, tasks with a public id
};

struct ImageVerdict {
  ImageRule broken = ImageRule::Ok;
  uint32_t task = 0;
  uint64_t values[3] = {};
  bool ok() const { return broken == ImageRule::Ok; }
};

// Writes the message for `verdict` (NUL-terminated, cut to `capacity`). No allocation: the chip
// formats it straight into its result.
void format_image_verdict(const ImageVerdict& verdict, char* out, std::size_t capacity);

// Step 1. On Ok, *header holds the image's header.
ImageVerdict check_graph_image_header(const uint8_t* data, uint64_t size, GraphImageHeader* header);

namespace image_detail {

constexpr ImageVerdict broken(ImageRule rule, uint32_t task = 0, uint64_t a = 0, uint64_t b = 0,
                              uint64_t c = 0) {
  return ImageVerdict{rule, task, {a, b, c}};
}
constexpr uint64_t as_value(int32_t v) {
  return static_cast<uint64_t>(static_cast<int64_t>(v));
}

// Fan-in counter storage: the host's plain array or the chip's shared-state atomics (thread 0 is
// alone with them before the start barrier, so relaxed loads and stores suffice).
inline uint32_t count_of(const uint32_t& counter) {
  return counter;
}
inline void set_count(uint32_t& counter, uint32_t value) {
  counter = value;
}
inline uint32_t count_of(const std::atomic<uint32_t>& counter) {
  return counter.load(std::memory_order_relaxed);
}
inline void set_count(std::atomic<uint32_t>& counter, uint32_t value) {
  counter.store(value, std::memory_order_relaxed);
}

template <class T>
T load(const uint8_t* p) {
  T value;
  std::memcpy(&value, p, sizeof(T));
  return value;
}

// The argument block of record `r` (common/kernel_block.h) inside args[] (`args`, the header's
// args_count words): the context before args_begin, counts that add up to arg_count, the views
// after the arguments, each with a known dtype, its element size and a rank in [1, 5]. The image
// is trusted to hold the views of the tensors its orchestrator saw; a kernel reads only ndim dims.
inline ImageVerdict check_block(uint32_t t, const TaskRecord& r, const GraphImageHeader& h,
                                const uint8_t* args) {
  if (r.arg_count > kMaxKernelArgs) return broken(ImageRule::ArgCount, t, r.arg_count);
  if (r.args_begin > h.args_count || r.arg_count > h.args_count - r.args_begin) {
    return broken(ImageRule::ArgRange, t, r.args_begin, r.arg_count, h.args_count);
  }
  if (r.args_begin < kContextWords) return broken(ImageRule::ContextRange, t, r.args_begin);
  const auto context =
      load<kernel::TaskContext>(args + (r.args_begin - kContextWords) * sizeof(int64_t));
  if (context.tensor_count > kMaxTaskTensors || context.scalar_count > kMaxTaskScalars ||
      uint32_t{context.tensor_count} + context.scalar_count != r.arg_count) {
    return broken(ImageRule::ContextCounts, t, context.tensor_count, context.scalar_count,
                  r.arg_count);
  }
  const uint64_t views = r.args_begin + r.arg_count;
  if (uint64_t{context.tensor_count} * kViewWords > h.args_count - views) {
    return broken(ImageRule::ViewRange, t, views, context.tensor_count, h.args_count);
  }
  for (uint32_t i = 0; i < context.tensor_count; ++i) {
    const uint8_t* view = args + (views + uint64_t{i} * kViewWords) * sizeof(int64_t);
    const auto dtype = load<uint8_t>(view + offsetof(kernel::TensorView, dtype));
    const auto ndim = load<uint8_t>(view + offsetof(kernel::TensorView, ndim));
    const auto bytes = load<uint8_t>(view + offsetof(kernel::TensorView, element_bytes));
    if (ndim < 1 || ndim > kMaxTensorDims || dtype >= kDataTypeCount ||
        bytes != element_size(static_cast<DataType>(dtype))) {
      return broken(ImageRule::ViewDescriptor, t, i, dtype | uint64_t{bytes} << 8, ndim);
    }
  }
  return {};
}

// The rules on one record alone (ranges against the header's section counts; `args` is the
// image's args[]).
inline ImageVerdict check_record(uint32_t t, const TaskRecord& r, const GraphImageHeader& h,
                                 const uint8_t* args) {
  if (r.core_type >= kCoreTypeCount) return broken(ImageRule::CoreType, t, r.core_type);
  constexpr uint8_t kKnownFlags = kTaskFlagDummy | kTaskFlagPredicated;
  if ((r.flags & ~kKnownFlags) != 0) return broken(ImageRule::Flags, t, r.flags);
  if (r.block_num < 1 || r.block_num > kMaxBlockNum) {
    return broken(ImageRule::BlockNum, t, r.block_num);
  }
  const auto func_ok = [](int32_t f) { return f >= 0 && f < kMaxFuncId; };
  if ((r.flags & kTaskFlagDummy) != 0) {
    if (r.func_id != -1 || r.mix_aiv[0] != -1 || r.mix_aiv[1] != -1) {
      return broken(ImageRule::DummyKernels, t, as_value(r.func_id), as_value(r.mix_aiv[0]),
                    as_value(r.mix_aiv[1]));
    }
  } else if (r.core_type == static_cast<uint8_t>(CoreType::MIX)) {
    const int32_t parts[3] = {r.func_id, r.mix_aiv[0], r.mix_aiv[1]};
    for (int32_t f : parts) {
      if (f != -1 && !func_ok(f)) return broken(ImageRule::MixPart, t, as_value(f));
    }
    if (parts[0] == -1 && parts[1] == -1 && parts[2] == -1) return broken(ImageRule::MixEmpty, t);
  } else {
    if (!func_ok(r.func_id)) return broken(ImageRule::FuncId, t, as_value(r.func_id));
    if (r.mix_aiv[0] != -1 || r.mix_aiv[1] != -1) {
      return broken(ImageRule::NonMixAiv, t, as_value(r.mix_aiv[0]), as_value(r.mix_aiv[1]));
    }
  }
  if ((r.flags & kTaskFlagPredicated) != 0) {
    const uint32_t b = r.predicate_bytes;
    if (r.predicate_addr == 0 || (b != 1 && b != 2 && b != 4 && b != 8)) {
      return broken(ImageRule::Predicate, t, r.predicate_addr, b);
    }
  }
  // The range a skipped task zero-fills: only a predicated task's, inside the run's output heap
  // (the header proved the heap does not wrap), so a corrupted record cannot make the dispatcher
  // clear memory outside it.
  if (r.skip_fill_granules != 0 || r.skip_fill_addr != 0) {
    const uint64_t fill_bytes = uint64_t{r.skip_fill_granules} * kSkipFillGranuleBytes;
    const uint64_t heap_end = h.output_heap_addr + h.output_heap_size;
    if ((r.flags & kTaskFlagPredicated) == 0 || r.skip_fill_granules == 0 ||
        r.skip_fill_addr % kSkipFillGranuleBytes != 0 || r.skip_fill_addr < h.output_heap_addr ||
        r.skip_fill_addr > heap_end || fill_bytes > heap_end - r.skip_fill_addr) {
      return broken(ImageRule::SkipFillRange, t, r.skip_fill_addr, r.skip_fill_granules, r.flags);
    }
  }
  if (const ImageVerdict v = check_block(t, r, h, args); !v.ok()) return v;
  if (r.fanout_begin > h.fanout_count || r.fanout_count > h.fanout_count - r.fanout_begin) {
    return broken(ImageRule::FanoutRange, t, r.fanout_begin, r.fanout_count, h.fanout_count);
  }
  return {};
}

}  // namespace image_detail

// Step 2, on an image whose header passed step 1. `fanin` has room for header.task_count counters
// (uint32_t or std::atomic<uint32_t>); on Ok, fanin[t] == task t's fanin_count. `on_task(t,
// record)` runs for every task that passed its checks (the chip counts tasks per ready queue with
// it).
template <class Counter, class OnTask>
ImageVerdict check_graph_image_tasks(const uint8_t* data, const GraphImageHeader& header,
                                     Counter* fanin, OnTask&& on_task) {
  using namespace image_detail;
  const uint32_t n = header.task_count;
  for (uint32_t t = 0; t < n; ++t) set_count(fanin[t], 0);
  // In place, not copied (a copy costs more than the checks): the header check proved the image
  // 8-byte aligned, TaskRecord's alignment, and the section inside it.
  static_assert(alignof(TaskRecord) <= 8);
  const auto* records = reinterpret_cast<const TaskRecord*>(data + header.tasks_offset);
  const uint8_t* fanout = data + header.fanout_offset;
  const uint8_t* task_ids = data + header.task_ids_offset;
  const uint8_t* args = data + header.args_offset;
  uint32_t sources = 0;
  int64_t next_user_id = 0;  // user tasks are numbered 0.. in record order, fences are not
  for (uint32_t t = 0; t < n; ++t) {
    const TaskRecord& r = records[t];
    if (const ImageVerdict v = check_record(t, r, header, args); !v.ok()) return v;
    const auto id = load<int64_t>(task_ids + uint64_t{t} * sizeof(int64_t));
    if (id == kScopeFenceId ? (r.flags & kTaskFlagDummy) == 0 : id != next_user_id) {
      return broken(ImageRule::TaskId, t, static_cast<uint64_t>(id),
                    static_cast<uint64_t>(next_user_id), r.flags);
    }
    next_user_id += id != kScopeFenceId;
    // Every fanout entry names a later task (checked below), so every entry naming task t has
    // been counted by now: one pass checks both.
    const uint32_t named = count_of(fanin[t]);
    if (named != r.fanin_count) return broken(ImageRule::FaninCount, t, r.fanin_count, named);
    sources += r.fanin_count == 0 ? 1 : 0;
    const uint8_t* entries = fanout + uint64_t{r.fanout_begin} * sizeof(uint32_t);
    for (uint32_t k = 0; k < r.fanout_count; ++k) {
      const auto consumer = load<uint32_t>(entries + uint64_t{k} * sizeof(uint32_t));
      if (consumer <= t || consumer >= n) {
        return broken(ImageRule::FanoutTarget, t, k, consumer, n);
      }
      set_count(fanin[consumer], count_of(fanin[consumer]) + 1);
    }
    on_task(t, r);
  }
  if (static_cast<uint64_t>(next_user_id) != header.user_task_count) {
    return broken(ImageRule::UserTaskCount, 0, header.user_task_count,
                  static_cast<uint64_t>(next_user_id));
  }
  if (header.initial_ready_count != sources) {
    return broken(ImageRule::ReadyCount, 0, header.initial_ready_count, sources);
  }
  // Increasing entries of fan-in-zero tasks, as many as there are such tasks: exactly that set.
  const uint8_t* ready = data + header.initial_ready_offset;
  for (uint32_t k = 0; k < header.initial_ready_count; ++k) {
    const auto t = load<uint32_t>(ready + uint64_t{k} * sizeof(uint32_t));
    if (t >= n) return broken(ImageRule::ReadyRange, k, t, n);
    if (k > 0) {
      const auto before = load<uint32_t>(ready + uint64_t{k - 1} * sizeof(uint32_t));
      if (t <= before) return broken(ImageRule::ReadyOrder, k, t, before);
    }
    const uint32_t producers = count_of(fanin[t]);
    if (producers != 0) return broken(ImageRule::ReadyProducers, k, t, producers);
  }
  return {};
}

// The host's form: both steps over a counter array of its own, the verdict as a Status
// (InternalError with the message) or Ok.
Status validate_graph_image(const uint8_t* data, std::size_t size);

}  // namespace chiprt::common
