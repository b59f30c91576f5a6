#include "orchestrator/host_graph_builder.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <type_traits>

#include "chiprt/status.h"
#include "common/graph_image.h"
#include "orchestrator/task_checks.h"
#include "orchestrator/tensor_map.h"

namespace chiprt::orchestrator {
namespace {

constexpr uint64_t kOutputAlign = 64;
// Task ids are uint32 indices inside the image.
constexpr uint64_t kMaxImageTasks = UINT32_MAX - 1;

uint64_t align8(uint64_t v) {
  return (v + 7) & ~uint64_t{7};
}

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

// Scopes and output memory. The output heap is a stack: outputs are carved at the top (64-byte
// aligned), scope_begin records the top, scope_end pops back to it. The graph runs after it is
// built, so memory popped at scope_end may only be handed out again once every task that used it
// has finished. scope_end therefore adds a dummy "fence" task that depends on every task that
// used a buffer the scope owned (collected during submit) and on older fences of the range; a
// later output carved from that range depends on the fence alone, keeping edges O(1) per task.
// Fence tasks take task ids like any other task (task_count() includes them). Tasks [first,
// end) of an ended scope are remembered so that passing one of their outputs to a later task is
// reported instead of silently racing with the memory's next owner.
//
// All builder state. Per task the builder keeps one fixed-size record plus its slices of three
// flat arrays (producers, kernel args); nothing is allocated per task beyond geometric growth.
struct HostGraphBuilder::State {
  struct TaskEntry {
    int32_t func_id;
    int32_t mix_aiv[2];
    uint8_t core;
    uint8_t flags;
    uint16_t arg_count;
    uint32_t block_num;
    uint32_t predicate_bytes;
    uint64_t predicate_addr;
    uint32_t fanin_count;
    // consumer id + 1 of the last edge added from this task, so a consumer gets one edge per
    // producer however many of its arguments lead to it.
    uint32_t last_consumer;
    uint64_t fanin_begin;  // into producers
    uint64_t args_begin;   // into kernel_args
  };
  // A scope's heap is the stack range [heap_mark, heap_peak) it ever used.
  struct ScopeFrame {
    ScopeMode mode = ScopeMode::Auto;
    uint64_t heap_mark = 0;
    uint64_t heap_peak = 0;
    uint64_t first_task = 0;
    std::size_t alloc_log_begin = 0;
    std::vector<uint32_t> touched;  // tasks that used a buffer this scope owns, ascending
  };
  // Released heap range [lo, hi) (offsets from the heap base) and the dummy task that completes
  // once every task that used it has completed. Kept at or above the heap top, sorted by
  // descending lo (the lowest at the back), non-overlapping.
  struct FenceSegment {
    uint64_t lo;
    uint64_t hi;
    uint32_t fence_task;
  };
  // Tasks [first, end) whose runtime outputs were released by an ended scope; sorted, disjoint.
  struct ReleasedTasks {
    uint64_t first;
    uint64_t end;
  };
  // Absolute byte extent a task argument touched, for the get/set_tensor_data rules.
  struct Touched {
    uint64_t lo;
    uint64_t hi;
    uint32_t task;
    bool writes;
  };

  // Starts a new graph. The containers keep their capacity: a State reused through
  // BuilderScratch writes into memory the previous build already faulted in, instead of growing
  // fresh allocations (page faults cost more than the rest of a submit).
  void reset(DeviceBuffer heap_region, const BuilderLimits& limits) {
    heap = heap_region;
    max_tasks = std::min(limits.max_tasks, kMaxImageTasks);
    configured_max_tasks = limits.max_tasks;
    map.clear();
    tasks.clear();
    producers.clear();
    kernel_args.clear();
    depth = 0;
    fences.clear();
    released.clear();
    alloc_log.clear();
    touched_extents.clear();
    manual_depth = 0;
    heap_top = 0;
    heap_high = 0;
    built = false;
    accessed_tensor_data = false;
    error = Status();
  }

  DeviceBuffer heap;
  uint64_t max_tasks = 0;
  uint64_t configured_max_tasks = 0;

