// FifoRing: the allocator behind each ring of a tensormap_ringbuffer set (output heap bytes,
// dependency-pool entries, spill words). Ranges are handed out in submission order and released
// in the same order (retirement is in order per set), so the ring is two monotone counters:
// positions are virtual (lap * capacity + offset) and a range never straddles the end of the
// ring: one that would is placed at the start of the next lap, the skipped tail counting as used
// until the range itself is released. When the ring is empty the next range starts at offset 0
// (rebase), so an empty ring always fits a range of `capacity` units.
//
// A task remembers release_mark() after its allocations; retiring it calls release_to(mark).
// Marks of tasks with nothing allocated may lag behind a rebase, which is why release_to keeps the
// larger position.
//
// Lifetime/threading: plain value owned by the orchestrator; one thread; never allocates.
#pragma once

#include <cstdint>

namespace chiprt::orchestrator {

class FifoRing {
 public:
  FifoRing() = default;
  explicit FifoRing(uint64_t capacity) : capacity_(capacity) {}

  uint64_t capacity() const noexcept { return capacity_; }
  // Units in use, skipped tails included.
  uint64_t used() const noexcept { return alloc_ - free_; }
  bool empty() const noexcept { return alloc_ == free_; }

  // Places `units` (> 0, <= capacity) contiguously; returns false when the ring lacks room now.
  // On success *offset is the range's offset in [0, capacity - units].
  bool allocate(uint64_t units, uint64_t* offset) noexcept {
    if (units == 0 || units > capacity_) return false;
    if (alloc_ == free_) {  // empty: rebase to the start of a lap
      alloc_ = lap_start(alloc_ + capacity_ - 1);
      free_ = alloc_;
    }
    uint64_t start = alloc_;
    if (start % capacity_ + units > capacity_) start = lap_start(start) + capacity_;
    if (start + units - free_ > capacity_) return false;
    *offset = start % capacity_;
    alloc_ = start + units;
    last_start_ = start;
    return true;
  }

  // Gives back the last `units` of the most recent allocation (which must still be the latest).
  void shrink_last(uint64_t units) noexcept {
    const uint64_t shrunk = alloc_ - units;
    alloc_ = shrunk > last_start_ ? shrunk : last_start_;
  }

  uint64_t release_mark() const noexcept { return alloc_; }
  void release_to(uint64_t mark) noexcept {
    if (mark > free_) free_ = mark;
  }

 private:
  uint64_t lap_start(uint64_t position) const noexcept { return position - position % capacity_; }

  uint64_t capacity_ = 0;
  uint64_t alloc_ = 0;  // next free position (virtual)
  uint64_t free_ = 0;   // oldest position still in use (virtual)
  uint64_t last_start_ = 0;
};

}  // namespace chiprt::orchestrator
