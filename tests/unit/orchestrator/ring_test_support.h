// Test harness for RingOrchestrator: the shared ring memory of one run in plain host vectors and a
// fake RingDriver that plays the schedulers on the test thread (ready list, completion through the
// ring_state.h protocol, a fake clock). Tasks complete only when the test or a wait() says so, so
// every interleaving the tests look at is deterministic.
//
// Lifetime: one RingHarness per test; single-threaded.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <set>
#include <vector>

#include "common/ring_state.h"
#include "orchestrator/ring_orchestrator.h"

namespace chiprt::orchestrator::testing {

struct SetSizes {
  uint32_t window = 16;
  uint64_t heap = 4096;
  uint32_t deps = 64;
  uint32_t spill = 64;
};

// func ids of the fake callable.
inline constexpr int32_t kAivFunc = 1;
inline constexpr int32_t kAicFunc = 2;

class RingHarness;

class FakeDriver final : public RingDriver {
 public:
  explicit FakeDriver(RingHarness& harness) : harness_(harness) {}

  void publish_ready(uint32_t slot) override;
  void note_submitted(uint64_t submitted) override { submitted_seen = submitted; }
  uint64_t completed() const override { return completed_; }

  void wait(uint64_t deadline_cycles, bool (*recheck)(void*), void* recheck_ctx) override;
  uint64_t now() const override { return clock; }
  uint64_t clock_hz() const override { return 1'000'000; }  // 1000 cycles per ms
  // The orchestrator asks this on entry to each call and, in a wait, after finding its condition
  // false: on_chip_failed_check lets a test complete a task at that point (a scheduler finishing
  // it concurrently).
  bool chip_failed() const override {
    if (on_chip_failed_check) on_chip_failed_check();
    return chip_failed_flag;
  }

  // Completes `slot` the way ring_release + complete_task do.
  void complete(uint32_t slot);
  // Completes ready tasks (and those they make ready) except held ones; returns how many.
  uint64_t run_ready();

  // What wait() does when the recheck does not end it: run ready tasks (auto) or only let time
  // pass (a stuck chip).
  bool auto_complete = true;
  std::set<int64_t> held;                      // public ids that never complete while held
  std::function<void(uint32_t slot)> on_run;   // "kernel": runs just before completion
  std::function<void()> on_chip_failed_check;  // see chip_failed()
  bool chip_failed_flag = false;

  std::deque<uint32_t> ready;
  std::vector<int64_t> published;  // public ids in publish order
  std::vector<int64_t> completion_order;
  uint64_t submitted_seen = 0;
  uint64_t waits = 0;
  uint64_t max_deadline_seen = 0;
  uint64_t clock = 0;

 private:
  RingHarness& harness_;
  uint64_t completed_ = 0;
};

class RingHarness {
 public:
  explicit RingHarness(const std::vector<SetSizes>& sizes = {SetSizes{}}, uint64_t timeout_ms = 50)
      : driver(*this) {
    uint32_t slots = 0;
    uint64_t heap = 0;
    uint32_t deps = 0;
    uint32_t spill = 0;
    for (uint32_t d = 0; d < common::kRingDepths; ++d) {
      const SetSizes& s = sizes[std::min<std::size_t>(d, sizes.size() - 1)];
      common::RingSetGeometry& g = control.sets[d];
      g.slot_base = slots;
      g.window = s.window;
      g.heap_base = heap;
      g.heap_size = s.heap;
      g.dep_base = deps;
      g.dep_size = s.deps;
      g.spill_base = spill;
      g.spill_size = s.spill;
      slots += s.window;
      heap += s.heap;
      deps += s.deps;
      spill += s.spill;
    }
    control.total_slots = slots;
    slot_storage = std::vector<common::RingSlot>(slots);
    records.assign(slots, common::TaskRecord{});
    slot_args.assign(uint64_t{slots} * kSlotArgs, 0);
    public_ids.assign(slots, 0);
    dep_pool.assign(deps, common::DepEntry{});
    spill_words.assign(spill, 0);
    fanin = std::vector<std::atomic<uint32_t>>(slots);
    task_state = std::vector<std::atomic<uint8_t>>(slots);
    heap_storage.assign(heap + 64, 0);
    const auto raw = reinterpret_cast<uintptr_t>(heap_storage.data());
    heap_addr = (raw + 63) & ~uintptr_t{63};
    heap_size = heap;

    kernels[kAivFunc].present = true;
    kernels[kAivFunc].core = CoreType::AIV;
    kernels[kAicFunc].present = true;
    kernels[kAicFunc].core = CoreType::AIC;

    memory.args = &launch;
    memory.control = &control;
    memory.slots = slot_storage.data();
    memory.dep_pool = dep_pool.data();
    memory.spill = spill_words.data();
    memory.records = records.data();
    memory.slot_args = slot_args.data();
    memory.public_ids = public_ids.data();
    memory.fanin_remaining = fanin.data();
    memory.task_state = task_state.data();
    memory.heap_addr = heap_addr;
    memory.heap_size = heap_size;
    memory.kernels = &kernels;
    memory.clusters = 2;
    memory.timeout_ms = timeout_ms;
    orch = std::make_unique<RingOrchestrator>(memory, driver);
  }

