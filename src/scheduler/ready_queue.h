// ReadyQueue: a lock-free bounded multi-producer multi-consumer FIFO of task ids (Vyukov's ring:
// one sequence number per cell), stored entirely inside caller-provided memory (the shared-state
// region). No allocation.
//
// Lifetime: `init` (one thread, before any other thread uses the queue; publishing the queue to
// them, e.g. by a release store, is the caller's job) formats the memory;
// afterwards push/pop, push_batch/pop_batch (several consecutive cells per claim of the shared
// position), maybe_nonempty and size_hint are safe from any number of threads at once
// (push_exclusive / pop_exclusive only while a single thread uses the queue at all). The memory
// must stay alive and 64-byte aligned while the queue is used. Capacity is a power of two.
#pragma once

#include <atomic>
#include <cstdint>

#include "common/shared_layout.h"

namespace chiprt::scheduler {

class ReadyQueue {
 public:
  // Bytes `capacity` cells need, including the head/tail lines (a multiple of 64); the layout
  // the host sizes the region with (common/shared_layout.h).
  static constexpr uint64_t bytes_for(uint64_t capacity) {
    return common::ready_queue_bytes(capacity);
  }
  // Smallest power of two >= max(min_items, 2).
  static constexpr uint64_t capacity_for(uint64_t min_items) {
    return common::ready_queue_capacity_for(min_items);
  }

  // Formats `memory` (bytes_for(capacity) bytes) and returns the queue living there.
  static ReadyQueue* init(void* memory, uint64_t capacity) {
    auto* queue = static_cast<ReadyQueue*>(memory);
    queue->control_.mask = capacity - 1;
    queue->control_.enqueue_pos.store(0, std::memory_order_relaxed);
    queue->control_.dequeue_pos.store(0, std::memory_order_relaxed);
    for (uint64_t i = 0; i < capacity; ++i) {
      queue->cells()[i].sequence.store(i, std::memory_order_relaxed);
    }
    return queue;
  }
  static ReadyQueue* at(void* memory) { return static_cast<ReadyQueue*>(memory); }

  uint64_t capacity() const { return control_.mask + 1; }

  // Returns false when the queue is full.
  bool push(uint32_t value) {
    uint64_t pos = control_.enqueue_pos.load(std::memory_order_relaxed);
    for (;;) {
      Cell& cell = cells()[pos & control_.mask];
      const uint64_t seq = cell.sequence.load(std::memory_order_acquire);
      const int64_t diff = static_cast<int64_t>(seq - pos);
      if (diff == 0) {
        if (control_.enqueue_pos.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
          cell.value = value;
          // seq_cst: a parked scheduler's maybe_nonempty must see it or its doorbell be rung.
          cell.sequence.store(pos + 1, std::memory_order_seq_cst);
          return true;
        }
      } else if (diff < 0) {
        return false;
      } else {
        pos = control_.enqueue_pos.load(std::memory_order_relaxed);
      }
    }
  }

  // Returns false when the queue is empty.
  bool pop(uint32_t* value) {
    uint64_t pos = control_.dequeue_pos.load(std::memory_order_relaxed);
    for (;;) {
      Cell& cell = cells()[pos & control_.mask];
      const uint64_t seq = cell.sequence.load(std::memory_order_acquire);
      const int64_t diff = static_cast<int64_t>(seq - (pos + 1));
      if (diff == 0) {
        if (control_.dequeue_pos.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
          *value = cell.value;
          cell.sequence.store(pos + control_.mask + 1, std::memory_order_release);
          return true;
        }
      } else if (diff < 0) {
        return false;
      } else {
        pos = control_.dequeue_pos.load(std::memory_order_relaxed);
      }
    }
  }

  // Pushes values[0, count) at consecutive positions with one claim of the enqueue position (a
  // scheduler publishing a pass's released tasks). Returns false, pushing nothing, when fewer
  // than `count` cells are free.
  bool push_batch(const uint32_t* values, uint32_t count) {
    if (count == 0) return true;
    uint64_t pos = control_.enqueue_pos.load(std::memory_order_relaxed);
    for (;;) {
      const int64_t diff = free_run(pos, count);
      if (diff < 0) return false;
      if (diff > 0) {
        pos = control_.enqueue_pos.load(std::memory_order_relaxed);
        continue;
      }
      if (control_.enqueue_pos.compare_exchange_weak(pos, pos + count, std::memory_order_relaxed)) {
        for (uint32_t i = 0; i < count; ++i) {
          Cell& cell = cells()[(pos + i) & control_.mask];
          cell.value = values[i];
          // seq_cst: as in push.
          cell.sequence.store(pos + i + 1, std::memory_order_seq_cst);
        }
        return true;
      }
    }
  }

