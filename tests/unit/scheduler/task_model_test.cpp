// The full task model on the chip side (graph-image runs through aicpu_entry): MIX tasks on whole
// clusters with their parts started together, SPMD tasks with more blocks than cores, predicated
// tasks (skipped ones still release their consumers), and completion counting for all of them.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "chip_harness.h"
#include "chiprt/kernel.h"
#include "chiprt/orchestration.h"
#include "scheduler/shared_state.h"

namespace chiprt::scheduler {
namespace {

using test::ChipRun;
using test::ImageWriter;
using test::RunOptions;
using test::TestTask;

constexpr double kHangLimitMs = 60000;
constexpr uint32_t kMaxTasks = 64;
constexpr uint32_t kMaxBlocks = 64;
// Kernel ids of this file (the harness's own are 1, 3, 4).
constexpr int32_t kBlockFunc = 10;    // logs (task, block, core)
constexpr int32_t kMixAicFunc = 11;   // MIX AIC part: logs, meets its sibling parts
constexpr int32_t kMixAivFunc = 12;   // MIX AIV part: same
constexpr int32_t kCheckFunc = 13;    // logs; checks its producers (TaskLog::producers) are done
constexpr int32_t kSetFlagFunc = 14;  // logs; stores TaskLog::flag_value into TaskLog::flag

// What the kernels of one run saw. Kernels get (recorder, task id) from the harness image plus
// the block context; everything else is looked up here by task id.
struct TaskLog {
  std::atomic<uint32_t> runs[kMaxTasks][kMaxBlocks];
  std::atomic<int32_t> cluster[kMaxTasks][kMaxBlocks];
  std::atomic<uint32_t> arrived[kMaxTasks][kMaxBlocks];
  std::atomic<uint32_t> finished_dispatches[kMaxTasks];
  uint32_t parts[kMaxTasks];  // MIX parts per block (the rendezvous size)
  uint32_t expected_dispatches[kMaxTasks];
  std::vector<uint32_t> producers[kMaxTasks];
  std::atomic<uint32_t> bad_block_context{0};
  std::atomic<uint32_t> mixed_clusters{0};  // parts of one block on different clusters
  std::atomic<uint32_t> missed_rendezvous{0};
  std::atomic<uint32_t> early_starts{0};
  bool rendezvous = true;
  uint32_t device_clusters = 8;
  int32_t* flag = nullptr;
  int32_t flag_value = 0;
};
TaskLog* g_log = nullptr;

int32_t cluster_of_current_core() {
  const int core = test::FakeChip::current_core();
  if (core < 0) return -1;
  const auto c = static_cast<uint32_t>(core);
  return static_cast<int32_t>(c < g_log->device_clusters ? c : (c - g_log->device_clusters) / 2);
}

// Logs one dispatch; returns (task, block).
std::pair<uint32_t, uint32_t> log_start(int64_t* args) {
  const auto task = static_cast<uint32_t>(args[1]);
  const uint32_t block = kernel::block_idx(args);
  const uint32_t blocks = kernel::block_num(args);
  if (task >= kMaxTasks || block >= kMaxBlocks || block >= blocks) {
    g_log->bad_block_context.fetch_add(1);
    return {0, 0};
  }
  g_log->runs[task][block].fetch_add(1);
  return {task, block};
}
void log_finish(uint32_t task) {
  g_log->finished_dispatches[task].fetch_add(1);
}

void block_kernel(int64_t* args) {
  log_finish(log_start(args).first);
}

// Every part of one MIX block records its cluster and waits (bounded) until all parts arrived:
// with the parts on one cluster started together this returns at once, otherwise it times out.
void mix_kernel(int64_t* args) {
  const auto [task, block] = log_start(args);
  const int32_t cluster = cluster_of_current_core();
  int32_t expected = -1;
  if (!g_log->cluster[task][block].compare_exchange_strong(expected, cluster) &&
      expected != cluster) {
    g_log->mixed_clusters.fetch_add(1);
  }
  const uint32_t arrived = g_log->arrived[task][block].fetch_add(1) + 1;
  if (g_log->rendezvous && arrived < g_log->parts[task]) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (g_log->arrived[task][block].load() < g_log->parts[task]) {
      if (std::chrono::steady_clock::now() > deadline) {
        g_log->missed_rendezvous.fetch_add(1);
        break;
      }
      std::this_thread::yield();
    }
  }
  log_finish(task);
}

void check_kernel(int64_t* args) {
  const uint32_t task = log_start(args).first;
  for (uint32_t p : g_log->producers[task]) {
    if (g_log->finished_dispatches[p].load() != g_log->expected_dispatches[p]) {
      g_log->early_starts.fetch_add(1);
    }
  }
  log_finish(task);
}

void set_flag_kernel(int64_t* args) {
  const uint32_t task = log_start(args).first;
  *g_log->flag = g_log->flag_value;
  log_finish(task);
}

class TaskModel : public ::testing::Test {
 protected:
  void SetUp() override {
    log_ = std::make_unique<TaskLog>();
    for (auto& row : log_->cluster) {
      for (auto& c : row) c.store(-1);
    }
    g_log = log_.get();
  }
  void TearDown() override { g_log = nullptr; }

