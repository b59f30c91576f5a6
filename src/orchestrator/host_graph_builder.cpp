#include "orchestrator/host_graph_builder.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>

#include "chiprt/status.h"
#include "common/graph_image.h"
#include "common/kernel_block.h"
#include "common/retention.h"
#include "orchestrator/graph_image_writer.h"
#include "orchestrator/output_heap.h"
#include "orchestrator/task_dependencies.h"
#include "orchestrator/task_front.h"
#include "orchestrator/tensor_map.h"

namespace chiprt::orchestrator {
namespace {

// Task ids are uint32 indices inside the image.
constexpr uint64_t kMaxImageTasks = UINT32_MAX - 1;

}  // namespace

// All builder state: orchestration-time bookkeeping (task records, edges, kernel arguments,
// tensor map, scopes, what tasks touched for the data-call rule); output placement is the
// OutputHeap's, the image layout the GraphImageWriter's, checks and records the TaskFront's.
// Per task the builder keeps one record plus its slices of two flat arrays (producers, kernel
// args); nothing is allocated per task beyond geometric growth. Scope_end adds a dummy "fence"
// task when the scope owned output blocks (OutputHeap). Fences are internal: they take a record
// (an index of the image) but no public id, so the ids the function gets (and task_count(),
// after(), owner_task, messages) number the user's tasks 0.. as tensormap_ringbuffer does. The
// builder works on record indices (edges, tensor map, blocks, scope frames) and converts only at
// the API: `task_ids` maps record -> public id, `records_of` public id -> record.
struct HostGraphBuilder::State {
  // What the builder needs of a task beyond its record.
  struct TaskBook {
    // consumer id + 1 of the last edge added from this task, so a consumer gets one edge per
    // producer however many of its arguments lead to it; last_edge is that edge's index in
    // `producers` (its kinds merge).
    uint32_t last_consumer;
    uint32_t output_block;  // OutputHeap block, kNoBlock when the task has no runtime outputs
    uint64_t last_edge;
  };
  // A scope owns the output blocks allocated while it is the innermost open scope.
  struct ScopeFrame {
    uint64_t first_task = 0;
    std::size_t first_block = 0;    // OutputHeap block index
    std::vector<uint32_t> touched;  // tasks that used a block this scope owns, ascending
  };
  // Absolute byte extent a task argument touched, for the get/set_tensor_data rules.
  struct Touched {
    uint64_t lo;
    uint64_t hi;
    TaskId task;  // public id
    bool writes;
  };
  static constexpr uint32_t kNoBlock = OutputHeap::kNoBlock;

  explicit State(const KernelTable& kernels) : front(kernels) {}

  // Starts a new graph. The containers keep their capacity: a State reused through
  // BuilderScratch writes into memory the previous build already faulted in, instead of growing
  // fresh allocations (page faults cost more than the rest of a submit).
  void reset(const KernelTable& kernels, DeviceBuffer heap_region, const BuilderLimits& limits) {
    front = TaskFront(kernels);
    front.reset(RunMemory());
    heap.reset(heap_region);
    max_tasks = std::min(limits.max_tasks, kMaxImageTasks);
    configured_max_tasks = limits.max_tasks;
    deps.clear();
    records.clear();
    books.clear();
    producers.clear();
    edge_kinds.clear();
    kernel_args_used = 0;
    task_ids.clear();
    records_of.clear();
    touched_extents.clear();
    built = false;
    accessed_tensor_data = false;
  }

  TaskFront front;
  OutputHeap heap;
  GraphImageWriter writer;
  uint64_t max_tasks = 0;
  uint64_t configured_max_tasks = 0;

  TaskDependencies deps;  // the tensor map and the scopes' outputs (task_dependencies.h)
  std::vector<common::TaskRecord> records;
  std::vector<TaskBook> books;
  std::vector<uint32_t> producers;          // grouped by consumer, in consumer order
  std::vector<DependencyKinds> edge_kinds;  // parallel to producers
  // The argument blocks of the tasks: the first kernel_args_used words. Kept at its size between
  // builds (block_words grows it), so a build writes each word once instead of zero-filling first.
  std::vector<int64_t> kernel_args;
  uint64_t kernel_args_used = 0;
  std::vector<int64_t> task_ids;     // per record: its public id, common::kScopeFenceId for fences
  std::vector<uint32_t> records_of;  // per public id: its record
  std::vector<ScopeFrame> scopes;    // frames beyond the front's depth are kept for their capacity
  std::vector<Touched> touched_extents;
  bool built = false;
  bool accessed_tensor_data = false;

