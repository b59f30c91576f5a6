// RingOrchestrator with scheduler threads completing tasks concurrently (the race between the
// orchestrator's fanout_push and a producer's seal, retirement while consumers release): random
// DAGs with random scopes and small rings. Every task must be published exactly once, only after
// each producer it retained completed, and the run must drain without an error.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "ring_test_support.h"

namespace chiprt::orchestrator {
namespace {

using testing::kAivFunc;
using testing::SetSizes;

// The shared memory of RingHarness, driven by `threads` scheduler threads. The ready list is a
// mutex-protected deque (test code); the orchestrator parks on a condition variable, and each
// completion notifies it under the mutex after its releases, so no wake-up is lost.
class ThreadedDriver final : public RingDriver {
 public:
  ThreadedDriver(testing::RingHarness& h, int threads) : h_(h) {
    publish_count_ = std::vector<std::atomic<uint32_t>>(1 << 16);
    for (int i = 0; i < threads; ++i) workers_.emplace_back([this] { work(); });
  }
  ~ThreadedDriver() override { stop(); }

  void stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    work_cv_.notify_all();
    for (std::thread& t : workers_) t.join();
    workers_.clear();
  }

  void publish_ready(uint32_t slot) override {
    const int64_t id = h_.public_ids[slot];
    publish_count_[static_cast<std::size_t>(id)].fetch_add(1);
    {
      std::lock_guard<std::mutex> lock(mu_);
      ready_.push_back(slot);
    }
    work_cv_.notify_one();
  }
  void note_submitted(uint64_t) override {}
  uint64_t completed() const override { return completed_.load(std::memory_order_acquire); }
  void wait(uint64_t deadline_cycles, bool (*recheck)(void*), void* ctx) override {
    std::unique_lock<std::mutex> lock(mu_);
    if (recheck(ctx)) return;
    const uint64_t now_cycles = now();
    if (deadline_cycles <= now_cycles) return;
    orch_cv_.wait_for(lock, std::chrono::nanoseconds(deadline_cycles - now_cycles));
  }
  uint64_t now() const override {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now().time_since_epoch())
                                     .count());
  }
  uint64_t clock_hz() const override { return 1'000'000'000; }
  bool chip_failed() const override { return false; }

  uint32_t publish_count(int64_t id) const {
    return publish_count_[static_cast<std::size_t>(id)].load();
  }
  uint64_t early_completions() const { return early_.load(); }

 private:
  void work() {
    for (;;) {
      uint32_t slot;
      {
        std::unique_lock<std::mutex> lock(mu_);
        work_cv_.wait(lock, [&] { return stopping_ || !ready_.empty(); });
        if (ready_.empty()) return;
        slot = ready_.front();
        ready_.pop_front();
      }
      complete(slot);
    }
  }

  void complete(uint32_t slot) {
    common::RingSlot& self = h_.slot_storage[slot];
    const uint32_t producers = self.producer_count;
    for (uint32_t i = 0; i < producers; ++i) {
      const uint32_t p = i < common::kInlineProducers
                             ? self.producers[i]
                             : h_.spill_words[self.spill_begin + (i - common::kInlineProducers)];
      if (h_.slot_storage[p].fanout_head.load(std::memory_order_acquire) != common::kFanoutSealed) {
        early_.fetch_add(1);  // ran before a producer it waits for completed
      }
    }
    h_.task_state[slot].store(3, std::memory_order_release);
    common::fanout_seal_and_walk(self, h_.dep_pool.data(), [&](uint32_t consumer) {
      if (h_.fanin[consumer].fetch_sub(1, std::memory_order_acq_rel) == 1) {
        publish_ready(consumer);
      }
    });
    for (uint32_t i = 0; i < producers; ++i) {
      const uint32_t p = i < common::kInlineProducers
                             ? self.producers[i]
                             : h_.spill_words[self.spill_begin + (i - common::kInlineProducers)];
      common::release_slot_ref(h_.slot_storage[p]);
    }
    common::release_slot_ref(self);
    completed_.fetch_add(1, std::memory_order_acq_rel);
    std::lock_guard<std::mutex> lock(mu_);
    orch_cv_.notify_all();
  }

  testing::RingHarness& h_;
  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable orch_cv_;
  std::deque<uint32_t> ready_;
  bool stopping_ = false;
  std::atomic<uint64_t> completed_{0};
  std::atomic<uint64_t> early_{0};
  std::vector<std::atomic<uint32_t>> publish_count_;
  std::vector<std::thread> workers_;
};