  TensorMap map;
  std::vector<TaskEntry> tasks;
  std::vector<uint32_t> producers;  // grouped by consumer, in consumer order
  std::vector<int64_t> kernel_args;
  std::vector<ScopeFrame> scopes;  // frames beyond `depth` are kept for their capacity
  std::size_t depth = 0;
  std::vector<FenceSegment> fences;
  std::vector<ReleasedTasks> released;
  std::vector<uint64_t> alloc_log;  // buffer addresses of outputs allocated inside open scopes
  std::vector<Touched> touched_extents;
  std::size_t manual_depth = 0;  // open manual scopes
  uint64_t heap_top = 0;
  uint64_t heap_high = 0;
  bool built = false;
  bool accessed_tensor_data = false;
  Status error;  // the first error; latched
  // build_image's temporaries, kept for their capacity.
  std::vector<uint32_t> fanout_begin;
  std::vector<uint32_t> cursor;
  std::vector<uint32_t> fanout;

  void check_open() const {
    if (built) {
      throw Error(StatusCode::InvalidArgument,
                  "the graph was already built; an Orchestration is only valid during its call");
    }
  }

  void latch(const Error& e) {
    if (error.is_ok()) error = Status(e.code(), e.message());
  }

  void check_capacity(uint64_t id) const {
    if (id >= max_tasks) {
      throw Error(StatusCode::CapacityExceeded,
                  "graph has " + std::to_string(id + 1) + " tasks, limit " +
                      std::to_string(configured_max_tasks) + " (CallConfig.max_tasks)");
    }
  }

  uint64_t aligned(uint64_t offset) const {
    return ((heap.addr + offset + kOutputAlign - 1) & ~(kOutputAlign - 1)) - heap.addr;
  }

  bool in_released_scope(TaskId owner) const {
    if (owner < 0 || released.empty()) return false;
    const auto t = static_cast<uint64_t>(owner);
    auto it = std::upper_bound(released.begin(), released.end(), t,
                               [](uint64_t v, const ReleasedTasks& r) { return v < r.first; });
    if (it == released.begin()) return false;
    --it;
    return t < it->end;
  }

  // Heap offset of a live heap buffer, or -1 when the buffer is not (a non-empty part of) it.
  int64_t heap_offset(const DeviceBuffer& b) const {
    if (b.size == 0 || b.addr < heap.addr || b.addr - heap.addr >= heap_top) return -1;
    return static_cast<int64_t>(b.addr - heap.addr);
  }

  // Everything that can reject a task, checked before any state changes. Throws chiprt::Error;
  // the public entry points latch it.
  void validate_args(uint64_t id, const TaskSpec* spec, const TaskArgs& args) const {
    throw_if_error(check_task_args(id, spec, args));
    auto label = [&] { return task_label(id, spec); };
    uint64_t top = heap_top;
    for (int i = 0; i < args.tensor_count(); ++i) {
      const Tensor& t = args.tensor(i);
      auto where = [&] { return label() + " arg " + std::to_string(i); };
      if (args.tag(i) == ArgTag::Out) {
        const uint64_t bytes = output_bytes(t);
        if (bytes == 0) continue;
        const uint64_t offset = aligned(top);
        if (offset > heap.size || bytes > heap.size - offset) {
          throw Error(StatusCode::HeapExhausted,
                      where() + ": output heap exhausted: requested " + std::to_string(bytes) +
                          " bytes, " + std::to_string(top) + " bytes used, limit " +
                          std::to_string(heap.size) + " bytes (CallConfig.output_heap_bytes)");
        }
        top = offset + bytes;
        continue;
      }
      check_live(where, t);
    }
    if (args.has_predicate()) {
      check_live([&] { return label() + " predicate"; }, args.predicate());
    }
  }