  // Pops up to `max` values into out[0, n) with one claim of the dequeue position and returns n
  // (0 when the queue is empty). Takes the run of published cells at the head, so it may return
  // fewer than are queued while a producer is still publishing an earlier cell.
  uint32_t pop_batch(uint32_t* out, uint32_t max) {
    if (max == 0) return 0;
    uint64_t pos = control_.dequeue_pos.load(std::memory_order_relaxed);
    for (;;) {
      uint32_t ready = 0;
      // A cell at pos + i holding sequence pos + i + 1 can only be emptied by the consumer that
      // claimed position pos + i, so it stays full until the claim below fails or succeeds.
      while (ready < max && cells()[(pos + ready) & control_.mask].sequence.load(
                                std::memory_order_acquire) == pos + ready + 1) {
        ++ready;
      }
      if (ready == 0) {
        const uint64_t seq = cells()[pos & control_.mask].sequence.load(std::memory_order_acquire);
        if (static_cast<int64_t>(seq - (pos + 1)) < 0) return 0;
        pos = control_.dequeue_pos.load(std::memory_order_relaxed);
        continue;
      }
      if (control_.dequeue_pos.compare_exchange_weak(pos, pos + ready, std::memory_order_relaxed)) {
        for (uint32_t i = 0; i < ready; ++i) {
          Cell& cell = cells()[(pos + i) & control_.mask];
          out[i] = cell.value;
          cell.sequence.store(pos + i + control_.mask + 1, std::memory_order_release);
        }
        return ready;
      }
    }
  }

  // Values queued or being published at some instant during the call (a sizing hint only).
  uint64_t size_hint() const {
    const uint64_t head = control_.dequeue_pos.load(std::memory_order_relaxed);
    const uint64_t tail = control_.enqueue_pos.load(std::memory_order_relaxed);
    return tail > head ? tail - head : 0;
  }

  // push / pop for a queue only one thread uses (a serial launch, whose one host thread runs every
  // AICPU role and every core): the same cell protocol without the locked read-modify-writes.
  bool push_exclusive(uint32_t value) {
    const uint64_t pos = control_.enqueue_pos.load(std::memory_order_relaxed);
    Cell& cell = cells()[pos & control_.mask];
    if (cell.sequence.load(std::memory_order_relaxed) != pos) return false;  // full
    cell.value = value;
    cell.sequence.store(pos + 1, std::memory_order_relaxed);
    control_.enqueue_pos.store(pos + 1, std::memory_order_relaxed);
    return true;
  }
  bool pop_exclusive(uint32_t* value) {
    const uint64_t pos = control_.dequeue_pos.load(std::memory_order_relaxed);
    Cell& cell = cells()[pos & control_.mask];
    if (cell.sequence.load(std::memory_order_relaxed) != pos + 1) return false;  // empty
    *value = cell.value;
    cell.sequence.store(pos + control_.mask + 1, std::memory_order_relaxed);
    control_.dequeue_pos.store(pos + 1, std::memory_order_relaxed);
    return true;
  }

  // True when a pop might succeed now (a cheap check used before parking; false means the queue
  // was empty at some instant during the call).
  bool maybe_nonempty() const {
    const uint64_t pos = control_.dequeue_pos.load(std::memory_order_seq_cst);
    const uint64_t seq = cells()[pos & control_.mask].sequence.load(std::memory_order_seq_cst);
    return static_cast<int64_t>(seq - (pos + 1)) >= 0;
  }

 private:
  struct Cell {
    std::atomic<uint64_t> sequence;
    uint32_t value;
  };
  struct Control {
    alignas(64) uint64_t mask;
    alignas(64) std::atomic<uint64_t> enqueue_pos;
    alignas(64) std::atomic<uint64_t> dequeue_pos;
  };
  static_assert(sizeof(Cell) == common::kReadyQueueCellBytes &&
                sizeof(Control) == common::kReadyQueueControlBytes);

  // For push_batch at `pos`: 0 when the `count` cells from pos are all free for this lap,
  // negative when one still holds a value (full), positive when pos is stale.
  int64_t free_run(uint64_t pos, uint32_t count) {
    for (uint32_t i = 0; i < count; ++i) {
      const uint64_t seq =
          cells()[(pos + i) & control_.mask].sequence.load(std::memory_order_acquire);
      const int64_t diff = static_cast<int64_t>(seq - (pos + i));
      if (diff != 0) return diff;
    }
    return 0;
  }

  Cell* cells() { return reinterpret_cast<Cell*>(reinterpret_cast<char*>(this) + sizeof(Control)); }
  const Cell* cells() const {
    return reinterpret_cast<const Cell*>(reinterpret_cast<const char*>(this) + sizeof(Control));
  }

  Control control_;
};

}  // namespace chiprt::scheduler