void run_random_dag(uint32_t seed, int tasks) {
  testing::RingHarness h({SetSizes{16, 4096, 64, 64}, SetSizes{32, 8192, 64, 64}},
                         /*timeout_ms=*/20000);
  ThreadedDriver driver(h, 2);
  RingOrchestrator orch(h.memory, driver);
  std::mt19937 rng(seed);
  std::vector<uint64_t> buffers(6);
  for (std::size_t i = 0; i < buffers.size(); ++i) buffers[i] = 0x100000 * (i + 1);
  std::vector<std::vector<Tensor>> scope_outputs(1);
  int depth = 0;
  std::vector<int> scope_tasks(1, 0);
  for (int i = 0; i < tasks && !orch.failed(); ++i) {
    const uint32_t action = rng() % 10;
    if (action == 0 && depth < 3) {  // depths >= 3 would share one window
      orch.scope_begin();
      scope_outputs.emplace_back();
      scope_tasks.push_back(0);
      ++depth;
      continue;
    }
    // Scopes stay well below their window, so the rings never deadlock, only back-pressure.
    if ((action == 1 || scope_tasks.back() >= 12) && depth > 0) {
      orch.scope_end();
      scope_outputs.pop_back();
      scope_tasks.pop_back();
      --depth;
      continue;
    }
    ++scope_tasks.back();
    TaskArgs args;
    const uint32_t reads = rng() % 3;
    for (uint32_t r = 0; r < reads; ++r) {
      const DeviceBuffer b{buffers[rng() % buffers.size()], 4096};
      args.in(Tensor::make(b, {64}, DataType::F32, 64 * (rng() % 4)));
    }
    std::vector<Tensor>& mine = scope_outputs.back();
    if (!mine.empty() && rng() % 2 == 0) args.in(mine[rng() % mine.size()]);
    if (rng() % 2 == 0) {
      const DeviceBuffer b{buffers[rng() % buffers.size()], 4096};
      args.inout(Tensor::make(b, {64}, DataType::F32, 64 * (rng() % 4)));
    }
    const bool with_output = depth > 0 && rng() % 3 == 0;
    if (with_output) args.out({64}, DataType::F32);
    if (orch.task_count() > 0 && rng() % 4 == 0) {
      args.after(static_cast<TaskId>(rng() % orch.task_count()));
    }
    if (orch.submit(kAivFunc, CoreType::AIV, args) == kNoTask) break;
    if (with_output) {
      for (int k = 0; k < args.tensor_count(); ++k) {
        if (args.tag(k) == ArgTag::Out) mine.push_back(args.tensor(k));
      }
      if (mine.size() > 8) mine.erase(mine.begin());
    }
  }
  while (depth-- > 0) orch.scope_end();
  ASSERT_FALSE(orch.failed()) << orch.error().to_string();
  const uint64_t total = orch.task_count();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (driver.completed() < total && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  driver.stop();
  ASSERT_EQ(driver.completed(), total) << "every submitted task completes";
  for (uint64_t id = 0; id < total; ++id) {
    ASSERT_EQ(driver.publish_count(static_cast<int64_t>(id)), 1u) << "task " << id;
  }
  EXPECT_EQ(driver.early_completions(), 0u);
}

TEST(RingOrchestratorThreads, RandomDagsWithScopesAndSmallRings) {
  for (uint32_t seed = 1; seed <= 4; ++seed) {
    SCOPED_TRACE(seed);
    run_random_dag(seed, 3000);
  }
}

}  // namespace
}  // namespace chiprt::orchestrator