  // A tensor argument must not lie in output heap memory released by an ended scope.
  template <class Where>
  void check_live(Where where, const Tensor& t) const {
    if (in_released_scope(t.owner_task) && t.buffer.addr >= heap.addr &&
        t.buffer.addr - heap.addr < heap.size) {
      throw Error(StatusCode::InvalidTask,
                  where() + ": tensor at " + hex(t.buffer.addr) + " (output of task " +
                      std::to_string(t.owner_task) +
                      ") was released when its scope ended; create it in an enclosing scope "
                      "to use it after that scope");
    }
    // Heap memory above the top belongs to no live output: whatever made this tensor, its
    // memory was released by an ended scope (the check above names the producer when known).
    if (t.buffer.size > 0 && t.buffer.addr >= heap.addr && t.buffer.addr - heap.addr < heap.size) {
      const uint64_t offset = t.buffer.addr - heap.addr;
      if (offset >= heap_top || t.buffer.size > heap_top - offset) {
        throw Error(StatusCode::InvalidTask,
                    where() + ": tensor at " + hex(t.buffer.addr) + " (" +
                        std::to_string(t.buffer.size) +
                        " bytes) lies in output heap memory no live output owns (live: first " +
                        std::to_string(heap_top) + " bytes); it was released when its scope ended");
      }
    }
  }

  void add_edge(uint32_t producer, uint32_t consumer) {
    TaskEntry& p = tasks[producer];
    if (p.last_consumer == consumer + 1) return;
    p.last_consumer = consumer + 1;
    producers.push_back(producer);
  }

  // Records that `task` used the heap buffer at `offset`, in the deepest open scope owning it.
  void touch(uint64_t offset, uint32_t task) {
    for (std::size_t d = depth; d-- > 0;) {
      ScopeFrame& s = scopes[d];
      if (offset < s.heap_mark) continue;
      if (s.touched.empty() || s.touched.back() != task) s.touched.push_back(task);
      return;
    }
  }

  // Carves `bytes` (> 0) from the heap top; the task depends on the fences of released ranges it
  // reuses, alignment padding included, so every byte below the new top is claimed.
  uint64_t allocate(uint64_t bytes, uint32_t task) {
    const uint64_t offset = aligned(heap_top);
    const uint64_t new_top = offset + bytes;  // validated against the heap size beforehand
    while (!fences.empty() && fences.back().lo < new_top) {
      FenceSegment& f = fences.back();
      add_edge(f.fence_task, task);
      if (f.hi <= new_top) {
        fences.pop_back();
      } else {
        f.lo = new_top;
        break;
      }
    }
    heap_top = new_top;
    heap_high = std::max(heap_high, heap_top);
    if (depth > 0) {
      ScopeFrame& s = scopes[depth - 1];
      s.heap_peak = std::max(s.heap_peak, heap_top);
      alloc_log.push_back(heap.addr + offset);
    }
    return offset;
  }

  void note_extent(const Tensor& t, uint32_t task, bool writes) {
    uint64_t lo = 0;
    uint64_t hi = 0;
    t.byte_extent(&lo, &hi);
    if (hi > lo)
      touched_extents.push_back(Touched{t.buffer.addr + lo, t.buffer.addr + hi, task, writes});
  }