  // `words` more argument words: returns the index of the first.
  uint64_t block_words(uint64_t words) {
    const uint64_t begin = kernel_args_used;
    kernel_args_used += words;
    if (kernel_args_used > kernel_args.size()) {
      kernel_args.resize(std::max<uint64_t>(kernel_args_used, 2 * kernel_args.size()));
    }
    return begin;
  }

  // Tasks the function submitted (public ids handed out); records also count the fences.
  uint64_t task_count() const noexcept { return records_of.size(); }
  uint64_t record_count() const noexcept { return records.size(); }
  std::size_t depth() const noexcept { return front.scope_depth(); }

  // Bytes of storage this state holds (capacities), which reset() keeps.
  uint64_t retained_bytes() const noexcept {
    uint64_t total = deps.retained_bytes() + heap.retained_bytes() + writer.retained_bytes() +
                     capacity_bytes(records) + capacity_bytes(books) + capacity_bytes(producers) +
                     capacity_bytes(edge_kinds) + capacity_bytes(kernel_args) +
                     capacity_bytes(task_ids) + capacity_bytes(records_of) +
                     capacity_bytes(scopes) + capacity_bytes(touched_extents);
    for (const ScopeFrame& frame : scopes) total += capacity_bytes(frame.touched);
    return total;
  }

  void check_open() const {
    if (built) {
      throw Error(StatusCode::InvalidArgument,
                  "the graph was already built; an Orchestration is only valid during its call");
    }
  }

  // Room for one more record (a task or a fence: both take an image slot).
  void check_capacity() const {
    if (record_count() >= max_tasks) {
      const uint64_t fences = record_count() - task_count();
      throw Error(StatusCode::CapacityExceeded,
                  "graph has " + std::to_string(record_count() + 1) + " tasks" +
                      (fences == 0 ? std::string()
                                   : " (" + std::to_string(fences) + " of them scope fences)") +
                      ", limit " + std::to_string(configured_max_tasks) +
                      " (CallConfig.max_tasks)");
    }
  }

  // The output block of the task that produced `t` (owner_task is a public id), or kNoBlock.
  uint32_t owner_block(const Tensor& t) const noexcept {
    if (t.owner_task < 0 || static_cast<uint64_t>(t.owner_task) >= records_of.size()) {
      return kNoBlock;
    }
    return books[records_of[static_cast<uint64_t>(t.owner_task)]].output_block;
  }

  // Placement checks of a task the front accepted, before any state changes. Throws
  // chiprt::Error; the public entry points latch it. On success `*placement` is where the
  // task's outputs go (its end equals its start when they need no memory).
  void place_args(uint64_t id, const TaskSpec* spec, const TaskArgs& args, const ArgList& list,
                  OutputHeap::Placement* placement) const {
    const uint64_t heap_size = heap.region().size;
    uint64_t block_bytes = 0;  // the outputs packed, each 64-byte aligned
    for (int i = 0; i < list.tensor_count; ++i) {
      const Tensor& t = *list.tensors[i];
      if (list.tags[i] == ArgTag::Out) {
        const uint64_t bytes = output_bytes(t);
        if (bytes == 0) continue;
        const uint64_t offset = (block_bytes + OutputHeap::kAlign - 1) & ~(OutputHeap::kAlign - 1);
        if (offset > heap_size || bytes > heap_size - offset) {
          throw Error(StatusCode::HeapExhausted,
                      task_label(id, spec) + " arg " + std::to_string(i) +
                          ": output heap exhausted: requested " + std::to_string(bytes) +
                          " bytes (" + std::to_string(offset) +
                          " before it for the task's other outputs), limit " +
                          std::to_string(heap_size) + " bytes (CallConfig.output_heap_bytes)");
        }
        block_bytes = offset + bytes;
        continue;
      }
      check_live(id, spec, args, static_cast<int8_t>(i), t);
    }
    if (args.has_predicate()) check_live(id, spec, args, kPredicateArg, args.predicate());
    *placement = OutputHeap::Placement{};
    if (block_bytes == 0) return;
    if (!heap.find(block_bytes, placement)) {
      throw Error(heap.exhausted(task_label(id, spec), block_bytes));
    }
  }