  // The slot a public task id occupies now (its latest occupant), or UINT32_MAX.
  uint32_t slot_of(TaskId id) const {
    for (uint32_t s = 0; s < control.total_slots; ++s) {
      if (public_ids[s] == id && task_state[s].load() != 3) return s;
    }
    for (uint32_t s = 0; s < control.total_slots; ++s) {
      if (public_ids[s] == id) return s;
    }
    return UINT32_MAX;
  }
  bool is_published(TaskId id) const {
    return std::find(driver.published.begin(), driver.published.end(), id) !=
           driver.published.end();
  }
  uint64_t heap_begin(uint32_t set) const { return heap_addr + control.sets[set].heap_base; }
  uint64_t heap_end(uint32_t set) const { return heap_begin(set) + control.sets[set].heap_size; }

  common::ChipLaunchArgs launch;
  common::RingControl control{};
  std::vector<common::RingSlot> slot_storage;
  std::vector<common::TaskRecord> records;
  std::vector<int64_t> slot_args;
  std::vector<int64_t> public_ids;
  std::vector<common::DepEntry> dep_pool;
  std::vector<uint32_t> spill_words;
  std::vector<std::atomic<uint32_t>> fanin;
  std::vector<std::atomic<uint8_t>> task_state;
  std::vector<uint8_t> heap_storage;
  uint64_t heap_addr = 0;
  uint64_t heap_size = 0;
  KernelTable kernels{};
  RingMemory memory;
  FakeDriver driver;
  std::unique_ptr<RingOrchestrator> orch;
};

inline void FakeDriver::publish_ready(uint32_t slot) {
  published.push_back(harness_.public_ids[slot]);
  EXPECT_EQ(harness_.task_state[slot].load(), 0) << "published a slot that is not pending";
  harness_.task_state[slot].store(1);
  ready.push_back(slot);
}

inline void FakeDriver::complete(uint32_t slot) {
  RingHarness& h = harness_;
  if (on_run) on_run(slot);
  h.task_state[slot].store(3);
  common::RingSlot& self = h.slot_storage[slot];
  common::fanout_seal_and_walk(self, h.dep_pool.data(), [&](uint32_t consumer) {
    if (h.fanin[consumer].fetch_sub(1) == 1) publish_ready(consumer);
  });
  const uint32_t producers = self.producer_count;
  for (uint32_t i = 0; i < producers; ++i) {
    const uint32_t p = i < common::kInlineProducers
                           ? self.producers[i]
                           : h.spill_words[self.spill_begin + (i - common::kInlineProducers)];
    common::release_slot_ref(h.slot_storage[p]);
  }
  completion_order.push_back(h.public_ids[slot]);
  common::release_slot_ref(self);
  ++completed_;
}

inline uint64_t FakeDriver::run_ready() {
  uint64_t done = 0;
  std::deque<uint32_t> kept;
  while (!ready.empty()) {
    const uint32_t slot = ready.front();
    ready.pop_front();
    if (held.count(harness_.public_ids[slot]) != 0) {
      kept.push_back(slot);
      continue;
    }
    complete(slot);
    ++done;
  }
  ready = std::move(kept);
  return done;
}

inline void FakeDriver::wait(uint64_t deadline_cycles, bool (*recheck)(void*), void* recheck_ctx) {
  ++waits;
  max_deadline_seen = std::max(max_deadline_seen, deadline_cycles);
  if (recheck(recheck_ctx)) return;
  if (auto_complete && run_ready() > 0) return;
  clock += 10'000;  // 10 ms of a stuck chip
}

}  // namespace chiprt::orchestrator::testing