  // Adds a task and records what its kernels should see (dispatches, producers, MIX parts).
  uint32_t add(ImageWriter& w, TestTask task) {
    const auto id = static_cast<uint32_t>(w.tasks().size());
    uint32_t parts = 1;
    if (task.core == CoreType::MIX) {
      parts = (task.func_id != -1) + (task.mix_aiv[0] != -1) + (task.mix_aiv[1] != -1);
    }
    log_->parts[id] = parts;
    log_->expected_dispatches[id] = task.dummy ? 0 : parts * task.block_num;
    log_->producers[id] = task.deps;
    w.add_task(std::move(task));
    return id;
  }

  void run(const ImageWriter& w, const RunOptions& options) {
    log_->device_clusters = options.device_clusters;
    ChipRun run(w, options);
    run.kernel_table()[kBlockFunc] = reinterpret_cast<uintptr_t>(&block_kernel);
    run.kernel_table()[kMixAicFunc] = reinterpret_cast<uintptr_t>(&mix_kernel);
    run.kernel_table()[kMixAivFunc] = reinterpret_cast<uintptr_t>(&mix_kernel);
    run.kernel_table()[kCheckFunc] = reinterpret_cast<uintptr_t>(&check_kernel);
    run.kernel_table()[kSetFlagFunc] = reinterpret_cast<uintptr_t>(&set_flag_kernel);
    EXPECT_LT(run.run(), kHangLimitMs);
    run.chip().stop();
    EXPECT_EQ(run.code(), StatusCode::Ok) << run.detail();
    EXPECT_EQ(run.args().result.tasks_completed, w.tasks().size());
    EXPECT_EQ(log_->bad_block_context.load(), 0u);
    EXPECT_EQ(log_->early_starts.load(), 0u);
  }

  // Every block of `task` ran exactly `times` times per part.
  void expect_blocks(uint32_t task, uint32_t block_num, uint32_t times) {
    for (uint32_t b = 0; b < kMaxBlocks; ++b) {
      EXPECT_EQ(log_->runs[task][b].load(), b < block_num ? times * log_->parts[task] : 0u)
          << "task " << task << " block " << b;
    }
  }

