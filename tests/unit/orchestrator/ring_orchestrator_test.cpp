// RingOrchestrator against a fake RingDriver (ring_test_support.h): dependency wiring and
// publication, ring allocation and back-pressure, deadlock / timeout detection, scopes, latching,
// the task model's record fields and get/set_tensor_data.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>

#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "chiprt/kernel.h"
#include "common/kernel_block.h"
#include "ring_test_support.h"

namespace chiprt::orchestrator {
namespace {

using ::testing::HasSubstr;
using testing::kAicFunc;
using testing::kAivFunc;
using testing::RingHarness;
using testing::SetSizes;

constexpr DeviceBuffer kX{0x100000, 4096};
constexpr DeviceBuffer kY{0x200000, 4096};

Tensor vec(DeviceBuffer b, uint64_t n, DataType dtype = DataType::F32) {
  return Tensor::make(b, {n}, dtype);
}

TaskId aiv(RingHarness& h, TaskArgs& args) {
  return h.orch->submit(kAivFunc, CoreType::AIV, args);
}

std::string error_text(const RingHarness& h) {
  return h.orch->error().message();
}

TEST(RingOrchestrator, ChainPublishesEachTaskOnceItsProducerCompleted) {
  RingHarness h;
  h.driver.auto_complete = false;
  TaskArgs a;
  a.output_existing(vec(kX, 16));
  TaskArgs b;
  b.inout(vec(kX, 16));
  TaskArgs c;
  c.in(vec(kX, 16));
  EXPECT_EQ(aiv(h, a), 0);
  EXPECT_EQ(aiv(h, b), 1);
  EXPECT_EQ(aiv(h, c), 2);
  EXPECT_EQ(h.driver.submitted_seen, 3u);
  EXPECT_EQ(h.driver.published, (std::vector<int64_t>{0}));
  // c depends on b only: b's write covers a's, so the map keeps one writer. A dependency on a
  // user buffer's writer is wired (fan-in) but not retained: nobody's heap range is involved.
  EXPECT_EQ(h.fanin[h.slot_of(2)].load(), 1u) << "waits for b";
  EXPECT_EQ(h.slot_storage[h.slot_of(2)].producer_count, 0u);
  EXPECT_EQ(h.slot_storage[h.slot_of(1)].refs.load(), 1u) << "completion ref only";
  h.driver.run_ready();
  EXPECT_EQ(h.driver.published, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(h.driver.completion_order, (std::vector<int64_t>{0, 1, 2}));
  ASSERT_FALSE(h.orch->failed()) << error_text(h);
}

// Write-after-read: a writer waits for the earlier readers of what it overwrites (In and the
// predicate flag), once each; NoDep readers and manual-scope tasks are not tracked; a reader that
// completed is no dependency.
TEST(RingOrchestrator, WritersWaitForEarlierReaders) {
  RingHarness h;
  h.driver.auto_complete = false;
  TaskArgs r1, r2, untracked, w;
  r1.in(vec(kX, 16));
  r2.in(vec(kX, 8)).in(vec(kX, 16)).when(vec(kX, 1, DataType::I32));
  untracked.no_dep(vec(kX, 16));
  w.output_existing(vec(kX, 16));
  EXPECT_EQ(aiv(h, r1), 0);
  EXPECT_EQ(aiv(h, r2), 1);
  EXPECT_EQ(aiv(h, untracked), 2);
  EXPECT_EQ(aiv(h, w), 3);
  EXPECT_EQ(h.fanin[h.slot_of(3)].load(), 2u) << "one edge per tracked reader";
  h.orch->scope_begin(ScopeMode::Manual);
  TaskArgs manual_reader;
  manual_reader.in(vec(kY, 16));
  EXPECT_EQ(aiv(h, manual_reader), 4);
  h.orch->scope_end();
  TaskArgs y_writer;
  y_writer.inout(vec(kY, 16));
  EXPECT_EQ(aiv(h, y_writer), 5);
  EXPECT_EQ(h.driver.published, (std::vector<int64_t>{0, 1, 2, 4, 5}))
      << "the manual scope's read of y is not tracked";
  h.driver.run_ready();
  // The reader of the covering writer's region was dropped; completed readers are not waited for.
  TaskArgs r3, w2;
  r3.in(vec(kX, 4));
  EXPECT_EQ(aiv(h, r3), 6);
  h.driver.run_ready();
  w2.inout(vec(kX, 16));
  EXPECT_EQ(aiv(h, w2), 7);
  EXPECT_EQ(h.driver.published.back(), 7) << "r3 and w completed: nothing to wait for";
  ASSERT_FALSE(h.orch->failed()) << error_text(h);
}

TEST(RingOrchestrator, ProducerReachedThroughSeveralArgumentsIsWiredOnce) {
  RingHarness h;
  h.driver.auto_complete = false;
  TaskArgs a;
  a.output_existing(vec(kX, 16));
  const TaskId t0 = aiv(h, a);
  TaskArgs b;
  b.in(vec(kX, 16)).in(vec(kX, 8)).after(t0);
  aiv(h, b);
  const uint32_t slot = h.slot_of(1);
  EXPECT_EQ(h.fanin[slot].load(), 1u) << "one edge from t0, however many arguments reach it";
  EXPECT_EQ(h.slot_storage[slot].producer_count, 0u) << "a dependency alone is not retained";
  EXPECT_EQ(h.slot_storage[h.slot_of(0)].refs.load(), 1u) << "completion ref only";
  h.driver.run_ready();
  EXPECT_EQ(h.driver.completion_order, (std::vector<int64_t>{0, 1}));
}

TEST(RingOrchestrator, ZeroSizeOutputsTakeNoHeapAndNoScopeReference) {
  RingHarness h;
  h.driver.auto_complete = false;
  h.orch->scope_begin();
  TaskArgs a;
  a.out({0, 4}, DataType::F32);
  aiv(h, a);
  const Tensor& out = a.output(0);
  EXPECT_EQ(out.buffer.size, 0u);
  EXPECT_GE(out.buffer.addr, h.heap_begin(1));
  EXPECT_LE(out.buffer.addr, h.heap_end(1));
  const uint32_t slot = h.slot_of(0);
  EXPECT_EQ(h.slot_storage[slot].refs.load(), 1u) << "only the completion reference";
  h.driver.run_ready();
  EXPECT_EQ(h.slot_storage[slot].refs.load(), 0u);
  h.orch->scope_end();
  ASSERT_FALSE(h.orch->failed()) << error_text(h);
}

TEST(RingOrchestrator, OutputLargerThanTheHeapFailsAtOnce) {
  RingHarness h({SetSizes{16, 4096, 64, 64}});
  h.orch->scope_begin();
  TaskArgs a;
  a.out({1025}, DataType::F32);  // 4100 bytes
  EXPECT_EQ(aiv(h, a), kNoTask);
  EXPECT_EQ(h.orch->error().code(), StatusCode::HeapExhausted);
  EXPECT_THAT(error_text(h), HasSubstr("4160 bytes"));
  EXPECT_THAT(error_text(h), HasSubstr("output heap of depth 1 holds 4096"));
  EXPECT_THAT(error_text(h), HasSubstr("heap_bytes[1]"));
  EXPECT_EQ(h.driver.waits, 0u) << "reported without waiting";
}

TEST(RingOrchestrator, PackedOutputsLargerThanTheHeapFailAtOnce) {
  RingHarness h({SetSizes{16, 4096, 64, 64}});
  TaskArgs a;
  a.out({2049}, DataType::U8).out({2049}, DataType::U8);  // 2 x 2112 aligned
  EXPECT_EQ(aiv(h, a), kNoTask);
  EXPECT_EQ(h.orch->error().code(), StatusCode::HeapExhausted);
  EXPECT_THAT(error_text(h), HasSubstr("4224 bytes"));
}

TEST(RingOrchestrator, OutputsOfOneTaskArePackedAndAligned) {
  RingHarness h;
  TaskArgs a;
  a.out({3}, DataType::U8).out({0}, DataType::U8).out({100}, DataType::U8);
  aiv(h, a);
  EXPECT_EQ(a.output(0).buffer.addr, h.heap_begin(0));
  EXPECT_EQ(a.output(2).buffer.addr, h.heap_begin(0) + 64);
  EXPECT_EQ(a.output(2).buffer.size, 100u);
  EXPECT_EQ(a.output(0).owner_task, 0);
  const int64_t* args = &h.slot_args[h.records[h.slot_of(0)].args_begin];
  EXPECT_EQ(static_cast<uint64_t>(args[2]), a.output(2).data_addr());
}

TEST(RingOrchestrator, ExactFitOutputsReuseTheHeapAfterRetirement) {
  RingHarness h({SetSizes{16, 4096, 64, 64}});
  for (int round = 0; round < 3; ++round) {
    h.orch->scope_begin();
    TaskArgs a;
    a.out({1024}, DataType::F32);  // exactly the heap
    ASSERT_NE(aiv(h, a), kNoTask) << error_text(h);
    EXPECT_EQ(a.output(0).buffer.addr, h.heap_begin(1));
    h.orch->scope_end();
  }
  ASSERT_FALSE(h.orch->failed()) << error_text(h);
  EXPECT_GT(h.driver.waits, 0u) << "the second round waited for the first to retire";
}

TEST(RingOrchestrator, HeapWrapsAndEveryOutputStaysInsideItsSet) {
  RingHarness h({SetSizes{16, 4096, 64, 64}});
  uint64_t previous = 0;
  int wraps = 0;
  for (int i = 0; i < 60; ++i) {
    h.orch->scope_begin();
    TaskArgs p;
    p.out({static_cast<uint64_t>(384 + 16 * (i % 5))}, DataType::F32);
    ASSERT_NE(aiv(h, p), kNoTask) << error_text(h);
    const Tensor out = p.output(0);
    EXPECT_EQ(out.buffer.addr % 64, 0u);
    EXPECT_GE(out.buffer.addr, h.heap_begin(1));
    EXPECT_LE(out.buffer.addr + out.buffer.size, h.heap_end(1)) << "never straddles the end";
    if (out.buffer.addr < previous) ++wraps;
    previous = out.buffer.addr;
    TaskArgs c;
    c.in(out);
    ASSERT_NE(aiv(h, c), kNoTask) << error_text(h);
    h.orch->scope_end();
  }
  EXPECT_GT(wraps, 5);
  EXPECT_FALSE(h.orch->failed()) << error_text(h);
}

TEST(RingOrchestrator, SlotsAreReusedAcrossGenerations) {
  RingHarness h({SetSizes{16, 4096, 64, 64}});
  for (int i = 0; i < 200; ++i) {
    TaskArgs a;
    a.inout(vec(kX, 16));
    ASSERT_EQ(aiv(h, a), i) << error_text(h);
  }
  h.driver.run_ready();
  EXPECT_EQ(h.driver.published.size(), 200u);
  std::vector<int64_t> expected(200);
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(h.driver.completion_order, expected);
  // Slot k of set 0 last held sequence 192 + k (12 generations + 8 more for k < 8).
  for (uint32_t k = 0; k < 16; ++k) {
    const uint64_t seq = h.slot_storage[k].sequence;
    EXPECT_EQ(seq % 16, k);
    EXPECT_EQ(h.public_ids[k], static_cast<int64_t>(seq));
    EXPECT_GE(seq, 184u);
  }
}

TEST(RingOrchestrator, RootScopeHoldingTheWindowIsADeadlock) {
  RingHarness h({SetSizes{16, 65536, 64, 64}});
  TaskId last = 0;
  for (int i = 0; i < 16; ++i) {
    TaskArgs a;
    a.out({16}, DataType::F32);
    last = aiv(h, a);
  }
  ASSERT_EQ(last, 15) << error_text(h);
  TaskArgs a;
  a.out({16}, DataType::F32);
  EXPECT_EQ(aiv(h, a), kNoTask);
  EXPECT_EQ(h.orch->error().code(), StatusCode::RingDeadlock);
  const std::string m = error_text(h);
  EXPECT_THAT(m, HasSubstr("task 16 needs room in the task window of depth 0 (16 slots)"));
  EXPECT_THAT(m, HasSubstr("task 0 (func_id 1)"));
  EXPECT_THAT(m, HasSubstr("CallConfig::rings.task_window[0] or CHIPRT_RING_TASK_WINDOW"));
  // Latched: later calls are no-ops.
  TaskArgs b;
  b.in(vec(kX, 4));
  EXPECT_EQ(aiv(h, b), kNoTask);
  h.orch->scope_begin();
  EXPECT_EQ(h.orch->task_count(), 16u);
  EXPECT_EQ(h.orch->error().code(), StatusCode::RingDeadlock);
}

TEST(RingOrchestrator, OpenScopeFillingTheHeapIsADeadlock) {
  RingHarness h({SetSizes{16, 4096, 64, 64}});
  h.orch->scope_begin();
  for (int i = 0; i < 4; ++i) {
    TaskArgs a;
    a.out({256}, DataType::F32);  // 1024 bytes
    ASSERT_NE(aiv(h, a), kNoTask) << error_text(h);
  }
  TaskArgs a;
  a.out({256}, DataType::F32);
  EXPECT_EQ(aiv(h, a), kNoTask);
  EXPECT_EQ(h.orch->error().code(), StatusCode::RingDeadlock);
  EXPECT_THAT(error_text(h), HasSubstr("output heap of depth 1 (4096 bytes)"));
  EXPECT_THAT(error_text(h), HasSubstr("heap_bytes[1] or CHIPRT_RING_HEAP_BYTES"));
  EXPECT_THAT(error_text(h), HasSubstr("scope at depth 1 that is still open"));
  EXPECT_THAT(error_text(h), HasSubstr("or end the scope sooner"));
}

TEST(RingOrchestrator, ProductiveBackPressureIsNoDeadlock) {
  // Every scope fits the rings, but the whole sequence needs many laps of each.
  RingHarness h({SetSizes{16, 4096, 64, 64}});
  for (int i = 0; i < 300; ++i) {
    h.orch->scope_begin();
    TaskArgs p;
    p.out({128}, DataType::F32);
    ASSERT_NE(aiv(h, p), kNoTask) << error_text(h);
    TaskArgs c;
    c.in(p.output(0)).inout(vec(kY, 16));
    ASSERT_NE(aiv(h, c), kNoTask) << error_text(h);
    h.orch->scope_end();
  }
  // Root tasks without outputs hold no scope reference: the window recycles.
  for (int i = 0; i < 100; ++i) {
    TaskArgs a;
    a.inout(vec(kX, 16));
    ASSERT_NE(aiv(h, a), kNoTask) << error_text(h);
  }
  EXPECT_FALSE(h.orch->failed()) << error_text(h);
  EXPECT_GT(h.driver.waits, 0u);
}

TEST(RingOrchestrator, RetainedHeadIsWaitedForNotReportedAsDeadlock) {
  // The head of set 1 ended its scope but is retained by a consumer of depth 2 that runs late.
  RingHarness h({SetSizes{16, 4096, 64, 64}});
  h.driver.held.insert(1);
  h.orch->scope_begin();
  TaskArgs p;
  p.out({16}, DataType::F32);
  aiv(h, p);
  h.orch->scope_begin();
  TaskArgs c;
  c.in(p.output(0));
  aiv(h, c);  // task 1, held
  h.orch->scope_end();
  h.orch->scope_end();
  h.driver.held.clear();  // the consumer finishes while the orchestrator waits
  for (int i = 0; i < 40; ++i) {
    h.orch->scope_begin();
    TaskArgs a;
    a.inout(vec(kX, 16));
    ASSERT_NE(aiv(h, a), kNoTask) << error_text(h);
    h.orch->scope_end();
  }
  EXPECT_FALSE(h.orch->failed()) << error_text(h);
}

TEST(RingOrchestrator, StuckChipEndsTheWaitWithWaitTimeout) {
  RingHarness h({SetSizes{16, 4096, 64, 64}}, /*timeout_ms=*/50);
  h.driver.auto_complete = false;
  for (int i = 0; i < 16; ++i) {
    TaskArgs a;
    a.in(vec(kX, 16));
    ASSERT_EQ(aiv(h, a), i);
  }
  TaskArgs a;
  a.in(vec(kX, 16));
  EXPECT_EQ(aiv(h, a), kNoTask);
  EXPECT_EQ(h.orch->error().code(), StatusCode::WaitTimeout);
  const std::string m = error_text(h);
  EXPECT_THAT(m, HasSubstr("task 16 waited 50 ms without progress"));
  EXPECT_THAT(m, HasSubstr("task window of depth 0"));
  EXPECT_THAT(m, HasSubstr("oldest task is task 0 (func_id 1), state ready"));
  EXPECT_GE(h.driver.clock, 50'000u);
  EXPECT_LT(h.driver.waits, 20u) << "the wait parks until the deadline instead of spinning";
}

TEST(RingOrchestrator, AutoScopeInsideManualScopeIsInvalidScopeAndLatches) {
  RingHarness h;
  h.orch->scope_begin(ScopeMode::Auto);
  h.orch->scope_begin(ScopeMode::Manual);
  h.orch->scope_begin(ScopeMode::Manual);
  h.orch->scope_end();
  EXPECT_FALSE(h.orch->failed());
  h.orch->scope_begin(ScopeMode::Auto);
  EXPECT_TRUE(h.orch->failed());
  EXPECT_EQ(h.orch->error().code(), StatusCode::InvalidScope);
  EXPECT_THAT(error_text(h), HasSubstr("inside 1 open manual scope(s)"));
  TaskArgs a;
  a.in(vec(kX, 4));
  EXPECT_EQ(aiv(h, a), kNoTask);
  h.orch->scope_end();
  h.orch->scope_end();
  h.orch->scope_end();  // would be a mismatch; ignored after the latch
  EXPECT_EQ(h.orch->error().code(), StatusCode::InvalidScope);
  EXPECT_EQ(h.orch->task_count(), 0u);
}

TEST(RingOrchestrator, FirstValidationErrorLatches) {
  RingHarness h;
  TaskArgs a;
  a.in(vec(kX, 4));
  EXPECT_EQ(h.orch->submit(77, CoreType::AIV, a), kNoTask);
  EXPECT_EQ(h.orch->error().code(), StatusCode::UnknownFuncId);
  EXPECT_EQ(h.orch->submit(kAicFunc, CoreType::AIV, a), kNoTask);  // would be a core mismatch
  EXPECT_EQ(h.orch->error().code(), StatusCode::UnknownFuncId);
  EXPECT_EQ(h.orch->submit_dummy(a), kNoTask);
  EXPECT_EQ(h.orch->allocate(a), kNoTask);
  EXPECT_EQ(h.orch->task_count(), 0u);
  EXPECT_TRUE(h.driver.published.empty());
}

TEST(RingOrchestrator, ManualScopesUseOnlyExplicitDependencies) {
  RingHarness h;
  h.driver.auto_complete = false;
  h.orch->scope_begin(ScopeMode::Manual);
  TaskArgs w;
  w.output_existing(vec(kX, 16));
  const TaskId writer = aiv(h, w);
  TaskArgs r1;
  r1.in(vec(kX, 16));
  const TaskId free_reader = aiv(h, r1);
  TaskArgs r2;
  r2.in(vec(kX, 16)).after(writer);
  const TaskId ordered_reader = aiv(h, r2);
  h.orch->scope_end();
  EXPECT_TRUE(h.is_published(free_reader)) << "no tensor-map lookup in a manual scope";
  EXPECT_FALSE(h.is_published(ordered_reader));
  EXPECT_EQ(h.orch->tensor_map_entries(), 0u) << "no tensor-map record in a manual scope";
  TaskArgs later;
  later.in(vec(kX, 16));
  const TaskId auto_reader = aiv(h, later);
  EXPECT_TRUE(h.is_published(auto_reader)) << "manual writes are invisible to automatic tasks";
  h.driver.run_ready();
  EXPECT_TRUE(h.is_published(ordered_reader));
  EXPECT_FALSE(h.orch->failed()) << error_text(h);
}

TEST(RingOrchestrator, ExplicitDependenciesOnRetiredLiveAndFutureTasks) {
  RingHarness h;
  h.driver.auto_complete = false;
  TaskArgs a;
  a.output_existing(vec(kX, 16));
  const TaskId t0 = aiv(h, a);
  h.driver.run_ready();  // t0 completes; retired on the next submit's bookkeeping
  TaskArgs b;
  b.in(vec(kY, 4));
  const TaskId t1 = aiv(h, b);  // stays live (not run)
  TaskArgs c;
  c.in(vec(kY, 4)).after(t0);
  const TaskId t2 = aiv(h, c);
  EXPECT_TRUE(h.is_published(t2)) << "a retired task is no dependency";
  EXPECT_EQ(h.slot_storage[h.slot_of(t2)].producer_count, 0u);
  TaskArgs d;
  d.in(vec(kY, 4)).after(t1);
  const TaskId t3 = aiv(h, d);
  EXPECT_FALSE(h.is_published(t3));
  EXPECT_EQ(h.fanin[h.slot_of(t3)].load(), 1u) << "waits for t1";
  TaskArgs e;
  e.in(vec(kY, 4)).after(99);
  EXPECT_EQ(aiv(h, e), kNoTask);
  EXPECT_EQ(h.orch->error().code(), StatusCode::InvalidTask);
  EXPECT_THAT(error_text(h), HasSubstr("explicit dependency on task 99"));
  h.driver.run_ready();
  EXPECT_TRUE(h.is_published(t3));
}

TEST(RingOrchestrator, TensorMapEntriesOfRetiredTasksAreErasedInEverySet) {
  RingHarness h;
  h.driver.auto_complete = false;
  TaskArgs root;
  root.output_existing(vec(kX, 16));
  aiv(h, root);
  h.orch->scope_begin();
  TaskArgs d1;
  d1.out({16}, DataType::F32).inout(vec(kY, 16));
  aiv(h, d1);
  h.orch->scope_begin();
  h.orch->scope_begin();
  h.orch->scope_begin();  // depth 4 shares the depth-3 set
  TaskArgs d4;
  d4.in(d1.output(0)).output_existing(vec(kX, 16).view({8}, {8}));
  aiv(h, d4);
  h.orch->scope_end();
  h.orch->scope_end();
  h.orch->scope_end();
  EXPECT_EQ(h.orch->tensor_map_entries(), 5u);  // 4 writes and d4's read of d1's output
  h.orch->scope_end();
  h.driver.run_ready();
  TaskArgs poke;  // any later call retires what completed
  poke.no_dep(vec(kX, 4));
  aiv(h, poke);
  EXPECT_EQ(h.orch->tensor_map_entries(), 0u);
  EXPECT_EQ(h.orch->tensor_map_buffers(), 0u);
}

TEST(RingOrchestrator, MixSpmdPredicatedAndDummyRecords) {
  RingHarness h;
  h.driver.auto_complete = false;
  TaskArgs mix;
  mix.in(vec(kX, 4)).scalar(int64_t{5});
  const TaskId m = h.orch->submit(TaskSpec::mixed({kAicFunc, kAivFunc, -1}, 4), mix);
  ASSERT_NE(m, kNoTask) << error_text(h);
  const common::TaskRecord& rm = h.records[h.slot_of(m)];
  EXPECT_EQ(rm.core_type, static_cast<uint8_t>(CoreType::MIX));
  EXPECT_EQ(rm.func_id, kAicFunc);
  EXPECT_EQ(rm.mix_aiv[0], kAivFunc);
  EXPECT_EQ(rm.mix_aiv[1], -1);
  EXPECT_EQ(rm.block_num, 4u);
  EXPECT_EQ(rm.arg_count, 2u);
  EXPECT_EQ(h.slot_args[rm.args_begin + 1], 5);

  TaskArgs flag_writer;
  const Tensor flag = vec(kY, 2, DataType::I32);
  flag_writer.output_existing(flag);
  const TaskId fw = aiv(h, flag_writer);
  TaskArgs pred;
  pred.in(vec(kX, 4)).when(flag);
  const TaskId p = h.orch->submit(TaskSpec::kernel(kAivFunc, CoreType::AIV, 3), pred);
  const common::TaskRecord& rp = h.records[h.slot_of(p)];
  EXPECT_EQ(rp.flags, common::kTaskFlagPredicated);
  EXPECT_EQ(rp.predicate_addr, flag.data_addr());
  EXPECT_EQ(rp.predicate_bytes, 4u);
  EXPECT_EQ(rp.block_num, 3u);
  EXPECT_EQ(rp.arg_count, 1u) << "the flag is not a kernel argument";
  EXPECT_EQ(rp.skip_fill_granules, 0u) << "no runtime outputs: nothing to zero when skipped";
  EXPECT_EQ(rp.skip_fill_addr, 0u);
  EXPECT_FALSE(h.is_published(p)) << "ordered after the flag's writer";
  EXPECT_EQ(h.fanin[h.slot_of(p)].load(), 1u) << "the flag's writer " << fw;

  TaskArgs dummy;
  dummy.in(vec(kX, 4));
  const TaskId dm = h.orch->submit_dummy(dummy);
  const common::TaskRecord& rd = h.records[h.slot_of(dm)];
  EXPECT_EQ(rd.flags, common::kTaskFlagDummy);
  EXPECT_EQ(rd.func_id, -1);
  h.driver.run_ready();
  EXPECT_TRUE(h.is_published(p));
  EXPECT_FALSE(h.orch->failed()) << error_text(h);
}

// The skip-fill range is the slot's packed output range on this variant too (one rule,
// TaskFront::encode_record): first output to the last one's end in whole 64-byte granules.
TEST(RingOrchestrator, APredicatedTasksSkipFillRangeIsItsPackedOutputs) {
  RingHarness h;
  h.driver.auto_complete = false;
  const Tensor flag = vec(kY, 2, DataType::I32);
  TaskArgs p;
  p.in(vec(kX, 4)).out({4}, DataType::F32).inout(vec(kX, 8)).out({25}, DataType::F32).when(flag);
  const TaskId t = aiv(h, p);
  ASSERT_NE(t, kNoTask) << error_text(h);
  const common::TaskRecord& r = h.records[h.slot_of(t)];
  const uint64_t first = p.output(0).buffer.addr;
  EXPECT_EQ(first % 64, 0u);
  EXPECT_EQ(p.tensor(3).buffer.addr, first + 64) << "packed in argument order";
  EXPECT_EQ(r.skip_fill_addr, first);
  EXPECT_EQ(r.skip_fill_granules, 3u) << "16 bytes, padding, 100 bytes";
  TaskArgs plain;
  plain.out({4}, DataType::F32);
  const common::TaskRecord& rp = h.records[h.slot_of(aiv(h, plain))];
  EXPECT_EQ(rp.skip_fill_granules, 0u) << "not predicated";
  EXPECT_EQ(rp.skip_fill_addr, 0u);
}

// A single-block kernel task's slot carries its complete argument block: the task context (block
// 0 of 1, the counts, the address of the views) right before its arguments and the views after
// them, so a core runs the kernel on the slot storage without copying it; SPMD tasks (a context
// per block) and dependency-only tasks are not run in place.
TEST(RingOrchestrator, SingleBlockTasksCarryACompleteArgumentBlockInTheirSlot) {
  RingHarness h;
  h.driver.auto_complete = false;
  for (int scalars = 0; scalars <= 2; ++scalars) {
    SCOPED_TRACE(scalars);
    TaskArgs task;
    const Tensor column = Tensor::make(kY, {8, 4}, DataType::I32).slice(1, 1, 2);
    task.in(vec(kX, 4)).output_existing(column);
    for (int s = 0; s < scalars; ++s) task.scalar(int64_t{7 + s});
    const TaskId t = aiv(h, task);
    const common::TaskRecord& r = h.records[h.slot_of(t)];
    EXPECT_EQ(r.flags, common::kTaskFlagArgsInPlace);
    ASSERT_EQ(r.arg_count, 2u + static_cast<uint32_t>(scalars));
    EXPECT_EQ(r.args_begin % kSlotArgs, common::kContextWords) << "the context fits before it";
    const int64_t* args = &h.slot_args[r.args_begin];
    const kernel::TaskContext c = kernel::task_context(args);
    EXPECT_EQ(c.block_idx, 0u);
    EXPECT_EQ(c.block_num, 1u);
    EXPECT_EQ(c.tensor_count, 2);
    EXPECT_EQ(c.scalar_count, scalars);
    EXPECT_EQ(c.views_addr, reinterpret_cast<uintptr_t>(args + r.arg_count));
    const kernel::TensorView& v = kernel::view(args, 1);
    EXPECT_EQ(v.buffer_addr, kY.addr);
    EXPECT_EQ(v.start_offset, 1u);
    EXPECT_EQ(v.ndim, 2);
    EXPECT_EQ(v.shape(0), 8u);
    EXPECT_EQ(v.shape(1), 1u);
    EXPECT_EQ(v.stride(0), 4u);
    EXPECT_EQ(v.dtype, static_cast<uint8_t>(DataType::I32));
    EXPECT_EQ(static_cast<uint64_t>(args[1]), v.data_addr());
  }
  TaskArgs spmd;
  spmd.in(vec(kX, 4)).scalar(int64_t{3});
  const TaskId s = h.orch->submit(TaskSpec::kernel(kAivFunc, CoreType::AIV, 2), spmd);
  const common::TaskRecord& rs = h.records[h.slot_of(s)];
  EXPECT_EQ(rs.flags & common::kTaskFlagArgsInPlace, 0);
  EXPECT_EQ(kernel::block_num(&h.slot_args[rs.args_begin]), 2u) << "copied per block by the core";
  EXPECT_EQ(kernel::scalar_count(&h.slot_args[rs.args_begin]), 1);
  TaskArgs dummy;
  dummy.in(vec(kX, 4));
  const TaskId d = h.orch->submit_dummy(dummy);
  EXPECT_EQ(h.records[h.slot_of(d)].flags & common::kTaskFlagArgsInPlace, 0);
  EXPECT_FALSE(h.orch->failed()) << error_text(h);
}

TEST(RingOrchestrator, AllocateTakesOnlyOutputsAndCompletesAtOnce) {
  RingHarness h;
  h.driver.auto_complete = false;
  TaskArgs outs;
  outs.out({32}, DataType::F32);
  const TaskId a = h.orch->allocate(outs);
  ASSERT_NE(a, kNoTask) << error_text(h);
  EXPECT_TRUE(h.is_published(a));
  EXPECT_EQ(h.records[h.slot_of(a)].flags, common::kTaskFlagDummy);
  EXPECT_EQ(outs.output(0).owner_task, a);
  TaskArgs fill;
  fill.inout(outs.output(0));
  const TaskId f = aiv(h, fill);
  EXPECT_FALSE(h.is_published(f)) << "a later InOut orders after the allocation";
  TaskArgs bad;
  bad.out({4}, DataType::F32).in(vec(kX, 4));
  EXPECT_EQ(h.orch->allocate(bad), kNoTask);
  EXPECT_EQ(h.orch->error().code(), StatusCode::InvalidArgument);
  EXPECT_THAT(error_text(h),
              HasSubstr("arg 1: tag in; an allocation-only task takes Out tensors only"));
}

TEST(RingOrchestrator, OutputOfAnEndedScopeIsRejected) {
  RingHarness h;
  h.driver.auto_complete = false;
  h.orch->scope_begin();
  TaskArgs p;
  p.out({16}, DataType::F32);
  aiv(h, p);
  TaskArgs inside;
  inside.in(p.output(0));
  EXPECT_NE(aiv(h, inside), kNoTask) << "fine while the scope is open";
  h.orch->scope_end();
  TaskArgs after_end;
  after_end.in(p.output(0));
  EXPECT_EQ(aiv(h, after_end), kNoTask);
  EXPECT_EQ(h.orch->error().code(), StatusCode::InvalidTask);
  EXPECT_THAT(error_text(h), HasSubstr("task 2 (func_id 1) arg 0"));
  EXPECT_THAT(error_text(h), HasSubstr("(output of task 0) was released when its scope ended"));
}

TEST(RingOrchestrator, GetTensorDataOfAnEndedScopesOutputIsRejected) {
  RingHarness h;
  h.orch->scope_begin();
  TaskArgs p;
  p.out({4}, DataType::F32);
  aiv(h, p);
  h.orch->scope_end();
  float dst[4];
  h.orch->get_tensor_data(p.output(0), dst, sizeof(dst));
  EXPECT_EQ(h.orch->error().code(), StatusCode::InvalidTask);
  EXPECT_THAT(error_text(h), HasSubstr("get_tensor_data: tensor at"));
}

TEST(RingOrchestrator, RootOutputsStayUsableUntilTheEnd) {
  RingHarness h;
  TaskArgs p;
  p.out({16}, DataType::F32);
  aiv(h, p);
  h.orch->scope_begin();
  TaskArgs c;
  c.in(p.output(0));
  EXPECT_NE(aiv(h, c), kNoTask) << error_text(h);
  h.orch->scope_end();
  TaskArgs d;
  d.in(p.output(0));
  EXPECT_NE(aiv(h, d), kNoTask) << error_text(h);
}

// A task reading the runtime outputs of more tasks than a slot lists inline retains the rest
// through spill words; its dependencies need no retention.
TEST(RingOrchestrator, TasksWithManyProducersSpill) {
  RingHarness h({SetSizes{16, 4096, 64, 8}});
  h.driver.auto_complete = false;
  std::vector<TaskId> writers;
  std::vector<Tensor> outputs;
  for (uint64_t i = 0; i < 9; ++i) {
    TaskArgs w;
    w.out({16}, DataType::F32);
    writers.push_back(aiv(h, w));
    outputs.push_back(w.output(0));
  }
  TaskArgs all;
  for (const Tensor& t : outputs) all.in(t);
  const TaskId c = aiv(h, all);
  ASSERT_NE(c, kNoTask) << error_text(h);
  const common::RingSlot& slot = h.slot_storage[h.slot_of(c)];
  ASSERT_EQ(slot.producer_count, 9u) << "the owners of the 9 outputs it reads";
  EXPECT_EQ(h.fanin[h.slot_of(c)].load(), 9u);
  for (uint32_t k = 0; k < 6; ++k) EXPECT_EQ(slot.producers[k], h.slot_of(writers[k]));
  for (uint32_t k = 6; k < 9; ++k) {
    EXPECT_EQ(h.spill_words[slot.spill_begin + (k - 6)], h.slot_of(writers[k]));
  }
  for (const TaskId w : writers) {
    EXPECT_EQ(h.slot_storage[h.slot_of(w)].refs.load(), 2u + 1u)
        << "completion + root scope + the reader";
  }
  h.driver.held.insert(writers[8]);
  h.driver.run_ready();
  EXPECT_FALSE(h.is_published(c));
  h.driver.held.clear();
  h.driver.run_ready();
  EXPECT_TRUE(h.is_published(c));
  EXPECT_FALSE(h.orch->failed()) << error_text(h);
}

TEST(RingOrchestrator, DependencyPoolBackPressure) {
  // 8 entries per set: each reader below needs 4 until it retires.
  RingHarness h({SetSizes{16, 4096, 8, 8}});
  for (int i = 0; i < 50; ++i) {
    for (uint64_t k = 0; k < 4; ++k) {
      TaskArgs w;
      w.output_existing(Tensor::make(kX, {16}, DataType::F32, 16 * k));
      ASSERT_NE(aiv(h, w), kNoTask) << error_text(h);
    }
    TaskArgs r;
    r.in(Tensor::make(kX, {64}, DataType::F32));
    const TaskId reader = aiv(h, r);
    ASSERT_NE(reader, kNoTask) << error_text(h);
    EXPECT_LE(h.slot_storage[h.slot_of(reader)].producer_count, 4u);
  }
  EXPECT_FALSE(h.orch->failed()) << error_text(h);
  EXPECT_GT(h.driver.waits, 0u);
}

TEST(RingOrchestrator, TooManyProducersForTheDependencyPoolIsRejected) {
  RingHarness h({SetSizes{16, 4096, 4, 64}});
  h.driver.auto_complete = false;
  for (uint64_t i = 0; i < 5; ++i) {
    TaskArgs w;
    w.output_existing(Tensor::make(kX, {16}, DataType::F32, 16 * i));
    aiv(h, w);
  }
  TaskArgs r;
  r.in(Tensor::make(kX, {80}, DataType::F32));
  EXPECT_EQ(aiv(h, r), kNoTask);
  EXPECT_EQ(h.orch->error().code(), StatusCode::CapacityExceeded);
  EXPECT_THAT(error_text(h), HasSubstr("5 producers"));
  EXPECT_THAT(error_text(h), HasSubstr("dep_pool[0]"));
}

TEST(RingOrchestrator, GetTensorDataWaitsForTheWriter) {
  RingHarness h;
  std::vector<float> x(16, 0.0f);
  const DeviceBuffer buf{reinterpret_cast<uint64_t>(x.data()), x.size() * sizeof(float)};
  h.driver.auto_complete = true;
  h.driver.on_run = [&](uint32_t slot) {
    if (h.public_ids[slot] != 0) return;
    for (int i = 0; i < 16; ++i) x[i] = static_cast<float>(i);
  };
  const Tensor t = Tensor::make(buf, {4, 4}, DataType::F32);
  TaskArgs w;
  w.output_existing(t);
  aiv(h, w);
  std::vector<float> column(4, -1.0f);
  h.orch->get_tensor_data(t.view({4, 1}, {0, 2}), column.data(), 4 * sizeof(float));
  ASSERT_FALSE(h.orch->failed()) << error_text(h);
  EXPECT_EQ(column, (std::vector<float>{2, 6, 10, 14}));
  std::vector<float> all(16);
  h.orch->get_tensor_data(t.transpose(0, 1), all.data(), 64);
  EXPECT_EQ(all[1], 4.0f);
  EXPECT_EQ(all[4], 1.0f);
}

TEST(RingOrchestrator, GetTensorDataTimesOutNamingTheWriter) {
  RingHarness h({SetSizes{}}, /*timeout_ms=*/30);
  std::vector<float> x(4, 0.0f);
  const DeviceBuffer buf{reinterpret_cast<uint64_t>(x.data()), 16};
  h.driver.held.insert(0);
  TaskArgs w;
  w.output_existing(Tensor::make(buf, {4}, DataType::F32));
  aiv(h, w);
  float dst[4] = {7, 7, 7, 7};
  h.orch->get_tensor_data(Tensor::make(buf, {4}, DataType::F32), dst, 16);
  EXPECT_EQ(h.orch->error().code(), StatusCode::WaitTimeout);
  EXPECT_THAT(error_text(h), HasSubstr("get_tensor_data waited 30 ms"));
  EXPECT_THAT(error_text(h), HasSubstr("task 0 (func_id 1), state ready"));
  EXPECT_EQ(dst[0], 7.0f) << "nothing copied after the error";
}

// The lost wake-up of issue 11: the waited-for task completes after the wait found it
// unfinished but before the wait chose its wake target (a scheduler finishing it meanwhile). The
// wait must end at once, not sleep to its deadline: on the chip nothing would ring it, because
// no completion is left to reach the target.
TEST(RingOrchestrator, AWriterCompletingAsTheDataWaitDecidesToSleepEndsTheWait) {
  RingHarness h;
  h.driver.auto_complete = false;  // only the hook below completes the task
  std::vector<float> x(4, 0.0f);
  const DeviceBuffer buf{reinterpret_cast<uint64_t>(x.data()), 16};
  TaskArgs w;
  w.output_existing(Tensor::make(buf, {4}, DataType::F32));
  const TaskId writer = aiv(h, w);
  ASSERT_EQ(writer, 0) << error_text(h);
  // The call's entry check is the first question, the wait's after finding the writer
  // unfinished the second: that is the moment.
  int checks = 0;
  bool completed = false;
  h.driver.on_chip_failed_check = [&] {
    if (++checks != 2 || h.driver.ready.empty()) return;
    completed = true;
    const uint32_t slot = h.driver.ready.front();
    h.driver.ready.pop_front();
    h.driver.complete(slot);
  };
  float dst[4] = {7, 7, 7, 7};
  h.orch->get_tensor_data(Tensor::make(buf, {4}, DataType::F32), dst, 16);
  EXPECT_FALSE(h.orch->failed()) << error_text(h);
  EXPECT_TRUE(completed);
  EXPECT_EQ(h.driver.clock, 0u) << "the wait slept to its deadline after its writer completed";
  EXPECT_EQ(dst[0], 0.0f);
}

// The same race in back-pressure: the window's last outstanding task completes after the
// orchestrator found nothing to retire.
TEST(RingOrchestrator, TheLastTaskCompletingAsAFullWindowWaitsEndsTheWait) {
  RingHarness h({SetSizes{16, 4096, 64, 64}});
  h.driver.auto_complete = false;
  for (int i = 0; i < 16; ++i) {
    TaskArgs a;
    ASSERT_EQ(aiv(h, a), i) << error_text(h);
  }
  // Everything but the oldest completes; the window stays full (retirement is in order).
  const uint32_t oldest = h.driver.ready.front();
  h.driver.ready.pop_front();
  h.driver.run_ready();
  int checks = 0;  // as above: the second check follows the failed retirement
  bool completed = false;
  h.driver.on_chip_failed_check = [&] {
    if (++checks != 2) return;
    completed = true;
    h.driver.complete(oldest);
  };
  TaskArgs next;
  EXPECT_EQ(aiv(h, next), 16) << error_text(h);
  EXPECT_TRUE(completed);
  EXPECT_EQ(h.driver.clock, 0u) << "the wait slept to its deadline after the last completion";
}

TEST(RingOrchestrator, GetTensorDataRejectsAWrongByteCount) {
  RingHarness h;
  float dst[4];
  h.orch->get_tensor_data(vec(kX, 4), dst, 12);
  EXPECT_EQ(h.orch->error().code(), StatusCode::InvalidArgument);
  EXPECT_THAT(error_text(h), HasSubstr("12 bytes given, the tensor has 16"));
}

TEST(RingOrchestrator, SetTensorDataWaitsForEveryEarlierTask) {
  RingHarness h;
  std::vector<int32_t> x(8, 0);
  const DeviceBuffer buf{reinterpret_cast<uint64_t>(x.data()), 32};
  const Tensor t = Tensor::make(buf, {8}, DataType::I32);
  std::vector<int32_t> seen_by_reader;
  h.driver.on_run = [&](uint32_t) { seen_by_reader = x; };
  TaskArgs r;
  r.in(t);
  aiv(h, r);
  const std::vector<int32_t> src{1, 2, 3, 4, 5, 6, 7, 8};
  h.orch->set_tensor_data(t, src.data(), 32);
  ASSERT_FALSE(h.orch->failed()) << error_text(h);
  EXPECT_EQ(seen_by_reader, std::vector<int32_t>(8, 0)) << "the reader ran before the write";
  EXPECT_EQ(x, src);
}

TEST(RingOrchestrator, ChipFailureStopsSubmission) {
  RingHarness h;
  h.launch.result.code.store(static_cast<int32_t>(StatusCode::KernelFault));
  std::snprintf(h.launch.result.detail, sizeof(h.launch.result.detail), "kernel 3 faulted");
  h.driver.chip_failed_flag = true;
  TaskArgs a;
  a.in(vec(kX, 4));
  EXPECT_EQ(aiv(h, a), kNoTask);
  EXPECT_EQ(h.orch->error().code(), StatusCode::KernelFault);
  EXPECT_THAT(error_text(h), HasSubstr("kernel 3 faulted"));
}

// Orchestration functions for run(): plain functions, state through globals.
int g_root_tasks = 0;
void submit_root_outputs(Orchestration& orch, const TaskArgs&) {
  for (int i = 0; i < g_root_tasks; ++i) {
    TaskArgs a;
    a.out({16}, DataType::F32);
    orch.submit(kAivFunc, CoreType::AIV, a);
  }
}
void leave_scope_open(Orchestration& orch, const TaskArgs&) {
  orch.scope_begin();
}
void throw_plain(Orchestration&, const TaskArgs&) {
  throw std::runtime_error("user bug");
}
void fail_then_throw(Orchestration& orch, const TaskArgs&) {
  orch.scope_end();  // ScopeMismatch latches
  throw std::runtime_error("later");
}

TEST(RingOrchestratorRun, RootScopeEndsWhenTheFunctionReturns) {
  RingHarness h;
  h.driver.auto_complete = false;
  g_root_tasks = 5;
  EXPECT_TRUE(h.orch->run(&submit_root_outputs, TaskArgs{}).is_ok());
  EXPECT_EQ(h.orch->submitted(), 5u);
  h.driver.run_ready();
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(h.slot_storage[h.slot_of(i)].refs.load(), 0u) << "root scope reference dropped";
  }
}

TEST(RingOrchestratorRun, ReportsScopesLeftOpenAndExceptions) {
  {
    RingHarness h;
    const Status s = h.orch->run(&leave_scope_open, TaskArgs{});
    EXPECT_EQ(s.code(), StatusCode::ScopeMismatch);
    EXPECT_THAT(s.message(), HasSubstr("1 scope(s) still open"));
  }
  {
    RingHarness h;
    const Status s = h.orch->run(&throw_plain, TaskArgs{});
    EXPECT_EQ(s.code(), StatusCode::OrchestrationFailed);
    EXPECT_THAT(s.message(), HasSubstr("user bug"));
  }
  {
    RingHarness h;
    const Status s = h.orch->run(&fail_then_throw, TaskArgs{});
    EXPECT_EQ(s.code(), StatusCode::ScopeMismatch) << "the latched error wins";
  }
}

TEST(RingOrchestratorRun, UnusedSlotsStartCompleted) {
  RingHarness h;
  for (uint32_t s = 0; s < h.control.total_slots; ++s) {
    EXPECT_EQ(h.task_state[s].load(), 3u);
    EXPECT_EQ(h.slot_storage[s].refs.load(), 0u);
  }
}

// An accumulator allocated in a scope and folded in place (InOut) is read last through a chain
// of writers; the allocation task's heap must stay reserved until that reader completed, not only
// until the scope ended and the first fold released it.
TEST(RingOrchestrator, ReadersRetainTheOwnerOfTheOutputTheyRead) {
  RingHarness h({SetSizes{16, 4096, 64, 64}});
  h.orch->scope_begin();
  TaskArgs alloc;
  alloc.out({1024}, DataType::F32);  // the whole depth-1 heap
  ASSERT_NE(h.orch->allocate(alloc), kNoTask) << error_text(h);
  const Tensor acc = alloc.output(0);
  for (int fold = 0; fold < 2; ++fold) {
    TaskArgs f;
    f.inout(acc);
    ASSERT_NE(aiv(h, f), kNoTask) << error_text(h);
  }
  TaskArgs reader;
  reader.in(acc);
  const TaskId reader_id = aiv(h, reader);
  ASSERT_NE(reader_id, kNoTask) << error_text(h);
  h.orch->scope_end();
  h.driver.held.insert(reader_id);  // the reader has not run yet
  h.driver.run_ready();

  h.orch->scope_begin();
  TaskArgs next;
  next.out({1024}, DataType::F32);  // needs the accumulator's bytes
  EXPECT_EQ(aiv(h, next), kNoTask) << "the heap was reused while its reader was pending";
  EXPECT_EQ(h.orch->error().code(), StatusCode::WaitTimeout) << error_text(h);
}

}  // namespace
}  // namespace chiprt::orchestrator
