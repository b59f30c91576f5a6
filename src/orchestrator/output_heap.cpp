#include "orchestrator/output_heap.h"

#include "orchestrator/task_checks.h"
#include "orchestrator/tensor_map.h"

namespace chiprt::orchestrator {
void OutputHeap::SegmentRing::grow() {
  std::vector<Segment> next(std::max<std::size_t>(64, buf_.size() * 2));
  for (std::size_t i = 0; i < size_; ++i) next[i] = at(i);
  buf_.swap(next);
  head_ = 0;
}

void OutputHeap::reset(DeviceBuffer heap) noexcept {
  heap_ = heap;
  blocks_.clear();
  segments_.clear();
  released_.clear();
  cursor_ = 0;
  live_bytes_ = 0;
  high_ = 0;
}

uint64_t OutputHeap::retained_bytes() const noexcept {
  return capacity_bytes(segments_.storage()) + capacity_bytes(blocks_) + capacity_bytes(released_);
}

bool OutputHeap::in_released_scope(TaskId owner) const noexcept {
  if (owner < 0 || released_.empty()) return false;
  const auto t = static_cast<uint64_t>(owner);
  auto it = std::upper_bound(released_.begin(), released_.end(), t,
                             [](uint64_t v, const ReleasedTasks& r) { return v < r.first; });
  if (it == released_.begin()) return false;
  --it;
  return t < it->end;
}

uint32_t OutputHeap::live_owner(const Tensor& t, uint32_t owner_block) const noexcept {
  if (owner_block == kNoBlock) return kNoBlock;
  const Block& block = blocks_[owner_block];
  const uint64_t offset = t.buffer.addr - heap_.addr;
  if (block.fence != kLive || offset < block.lo || t.buffer.size > block.hi - offset) {
    return kNoBlock;
  }
  return owner_block;
}

// Segments are sorted by their distance from the cursor going forward round the heap, so this is
// a binary search (after a look at the newest block, which the next tasks usually read).
const OutputHeap::Segment* OutputHeap::live_segment_at(uint64_t offset) const noexcept {
  const std::size_t n = segments_.size();
  if (n == 0) return nullptr;
  auto live = [&](const Segment& s) {
    return offset >= s.lo && offset < s.hi && blocks_[s.block].fence == kLive ? &s : nullptr;
  };
  const Segment& newest = segments_.at(n - 1);
  if (offset >= newest.lo && offset < newest.hi) return live(newest);
  auto distance = [&](uint64_t o) { return o >= cursor_ ? o - cursor_ : o + heap_.size - cursor_; };
  const uint64_t key = distance(offset);
  std::size_t lo = 0;
  std::size_t hi = n;  // first segment farther than `offset`
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (distance(segments_.at(mid).lo) <= key) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo == 0 ? nullptr : live(segments_.at(lo - 1));
}

// Segments are visited by a virtual index: after wrapping at the heap end, indices n.. are the
// segments stepped over before the wrap, met again beyond the old cursor.
bool OutputHeap::find(uint64_t bytes, Placement* out) const {
  const std::size_t n = segments_.size();
  auto seg = [&](std::size_t v) -> const Segment& { return segments_.at(v < n ? v : v - n); };
  uint64_t pos = cursor_;
  std::size_t next = 0;   // first segment not stepped over
  std::size_t limit = n;  // segments reachable before the search would wrap again
  bool wrapped = false;
  // Before the wrap only segments at or beyond `pos` are ahead; the rest lie past the heap end.
  auto ahead = [&](std::size_t v) { return v < limit && (wrapped || seg(v).lo >= pos); };
  for (;;) {
    const uint64_t start = aligned(pos);
    if (start > heap_.size || bytes > heap_.size - start) {
      if (wrapped) return false;
      while (ahead(next)) ++next;
      limit = n + next;
      wrapped = true;
      pos = 0;
      continue;
    }
    const uint64_t end = start + bytes;
    std::size_t k = next;
    while (ahead(k) && seg(k).lo < end && blocks_[seg(k).block].fence != kLive) ++k;
    if (ahead(k) && seg(k).lo < end) {  // a live block is in the way: continue past it
      pos = seg(k).hi;
      next = k + 1;
      continue;
    }
    *out = Placement{start, end, next, k - next};
    return true;
  }
}

Status OutputHeap::exhausted(const std::string& label, uint64_t bytes) const {
  const bool fragmented = live_bytes_ + bytes <= heap_.size;
  return Status(StatusCode::HeapExhausted,
                label + ": output heap exhausted: requested " + std::to_string(bytes) +
                    " bytes for the task's outputs, " + std::to_string(live_bytes_) +
                    " bytes used by outputs of open scopes and the top level, limit " +
                    std::to_string(heap_.size) + " bytes (CallConfig.output_heap_bytes)" +
                    (fragmented ? "; the live outputs are spread over the heap so that no free "
                                  "range is large enough"
                                : ""));
}

OutputHeap::Liveness OutputHeap::check_live(const Tensor& t, uint32_t owner_block) const {
  if (!contains(t.buffer)) return Liveness::Live;
  if (in_released_scope(t.owner_task)) return Liveness::ReleasedOutput;
  // Heap memory outside every live block belongs to no live output: whatever made this tensor,
  // its memory was released by an ended scope. A buffer may span adjacent live blocks: its first
  // and last bytes are checked.
  if (t.buffer.size > 0 && live_owner(t, owner_block) == kNoBlock) {
    const uint64_t offset = t.buffer.addr - heap_.addr;
    const Segment* first = live_segment_at(offset);
    const bool owned = first != nullptr && t.buffer.size <= heap_.size - offset &&
                       (offset + t.buffer.size <= first->hi ||
                        live_segment_at(offset + t.buffer.size - 1) != nullptr);
    if (!owned) return Liveness::Unowned;
  }
  return Liveness::Live;
}

Status OutputHeap::unowned(const std::string& where, const Tensor& t) const {
  return Status(StatusCode::InvalidTask,
                where + ": tensor at " + hex_address(t.buffer.addr) + " (" +
                    std::to_string(t.buffer.size) +
                    " bytes) lies in output heap memory no live output owns (live outputs: " +
                    std::to_string(live_bytes_) + " bytes); it was released when its scope ended");
}

bool OutputHeap::any_live_since(std::size_t first_block) const noexcept {
  for (std::size_t b = first_block; b < blocks_.size(); ++b) {
    if (blocks_[b].fence == kLive) return true;
  }
  return false;
}

void OutputHeap::release_since(std::size_t first_block, uint32_t fence) noexcept {
  for (std::size_t b = first_block; b < blocks_.size(); ++b) {
    Block& block = blocks_[b];
    if (block.fence != kLive) continue;
    block.fence = fence;
    live_bytes_ -= block.hi - block.lo;
  }
}

void OutputHeap::note_released_tasks(uint64_t first, uint64_t end) {
  while (!released_.empty() && released_.back().first >= first) released_.pop_back();
  if (end > first) released_.push_back(ReleasedTasks{first, end});
}

}  // namespace chiprt::orchestrator