  // Appends a task. `spec` is null for dummy and allocation-only tasks. Validated first, so a
  // rejected task changes nothing.
  TaskId add_task(const TaskSpec* spec, uint8_t flags, TaskArgs& args) {
    const uint64_t id64 = tasks.size();
    check_capacity(id64);
    validate_args(id64, spec, args);
    const auto id = static_cast<uint32_t>(id64);
    const uint64_t fanin_begin = producers.size();
    const bool track = manual_depth == 0;  // manual scopes skip the tensor map entirely

    // The arguments are read once here: TaskArgs' accessors are bounds-checked calls, and the
    // passes below would otherwise repeat them several times per argument.
    const int tensor_count = args.tensor_count();
    std::array<ArgTag, kMaxTaskTensors> tags{};
    std::array<Tensor*, kMaxTaskTensors> tensors{};
    for (int i = 0; i < tensor_count; ++i) {
      tags[i] = args.tag(i);
      tensors[i] = &args.tensor(i);
    }

    // Tasks are appended before their edges are known: add_edge stamps producers only.
    for (int d = 0; d < args.dep_count(); ++d) add_edge(static_cast<uint32_t>(args.dep(d)), id);
    // All lookups precede all records, so a task never depends on itself.
    for (int i = 0; i < tensor_count; ++i) {
      const ArgTag tag = tags[i];
      if (tag == ArgTag::Out) continue;
      const Tensor& t = *tensors[i];
      if (track && tag != ArgTag::NoDep) {
        map.lookup(t, [&](TaskId writer) { add_edge(static_cast<uint32_t>(writer), id); });
      }
      const int64_t offset = heap_offset(t.buffer);
      if (offset >= 0) touch(static_cast<uint64_t>(offset), id);
      // NoDep arguments may be written by the kernel: counted as writes.
      note_extent(t, id, tag != ArgTag::In);
    }
    if (args.has_predicate()) {
      const Tensor& flag = args.predicate();
      if (track)
        map.lookup(flag, [&](TaskId writer) { add_edge(static_cast<uint32_t>(writer), id); });
      const int64_t offset = heap_offset(flag.buffer);
      if (offset >= 0) touch(static_cast<uint64_t>(offset), id);
      note_extent(flag, id, false);
    }
    for (int i = 0; i < tensor_count; ++i) {
      if (tags[i] != ArgTag::Out) continue;
      Tensor& t = *tensors[i];
      const uint64_t bytes = output_bytes(t);  // validated not to overflow
      if (bytes == 0) {
        // No memory, but a real address inside (or at the end of) the heap.
        t = make_output(t, heap.addr + std::min(aligned(heap_top), heap.size), 0,
                        static_cast<TaskId>(id));
      } else {
        const uint64_t offset = allocate(bytes, id);
        t = make_output(t, heap.addr + offset, bytes, static_cast<TaskId>(id));
        touch(offset, id);
        note_extent(t, id, true);
      }
    }
    if (track) {
      for (int i = 0; i < tensor_count; ++i) {
        const ArgTag tag = tags[i];
        if (tag == ArgTag::InOut || tag == ArgTag::OutputExisting || tag == ArgTag::Out) {
          map.record_write(*tensors[i], static_cast<TaskId>(id));
        }
      }
    }

    TaskEntry e{};
    e.func_id = -1;
    e.mix_aiv[0] = e.mix_aiv[1] = -1;
    e.core = static_cast<uint8_t>(CoreType::AIV);
    e.block_num = 1;
    if (spec != nullptr) {
      e.core = static_cast<uint8_t>(spec->core);
      e.block_num = spec->block_num;
      if (spec->core == CoreType::MIX) {
        e.func_id = spec->mix.aic;
        e.mix_aiv[0] = spec->mix.aiv0;
        e.mix_aiv[1] = spec->mix.aiv1;
      } else {
        e.func_id = spec->func_id;
      }
      if (args.has_predicate()) {
        flags |= common::kTaskFlagPredicated;
        e.predicate_addr = args.predicate().data_addr();
        e.predicate_bytes = static_cast<uint32_t>(args.predicate().element_bytes());
      }
    }
    e.flags = flags;
    e.arg_count = static_cast<uint16_t>(tensor_count + args.scalar_count());
    e.fanin_begin = fanin_begin;
    e.fanin_count = static_cast<uint32_t>(producers.size() - fanin_begin);
    e.args_begin = kernel_args.size();
    for (int i = 0; i < tensor_count; ++i) {
      kernel_args.push_back(static_cast<int64_t>(tensors[i]->data_addr()));
    }
    for (int i = 0; i < args.scalar_count(); ++i) {
      kernel_args.push_back(static_cast<int64_t>(args.scalar_bits(i)));
    }
    tasks.push_back(e);
    return static_cast<TaskId>(id);
  }