  // A tensor argument must not lie in output heap memory released by an ended scope.
  void check_live(uint64_t id, const TaskSpec* spec, const TaskArgs& args, int8_t arg,
                  const Tensor& t) const {
    switch (heap.check_live(t, owner_block(t))) {
      case OutputHeap::Liveness::Live:
        return;
      case OutputHeap::Liveness::ReleasedOutput:
        throw Error(TaskFront::released_output(id, spec, args, arg));
      case OutputHeap::Liveness::Unowned:
        throw Error(heap.unowned(
            task_label(id, spec) +
                (arg == kPredicateArg ? std::string(" predicate") : " arg " + std::to_string(arg)),
            t));
    }
  }

  void add_edge(uint32_t producer, uint32_t consumer, DependencyKinds kinds) {
    TaskBook& p = books[producer];
    if (p.last_consumer == consumer + 1) {
      edge_kinds[p.last_edge] |= kinds;
      return;
    }
    p.last_consumer = consumer + 1;
    p.last_edge = producers.size();
    producers.push_back(producer);
    edge_kinds.push_back(kinds);
  }

  // Records that `task` used heap tensor `t`, in the open scope owning its block (blocks of the
  // top level are never released and need no record).
  void touch(const Tensor& t, uint32_t task) {
    heap.blocks_used(t, owner_block(t), [&](uint32_t block) { touch_block(block, task); });
  }
  void touch_block(uint32_t block, uint32_t task) {
    const uint32_t owner = heap.block_depth(block);
    if (owner == 0) return;
    ScopeFrame& f = scopes[owner - 1];
    if (f.touched.empty() || f.touched.back() != task) f.touched.push_back(task);
  }

  // `task` is the public id (the message names it).
  void note_extent(const Tensor& t, TaskId task, bool writes) {
    uint64_t lo = 0;
    uint64_t hi = 0;
    t.byte_extent(&lo, &hi);
    if (hi > lo)
      touched_extents.push_back(Touched{t.buffer.addr + lo, t.buffer.addr + hi, task, writes});
  }

