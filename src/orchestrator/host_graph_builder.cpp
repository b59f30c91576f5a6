#include "orchestrator/host_graph_builder.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "chiprt/status.h"
#include "common/graph_image.h"
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
    uint8_t core;
    uint8_t flags;
    uint16_t arg_count;
    uint32_t fanin_count;
    // consumer id + 1 of the last edge added from this task, so a consumer gets one edge per
    // producer however many of its arguments lead to it.
    uint32_t last_consumer;
    uint64_t fanin_begin;  // into producers
    uint64_t args_begin;   // into kernel_args
  };
  // A scope's heap is the stack range [heap_mark, heap_peak) it ever used.
  struct ScopeFrame {
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

  State(const KernelTable& kernels, DeviceBuffer heap, const BuilderLimits& limits)
      : kernels(kernels),
        heap(heap),
        max_tasks(std::min(limits.max_tasks, kMaxImageTasks)),
        configured_max_tasks(limits.max_tasks) {}

  const KernelTable& kernels;
  DeviceBuffer heap;
  uint64_t max_tasks;
  uint64_t configured_max_tasks;

  TensorMap map;
  std::vector<TaskEntry> tasks;
  std::vector<uint32_t> producers;  // grouped by consumer, in consumer order
  std::vector<int64_t> kernel_args;
  std::vector<ScopeFrame> scopes;  // frames beyond `depth` are kept for their capacity
  std::size_t depth = 0;
  std::vector<FenceSegment> fences;
  std::vector<ReleasedTasks> released;
  std::vector<uint64_t> alloc_log;  // buffer addresses of outputs allocated inside open scopes
  uint64_t heap_top = 0;
  uint64_t heap_high = 0;
  bool built = false;

  static std::string label(uint64_t id, int32_t func_id) {
    return "task " + std::to_string(id) +
           (func_id < 0 ? std::string(" (dummy)") : " (func_id " + std::to_string(func_id) + ")");
  }

  void check_open() const {
    if (built) {
      throw Error(StatusCode::InvalidArgument,
                  "the graph was already built; an Orchestration is only valid during its call");
    }
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

  void validate_kernel(uint64_t id, int32_t func_id, CoreType core, const TaskArgs& args) const {
    if (func_id < 0 || func_id >= kMaxFuncId || !kernels[func_id].present) {
      throw Error(StatusCode::UnknownFuncId,
                  "func_id " + std::to_string(func_id) +
                      " is not provided by the active callable (submitted as task " +
                      std::to_string(id) + ")");
    }
    if (core == CoreType::MIX) {
      throw Error(StatusCode::UnsupportedFeature,
                  label(id, func_id) +
                      ": core type MIX is not supported yet; MIX tasks arrive with the full task "
                      "model (submit to AIC or AIV)");
    }
    if (static_cast<int>(core) >= kCoreTypeCount) {
      throw Error(StatusCode::InvalidArgument, label(id, func_id) + ": core type value " +
                                                   std::to_string(static_cast<int>(core)) +
                                                   " is not a CoreType");
    }
    const KernelInfo& k = kernels[func_id];
    if (k.core != core) {
      throw Error(StatusCode::CoreTypeMismatch,
                  "func_id " + std::to_string(func_id) + " runs on " +
                      std::string(core_type_name(k.core)) + " cores but " + label(id, func_id) +
                      " was submitted to " + std::string(core_type_name(core)));
    }
    const ArgSignature& sig = k.signature;
    if (sig.tensor_count == 0) return;
    // Messages are built only on failure: submit must not allocate.
    auto fn = [&] { return "func_id " + std::to_string(func_id); };
    if (args.tensor_count() != sig.tensor_count) {
      throw Error(StatusCode::SignatureMismatch,
                  fn() + ": expected " + std::to_string(sig.tensor_count) + " tensor args, got " +
                      std::to_string(args.tensor_count()) + " (" + label(id, func_id) + ")");
    }
    for (int i = 0; i < args.tensor_count(); ++i) {
      if (args.tag(i) != sig.tags[i]) {
        throw Error(StatusCode::SignatureMismatch,
                    fn() + " arg " + std::to_string(i) + ": expected " +
                        std::string(arg_tag_name(sig.tags[i])) + ", got " +
                        std::string(arg_tag_name(args.tag(i))) + " (" + label(id, func_id) + ")");
      }
    }
    if (args.scalar_count() != sig.scalar_count) {
      throw Error(StatusCode::SignatureMismatch,
                  fn() + ": expected " + std::to_string(sig.scalar_count) + " scalar args, got " +
                      std::to_string(args.scalar_count()) + " (" + label(id, func_id) + ")");
    }
  }

  // Everything that can reject a task, checked before any state changes so a caller that catches
  // the error can go on submitting. Returns nothing; throws chiprt::Error.
  void validate_args(uint64_t id, int32_t func_id, const TaskArgs& args) const {
    if (args.tensor_count() < 0 || args.tensor_count() > kMaxTaskTensors ||
        args.scalar_count() < 0 || args.scalar_count() > kMaxTaskScalars) {
      throw Error(StatusCode::TooManyArgs,
                  label(id, func_id) + ": " + std::to_string(args.tensor_count()) +
                      " tensors and " + std::to_string(args.scalar_count()) +
                      " scalars exceed kMaxTaskTensors/kMaxTaskScalars");
    }
    for (int d = 0; d < args.dep_count(); ++d) {
      const TaskId dep = args.dep(d);
      if (dep < 0 || static_cast<uint64_t>(dep) >= id) {
        throw Error(StatusCode::InvalidTask,
                    label(id, func_id) + ": explicit dependency on task " + std::to_string(dep) +
                        " is not an earlier task of this run" +
                        (id == 0 ? std::string(" (this is the first task)")
                                 : " (valid: 0.." + std::to_string(id - 1) + ")"));
      }
    }
    uint64_t top = heap_top;
    for (int i = 0; i < args.tensor_count(); ++i) {
      const Tensor& t = args.tensor(i);
      const ArgTag tag = args.tag(i);
      auto where = [&] { return label(id, func_id) + " arg " + std::to_string(i); };
      if (static_cast<int>(tag) >= kArgTagCount) {
        throw Error(
            StatusCode::InvalidArgument,
            where() + ": tag value " + std::to_string(static_cast<int>(tag)) + " is not an ArgTag");
      }
      if (t.ndim < 1 || t.ndim > static_cast<uint32_t>(kMaxTensorDims)) {
        throw Error(StatusCode::InvalidArgument, where() + ": rank " + std::to_string(t.ndim) +
                                                     " is outside [1, " +
                                                     std::to_string(kMaxTensorDims) + "]");
      }
      const uint64_t esize = element_size(t.dtype);
      if (esize == 0) {
        throw Error(StatusCode::InvalidArgument, where() + ": dtype value " +
                                                     std::to_string(static_cast<int>(t.dtype)) +
                                                     " is not a DataType");
      }
      if (tag == ArgTag::Out) {
        uint64_t bytes = esize;
        for (uint32_t d = 0; d < t.ndim; ++d) {
          if (__builtin_mul_overflow(bytes, t.shape[d], &bytes)) {
            throw Error(StatusCode::InvalidArgument,
                        where() + ": output shape dim " + std::to_string(d) + "=" +
                            std::to_string(t.shape[d]) + " makes it larger than 2^64 bytes");
          }
        }
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
      uint64_t buffer_end;
      if (__builtin_add_overflow(t.buffer.addr, t.buffer.size, &buffer_end)) {
        throw Error(StatusCode::ViewOutOfBounds, where() + ": buffer " + hex(t.buffer.addr) + "+" +
                                                     std::to_string(t.buffer.size) +
                                                     " wraps around the address space");
      }
      const TensorRegion region = TensorRegion::of(t);
      if (!region.bounded || region.hi > t.buffer.size) {
        throw Error(StatusCode::ViewOutOfBounds,
                    where() + ": tensor " + t.to_string() +
                        (region.bounded ? " covers bytes [" + std::to_string(region.lo) + ", " +
                                              std::to_string(region.hi) + ") of a " +
                                              std::to_string(t.buffer.size) + "-byte buffer"
                                        : std::string(" overflows 64-bit addressing")));
      }
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
      if (t.buffer.size > 0 && t.buffer.addr >= heap.addr &&
          t.buffer.addr - heap.addr < heap.size) {
        const uint64_t offset = t.buffer.addr - heap.addr;
        if (offset >= heap_top || t.buffer.size > heap_top - offset) {
          throw Error(
              StatusCode::InvalidTask,
              where() + ": tensor at " + hex(t.buffer.addr) + " (" + std::to_string(t.buffer.size) +
                  " bytes) lies in output heap memory no live output owns (live: first " +
                  std::to_string(heap_top) + " bytes); it was released when its scope ended");
        }
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

  TaskId add_task(int32_t func_id, CoreType core, uint8_t flags, TaskArgs& args) {
    const uint64_t id64 = tasks.size();
    validate_args(id64, func_id, args);
    const auto id = static_cast<uint32_t>(id64);
    const uint64_t fanin_begin = producers.size();

    // Tasks are appended before their edges are known: add_edge stamps producers only.
    for (int d = 0; d < args.dep_count(); ++d) add_edge(static_cast<uint32_t>(args.dep(d)), id);
    // All lookups precede all records, so a task never depends on itself.
    for (int i = 0; i < args.tensor_count(); ++i) {
      const ArgTag tag = args.tag(i);
      if (tag == ArgTag::Out) continue;
      const Tensor& t = args.tensor(i);
      if (tag != ArgTag::NoDep) {
        map.lookup(t, [&](TaskId writer) { add_edge(static_cast<uint32_t>(writer), id); });
      }
      const int64_t offset = heap_offset(t.buffer);
      if (offset >= 0) touch(static_cast<uint64_t>(offset), id);
    }
    for (int i = 0; i < args.tensor_count(); ++i) {
      if (args.tag(i) != ArgTag::Out) continue;
      Tensor& t = args.tensor(i);
      const uint64_t bytes = t.numel() * t.element_bytes();  // validated not to overflow
      Tensor out;
      out.ndim = t.ndim;
      out.dtype = t.dtype;
      uint64_t stride = 1;
      for (uint32_t d = t.ndim; d-- > 0;) {
        out.shape[d] = t.shape[d];
        out.strides[d] = stride;
        stride *= t.shape[d];
      }
      if (bytes == 0) {
        // No memory, but a real address inside (or at the end of) the heap.
        out.buffer = {heap.addr + std::min(aligned(heap_top), heap.size), 0};
      } else {
        const uint64_t offset = allocate(bytes, id);
        out.buffer = {heap.addr + offset, bytes};
        touch(offset, id);
      }
      out.owner_task = static_cast<TaskId>(id);
      out.version = 0;
      t = out;
    }
    for (int i = 0; i < args.tensor_count(); ++i) {
      const ArgTag tag = args.tag(i);
      if (tag == ArgTag::InOut || tag == ArgTag::OutputExisting || tag == ArgTag::Out) {
        map.record_write(args.tensor(i), static_cast<TaskId>(id));
      }
    }

    TaskEntry e{};
    e.func_id = func_id;
    e.core = static_cast<uint8_t>(core);
    e.flags = flags;
    e.arg_count = static_cast<uint16_t>(args.tensor_count() + args.scalar_count());
    e.fanin_begin = fanin_begin;
    e.fanin_count = static_cast<uint32_t>(producers.size() - fanin_begin);
    e.args_begin = kernel_args.size();
    for (int i = 0; i < args.tensor_count(); ++i) {
      kernel_args.push_back(static_cast<int64_t>(args.tensor(i).data_addr()));
    }
    for (int i = 0; i < args.scalar_count(); ++i) {
      kernel_args.push_back(static_cast<int64_t>(args.scalar_bits(i)));
    }
    tasks.push_back(e);
    return static_cast<TaskId>(id);
  }

  void scope_begin() {
    if (depth == scopes.size()) scopes.emplace_back();
    ScopeFrame& s = scopes[depth];
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
      e.core = static_cast<uint8_t>(CoreType::AIV);
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
    --depth;
  }

  void build_image(std::vector<uint8_t>& image) const {
    const uint64_t n = tasks.size();
    const uint64_t edges = producers.size();
    if (edges > UINT32_MAX) {
      throw Error(StatusCode::CapacityExceeded,
                  "graph has " + std::to_string(edges) + " dependency edges, limit " +
                      std::to_string(UINT32_MAX) + " (split the graph into several runs)");
    }
    // Fan-out lists: the transpose of the per-consumer producer lists (CSR), so each list is in
    // ascending consumer order.
    std::vector<uint32_t> fanout_begin(n + 1, 0);
    for (uint32_t p : producers) ++fanout_begin[p + 1];
    for (uint64_t t = 0; t < n; ++t) fanout_begin[t + 1] += fanout_begin[t];
    std::vector<uint32_t> cursor(fanout_begin.begin(), fanout_begin.end() - 1);
    std::vector<uint32_t> fanout(edges);
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

HostGraphBuilder::HostGraphBuilder(const KernelTable& kernels, DeviceBuffer heap,
                                   const BuilderLimits& limits)
    : kernels_(kernels),
      limits_(limits),
      state_(std::make_unique<State>(kernels_, heap, limits_)) {}

HostGraphBuilder::~HostGraphBuilder() = default;

void HostGraphBuilder::build(OrchestrationEntry entry, const TaskArgs& args) {
  state_->check_open();
  if (entry == nullptr) {
    throw Error(StatusCode::InvalidArgument, "build: the orchestration entry is null");
  }
  try {
    entry(*this, args);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Error(StatusCode::OrchestrationFailed,
                std::string("orchestration function threw: ") + e.what());
  } catch (...) {
    throw Error(StatusCode::OrchestrationFailed,
                "orchestration function threw: an exception not derived from std::exception");
  }
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

TaskId HostGraphBuilder::submit(int32_t func_id, CoreType core, TaskArgs& args) {
  state_->check_open();
  const uint64_t id = state_->tasks.size();
  state_->check_capacity(id);
  state_->validate_kernel(id, func_id, core, args);
  return state_->add_task(func_id, core, common::kTaskFlagNone, args);
}

TaskId HostGraphBuilder::submit_dummy(TaskArgs& args) {
  state_->check_open();
  state_->check_capacity(state_->tasks.size());
  return state_->add_task(-1, CoreType::AIV, common::kTaskFlagDummy, args);
}

void HostGraphBuilder::scope_begin() {
  state_->check_open();
  state_->scope_begin();
}

void HostGraphBuilder::scope_end() {
  state_->check_open();
  state_->scope_end();
}

uint64_t HostGraphBuilder::task_count() const {
  return state_->tasks.size();
}

}  // namespace chiprt::orchestrator
