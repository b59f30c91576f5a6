#include "orchestrator/host_graph_builder.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <type_traits>

#include "chiprt/status.h"
#include "common/graph_image.h"
#include "common/retention.h"
#include "common/run_context.h"
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

// Scopes and output memory. The graph runs after it is built, so memory released at scope_end may
// only be handed out again once every task that used it has finished. Each task's runtime outputs
// form one block (outputs 64-byte aligned inside it) placed by a ring allocator: the cursor moves
// forward through the heap, wraps at its end, and steps over blocks that are still live (owned by
// an open scope or the top level). Released memory is therefore reused oldest first and only
// once the heap has gone round, so the scopes of a graph whose outputs fit the heap share no
// memory and gain no edges: independent scopes stay parallel. scope_end adds a dummy "fence"
// task depending on every task that used a block the scope owned (collected during submit); a
// block placed over released memory depends on the fences of the blocks it overwrites, keeping
// edges O(1) per task. Fence tasks take task ids like any other task (task_count() includes
// them). A block that finds no free range in one turn round the heap is HeapExhausted. Tasks
// [first, end) of an ended scope are remembered so that passing one of their outputs to a later
// task is reported instead of silently racing with the memory's next owner.
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
    uint64_t fanin_begin;   // into producers
    uint64_t args_begin;    // into kernel_args
    uint32_t output_block;  // into blocks, kNoBlock when the task has no runtime outputs
  };
  // A scope owns the output blocks allocated while it is the innermost open scope.
  struct ScopeFrame {
    ScopeMode mode = ScopeMode::Auto;
    uint64_t first_task = 0;
    std::size_t first_block = 0;  // into blocks
    std::size_t alloc_log_begin = 0;
    std::vector<uint32_t> touched;  // tasks that used a block this scope owns, ascending
  };
  // One task's runtime outputs. `fence` is kLiveBlock while the owning scope is open, then the
  // fence task that completes once every user of the block has.
  struct OutputBlock {
    uint64_t lo;  // heap offsets [lo, hi)
    uint64_t hi;
    uint32_t fence;
    uint32_t depth;  // owner: scopes[depth - 1]; 0 is the top level, never released
  };
  static constexpr uint32_t kLiveBlock = UINT32_MAX;
  static constexpr uint32_t kNoBlock = UINT32_MAX;
  // Heap range [lo, hi) (offsets from the heap base) of a block, or of what is left of a released
  // block after newer blocks overwrote part of it.
  struct HeapSegment {
    uint64_t lo;
    uint64_t hi;
    uint32_t block;  // into blocks
  };
  // The heap's segments in ring order from the allocation cursor (ascending offsets from the
  // cursor to the heap end, then from 0 to the cursor), non-overlapping. A circular buffer, so
  // stepping over a segment moves it from the front to the back in O(1) without allocating.
  class SegmentRing {
   public:
    void clear() noexcept {
      head_ = 0;
      size_ = 0;
    }
    std::size_t size() const noexcept { return size_; }
    HeapSegment& at(std::size_t i) noexcept { return buf_[(head_ + i) & (buf_.size() - 1)]; }
    const HeapSegment& at(std::size_t i) const noexcept {
      return buf_[(head_ + i) & (buf_.size() - 1)];
    }
    void pop_front() noexcept {
      head_ = (head_ + 1) & (buf_.size() - 1);
      --size_;
    }
    void push_back(const HeapSegment& s) {
      if (size_ == buf_.size()) grow();
      buf_[(head_ + size_) & (buf_.size() - 1)] = s;
      ++size_;
    }
    const std::vector<HeapSegment>& storage() const noexcept { return buf_; }
    void rotate_front_to_back() noexcept {
      const HeapSegment s = at(0);
      pop_front();
      buf_[(head_ + size_) & (buf_.size() - 1)] = s;
      ++size_;
    }

   private:
    void grow() {
      std::vector<HeapSegment> next(std::max<std::size_t>(64, buf_.size() * 2));
      for (std::size_t i = 0; i < size_; ++i) next[i] = at(i);
      buf_.swap(next);
      head_ = 0;
    }
    std::vector<HeapSegment> buf_;  // capacity a power of two
    std::size_t head_ = 0;
    std::size_t size_ = 0;
  };
  // Where a block of outputs goes: [start, end), after stepping over `passed` segments (in ring
  // order) and overwriting the `reused` released segments that follow them.
  struct Placement {
    uint64_t start = 0;
    uint64_t end = 0;
    std::size_t passed = 0;
    std::size_t reused = 0;
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
    memory = RunMemory();
    max_tasks = std::min(limits.max_tasks, kMaxImageTasks);
    configured_max_tasks = limits.max_tasks;
    map.clear();
    tasks.clear();
    producers.clear();
    kernel_args.clear();
    depth = 0;
    blocks.clear();
    segments.clear();
    released.clear();
    alloc_log.clear();
    touched_extents.clear();
    manual_depth = 0;
    heap_cursor = 0;
    live_bytes = 0;
    heap_high = 0;
    built = false;
    accessed_tensor_data = false;
    error = Status();
  }

  DeviceBuffer heap;
  RunMemory memory;  // what the tasks may name; set by build()
  uint64_t max_tasks = 0;
  uint64_t configured_max_tasks = 0;

  TensorMap map;
  std::vector<TaskEntry> tasks;
  std::vector<uint32_t> producers;  // grouped by consumer, in consumer order
  std::vector<int64_t> kernel_args;
  std::vector<ScopeFrame> scopes;  // frames beyond `depth` are kept for their capacity
  std::size_t depth = 0;
  std::vector<OutputBlock> blocks;
  SegmentRing segments;
  std::vector<ReleasedTasks> released;
  std::vector<uint64_t> alloc_log;  // buffer addresses of outputs allocated inside open scopes
  std::vector<Touched> touched_extents;
  std::size_t manual_depth = 0;  // open manual scopes
  uint64_t heap_cursor = 0;      // heap offset where the next block search starts
  uint64_t live_bytes = 0;       // bytes of live blocks
  uint64_t heap_high = 0;
  bool built = false;
  bool accessed_tensor_data = false;
  Status error;  // the first error; latched
  // build_image's temporaries, kept for their capacity.
  std::vector<uint32_t> fanout_begin;
  std::vector<uint32_t> cursor;
  std::vector<uint32_t> fanout;

  // Bytes of storage this state holds (capacities), which reset() keeps.
  uint64_t retained_bytes() const noexcept {
    uint64_t total = map.retained_bytes() + capacity_bytes(segments.storage()) +
                     capacity_bytes(tasks) + capacity_bytes(producers) +
                     capacity_bytes(kernel_args) + capacity_bytes(scopes) + capacity_bytes(blocks) +
                     capacity_bytes(released) + capacity_bytes(alloc_log) +
                     capacity_bytes(touched_extents) + capacity_bytes(fanout_begin) +
                     capacity_bytes(cursor) + capacity_bytes(fanout);
    for (const ScopeFrame& frame : scopes) total += capacity_bytes(frame.touched);
    return total;
  }

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

  bool in_heap(const DeviceBuffer& b) const {
    return b.addr >= heap.addr && b.addr - heap.addr < heap.size;
  }

  // The live block of the task that produced `t` when all of `t`'s buffer lies in it, else
  // kNoBlock. Runtime outputs name their producer, so most heap arguments are found here in O(1)
  // instead of by live_segment_at. `t`'s buffer must lie in the heap.
  uint32_t owner_block(const Tensor& t) const {
    if (t.owner_task < 0 || static_cast<uint64_t>(t.owner_task) >= tasks.size()) return kNoBlock;
    const uint32_t b = tasks[static_cast<uint64_t>(t.owner_task)].output_block;
    if (b == kNoBlock) return kNoBlock;
    const OutputBlock& block = blocks[b];
    const uint64_t offset = t.buffer.addr - heap.addr;
    if (block.fence != kLiveBlock || offset < block.lo || t.buffer.size > block.hi - offset) {
      return kNoBlock;
    }
    return b;
  }

  // The segment of a live block containing heap offset `offset`, or null. Segments are sorted by
  // their distance from the cursor going forward round the heap, so this is a binary search (after
  // a look at the newest block, which the next tasks usually read).
  const HeapSegment* live_segment_at(uint64_t offset) const {
    const std::size_t n = segments.size();
    if (n == 0) return nullptr;
    auto live = [&](const HeapSegment& s) {
      return offset >= s.lo && offset < s.hi && blocks[s.block].fence == kLiveBlock ? &s : nullptr;
    };
    const HeapSegment& newest = segments.at(n - 1);
    if (offset >= newest.lo && offset < newest.hi) return live(newest);
    auto distance = [&](uint64_t o) {
      return o >= heap_cursor ? o - heap_cursor : o + heap.size - heap_cursor;
    };
    const uint64_t key = distance(offset);
    std::size_t lo = 0;
    std::size_t hi = n;  // first segment farther than `offset`
    while (lo < hi) {
      const std::size_t mid = lo + (hi - lo) / 2;
      if (distance(segments.at(mid).lo) <= key) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return lo == 0 ? nullptr : live(segments.at(lo - 1));
  }

  // Finds where a block of `bytes` (> 0) goes: the first range at or after the cursor, going once
  // round the heap, that overlaps no live block. Read-only, so a task that does not fit changes
  // nothing. Segments are visited by a virtual index: after wrapping at the heap end, indices n..
  // are the segments stepped over before the wrap, met again beyond the old cursor.
  bool find_placement(uint64_t bytes, Placement* out) const {
    const std::size_t n = segments.size();
    auto seg = [&](std::size_t v) -> const HeapSegment& { return segments.at(v < n ? v : v - n); };
    uint64_t pos = heap_cursor;
    std::size_t next = 0;   // first segment not stepped over
    std::size_t limit = n;  // segments reachable before the search would wrap again
    bool wrapped = false;
    // Before the wrap only segments at or beyond `pos` are ahead; the rest lie past the heap end.
    auto ahead = [&](std::size_t v) { return v < limit && (wrapped || seg(v).lo >= pos); };
    for (;;) {
      const uint64_t start = aligned(pos);
      if (start > heap.size || bytes > heap.size - start) {
        if (wrapped) return false;
        while (ahead(next)) ++next;
        limit = n + next;
        wrapped = true;
        pos = 0;
        continue;
      }
      const uint64_t end = start + bytes;
      std::size_t k = next;
      while (ahead(k) && seg(k).lo < end && blocks[seg(k).block].fence != kLiveBlock) ++k;
      if (ahead(k) && seg(k).lo < end) {  // a live block is in the way: continue past it
        pos = seg(k).hi;
        next = k + 1;
        continue;
      }
      *out = Placement{start, end, next, k - next};
      return true;
    }
  }

  // Takes the range `p` found for `task`'s outputs. The task depends on the fences of the
  // released blocks it overwrites (alignment padding included); a partly overwritten one keeps
  // its remainder, so a later block placed there still waits for that fence.
  void place_block(const Placement& p, uint32_t task) {
    for (std::size_t i = 0; i < p.passed; ++i) segments.rotate_front_to_back();
    for (std::size_t i = 0; i < p.reused; ++i) {
      HeapSegment& s = segments.at(0);
      add_edge(blocks[s.block].fence, task);
      if (s.hi <= p.end) {
        segments.pop_front();
      } else {
        s.lo = p.end;  // only the last overwritten segment can reach past the block
      }
    }
    const auto block = static_cast<uint32_t>(blocks.size());
    blocks.push_back(OutputBlock{p.start, p.end, kLiveBlock, static_cast<uint32_t>(depth)});
    segments.push_back(HeapSegment{p.start, p.end, block});
    heap_cursor = p.end;
    live_bytes += p.end - p.start;
    heap_high = std::max(heap_high, p.end);
  }

  static uint64_t align_up(uint64_t v) { return (v + kOutputAlign - 1) & ~(kOutputAlign - 1); }

  // Everything that can reject a task, checked before any state changes. Throws chiprt::Error;
  // the public entry points latch it. On success `*placement` is where the task's outputs go
  // (its end equals its start when they need no memory).
  void validate_args(uint64_t id, const TaskSpec* spec, TaskArgs& args,
                     Placement* placement) const {
    // The common task is accepted without building a Status; anything else gets the full check
    // and its message.
    ArgList list;
    if (!read_args(args, &list) || !task_args_accepted(memory, id, args, list)) {
      throw_if_error(check_task_args(memory, id, spec, args));
    }
    auto label = [&] { return task_label(id, spec); };
    uint64_t block_bytes = 0;  // the outputs packed, each 64-byte aligned
    for (int i = 0; i < args.tensor_count(); ++i) {
      const Tensor& t = args.tensor(i);
      auto where = [&] { return label() + " arg " + std::to_string(i); };
      if (args.tag(i) == ArgTag::Out) {
        const uint64_t bytes = output_bytes(t);
        if (bytes == 0) continue;
        const uint64_t offset = align_up(block_bytes);
        if (offset > heap.size || bytes > heap.size - offset) {
          throw Error(StatusCode::HeapExhausted,
                      where() + ": output heap exhausted: requested " + std::to_string(bytes) +
                          " bytes (" + std::to_string(offset) +
                          " before it for the task's other outputs), limit " +
                          std::to_string(heap.size) + " bytes (CallConfig.output_heap_bytes)");
        }
        block_bytes = offset + bytes;
        continue;
      }
      check_live(where, t);
    }
    if (args.has_predicate()) {
      check_live([&] { return label() + " predicate"; }, args.predicate());
    }
    *placement = Placement{};
    if (block_bytes == 0) return;
    if (!find_placement(block_bytes, placement)) {
      const bool fragmented = live_bytes + block_bytes <= heap.size;
      throw Error(StatusCode::HeapExhausted,
                  label() + ": output heap exhausted: requested " + std::to_string(block_bytes) +
                      " bytes for the task's outputs, " + std::to_string(live_bytes) +
                      " bytes used by outputs of open scopes and the top level, limit " +
                      std::to_string(heap.size) + " bytes (CallConfig.output_heap_bytes)" +
                      (fragmented ? "; the live outputs are spread over the heap so that no free "
                                    "range is large enough"
                                  : ""));
    }
  }

  // A tensor argument must not lie in output heap memory released by an ended scope.
  template <class Where>
  void check_live(Where where, const Tensor& t) const {
    if (in_released_scope(t.owner_task) && in_heap(t.buffer)) {
      throw Error(StatusCode::InvalidTask,
                  where() + ": tensor at " + hex(t.buffer.addr) + " (output of task " +
                      std::to_string(t.owner_task) +
                      ") was released when its scope ended; create it in an enclosing scope "
                      "to use it after that scope");
    }
    // Heap memory outside every live block belongs to no live output: whatever made this
    // tensor, its memory was released by an ended scope (the check above names the producer
    // when known). A buffer may span adjacent live blocks: its first and last bytes are checked.
    if (t.buffer.size > 0 && in_heap(t.buffer) && owner_block(t) == kNoBlock) {
      const uint64_t offset = t.buffer.addr - heap.addr;
      const HeapSegment* first = live_segment_at(offset);
      const bool owned = first != nullptr && t.buffer.size <= heap.size - offset &&
                         (offset + t.buffer.size <= first->hi ||
                          live_segment_at(offset + t.buffer.size - 1) != nullptr);
      if (!owned) {
        throw Error(
            StatusCode::InvalidTask,
            where() + ": tensor at " + hex(t.buffer.addr) + " (" + std::to_string(t.buffer.size) +
                " bytes) lies in output heap memory no live output owns (live outputs: " +
                std::to_string(live_bytes) + " bytes); it was released when its scope ended");
      }
    }
  }

  void add_edge(uint32_t producer, uint32_t consumer) {
    TaskEntry& p = tasks[producer];
    if (p.last_consumer == consumer + 1) return;
    p.last_consumer = consumer + 1;
    producers.push_back(producer);
  }

  // Records that `task` used heap tensor `t`, in the open scope owning its block (blocks of the
  // top level are never released and need no record).
  void touch(const Tensor& t, uint32_t task) {
    const DeviceBuffer& b = t.buffer;
    if (b.size == 0 || !in_heap(b)) return;
    if (const uint32_t owned = owner_block(t); owned != kNoBlock) {
      touch_block(owned, task);
      return;
    }
    const uint64_t offset = b.addr - heap.addr;
    const HeapSegment* first = live_segment_at(offset);
    if (first != nullptr) touch_block(first->block, task);
    // check_live admitted a buffer spanning adjacent live blocks: its last block is used too.
    if (first != nullptr && b.size <= heap.size - offset && offset + b.size > first->hi) {
      if (const HeapSegment* last = live_segment_at(offset + b.size - 1)) {
        touch_block(last->block, task);
      }
    }
  }
  void touch_block(uint32_t block, uint32_t task) {
    const uint32_t owner = blocks[block].depth;
    if (owner == 0) return;
    ScopeFrame& f = scopes[owner - 1];
    if (f.touched.empty() || f.touched.back() != task) f.touched.push_back(task);
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
    Placement placement;
    validate_args(id64, spec, args, &placement);
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
      touch(t, id);
      // NoDep arguments may be written by the kernel: counted as writes.
      note_extent(t, id, tag != ArgTag::In);
    }
    if (args.has_predicate()) {
      const Tensor& flag = args.predicate();
      if (track)
        map.lookup(flag, [&](TaskId writer) { add_edge(static_cast<uint32_t>(writer), id); });
      touch(flag, id);
      note_extent(flag, id, false);
    }
    // The outputs are packed into the block found by validate_args, in argument order.
    const bool has_block = placement.end > placement.start;
    if (has_block) {
      place_block(placement, id);
      if (depth > 0) touch_block(static_cast<uint32_t>(blocks.size() - 1), id);
    }
    uint64_t next_output = has_block ? placement.start : std::min(aligned(heap_cursor), heap.size);
    for (int i = 0; i < tensor_count; ++i) {
      if (tags[i] != ArgTag::Out) continue;
      Tensor& t = *tensors[i];
      const uint64_t bytes = output_bytes(t);  // validated not to overflow
      if (bytes == 0) {
        // No memory, but a real address inside (or at the end of) the heap.
        t = make_output(t, heap.addr + std::min(aligned(next_output), heap.size), 0,
                        static_cast<TaskId>(id), memory.run());
      } else {
        const uint64_t offset = aligned(next_output);
        next_output = offset + bytes;
        t = make_output(t, heap.addr + offset, bytes, static_cast<TaskId>(id), memory.run());
        if (depth > 0) alloc_log.push_back(heap.addr + offset);
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
    e.output_block = has_block ? static_cast<uint32_t>(blocks.size() - 1) : kNoBlock;
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
    throw_if_error(check_data_access(memory, op, t));
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
    s.first_task = tasks.size();
    s.first_block = blocks.size();
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
    // The blocks allocated since scope_begin that are still live are this scope's own (those of
    // nested scopes were released when they ended).
    bool owns_blocks = false;
    for (std::size_t b = s.first_block; b < blocks.size() && !owns_blocks; ++b) {
      owns_blocks = blocks[b].fence == kLiveBlock;
    }
    if (owns_blocks) {
      // A dummy fence task completes once every user of the scope's blocks has; a later block
      // placed over them depends on it alone.
      const uint64_t id64 = tasks.size();
      check_capacity(id64);
      const auto id = static_cast<uint32_t>(id64);
      const uint64_t fanin_begin = producers.size();
      for (uint32_t t : s.touched) add_edge(t, id);
      for (std::size_t b = s.first_block; b < blocks.size(); ++b) {
        OutputBlock& block = blocks[b];
        if (block.fence != kLiveBlock) continue;
        block.fence = id;
        live_bytes -= block.hi - block.lo;
      }
      TaskEntry e{};
      e.func_id = -1;
      e.mix_aiv[0] = e.mix_aiv[1] = -1;
      e.core = static_cast<uint8_t>(CoreType::AIV);
      e.block_num = 1;
      e.flags = common::kTaskFlagDummy;
      e.output_block = kNoBlock;
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

uint64_t BuilderScratch::retained_bytes() const noexcept {
  return (state_ != nullptr ? state_->retained_bytes() : 0) + spare_image_.capacity();
}

void BuilderScratch::take_back(std::unique_ptr<HostGraphBuilder::State> state) noexcept {
  const uint64_t tasks = state->tasks.size();
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
                                   const BuilderLimits& limits, BuilderScratch* scratch)
    : kernels_(kernels), limits_(limits), scratch_(scratch) {
  if (scratch_ != nullptr) {
    state_ = std::move(scratch_->state_);
    image_ = std::move(scratch_->spare_image_);  // its capacity; build_image overwrites it all
  }
  if (state_ == nullptr) state_ = std::make_unique<State>();
  state_->reset(heap, limits_);
}

HostGraphBuilder::~HostGraphBuilder() {
  if (scratch_ != nullptr && state_ != nullptr) scratch_->take_back(std::move(state_));
}

void HostGraphBuilder::build(OrchestrationEntry entry, const TaskArgs& args, uint32_t run) {
  state_->check_open();
  if (entry == nullptr) {
    throw Error(StatusCode::InvalidArgument, "build: the orchestration entry is null");
  }
  if (run != 0) state_->memory = RunMemory(args, state_->heap, run);
  // The latched error wins over anything the function throws afterwards (often a consequence).
  try {
    // The function runs on the thread that holds the Worker: a Worker call from it is refused
    // instead of taking the Worker's lock again (common/run_context.h).
    const common::RunContextScope context({common::RunRole::HostOrchestration});
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
    ArgList list;
    if (!read_args(args, &list) || !task_spec_accepted(kernels_, spec, args, list)) {
      throw_if_error(check_task_spec(kernels_, state_->tasks.size(), spec, args));
    }
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