  // The get/set_tensor_data rule of host_build_graph: nothing runs before the graph is built, so
  // a tensor is only accessible while no task of this run touches it (`writes_only`: writes).
  void check_host_access(const Tensor& t, uint64_t bytes, bool writes_only, const char* op) const {
    auto where = [&] { return std::string(op) + ": tensor " + t.to_string(); };
    if (t.ndim < 1 || t.ndim > static_cast<uint32_t>(kMaxTensorDims) || t.element_bytes() == 0) {
      throw Error(StatusCode::InvalidArgument, where() + " has an invalid rank or dtype (rank 1.." +
                                                   std::to_string(kMaxTensorDims) +
                                                   ", a DataType)");
    }
    const TensorRegion region = TensorRegion::of(t);
    uint64_t end = 0;
    if (t.buffer.addr == 0 || __builtin_add_overflow(t.buffer.addr, t.buffer.size, &end) ||
        !region.bounded || region.hi > t.buffer.size) {
      throw Error(StatusCode::ViewOutOfBounds, where() + " does not lie inside its buffer " +
                                                   hex(t.buffer.addr) + "+" +
                                                   std::to_string(t.buffer.size));
    }
    const uint64_t expected = t.numel() * t.element_bytes();
    if (bytes != expected) {
      throw Error(StatusCode::InvalidArgument,
                  where() + ": " + std::to_string(bytes) + " bytes given, the tensor has " +
                      std::to_string(expected) + " (numel x element size)");
    }
    check_live(where, t);
    uint64_t lo = 0;
    uint64_t hi = 0;
    t.byte_extent(&lo, &hi);
    lo += t.buffer.addr;
    hi += t.buffer.addr;
    for (const Touched& x : touched_extents) {
      if ((writes_only && !x.writes) || x.hi <= lo || hi <= x.lo) continue;
      throw Error(StatusCode::UnsupportedFeature,
                  where() + ": task " + std::to_string(x.task) + (x.writes ? " writes" : " reads") +
                      " it, and host_build_graph runs no task before the graph is complete, so "
                      "there is nothing to wait for; use the tensormap_ringbuffer runtime, or "
                      "access the tensor before submitting tasks that use it");
    }
  }

  // Visits the elements of `t` in row-major order as (byte address, element bytes) runs,
  // merging the innermost dimension when it is contiguous.
  template <class OnRun>
  static void for_each_run(const Tensor& t, OnRun&& on_run) {
    const uint64_t esize = t.element_bytes();
    const uint32_t last = t.ndim - 1;
    const bool inner_contiguous = t.strides[last] == 1;
    const uint64_t run_elems = inner_contiguous ? t.shape[last] : 1;
    if (t.numel() == 0) return;
    std::array<uint64_t, kMaxTensorDims> index{};
    const uint32_t outer_dims = inner_contiguous ? last : t.ndim;
    uint64_t offset_bytes = 0;
    for (;;) {
      uint64_t element = t.start_offset;
      for (uint32_t d = 0; d < outer_dims; ++d) element += index[d] * t.strides[d];
      on_run(t.buffer.addr + element * esize, offset_bytes, run_elems * esize);
      offset_bytes += run_elems * esize;
      uint32_t d = outer_dims;
      for (; d-- > 0;) {
        if (++index[d] < t.shape[d]) break;
        index[d] = 0;
      }
      if (d == UINT32_MAX) return;
    }
  }

  void scope_begin(ScopeMode mode) {
    if (mode != ScopeMode::Auto && mode != ScopeMode::Manual) {
      throw Error(StatusCode::InvalidArgument, "scope_begin: mode value " +
                                                   std::to_string(static_cast<int>(mode)) +
                                                   " is not a ScopeMode (Auto 0, Manual 1)");
    }
    if (mode == ScopeMode::Auto && manual_depth > 0) {
      throw Error(StatusCode::InvalidScope,
                  "scope_begin(Auto) at depth " + std::to_string(depth + 1) + " inside " +
                      std::to_string(manual_depth) +
                      " open manual scope(s): the tensor map knows nothing of the manual tasks' "
                      "writes; nest automatic scopes only outside manual ones (task " +
                      std::to_string(tasks.size()) + " would be next)");
    }
    if (depth == scopes.size()) scopes.emplace_back();
    ScopeFrame& s = scopes[depth];
    s.mode = mode;
    if (mode == ScopeMode::Manual) ++manual_depth;
    s.heap_mark = heap_top;
    s.heap_peak = heap_top;
    s.first_task = tasks.size();
    s.alloc_log_begin = alloc_log.size();
    s.touched.clear();
    ++depth;
  }

