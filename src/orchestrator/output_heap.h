// OutputHeap: where host_build_graph places runtime outputs in the run's output heap.
//
// The graph runs after it is built, so memory released at scope_end may only be handed out again
// once every task that used it has finished. Each task's runtime outputs form one block (outputs
// 64-byte aligned inside it) placed by a ring allocator: the cursor moves forward through the
// heap, wraps at its end, and steps over blocks that are still live (owned by an open scope or the
// top level). Released memory is therefore reused oldest first and only once the heap has gone
// round, so the scopes of a graph whose outputs fit the heap share no memory and gain no edges:
// independent scopes stay parallel. When a scope ends, its live blocks are released behind a fence
// task (the builder's dummy task depending on every task that used them); a block placed over
// released memory depends on the fences of the blocks it overwrites, keeping edges O(1) per task.
// Only addresses are computed; the heap memory is never touched. Tasks [first, end) of an ended
// scope are remembered so that passing one of their outputs to a later task is reported instead
// of silently racing with the memory's next owner.
//
// Lifetime: owned by the builder's state and reset per build (storage kept); one thread.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "chiprt/status.h"
#include "chiprt/tensor.h"
#include "chiprt/types.h"

namespace chiprt::orchestrator {

class OutputHeap {
 public:
  static constexpr uint64_t kAlign = 64;
  static constexpr uint32_t kNoBlock = UINT32_MAX;
  // Where a block of outputs goes: [start, end), after stepping over `passed` segments (in ring
  // order) and overwriting the `reused` released segments that follow them.
  struct Placement {
    uint64_t start = 0;
    uint64_t end = 0;
    std::size_t passed = 0;
    std::size_t reused = 0;
  };
  // What check_live found for a tensor argument.
  enum class Liveness : uint8_t { Live, ReleasedOutput, Unowned };

  void reset(DeviceBuffer heap) noexcept;
  DeviceBuffer region() const noexcept { return heap_; }
  // The highest heap offset any block reached.
  uint64_t high_water() const noexcept { return high_; }
  uint64_t live_bytes() const noexcept { return live_bytes_; }
  std::size_t block_count() const noexcept { return blocks_.size(); }
  uint64_t cursor() const noexcept { return cursor_; }
  // `offset` rounded up so that heap base + offset is 64-byte aligned.
  uint64_t aligned(uint64_t offset) const noexcept {
    return ((heap_.addr + offset + kAlign - 1) & ~(kAlign - 1)) - heap_.addr;
  }
  bool contains(const DeviceBuffer& b) const noexcept {
    return b.addr >= heap_.addr && b.addr - heap_.addr < heap_.size;
  }

  // Finds where a block of `bytes` (> 0) goes: the first range at or after the cursor, going once
  // round the heap, that overlaps no live block. Read-only, so a task that does not fit changes
  // nothing.
  bool find(uint64_t bytes, Placement* out) const;
  // The HeapExhausted error of a block find() refused (`label` names the task).
  Status exhausted(const std::string& label, uint64_t bytes) const;
  // Takes the range `p` for `task`'s outputs, owned by the scope at `depth` (0: the top level,
  // never released); returns the new block. `add_edge(fence, task)` is called for the fence of
  // every released block it overwrites (alignment padding included); a partly overwritten one
  // keeps its remainder, so a later block placed there still waits for that fence.
  template <class AddEdge>
  uint32_t take(const Placement& p, uint32_t task, uint32_t depth, AddEdge&& add_edge) {
    for (std::size_t i = 0; i < p.passed; ++i) segments_.rotate_front_to_back();
    for (std::size_t i = 0; i < p.reused; ++i) {
      Segment& s = segments_.at(0);
      add_edge(blocks_[s.block].fence, task);
      if (s.hi <= p.end) {
        segments_.pop_front();
      } else {
        s.lo = p.end;  // only the last overwritten segment can reach past the block
      }
    }
    const auto block = static_cast<uint32_t>(blocks_.size());
    blocks_.push_back(Block{p.start, p.end, kLive, depth});
    segments_.push_back(Segment{p.start, p.end, block});
    cursor_ = p.end;
    live_bytes_ += p.end - p.start;
    high_ = std::max(high_, p.end);
    return block;
  }

