#include "scheduler/ready_queue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <new>
#include <thread>
#include <vector>

namespace chiprt::scheduler {
namespace {

struct QueueMemory {
  explicit QueueMemory(uint64_t capacity) : bytes(ReadyQueue::bytes_for(capacity)) {
    memory = ::operator new(bytes, std::align_val_t(64));
    std::memset(memory, 0, bytes);
    queue = ReadyQueue::init(memory, capacity);
  }
  ~QueueMemory() { ::operator delete(memory, std::align_val_t(64)); }
  uint64_t bytes;
  void* memory;
  ReadyQueue* queue;
};

TEST(ReadyQueue, CapacityIsPowerOfTwoAtLeastTheRequest) {
  EXPECT_EQ(ReadyQueue::capacity_for(0), 2u);
  EXPECT_EQ(ReadyQueue::capacity_for(1), 2u);
  EXPECT_EQ(ReadyQueue::capacity_for(2), 2u);
  EXPECT_EQ(ReadyQueue::capacity_for(3), 4u);
  EXPECT_EQ(ReadyQueue::capacity_for(1000), 1024u);
  EXPECT_EQ(ReadyQueue::capacity_for(1024), 1024u);
  EXPECT_EQ(ReadyQueue::bytes_for(4) % 64, 0u);
}

TEST(ReadyQueue, EmptyPopFailsAndFifoOrderHolds) {
  QueueMemory m(8);
  uint32_t value = 0;
  EXPECT_FALSE(m.queue->pop(&value));
  EXPECT_FALSE(m.queue->maybe_nonempty());
  for (uint32_t i = 0; i < 5; ++i) ASSERT_TRUE(m.queue->push(i * 10));
  EXPECT_TRUE(m.queue->maybe_nonempty());
  for (uint32_t i = 0; i < 5; ++i) {
    ASSERT_TRUE(m.queue->pop(&value));
    EXPECT_EQ(value, i * 10);
  }
  EXPECT_FALSE(m.queue->pop(&value));
  EXPECT_FALSE(m.queue->maybe_nonempty());
}

TEST(ReadyQueue, FullPushFailsUntilAPopFreesACell) {
  QueueMemory m(4);
  for (uint32_t i = 0; i < 4; ++i) ASSERT_TRUE(m.queue->push(i));
  EXPECT_FALSE(m.queue->push(99));
  uint32_t value = 0;
  ASSERT_TRUE(m.queue->pop(&value));
  EXPECT_EQ(value, 0u);
  EXPECT_TRUE(m.queue->push(4));
  EXPECT_FALSE(m.queue->push(5));
  for (uint32_t expect = 1; expect <= 4; ++expect) {
    ASSERT_TRUE(m.queue->pop(&value));
    EXPECT_EQ(value, expect);
  }
}

TEST(ReadyQueue, WrapsAroundManyTimes) {
  QueueMemory m(2);
  uint32_t value = 0;
  for (uint32_t i = 0; i < 1000; ++i) {
    ASSERT_TRUE(m.queue->push(i));
    ASSERT_TRUE(m.queue->push(i + 1000000));
    ASSERT_TRUE(m.queue->pop(&value));
    EXPECT_EQ(value, i);
    ASSERT_TRUE(m.queue->pop(&value));
    EXPECT_EQ(value, i + 1000000);
  }
}

// The single-thread operations keep the same cell protocol: FIFO order, full and empty detection,
// wrap-around, and they interleave with the shared operations on one queue.
TEST(ReadyQueue, ExclusiveOpsKeepTheProtocolOfTheSharedOps) {
  QueueMemory m(4);
  uint32_t value = 0;
  EXPECT_FALSE(m.queue->pop_exclusive(&value));
  for (uint32_t i = 0; i < 4; ++i) ASSERT_TRUE(m.queue->push_exclusive(i));
  EXPECT_FALSE(m.queue->push_exclusive(99));
  EXPECT_FALSE(m.queue->push(99));
  ASSERT_TRUE(m.queue->pop(&value));
  EXPECT_EQ(value, 0u);
  ASSERT_TRUE(m.queue->push_exclusive(4));
  EXPECT_FALSE(m.queue->push_exclusive(5));
  for (uint32_t expect = 1; expect <= 4; ++expect) {
    ASSERT_TRUE(m.queue->pop_exclusive(&value));
    EXPECT_EQ(value, expect);
  }
  EXPECT_FALSE(m.queue->pop_exclusive(&value));
  EXPECT_FALSE(m.queue->maybe_nonempty());
  for (uint32_t i = 0; i < 1000; ++i) {
    ASSERT_TRUE(i % 2 == 0 ? m.queue->push_exclusive(i) : m.queue->push(i));
    EXPECT_TRUE(m.queue->maybe_nonempty());
    ASSERT_TRUE(i % 3 == 0 ? m.queue->pop(&value) : m.queue->pop_exclusive(&value));
    EXPECT_EQ(value, i);
  }
}

// Batches keep FIFO order, pop at most what is queued, and fail whole (push nothing) when the
// queue lacks room for the batch.
TEST(ReadyQueue, BatchesKeepFifoOrderAndFailWholeWhenFull) {
  QueueMemory m(8);
  uint32_t out[8] = {};
  EXPECT_EQ(m.queue->pop_batch(out, 4), 0u);
  EXPECT_EQ(m.queue->size_hint(), 0u);
  const uint32_t first[5] = {10, 11, 12, 13, 14};
  ASSERT_TRUE(m.queue->push_batch(first, 5));
  EXPECT_EQ(m.queue->size_hint(), 5u);
  const uint32_t too_many[4] = {20, 21, 22, 23};
  EXPECT_FALSE(m.queue->push_batch(too_many, 4));  // 3 cells free
  EXPECT_EQ(m.queue->size_hint(), 5u);
  ASSERT_TRUE(m.queue->push_batch(too_many, 2));
  ASSERT_TRUE(m.queue->push(99));  // full now
  EXPECT_FALSE(m.queue->push_batch(too_many, 1));
  EXPECT_TRUE(m.queue->push_batch(too_many, 0));
  ASSERT_EQ(m.queue->pop_batch(out, 2), 2u);
  EXPECT_EQ(out[0], 10u);
  EXPECT_EQ(out[1], 11u);
  uint32_t value = 0;
  ASSERT_TRUE(m.queue->pop(&value));
  EXPECT_EQ(value, 12u);
  ASSERT_EQ(m.queue->pop_batch(out, 8), 5u);
  const uint32_t rest[5] = {13, 14, 20, 21, 99};
  for (uint32_t i = 0; i < 5; ++i) EXPECT_EQ(out[i], rest[i]) << "index " << i;
  EXPECT_EQ(m.queue->pop_batch(out, 8), 0u);
  EXPECT_FALSE(m.queue->maybe_nonempty());
  // Across the wrap-around of the ring.
  for (uint32_t round = 0; round < 100; ++round) {
    const uint32_t batch[3] = {round, round + 1000, round + 2000};
    ASSERT_TRUE(m.queue->push_batch(batch, 3));
    ASSERT_EQ(m.queue->pop_batch(out, 2), 2u);
    EXPECT_EQ(out[0], round);
    EXPECT_EQ(out[1], round + 1000);
    ASSERT_TRUE(m.queue->pop(&value));
    EXPECT_EQ(value, round + 2000);
  }
}

// 3 producers and 3 consumers on a small ring (so they keep meeting at full and empty); every
// item is popped exactly once. `produce(queue, p, first, count)` pushes items [first, first +
// count) of producer p and returns how many it pushed (0: full, retried); `consume(queue, c,
// out)` pops into out[0..4] and returns how many it popped.
template <class Produce, class Consume>
void expect_every_item_exactly_once(Produce produce, Consume consume) {
  constexpr uint32_t kProducers = 3;
  constexpr uint32_t kConsumers = 3;
  constexpr uint32_t kPerProducer = 20000;
  constexpr uint32_t kTotal = kProducers * kPerProducer;
  QueueMemory m(64);
  std::vector<std::atomic<uint32_t>> seen(kTotal);
  std::atomic<uint32_t> consumed{0};
  std::vector<std::thread> threads;
  for (uint32_t p = 0; p < kProducers; ++p) {
    threads.emplace_back([&, p] {
      uint32_t next = 0;
      while (next < kPerProducer) {
        const uint32_t pushed = produce(*m.queue, p, p * kPerProducer + next, kPerProducer - next);
        if (pushed == 0) std::this_thread::yield();
        next += pushed;
      }
    });
  }
  for (uint32_t c = 0; c < kConsumers; ++c) {
    threads.emplace_back([&, c] {
      uint32_t out[5];
      while (consumed.load() < kTotal) {
        const uint32_t got = consume(*m.queue, c, out);
        for (uint32_t i = 0; i < got; ++i) seen[out[i]].fetch_add(1);
        consumed.fetch_add(got);
        if (got == 0) std::this_thread::yield();
      }
    });
  }
  for (auto& t : threads) t.join();
  uint32_t out[4];
  EXPECT_EQ(m.queue->pop_batch(out, 4), 0u);
  for (uint32_t i = 0; i < kTotal; ++i) ASSERT_EQ(seen[i].load(), 1u) << "item " << i;
}

TEST(ReadyQueue, ConcurrentProducersConsumersStressEveryItemExactlyOnce) {
  expect_every_item_exactly_once(
      [](ReadyQueue& q, uint32_t, uint32_t first, uint32_t) { return q.push(first) ? 1u : 0u; },
      [](ReadyQueue& q, uint32_t, uint32_t* out) { return q.pop(out) ? 1u : 0u; });
}

// Batches of 1..7 mixed with single pushes (producer 2 alternates), pops of one and batches of
// 3 and 4.
TEST(ReadyQueue, ConcurrentBatchesStressEveryItemExactlyOnce) {
  expect_every_item_exactly_once(
      [](ReadyQueue& q, uint32_t p, uint32_t first, uint32_t left) {
        if (p == 2 && first % 2 == 0) return q.push(first) ? 1u : 0u;
        uint32_t batch[7];
        const uint32_t size = std::min<uint32_t>(1 + (first + p) % 7, left);
        for (uint32_t i = 0; i < size; ++i) batch[i] = first + i;
        return q.push_batch(batch, size) ? size : 0u;
      },
      [](ReadyQueue& q, uint32_t c, uint32_t* out) {
        return c == 0 ? (q.pop(out) ? 1u : 0u) : q.pop_batch(out, 2 + c);
      });
}

}  // namespace
}  // namespace chiprt::scheduler
