#include "scheduler/ready_queue.h"

#include <gtest/gtest.h>

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

TEST(ReadyQueue, ConcurrentProducersConsumersStressEveryItemExactlyOnce) {
  constexpr uint32_t kProducers = 3;
  constexpr uint32_t kConsumers = 3;
  constexpr uint32_t kPerProducer = 20000;
  constexpr uint32_t kTotal = kProducers * kPerProducer;
  // A small ring so producers and consumers keep meeting at full and empty.
  QueueMemory m(64);
  std::vector<std::atomic<uint32_t>> seen(kTotal);
  std::atomic<uint32_t> consumed{0};
  std::vector<std::thread> threads;
  for (uint32_t p = 0; p < kProducers; ++p) {
    threads.emplace_back([&, p] {
      for (uint32_t i = 0; i < kPerProducer; ++i) {
        while (!m.queue->push(p * kPerProducer + i)) std::this_thread::yield();
      }
    });
  }
  for (uint32_t c = 0; c < kConsumers; ++c) {
    threads.emplace_back([&] {
      uint32_t value = 0;
      while (consumed.load() < kTotal) {
        if (m.queue->pop(&value)) {
          seen[value].fetch_add(1);
          consumed.fetch_add(1);
        } else {
          std::this_thread::yield();
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  uint32_t value = 0;
  EXPECT_FALSE(m.queue->pop(&value));
  for (uint32_t i = 0; i < kTotal; ++i) ASSERT_EQ(seen[i].load(), 1u) << "item " << i;
}

}  // namespace
}  // namespace chiprt::scheduler