  std::unique_ptr<TaskLog> log_;
};

TestTask mix_task(MixKernels k, uint32_t block_num, std::vector<uint32_t> deps = {}) {
  TestTask t;
  t.core = CoreType::MIX;
  t.func_id = k.aic;
  t.mix_aiv[0] = k.aiv0;
  t.mix_aiv[1] = k.aiv1;
  t.block_num = block_num;
  t.deps = std::move(deps);
  return t;
}
TestTask kernel_task(int32_t func, CoreType core, uint32_t block_num,
                     std::vector<uint32_t> deps = {}) {
  TestTask t;
  t.func_id = func;
  t.core = core;
  t.block_num = block_num;
  t.deps = std::move(deps);
  return t;
}

TEST_F(TaskModel, MixPartsStartTogetherOnOneClusterAndCompleteOnce) {
  for (uint32_t threads : {1u, 2u, 3u}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    SetUp();
    ImageWriter w;
    const MixKernels full{kMixAicFunc, kMixAivFunc, kMixAivFunc};
    const uint32_t a = add(w, mix_task(full, 1));
    const uint32_t b = add(w, mix_task({kMixAicFunc, -1, kMixAivFunc}, 1));  // aiv0 idle
    const uint32_t c = add(w, mix_task({-1, kMixAivFunc, -1}, 1));           // one part only
    // A plain task between MIX tasks keeps single cores busy while clusters are claimed.
    const uint32_t d = add(w, kernel_task(kBlockFunc, CoreType::AIV, 1, {a}));
    const uint32_t e = add(w, mix_task(full, 5, {a, b}));  // more blocks than clusters
    const uint32_t f = add(w, kernel_task(kCheckFunc, CoreType::AIC, 1, {c, d, e}));
    RunOptions o;
    o.threads = threads;
    o.clusters = 2;
    o.service_threads = 6;  // every part of both clusters can run at once
    run(w, o);
    for (uint32_t t : {a, b, c, d}) expect_blocks(t, 1, 1);
    expect_blocks(e, 5, 1);
    expect_blocks(f, 1, 1);
    EXPECT_EQ(log_->mixed_clusters.load(), 0u);
    EXPECT_EQ(log_->missed_rendezvous.load(), 0u);
    for (uint32_t blk = 0; blk < 5; ++blk) {
      const int32_t cluster = log_->cluster[e][blk].load();
      EXPECT_TRUE(cluster == 0 || cluster == 1) << "block " << blk << " on cluster " << cluster;
    }
  }
}

TEST_F(TaskModel, MixInSerialModeRunsEveryPart) {
  ImageWriter w;
  log_->rendezvous = false;  // serial mode runs one core at a time
  const uint32_t a = add(w, mix_task({kMixAicFunc, kMixAivFunc, kMixAivFunc}, 3));
  const uint32_t b = add(w, mix_task({-1, -1, kMixAivFunc}, 2, {a}));
  const uint32_t c = add(w, kernel_task(kCheckFunc, CoreType::AIV, 1, {b}));
  RunOptions o;
  o.threads = 1;
  o.serial = true;
  o.clusters = 1;
  run(w, o);
  expect_blocks(a, 3, 1);
  expect_blocks(b, 2, 1);
  expect_blocks(c, 1, 1);
  EXPECT_EQ(log_->mixed_clusters.load(), 0u);
}

TEST_F(TaskModel, SpmdRunsEveryBlockExactlyOnceWithMoreBlocksThanCores) {
  for (uint32_t threads : {1u, 2u, 3u}) {
    for (bool serial : {false, true}) {
      if (serial && threads != 1) continue;
      SCOPED_TRACE("threads " + std::to_string(threads) + (serial ? " serial" : ""));
      SetUp();
      ImageWriter w;
      // 2 clusters: 2 AIC and 4 AIV cores.
      const uint32_t a = add(w, kernel_task(kBlockFunc, CoreType::AIV, 37));
      const uint32_t b = add(w, kernel_task(kBlockFunc, CoreType::AIC, 9));
      const uint32_t c = add(w, kernel_task(kBlockFunc, CoreType::AIV, 1, {a}));
      const uint32_t d = add(w, kernel_task(kCheckFunc, CoreType::AIV, 64, {a, b}));
      const uint32_t e = add(w, kernel_task(kCheckFunc, CoreType::AIC, 1, {c, d}));
      RunOptions o;
      o.threads = threads;
      o.serial = serial;
      o.clusters = 2;
      o.service_threads = 3;
      run(w, o);
      expect_blocks(a, 37, 1);
      expect_blocks(b, 9, 1);
      expect_blocks(c, 1, 1);
      expect_blocks(d, 64, 1);
      expect_blocks(e, 1, 1);
    }
  }
}

TEST_F(TaskModel, PredicateSkipsFalseTasksAndStillReleasesTheirConsumers) {
  for (uint32_t threads : {1u, 3u}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    SetUp();
    alignas(8) static uint8_t flags[32];
    std::fill(std::begin(flags), std::end(flags), 0);
    flags[0] = 1;   // u8 true
    flags[8] = 0;   // u16 false (bytes 8-9)
    flags[16] = 0;  // u64 true: only the top byte set
    flags[23] = 1;
    int32_t runtime_flag = 7;  // set to 0 by a producer at run time
    log_->flag = &runtime_flag;
    log_->flag_value = 0;
    ImageWriter w;
    auto predicated = [&](TestTask t, void* addr, uint32_t bytes) {
      t.predicate_addr = reinterpret_cast<uintptr_t>(addr);
      t.predicate_bytes = bytes;
      return t;
    };
    const uint32_t runs_u8 =
        add(w, predicated(kernel_task(kBlockFunc, CoreType::AIC, 1), &flags[0], 1));
    const uint32_t skip_u16 =
        add(w, predicated(kernel_task(kBlockFunc, CoreType::AIV, 4), &flags[8], 2));
    const uint32_t runs_u64 =
        add(w, predicated(kernel_task(kBlockFunc, CoreType::AIV, 1), &flags[16], 8));
    const uint32_t skip_mix =
        add(w, predicated(mix_task({kMixAicFunc, kMixAivFunc, -1}, 2), &flags[8], 2));
    // The flag a predicate reads is written by its producer before it is tested.
    const uint32_t setter = add(w, kernel_task(kSetFlagFunc, CoreType::AIC, 1));
    const uint32_t skip_runtime =
        add(w, predicated(kernel_task(kBlockFunc, CoreType::AIV, 1, {setter}), &runtime_flag, 4));
    // Consumers of skipped tasks still run, after them.
    const uint32_t after_skips =
        add(w, kernel_task(kBlockFunc, CoreType::AIV, 1, {skip_u16, skip_mix, skip_runtime}));
    const uint32_t last =
        add(w, kernel_task(kBlockFunc, CoreType::AIC, 1, {after_skips, runs_u8, runs_u64}));
    RunOptions o;
    o.threads = threads;
    o.clusters = 2;
    o.service_threads = 3;
    run(w, o);
    expect_blocks(runs_u8, 1, 1);
    expect_blocks(skip_u16, 4, 0);
    expect_blocks(runs_u64, 1, 1);
    expect_blocks(skip_mix, 2, 0);
    expect_blocks(setter, 1, 1);
    expect_blocks(skip_runtime, 1, 0);
    expect_blocks(after_skips, 1, 1);
    expect_blocks(last, 1, 1);
    EXPECT_EQ(runtime_flag, 0);
  }
}

TEST_F(TaskModel, SharedLayoutHasAQueuePerShapeAndPerTaskCounters) {
  const SharedLayout layout = shared_layout(100);
  EXPECT_EQ(layout.queue_capacity, 128u);
  for (int q = 1; q < kQueueCount; ++q)
    EXPECT_GT(layout.queue_offset[q], layout.queue_offset[q - 1]);
  EXPECT_GT(layout.fanin_offset, layout.queue_offset[kQueueDummy]);
  EXPECT_GE(layout.parts_offset, layout.fanin_offset + 100 * 4);
  EXPECT_GE(layout.next_block_offset, layout.parts_offset + 100 * 4);
  EXPECT_GE(layout.state_offset, layout.next_block_offset + 100 * 4);
  EXPECT_GE(layout.total_bytes, layout.state_offset + 100);
  EXPECT_EQ(layout.total_bytes % 64, 0u);
}

}  // namespace
}  // namespace chiprt::scheduler
