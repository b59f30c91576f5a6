// DiagWriteQueue: the background writer of run directories writes in push order, blocks a push
// beyond its bound until the oldest is written, reports each failure once through flush and
// writes everything still queued when it is destroyed.
#include "host/diag_write_queue.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace chiprt::host {
namespace {

using ::testing::ElementsAre;

TEST(DiagWriteQueue, WritesInPushOrder) {
  std::mutex mutex;
  std::vector<int> order;
  DiagWriteQueue queue;
  for (int i = 0; i < 10; ++i) {
    queue.push("run-" + std::to_string(i), [&, i] {
      std::lock_guard lock(mutex);
      order.push_back(i);
      return std::string();
    });
  }
  EXPECT_TRUE(queue.flush().empty());
  EXPECT_EQ(queue.pending(), 0u);
  std::lock_guard lock(mutex);
  EXPECT_THAT(order, ElementsAre(0, 1, 2, 3, 4, 5, 6, 7, 8, 9));
}

TEST(DiagWriteQueue, APushBeyondTheBoundWaitsForTheOldest) {
  DiagWriteQueue queue;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  // The first job holds the writer; the others fill the queue up to the bound.
  queue.push("held", [released] {
    released.wait();
    return std::string();
  });
  for (std::size_t i = 1; i < DiagWriteQueue::kMaxPending; ++i) {
    queue.push("queued", [] { return std::string(); });
  }
  EXPECT_EQ(queue.pending(), DiagWriteQueue::kMaxPending);
  std::atomic<bool> pushed{false};
  std::thread pusher([&] {
    queue.push("beyond", [] { return std::string(); });
    pushed = true;
  });
  // No timing assertion: a push that does not block is seen at once, and a correct one never
  // returns while the first job holds the writer, however long this waits.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(pushed.load());
  release.set_value();
  pusher.join();
  EXPECT_TRUE(pushed.load());
  EXPECT_TRUE(queue.flush().empty());
}

TEST(DiagWriteQueue, FlushReportsEachFailureOnce) {
  DiagWriteQueue queue;
  queue.push("run-0001", [] { return std::string("disk full"); });
  queue.push("run-0002", [] { return std::string(); });
  queue.push("run-0003", []() -> std::string { throw std::runtime_error("boom"); });
  queue.push("run-0004", []() -> std::string { throw 7; });
  EXPECT_THAT(queue.flush(),
              ElementsAre("run-0001: disk full", "run-0003: boom", "run-0004: unknown exception"));
  EXPECT_TRUE(queue.flush().empty());
}

TEST(DiagWriteQueue, DestructionWritesWhatIsStillQueued) {
  std::atomic<int> written{0};
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  {
    DiagWriteQueue queue;
    queue.push("held", [&, released] {
      released.wait();
      ++written;
      return std::string();
    });
    for (int i = 0; i < 2; ++i) {
      queue.push("queued", [&] {
        ++written;
        return std::string();
      });
    }
    release.set_value();
  }
  EXPECT_EQ(written.load(), 3);
}

TEST(DiagWriteQueue, FlushWithNothingQueuedReturnsAtOnce) {
  DiagWriteQueue queue;
  EXPECT_TRUE(queue.flush().empty());
  EXPECT_EQ(queue.pending(), 0u);
}

// Several pushers and a flusher at once (TSan runs this suite).
TEST(DiagWriteQueue, ConcurrentPushersAndFlushesLoseNothing) {
  DiagWriteQueue queue;
  std::atomic<int> written{0};
  std::atomic<int> failures{0};
  std::vector<std::thread> pushers;
  for (int t = 0; t < 3; ++t) {
    pushers.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        queue.push("t" + std::to_string(t), [&, i] {
          ++written;
          return i % 10 == 0 ? std::string("failed") : std::string();
        });
        if (i % 7 == 0) failures += static_cast<int>(queue.flush().size());
      }
    });
  }
  for (std::thread& pusher : pushers) pusher.join();
  failures += static_cast<int>(queue.flush().size());
  EXPECT_EQ(written.load(), 150);
  EXPECT_EQ(failures.load(), 15);
}

}  // namespace
}  // namespace chiprt::host
