// paged_attention beyond the registered cases: how its tiny-ring configuration reaches the run,
// and a block scope whose intermediates can never fit the heap ring, which tensormap_ringbuffer
// must report as a deadlock naming the ring (host_build_graph has no rings and runs it).
#include <gtest/gtest.h>

#include <string>

#include "chiprt/status.h"
#include "chiprt/worker.h"
#include "example.h"

namespace {

using chiprt::examples::Example;
using chiprt::examples::ExampleCase;
using chiprt::examples::Outcome;

const Example& paged_attention() {
  const Example* example = chiprt::examples::find_example("paged_attention");
  EXPECT_NE(example, nullptr);
  return *example;
}

chiprt::WorkerOptions two_clusters() {
  chiprt::WorkerOptions options;
  options.sim.clusters = 2;
  return options;
}

// One head of 8 query rows and head_dim 96: per KV block the scores (512 B), the softmax outputs
// (512 + 64 + 64 B) and the partial product (3072 B) exceed a 4096-byte heap together, though each
// task's outputs fit alone.
ExampleCase oversized_block_scope() {
  return {"oversized_block_scope",
          {{"batch", 1},
           {"heads", 1},
           {"q_rows", 8},
           {"head_dim", 96},
           {"block_size", 16},
           {"max_seq_len", 40},
           {"manual", 0},
           {"ring_window", 64},
           {"ring_heap", 4096},
           {"ring_dep_pool", 64}}};
}

TEST(PagedAttentionScene, TinyRingCasesCarryTheirRingSizes) {
  for (const char* name : {"tiny_rings", "manual_tiny_rings"}) {
    const ExampleCase* c = paged_attention().find_case(name);
    ASSERT_NE(c, nullptr) << name;
    EXPECT_EQ(c->param("ring_window"), 64) << name;
    EXPECT_EQ(c->param("ring_dep_pool"), 64) << name;
    EXPECT_GT(c->param("ring_heap"), 0) << name;
  }
  EXPECT_EQ(paged_attention().find_case("manual")->param("manual"), 1);
  EXPECT_EQ(paged_attention().find_case("small")->param("ring_window"), 0);
}

TEST(PagedAttentionScene, BlockScopeLargerThanTheHeapIsARingDeadlock) {
  chiprt::Worker worker;
  worker.init(two_clusters());
  chiprt::CallConfig config;
  config.runtime = chiprt::RuntimeVariant::TensormapRingbuffer;
  try {
    const Outcome outcome = paged_attention().run(worker, oversized_block_scope(), config);
    FAIL() << "expected RingDeadlock, the run passed=" << outcome.passed << ": " << outcome.message;
  } catch (const chiprt::Error& e) {
    EXPECT_EQ(e.code(), chiprt::StatusCode::RingDeadlock) << e.what();
    EXPECT_NE(e.message().find("heap"), std::string::npos) << e.what();
    EXPECT_NE(e.message().find("4096"), std::string::npos) << e.what();
  }
  // The example released its callable and buffers on the error path; the Worker still runs.
  EXPECT_FALSE(worker.has_callable(0));
  config.rings.heap_bytes = {16384};
  const Outcome outcome = paged_attention().run(worker, oversized_block_scope(), config);
  EXPECT_TRUE(outcome.passed) << outcome.message;
}

TEST(PagedAttentionScene, OversizedBlockScopeRunsOnHostBuildGraph) {
  chiprt::Worker worker;
  worker.init(two_clusters());
  chiprt::CallConfig config;
  config.runtime = chiprt::RuntimeVariant::HostBuildGraph;
  const Outcome outcome = paged_attention().run(worker, oversized_block_scope(), config);
  EXPECT_TRUE(outcome.passed) << outcome.message;
}

}  // namespace
