// CoreQueue: a lock-free bounded multi-producer multi-consumer FIFO of core ids (D. Vyukov's
// bounded MPMC queue), the run queue of the simulated chip's executor threads.
//
// Lifetime: created with the launch engine, never resized. Threading: push and pop may be called
// concurrently from any number of threads; neither allocates or blocks. The launch engine keeps
// every core in the queue at most once (its per-core state machine guards the push), so a queue
// with capacity >= 2 * cores is never logically full; push may still observe a slot whose previous
// consumer has claimed but not yet released it, and then returns false for the caller to retry.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace chiprt::platform::sim {

class CoreQueue {
 public:
  // `min_capacity` is rounded up to a power of two (at least 2).
  explicit CoreQueue(std::size_t min_capacity) {
    std::size_t capacity = 2;
    while (capacity < min_capacity) capacity *= 2;
    mask_ = capacity - 1;
    cells_ = std::make_unique<Cell[]>(capacity);
    for (std::size_t i = 0; i < capacity; ++i)
      cells_[i].sequence.store(i, std::memory_order_relaxed);
  }
  CoreQueue(const CoreQueue&) = delete;
  CoreQueue& operator=(const CoreQueue&) = delete;

  std::size_t capacity() const noexcept { return mask_ + 1; }

  // Returns false only when the slot at the tail is still held by a consumer (see class comment).
  bool push(uint32_t core) noexcept {
    std::size_t pos = enqueue_pos_.load(std::memory_order_relaxed);
    for (;;) {
      Cell& cell = cells_[pos & mask_];
      const std::size_t seq = cell.sequence.load(std::memory_order_acquire);
      const auto diff = static_cast<std::intptr_t>(seq) - static_cast<std::intptr_t>(pos);
      if (diff == 0) {
        if (enqueue_pos_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
          cell.core = core;
          cell.sequence.store(pos + 1, std::memory_order_release);
          return true;
        }
      } else if (diff < 0) {
        return false;
      } else {
        pos = enqueue_pos_.load(std::memory_order_relaxed);
      }
    }
  }

  // Returns false when the queue is empty.
  bool pop(uint32_t* core) noexcept {
    std::size_t pos = dequeue_pos_.load(std::memory_order_relaxed);
    for (;;) {
      Cell& cell = cells_[pos & mask_];
      const std::size_t seq = cell.sequence.load(std::memory_order_acquire);
      const auto diff = static_cast<std::intptr_t>(seq) - static_cast<std::intptr_t>(pos + 1);
      if (diff == 0) {
        if (dequeue_pos_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
          *core = cell.core;
          cell.sequence.store(pos + mask_ + 1, std::memory_order_release);
          return true;
        }
      } else if (diff < 0) {
        return false;
      } else {
        pos = dequeue_pos_.load(std::memory_order_relaxed);
      }
    }
  }

 private:
  struct Cell {
    std::atomic<std::size_t> sequence{0};
    uint32_t core = 0;
  };
  std::unique_ptr<Cell[]> cells_;
  std::size_t mask_ = 0;
  alignas(64) std::atomic<std::size_t> enqueue_pos_{0};
  alignas(64) std::atomic<std::size_t> dequeue_pos_{0};
};

}  // namespace chiprt::platform::sim