  // Whether `t` (a tensor argument; `owner_block` is the block of the task that produced it, or
  // kNoBlock) names live memory: not a runtime output of an ended scope, and not heap memory that
  // no live block owns.
  Liveness check_live(const Tensor& t, uint32_t owner_block) const;
  // The InvalidTask error for Liveness::Unowned (`where` names the argument).
  Status unowned(const std::string& where, const Tensor& t) const;
  // Calls on_block(block) for the live blocks `t` uses (its first and last, when it spans two).
  template <class OnBlock>
  void blocks_used(const Tensor& t, uint32_t owner_block, OnBlock&& on_block) const {
    const DeviceBuffer& b = t.buffer;
    if (b.size == 0 || !contains(b)) return;
    if (const uint32_t owned = live_owner(t, owner_block); owned != kNoBlock) {
      on_block(owned);
      return;
    }
    const uint64_t offset = b.addr - heap_.addr;
    const Segment* first = live_segment_at(offset);
    if (first != nullptr) on_block(first->block);
    // check_live admitted a buffer spanning adjacent live blocks: its last block is used too.
    if (first != nullptr && b.size <= heap_.size - offset && offset + b.size > first->hi) {
      if (const Segment* last = live_segment_at(offset + b.size - 1)) on_block(last->block);
    }
  }
  // The scope depth owning `block` (0: the top level).
  uint32_t block_depth(uint32_t block) const noexcept { return blocks_[block].depth; }

  // Whether blocks [first_block, block_count()) include a live one (a scope's own blocks: those
  // of nested scopes were released when they ended).
  bool any_live_since(std::size_t first_block) const noexcept;
  // Releases the live blocks in [first_block, block_count()) behind task `fence`.
  void release_since(std::size_t first_block, uint32_t fence) noexcept;
  // Tasks [first, end) of an ended scope released their outputs; the records of scopes nested in
  // it (first >= its first) are merged into it.
  void note_released_tasks(uint64_t first, uint64_t end);

  uint64_t retained_bytes() const noexcept;

 private:
  static constexpr uint32_t kLive = UINT32_MAX;
  // One task's runtime outputs. `fence` is kLive while the owning scope is open, then the fence
  // task that completes once every user of the block has.
  struct Block {
    uint64_t lo;  // heap offsets [lo, hi)
    uint64_t hi;
    uint32_t fence;
    uint32_t depth;
  };
  // Heap range [lo, hi) of a block, or of what is left of a released block after newer blocks
  // overwrote part of it.
  struct Segment {
    uint64_t lo;
    uint64_t hi;
    uint32_t block;
  };
  // The heap's segments in ring order from the cursor (ascending offsets from the cursor to the
  // heap end, then from 0 to the cursor), non-overlapping. A circular buffer, so stepping over a
  // segment moves it from the front to the back in O(1) without allocating.
  class SegmentRing {
   public:
    void clear() noexcept {
      head_ = 0;
      size_ = 0;
    }
    std::size_t size() const noexcept { return size_; }
    Segment& at(std::size_t i) noexcept { return buf_[(head_ + i) & (buf_.size() - 1)]; }
    const Segment& at(std::size_t i) const noexcept {
      return buf_[(head_ + i) & (buf_.size() - 1)];
    }
    void pop_front() noexcept {
      head_ = (head_ + 1) & (buf_.size() - 1);
      --size_;
    }
    void push_back(const Segment& s) {
      if (size_ == buf_.size()) grow();
      buf_[(head_ + size_) & (buf_.size() - 1)] = s;
      ++size_;
    }
    const std::vector<Segment>& storage() const noexcept { return buf_; }
    void rotate_front_to_back() noexcept {
      const Segment s = at(0);
      pop_front();
      buf_[(head_ + size_) & (buf_.size() - 1)] = s;
      ++size_;
    }

   private:
    void grow();
    std::vector<Segment> buf_;  // capacity a power of two
    std::size_t head_ = 0;
    std::size_t size_ = 0;
  };
  // Tasks [first, end) whose runtime outputs were released by an ended scope; sorted, disjoint.
  struct ReleasedTasks {
    uint64_t first;
    uint64_t end;
  };

  bool in_released_scope(TaskId owner) const noexcept;
  // `owner_block` when it is live and all of `t`'s buffer lies in it, else kNoBlock. Runtime
  // outputs name their producer, so most heap arguments are found here in O(1) instead of by
  // live_segment_at. `t`'s buffer must lie in the heap.
  uint32_t live_owner(const Tensor& t, uint32_t owner_block) const noexcept;
  // The segment of a live block containing heap offset `offset`, or null.
  const Segment* live_segment_at(uint64_t offset) const noexcept;

  DeviceBuffer heap_{};
  std::vector<Block> blocks_;
  SegmentRing segments_;
  std::vector<ReleasedTasks> released_;
  uint64_t cursor_ = 0;      // heap offset where the next block search starts
  uint64_t live_bytes_ = 0;  // bytes of live blocks
  uint64_t high_ = 0;
};

}  // namespace chiprt::orchestrator