  // Appends a task the front accepted (`list` is its view of `args`). `spec` is null for dummy
  // and allocation-only tasks. Placement is checked first, so a rejected task changes nothing.
  TaskId add_task(const TaskSpec* spec, TaskArgs& args, const ArgList& list) {
    const uint64_t id64 = task_count();  // the public id
    check_capacity();
    OutputHeap::Placement placement;
    place_args(id64, spec, args, list, &placement);
    const auto public_id = static_cast<TaskId>(id64);
    const auto id = static_cast<uint32_t>(record_count());  // the record, edges name these
    const uint64_t fanin_begin = producers.size();
    const bool track = !front.in_manual_scope();  // manual scopes skip the tensor map entirely
    const int tensor_count = list.tensor_count;
    const auto& tags = list.tags;
    const auto& tensors = list.tensors;
    const uint64_t heap_addr = heap.region().addr;
    const uint64_t heap_size = heap.region().size;
    const uint32_t run = front.memory().run();

    // Tasks are appended before their edges are known: add_edge stamps producers only.
    books.push_back(TaskBook{0, kNoBlock, 0});
    lookup_after_producers(args, [&](TaskId dep, DependencyKinds kinds) {
      add_edge(records_of[static_cast<uint64_t>(dep)], id, kinds);  // the front checked dep < id
    });
    // All lookups precede all records (task_dependencies.h), so a task never depends on itself.
    if (track) {
      deps.lookup(args, list, [&](TaskId producer, DependencyKinds kinds) {
        add_edge(static_cast<uint32_t>(producer), id, kinds);
      });
    }
    for (int i = 0; i < tensor_count; ++i) {
      const ArgTag tag = tags[i];
      if (tag == ArgTag::Out) continue;
      const Tensor& t = *tensors[i];
      touch(t, id);
      // NoDep arguments may be written by the kernel: counted as writes.
      note_extent(t, public_id, tag != ArgTag::In);
    }
    if (args.has_predicate()) {
      const Tensor& flag = args.predicate();
      touch(flag, id);
      note_extent(flag, public_id, false);
    }
    // The outputs are packed into the block found by place_args, in argument order.
    const bool has_block = placement.end > placement.start;
    if (has_block) {
      const uint32_t block = heap.take(
          placement, id, static_cast<uint32_t>(depth()),
          [&](uint32_t fence, uint32_t task) { add_edge(fence, task, kDependencyHeapReuse); });
      books[id].output_block = block;
      if (depth() > 0) touch_block(block, id);
    }
    uint64_t next_output =
        has_block ? placement.start : std::min(heap.aligned(heap.cursor()), heap_size);
    for (int i = 0; i < tensor_count; ++i) {
      if (tags[i] != ArgTag::Out) continue;
      Tensor& t = *tensors[i];
      const uint64_t bytes = output_bytes(t);  // validated not to overflow
      if (bytes == 0) {
        // No memory, but a real address inside (or at the end of) the heap.
        t = make_output(t, heap_addr + std::min(heap.aligned(next_output), heap_size), 0, public_id,
                        run);
      } else {
        const uint64_t offset = heap.aligned(next_output);
        next_output = offset + bytes;
        t = make_output(t, heap_addr + offset, bytes, public_id, run);
        deps.note_output(t);
        note_extent(t, public_id, true);
      }
    }
    if (track) deps.record(static_cast<TaskId>(id), args, list);

    common::TaskRecord& r = records.emplace_back();
    TaskFront::encode_record(spec, &args, static_cast<uint16_t>(tensor_count + args.scalar_count()),
                             &r);
    r.fanin_count = static_cast<uint32_t>(producers.size() - fanin_begin);
    // The task's argument block; views_addr 0: the image is position independent. The unused
    // dimensions of the views are cleared too, so that an image's bytes depend on the graph only.
    r.args_begin =
        block_words(common::kernel_block_words(tensor_count, uint64_t(args.scalar_count()))) +
        common::kContextWords;
    common::write_kernel_block(kernel_args.data() + r.args_begin, tensors.data(), tensor_count,
                               args, r.block_num, 0, /*clear_unused_dims=*/true);
    task_ids.push_back(public_id);
    records_of.push_back(id);
    return public_id;
  }

