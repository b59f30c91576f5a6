// DiagDecoder: a synthetic stream of the records a ring run with every switch on sends per task
// (Submit, Edge, TaskExec, Counters, Ready, Dispatch, Complete, a loop phase, TensorArg and its
// Continuation) decodes into the model's rows (each block matched with its dispatch and its
// completion, a node per task, the ready times from the edges) while holding at most
// kRetainedBytesPerTask per task; records no file needs (Ready) are not kept.
#include "host/diag_decoder.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace chiprt::host {
namespace {

using common::DiagKind;
using common::DiagRecord;

constexpr uint64_t kTasks = 50000;
constexpr uint32_t kCores = 6;  // streams 0..5: cores; 6: the orchestrator; 7: a scheduler
constexpr uint64_t kRetainedBytesPerTask = 768;

DiagRecord record(DiagKind kind, uint16_t where, uint64_t task, uint64_t begin, uint64_t end,
                  int32_t func_id = -1, uint32_t block = 0, uint32_t value = 0, uint64_t a = 0,
                  uint64_t b = 0, uint64_t c = 0) {
  return DiagRecord{
      static_cast<uint16_t>(kind), where, func_id, block, value, task, begin, end, a, b, c};
}

TEST(DiagDecoder, DecodesATaskStreamIntoMatchedRowsWithinAPerTaskBound) {
  DiagDecoder::Setup setup;
  setup.config = DiagnosticsConfig::all("unused");
  setup.stream_count = kCores + 2;
  setup.device_cores = kCores;
  setup.clock_hz = 1000000000;  // a cycle is a ns
  setup.ring = true;
  DiagDecoder decoder(setup);
  decoder.set_anchor(0, 0);
  const uint32_t orchestrator = kCores, scheduler = kCores + 1;
  // Task t: submitted at 10t, ready, dispatched at 10t+2 to core t % kCores, runs 10t+3..10t+100,
  // completes at 10t+101; task t depends on task t - kCores (the one before it on its core).
  for (uint64_t t = 0; t < kTasks; ++t) {
    const auto core = static_cast<uint16_t>(t % kCores);
    const uint64_t at = 10 * t;
    const DiagRecord orch[] = {
        record(DiagKind::Submit, 0, t, at, at + 1, 7, 0, 1, 0, 1, 0),
        record(DiagKind::Edge, 0, t, 0, 0, -1, 0, 0, t >= kCores ? t - kCores : t),
    };
    decoder.decode(orch, t >= kCores ? 2 : 1, orchestrator);
    const DiagRecord sched[] = {
        record(DiagKind::Ready, 0, t, at + 1, at + 1, -1, 0, 1),
        record(DiagKind::Dispatch, core, t, at + 2, at + 2, 7, 0, 1),
        record(DiagKind::LoopPhase, 0, 0, at + 2, at + 3, -1, 0, 1),
        record(DiagKind::Complete, core, t, at + 101, at + 101),
    };
    decoder.decode(sched, 4, scheduler);
    const DiagRecord exec[] = {
        record(DiagKind::TensorArg, core, t, 1, 0, 7, 0, 0 | (2u << 8) | (1u << 16), 4096, t, 0),
        record(DiagKind::Continuation, core, t, 16, 1),
        record(DiagKind::TaskExec, core, t, at + 3, at + 100, 7, 0, 1),
        record(DiagKind::Counters, core, t, 0, 0, 7, 0, 4, 0, 0, 2),
    };
    decoder.decode(exec, 4, core);
  }
  EXPECT_EQ(decoder.records_received(), kTasks * 10 - kCores);
  const uint64_t retained = decoder.retained_bytes();
  EXPECT_LE(retained, kTasks * kRetainedBytesPerTask)
      << retained / kTasks << " bytes per task retained";

  diagnostics::RunModel model;
  model.config = setup.config;
  model.have_edges = true;
  decoder.build(model, 0);
  EXPECT_EQ(decoder.retained_bytes(), 0u);
  ASSERT_EQ(model.nodes.size(), kTasks);
  ASSERT_EQ(model.blocks.size(), kTasks);
  EXPECT_EQ(model.edges.size(), kTasks - kCores);
  EXPECT_EQ(model.counters.size(), kTasks);
  EXPECT_EQ(model.args.size(), kTasks);
  EXPECT_EQ(model.scheduler_events.size(), 2 * kTasks);
  EXPECT_EQ(model.thread_spans.size(), 2 * kTasks);  // a loop phase and a submit span per task
  for (uint64_t t = 0; t < kTasks; ++t) {
    const diagnostics::TaskNode& n = model.nodes[t];
    const diagnostics::BlockRun& b = model.blocks[t];
    ASSERT_EQ(n.task, t);
    ASSERT_EQ(b.task, t);
    EXPECT_EQ(n.func_id, 7);
    EXPECT_EQ(b.core, static_cast<int32_t>(t % kCores));
    EXPECT_EQ(b.dispatch_ns, 10 * t + 2);
    EXPECT_EQ(b.start_ns, 10 * t + 3);
    EXPECT_EQ(b.end_ns, 10 * t + 100);
    EXPECT_EQ(b.complete_ns, 10 * t + 101);
    // Ready when its producer's kernel ended (after its own submission), or at its submission's
    // end for the first ones.
    EXPECT_EQ(n.ready_ns, t >= kCores ? 10 * (t - kCores) + 100 : 10 * t + 1);
    EXPECT_EQ(model.args[t].task, t);
    ASSERT_EQ(model.args[t].shape.size(), 1u);
    EXPECT_EQ(model.args[t].shape[0], 16u);
    EXPECT_EQ(model.args[t].strides[0], 1u);
    if (::testing::Test::HasFailure()) break;
  }
}

// A block dispatched and never finished (the device died under it) gets a block from its
// dispatch and a node from the Dispatch record; a completion goes to the earliest-starting
// block of its task on its core.
TEST(DiagDecoder, ADispatchWithoutAnExecutionIsAStillRunningBlock) {
  DiagDecoder::Setup setup;
  setup.config = DiagnosticsConfig::all("unused");
  setup.stream_count = 4;
  setup.device_cores = 3;
  setup.clock_hz = 1000000000;
  DiagDecoder decoder(setup);
  decoder.set_anchor(0, 0);
  const DiagRecord sched[] = {
      record(DiagKind::Dispatch, 1, 5, 100, 100, 3, 0, 2),
      record(DiagKind::Dispatch, 1, 5, 101, 101, 3, 1, 2),
      record(DiagKind::Complete, 1, 5, 300, 300),
  };
  decoder.decode(sched, 3, 3);
  const DiagRecord exec[] = {record(DiagKind::TaskExec, 1, 5, 110, 200, 3, 1, 2)};
  decoder.decode(exec, 1, 1);
  diagnostics::RunModel model;
  decoder.build(model, 0);
  ASSERT_EQ(model.nodes.size(), 1u);
  EXPECT_EQ(model.nodes[0].func_id, 3);
  EXPECT_EQ(model.nodes[0].block_num, 2u);
  ASSERT_EQ(model.blocks.size(), 2u);
  // Block 0: dispatched, never ran to its end (drawn from its dispatch).
  EXPECT_EQ(model.blocks[0].block, 0u);
  EXPECT_EQ(model.blocks[0].start_ns, 100u);
  EXPECT_EQ(model.blocks[0].end_ns, diagnostics::kNoTime);
  EXPECT_EQ(model.blocks[0].complete_ns, 300u);  // the earliest-starting block of the core
  EXPECT_EQ(model.blocks[1].block, 1u);
  EXPECT_EQ(model.blocks[1].dispatch_ns, 101u);
  EXPECT_EQ(model.blocks[1].end_ns, 200u);
  EXPECT_EQ(model.blocks[1].complete_ns, diagnostics::kNoTime);
}

}  // namespace
}  // namespace chiprt::host