  void scope_end() {
    if (depth == 0) {
      throw Error(StatusCode::ScopeMismatch, "scope_end without a matching scope_begin (" +
                                                 std::to_string(tasks.size()) +
                                                 " tasks submitted, no scope is open)");
    }
    ScopeFrame& s = scopes[depth - 1];
    uint64_t released_end = tasks.size();
    if (s.heap_peak > s.heap_mark) {
      // A dummy fence task completes once every user of [mark, peak) has; later outputs placed
      // there depend on it alone.
      const uint64_t id64 = tasks.size();
      check_capacity(id64);
      const auto id = static_cast<uint32_t>(id64);
      const uint64_t fanin_begin = producers.size();
      for (uint32_t t : s.touched) add_edge(t, id);
      while (!fences.empty() && fences.back().lo < s.heap_peak) {
        FenceSegment& f = fences.back();
        add_edge(f.fence_task, id);
        if (f.hi <= s.heap_peak) {
          fences.pop_back();
        } else {
          f.lo = s.heap_peak;
          break;
        }
      }
      fences.push_back(FenceSegment{s.heap_mark, s.heap_peak, id});
      TaskEntry e{};
      e.func_id = -1;
      e.mix_aiv[0] = e.mix_aiv[1] = -1;
      e.core = static_cast<uint8_t>(CoreType::AIV);
      e.block_num = 1;
      e.flags = common::kTaskFlagDummy;
      e.fanin_begin = fanin_begin;
      e.fanin_count = static_cast<uint32_t>(producers.size() - fanin_begin);
      e.args_begin = kernel_args.size();
      tasks.push_back(e);
      released_end = id64;
    }
    for (std::size_t i = s.alloc_log_begin; i < alloc_log.size(); ++i) {
      map.erase_buffer(alloc_log[i]);
    }
    alloc_log.resize(s.alloc_log_begin);
    while (!released.empty() && released.back().first >= s.first_task) released.pop_back();
    if (released_end > s.first_task) released.push_back(ReleasedTasks{s.first_task, released_end});
    heap_top = s.heap_mark;
    if (depth > 1) {
      ScopeFrame& parent = scopes[depth - 2];
      parent.heap_peak = std::max(parent.heap_peak, s.heap_peak);
    }
    s.touched.clear();
    if (s.mode == ScopeMode::Manual) --manual_depth;
    --depth;
  }