  // The get/set_tensor_data rule of host_build_graph, after the front's checks: nothing runs
  // before the graph is built, so a tensor is only accessible while no task of this run touches
  // it (`writes_only`: writes).
  void check_host_access(const Tensor& t, bool writes_only, const char* op) const {
    auto where = [&] { return std::string(op) + ": tensor " + t.to_string(); };
    switch (heap.check_live(t, owner_block(t))) {
      case OutputHeap::Liveness::Live:
        break;
      case OutputHeap::Liveness::ReleasedOutput:
        throw Error(TaskFront::released_output(op, t));
      case OutputHeap::Liveness::Unowned:
        throw Error(heap.unowned(where(), t));
    }
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
  // merging the innermost dimension when it is contiguous; stops at the first error.
  template <class OnRun>
  static Status for_each_run(const Tensor& t, OnRun&& on_run) {
    const uint64_t esize = t.element_bytes();
    const uint32_t last = t.ndim - 1;
    const bool inner_contiguous = t.strides[last] == 1;
    const uint64_t run_elems = inner_contiguous ? t.shape[last] : 1;
    if (t.numel() == 0) return Status::ok();
    std::array<uint64_t, kMaxTensorDims> index{};
    const uint32_t outer_dims = inner_contiguous ? last : t.ndim;
    uint64_t offset_bytes = 0;
    for (;;) {
      uint64_t element = t.start_offset;
      for (uint32_t d = 0; d < outer_dims; ++d) element += index[d] * t.strides[d];
      Status status = on_run(t.buffer.addr + element * esize, offset_bytes, run_elems * esize);
      if (!status.is_ok()) return status;
      offset_bytes += run_elems * esize;
      uint32_t d = outer_dims;
      for (; d-- > 0;) {
        if (++index[d] < t.shape[d]) break;
        index[d] = 0;
      }
      if (d == UINT32_MAX) return Status::ok();
    }
  }

  // Placement of a scope the front opened.
  void scope_begin() {
    const std::size_t d = depth() - 1;
    if (d == scopes.size()) scopes.emplace_back();
    ScopeFrame& s = scopes[d];
    s.first_task = task_count();
    s.first_block = heap.block_count();
    deps.scope_begin();
    s.touched.clear();
  }

  // Ends the innermost scope (before the front closes it).
  void scope_end() {
    ScopeFrame& s = scopes[depth() - 1];
    if (heap.any_live_since(s.first_block)) {
      // A dummy fence task completes once every user of the scope's blocks has; a later block
      // placed over them depends on it alone. Internal: a record without a public id.
      check_capacity();
      const auto id = static_cast<uint32_t>(record_count());
      const uint64_t fanin_begin = producers.size();
      books.push_back(TaskBook{0, kNoBlock, 0});
      for (uint32_t t : s.touched) add_edge(t, id, kDependencyScopeFence);
      heap.release_since(s.first_block, id);
      common::TaskRecord& r = records.emplace_back();
      TaskFront::encode_record(nullptr, nullptr, 0, &r);
      r.fanin_count = static_cast<uint32_t>(producers.size() - fanin_begin);
      r.args_begin = block_words(common::kContextWords) + common::kContextWords;  // no arguments
      common::write_context(kernel_args.data() + r.args_begin, 0, 0, 1, 0);
      task_ids.push_back(common::kScopeFenceId);
    }
    deps.scope_end();  // the scope's outputs are released: their entries go
    heap.note_released_tasks(s.first_task, task_count());  // public ids, as owner_task
    s.touched.clear();
  }
};

BuilderScratch::BuilderScratch() = default;
BuilderScratch::~BuilderScratch() = default;

uint64_t BuilderScratch::retained_bytes() const noexcept {
  return (state_ != nullptr ? state_->retained_bytes() : 0) + spare_image_.capacity();
}

void BuilderScratch::take_back(std::unique_ptr<HostGraphBuilder::State> state) noexcept {
  const uint64_t tasks = state->record_count();
  if (common::release_retained(state->retained_bytes(), tasks, served_tasks_)) {
    state.reset();  // the next build starts with storage of its own size
    served_tasks_ = 0;
    return;
  }
  served_tasks_ = std::max(served_tasks_, tasks);
  state_ = std::move(state);
}

void BuilderScratch::recycle_image(std::vector<uint8_t>&& image) noexcept {
  std::vector<uint8_t> taken = std::move(image);
  if (common::release_retained(taken.capacity(), taken.size(), taken.capacity())) return;
  spare_image_ = std::move(taken);
}

HostGraphBuilder::HostGraphBuilder(const KernelTable& kernels, DeviceBuffer heap,
                                   const BuilderLimits& limits, BuilderScratch* scratch,
                                   TensorMemory* tensor_memory)
    : kernels_(kernels), limits_(limits), scratch_(scratch), tensor_memory_(tensor_memory) {
  if (scratch_ != nullptr) {
    state_ = std::move(scratch_->state_);
    image_ = std::move(scratch_->spare_image_);  // its capacity; the writer overwrites it all
  }
  if (state_ == nullptr) state_ = std::make_unique<State>(kernels_);
  state_->reset(kernels_, heap, limits_);
}

HostGraphBuilder::~HostGraphBuilder() {
  if (scratch_ != nullptr && state_ != nullptr) scratch_->take_back(std::move(state_));
}

void HostGraphBuilder::build(OrchestrationEntry entry, const TaskArgs& args, uint32_t run,
                             std::span<const std::byte> user_data) {
  State& s = *state_;
  s.check_open();
  s.front.reset(run != 0 ? RunMemory(args, s.heap.region(), run) : RunMemory(), user_data);
  // The function runs on the thread that holds the Worker: a Worker call from it is refused
  // instead of taking the Worker's lock again.
  s.front.run(entry, *this, args, common::RunRole::HostOrchestration);
  if (s.front.failed()) throw Error(s.front.error());
  s.writer.write(s.records, s.producers,
                 std::span<const int64_t>(s.kernel_args.data(), s.kernel_args_used), s.task_ids,
                 s.heap.region(), image_, s.edge_kinds,
                 limits_.edge_kinds ? &edge_kinds_ : nullptr);
  s.built = true;
}

uint64_t HostGraphBuilder::heap_high_water() const noexcept {
  return state_->heap.high_water();
}

bool HostGraphBuilder::accessed_tensor_data() const noexcept {
  return state_->accessed_tensor_data;
}

// Every Orchestration call: a no-op once an error latched; an Error thrown inside latches.
template <class Body>
auto HostGraphBuilder::guarded(Body&& body) -> decltype(body()) {
  using Result = decltype(body());
  if (state_->front.failed()) {
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
    state_->front.latch(e.code(), e.message());
    if constexpr (!std::is_void_v<Result>) return kNoTask;
  }
}

TaskId HostGraphBuilder::submit(const TaskSpec& spec, TaskArgs& args) {
  return guarded([&] {
    ArgList list;
    if (!state_->front.accept_task(state_->task_count(), &spec, args, &list)) return kNoTask;
    return state_->add_task(&spec, args, list);
  });
}

TaskId HostGraphBuilder::submit_dummy(TaskArgs& args) {
  return guarded([&] {
    ArgList list;
    if (!state_->front.accept_task(state_->task_count(), nullptr, args, &list)) return kNoTask;
    return state_->add_task(nullptr, args, list);
  });
}

TaskId HostGraphBuilder::allocate(TaskArgs& outputs) {
  return guarded([&] {
    ArgList list;
    if (!state_->front.accept_allocation(state_->task_count(), outputs, &list)) return kNoTask;
    return state_->add_task(nullptr, outputs, list);
  });
}

void HostGraphBuilder::scope_begin(ScopeMode mode) {
  guarded([&] {
    if (state_->front.open_scope(mode, state_->task_count())) state_->scope_begin();
  });
}

void HostGraphBuilder::scope_end() {
  guarded([&] {
    ScopeMode closed;
    if (state_->depth() > 0) state_->scope_end();
    state_->front.close_scope(state_->task_count(), &closed);
  });
}

// Both copy through the injected TensorMemory: the device address is never dereferenced here.
void HostGraphBuilder::get_tensor_data(const Tensor& tensor, void* dst, uint64_t bytes) {
  guarded([&] {
    State& s = *state_;
    if (!s.front.accept_data_call("get_tensor_data", tensor, dst, bytes)) return;
    s.check_host_access(tensor, /*writes_only=*/true, "get_tensor_data");
    s.accessed_tensor_data = true;
    auto* out = static_cast<uint8_t*>(dst);
    throw_if_error(State::for_each_run(tensor, [&](uint64_t addr, uint64_t offset, uint64_t n) {
      return device_memory("get_tensor_data").read(addr, out + offset, n);
    }));
  });
}

void HostGraphBuilder::set_tensor_data(const Tensor& tensor, const void* src, uint64_t bytes) {
  guarded([&] {
    State& s = *state_;
    if (!s.front.accept_data_call("set_tensor_data", tensor, src, bytes)) return;
    s.check_host_access(tensor, /*writes_only=*/false, "set_tensor_data");
    s.accessed_tensor_data = true;
    const auto* in = static_cast<const uint8_t*>(src);
    throw_if_error(State::for_each_run(tensor, [&](uint64_t addr, uint64_t offset, uint64_t n) {
      return device_memory("set_tensor_data").write(addr, in + offset, n);
    }));
  });
}

TensorMemory& HostGraphBuilder::device_memory(const char* call) const {
  if (tensor_memory_ == nullptr) {
    throw Error(StatusCode::UnsupportedFeature,
                std::string(call) + ": this graph builder was given no device memory access");
  }
  return *tensor_memory_;
}

bool HostGraphBuilder::failed() const {
  return state_->front.failed();
}

Status HostGraphBuilder::error() const {
  return state_->front.error();
}

uint64_t HostGraphBuilder::task_count() const {
  return state_->task_count();
}

std::span<const std::byte> HostGraphBuilder::user_data() const {
  return state_->front.user_data();
}

}  // namespace chiprt::orchestrator