  void build_image(std::vector<uint8_t>& image) {
    const uint64_t n = tasks.size();
    const uint64_t edges = producers.size();
    if (edges > UINT32_MAX) {
      throw Error(StatusCode::CapacityExceeded,
                  "graph has " + std::to_string(edges) + " dependency edges, limit " +
                      std::to_string(UINT32_MAX) + " (split the graph into several runs)");
    }
    // Fan-out lists: the transpose of the per-consumer producer lists (CSR), so each list is in
    // ascending consumer order.
    fanout_begin.assign(n + 1, 0);
    for (uint32_t p : producers) ++fanout_begin[p + 1];
    for (uint64_t t = 0; t < n; ++t) fanout_begin[t + 1] += fanout_begin[t];
    cursor.assign(fanout_begin.begin(), fanout_begin.end() - 1);
    fanout.resize(edges);
    for (uint64_t c = 0; c < n; ++c) {
      const TaskEntry& e = tasks[c];
      for (uint64_t k = 0; k < e.fanin_count; ++k) {
        fanout[cursor[producers[e.fanin_begin + k]]++] = static_cast<uint32_t>(c);
      }
    }
    uint64_t ready = 0;
    for (const TaskEntry& e : tasks) ready += e.fanin_count == 0;

    common::GraphImageHeader h{};
    h.magic = common::kGraphImageMagic;
    h.version = common::kGraphImageVersion;
    h.task_count = static_cast<uint32_t>(n);
    h.initial_ready_count = static_cast<uint32_t>(ready);
    h.tasks_offset = align8(sizeof(common::GraphImageHeader));
    h.fanout_offset = h.tasks_offset + n * sizeof(common::TaskRecord);
    h.fanout_count = edges;
    h.args_offset = align8(h.fanout_offset + edges * sizeof(uint32_t));
    h.args_count = kernel_args.size();
    h.initial_ready_offset = h.args_offset + h.args_count * sizeof(int64_t);
    h.total_size = align8(h.initial_ready_offset + ready * sizeof(uint32_t));

    image.assign(h.total_size, 0);
    uint8_t* base = image.data();
    std::memcpy(base, &h, sizeof(h));
    uint8_t* ready_out = base + h.initial_ready_offset;
    for (uint64_t t = 0; t < n; ++t) {
      const TaskEntry& e = tasks[t];
      common::TaskRecord r{};
      r.func_id = e.func_id;
      r.mix_aiv[0] = e.mix_aiv[0];
      r.mix_aiv[1] = e.mix_aiv[1];
      r.block_num = e.block_num;
      r.predicate_addr = e.predicate_addr;
      r.predicate_bytes = e.predicate_bytes;
      r.core_type = e.core;
      r.flags = e.flags;
      r.arg_count = e.arg_count;
      r.fanin_count = e.fanin_count;
      r.fanout_begin = fanout_begin[t];
      r.fanout_count = fanout_begin[t + 1] - fanout_begin[t];
      r.args_begin = e.args_begin;
      std::memcpy(base + h.tasks_offset + t * sizeof(r), &r, sizeof(r));
      if (e.fanin_count == 0) {
        const auto id = static_cast<uint32_t>(t);
        std::memcpy(ready_out, &id, sizeof(id));
        ready_out += sizeof(id);
      }
    }
    if (edges) std::memcpy(base + h.fanout_offset, fanout.data(), edges * sizeof(uint32_t));
    if (!kernel_args.empty()) {
      std::memcpy(base + h.args_offset, kernel_args.data(), kernel_args.size() * sizeof(int64_t));
    }
  }
};

BuilderScratch::BuilderScratch() = default;
BuilderScratch::~BuilderScratch() = default;

HostGraphBuilder::HostGraphBuilder(const KernelTable& kernels, DeviceBuffer heap,
                                   const BuilderLimits& limits, BuilderScratch* scratch)
    : kernels_(kernels), limits_(limits), scratch_(scratch) {
  if (scratch_ != nullptr) state_ = std::move(scratch_->state_);
  if (state_ == nullptr) state_ = std::make_unique<State>();
  state_->reset(heap, limits_);
}

HostGraphBuilder::~HostGraphBuilder() {
  if (scratch_ != nullptr) scratch_->state_ = std::move(state_);
}

void HostGraphBuilder::build(OrchestrationEntry entry, const TaskArgs& args) {
  state_->check_open();
  if (entry == nullptr) {
    throw Error(StatusCode::InvalidArgument, "build: the orchestration entry is null");
  }
  // The latched error wins over anything the function throws afterwards (often a consequence).
  try {
    entry(*this, args);
  } catch (const Error&) {
    if (!state_->error.is_ok()) throw Error(state_->error);
    throw;
  } catch (const std::exception& e) {
    if (!state_->error.is_ok()) throw Error(state_->error);
    throw Error(StatusCode::OrchestrationFailed,
                std::string("orchestration function threw: ") + e.what());
  } catch (...) {
    if (!state_->error.is_ok()) throw Error(state_->error);
    throw Error(StatusCode::OrchestrationFailed,
                "orchestration function threw: an exception not derived from std::exception");
  }
  if (!state_->error.is_ok()) throw Error(state_->error);
  if (state_->depth > 0) {
    throw Error(StatusCode::ScopeMismatch,
                std::to_string(state_->depth) +
                    " scope(s) still open when the orchestration function returned");
  }
  state_->build_image(image_);
  state_->built = true;
}

uint64_t HostGraphBuilder::heap_high_water() const noexcept {
  return state_->heap_high;
}

bool HostGraphBuilder::accessed_tensor_data() const noexcept {
  return state_->accessed_tensor_data;
}

// Every Orchestration call: a no-op once an error latched; an Error thrown inside latches.
template <class Body>
auto HostGraphBuilder::guarded(Body&& body) -> decltype(body()) {
  using Result = decltype(body());
  if (!state_->error.is_ok()) {
    if constexpr (std::is_void_v<Result>) {
      return;
    } else {
      return kNoTask;
    }
  }
  try {
    state_->check_open();
    return body();
  } catch (const Error& e) {
    state_->latch(e);
    if constexpr (!std::is_void_v<Result>) return kNoTask;
  }
}

TaskId HostGraphBuilder::submit(const TaskSpec& spec, TaskArgs& args) {
  return guarded([&] {
    throw_if_error(check_task_spec(kernels_, state_->tasks.size(), spec, args));
    return state_->add_task(&spec, common::kTaskFlagNone, args);
  });
}

TaskId HostGraphBuilder::submit_dummy(TaskArgs& args) {
  return guarded([&] { return state_->add_task(nullptr, common::kTaskFlagDummy, args); });
}

TaskId HostGraphBuilder::allocate(TaskArgs& outputs) {
  return guarded([&] {
    const uint64_t id = state_->tasks.size();
    auto where = [&] { return "allocate (task " + std::to_string(id) + ")"; };
    for (int i = 0; i < outputs.tensor_count(); ++i) {
      if (outputs.tag(i) != ArgTag::Out) {
        throw Error(StatusCode::InvalidArgument,
                    where() + " arg " + std::to_string(i) + ": tag " +
                        std::string(arg_tag_name(outputs.tag(i))) +
                        "; an allocation-only task takes Out tensors only");
      }
    }
    if (outputs.scalar_count() != 0 || outputs.dep_count() != 0 || outputs.has_predicate()) {
      throw Error(StatusCode::InvalidArgument,
                  where() + ": " + std::to_string(outputs.scalar_count()) + " scalars, " +
                      std::to_string(outputs.dep_count()) + " explicit dependencies" +
                      (outputs.has_predicate() ? " and a predicate" : "") +
                      "; an allocation-only task completes at once and takes Out tensors only");
    }
    return state_->add_task(nullptr, common::kTaskFlagDummy, outputs);
  });
}

void HostGraphBuilder::scope_begin(ScopeMode mode) {
  guarded([&] { state_->scope_begin(mode); });
}

void HostGraphBuilder::scope_end() {
  guarded([&] { state_->scope_end(); });
}

void HostGraphBuilder::get_tensor_data(const Tensor& tensor, void* dst, uint64_t bytes) {
  guarded([&] {
    state_->check_host_access(tensor, bytes, /*writes_only=*/true, "get_tensor_data");
    state_->accessed_tensor_data = true;
    if (bytes != 0 && dst == nullptr) {
      throw Error(StatusCode::InvalidArgument, "get_tensor_data: destination is null");
    }
    auto* out = static_cast<uint8_t*>(dst);
    // On the simulated chip device memory is host memory: read through the device address.
    State::for_each_run(tensor, [&](uint64_t addr, uint64_t offset, uint64_t n) {
      std::memcpy(out + offset, reinterpret_cast<const void*>(static_cast<uintptr_t>(addr)), n);
    });
  });
}

void HostGraphBuilder::set_tensor_data(const Tensor& tensor, const void* src, uint64_t bytes) {
  guarded([&] {
    state_->check_host_access(tensor, bytes, /*writes_only=*/false, "set_tensor_data");
    state_->accessed_tensor_data = true;
    if (bytes != 0 && src == nullptr) {
      throw Error(StatusCode::InvalidArgument, "set_tensor_data: source is null");
    }
    const auto* in = static_cast<const uint8_t*>(src);
    State::for_each_run(tensor, [&](uint64_t addr, uint64_t offset, uint64_t n) {
      std::memcpy(reinterpret_cast<void*>(static_cast<uintptr_t>(addr)), in + offset, n);
    });
  });
}

bool HostGraphBuilder::failed() const {
  return !state_->error.is_ok();
}

Status HostGraphBuilder::error() const {
  return state_->error;
}

uint64_t HostGraphBuilder::task_count() const {
  return state_->tasks.size();
}

}  // namespace chiprt::orchestrator
