// NodeGraph (src/node/node_graph.h): a node run's tasks, their dependencies by the chip's rule over
// node buffers, deterministic placement by data, and the refusals of what a node task may not be.
#include "node/node_graph.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "chiprt/status.h"
#include "chiprt/tensor.h"
#include "node_test_support.h"

namespace chiprt::node {
namespace {

using Ids = std::vector<uint32_t>;

struct Fixture {
  explicit Fixture(uint32_t chip_count) : chips(options(chip_count)), memory(chips) {}
  static NodeOptions options(uint32_t chip_count) {
    NodeOptions o;
    o.chips = chip_count;
    o.in_process = true;
    o.sim.clusters = 1;
    o.sim.memory_bytes = 64ull << 20;
    return o;
  }
  // An F32 tensor over a new node buffer of `n` elements homed at `home`.
  Tensor vector(uint64_t n, Location home) {
    const NodeAllocation a = memory.allocate(n * 4, home);
    return Tensor::make(DeviceBuffer{a.addr, a.size}, {n}, DataType::F32);
  }
  NodeChips chips;
  NodeMemory memory;
};

Placement on_chip(uint32_t k) {
  return Placement{Placement::Kind::Chip, k};
}
const Placement kAny{};

TEST(NodeGraph, DependenciesFollowTheChipsRuleAcrossChipsAndTheHost) {
  Fixture f(2);
  const Tensor a = f.vector(64, 0), b = f.vector(64, 1);
  NodeGraph g(2, f.memory);
  TaskArgs write_a;
  write_a.output_existing(a);
  TaskArgs read_a;
  read_a.in(a);
  TaskArgs read_b;
  read_b.in(b);
  EXPECT_EQ(g.add_chip_run(1, write_a, on_chip(0)), 0u);
  EXPECT_EQ(g.add_chip_run(1, read_a, on_chip(1)), 1u);   // RAW on 0
  EXPECT_EQ(g.add_chip_run(1, write_a, on_chip(1)), 2u);  // WAR on 1 (which waited for 0)
  EXPECT_EQ(g.add_chip_run(1, read_b, on_chip(0)), 3u);   // independent
  EXPECT_EQ(g.add_host_task(read_a), 4u);                 // RAW on 2
  TaskArgs after;
  after.no_dep(a).after(3);
  EXPECT_EQ(g.add_chip_run(1, after, on_chip(0)), 5u);  // after(3) only
  TaskArgs first_half;
  first_half.inout(a.view({32}, {0}));
  EXPECT_EQ(g.add_chip_run(1, first_half, on_chip(0)), 6u);  // WAR on 4 (which waited for 2)
  TaskArgs second_half;
  second_half.in(a.view({32}, {32}));
  EXPECT_EQ(g.add_chip_run(1, second_half, on_chip(1)), 7u);  // RAW on 2, not on 6
  EXPECT_EQ(g.task(0).producers, Ids{});
  EXPECT_EQ(g.task(1).producers, Ids{0});
  // By the chip's rule alone, a writer that a later reader read all of is left out (the reader
  // waited for it); the node adds it back when it wrote elsewhere, as it orders every two writers
  // at different locations whose byte extents meet.
  EXPECT_EQ(g.task(2).producers, (Ids{0, 1}));
  EXPECT_EQ(g.task(3).producers, Ids{});
  EXPECT_EQ(g.task(4).producers, Ids{2});
  // no_dep opts out of the chip's rule, not of the order of writers on different chips (it may
  // write, on chip 0, bytes task 2 wrote on chip 1).
  EXPECT_EQ(g.task(5).producers, (Ids{2, 3}));
  EXPECT_EQ(g.task(6).producers, (Ids{2, 4}));  // 2 wrote a on chip 1; 6 writes it on chip 0
  EXPECT_EQ(g.task(7).producers, Ids{2});
  EXPECT_EQ(g.task(2).consumers, (Ids{4, 5, 6, 7}));
  EXPECT_EQ(g.task(4).location, kHostLocation);
  EXPECT_EQ(g.task(1).uses,
            (std::vector<RegionUse>{{a.buffer.addr, 0, 256, Coherence::Access::Read, ArgTag::In}}));
  EXPECT_EQ(
      g.task(6).uses,
      (std::vector<RegionUse>{{a.buffer.addr, 0, 128, Coherence::Access::Write, ArgTag::InOut}}));
}

TEST(NodeGraph, AnyChipGoesWhereMostInputBytesWillBeThenToTheLeastLoadedChip) {
  Fixture f(4);
  const Tensor big = f.vector(1000, 2), small = f.vector(100, 1), out = f.vector(10, kHostLocation);
  const Tensor other = f.vector(200, 1);
  NodeGraph g(4, f.memory);
  TaskArgs both;
  both.in(big).in(small).output_existing(out);
  EXPECT_EQ(g.task(g.add_chip_run(0, both, kAny)).location, 2u) << "big is homed on chip 2";
  EXPECT_TRUE(g.task(0).placed_by_data);
  // A run on chip 3 rewrites big: the next reader of big goes to chip 3.
  TaskArgs rewrite;
  rewrite.output_existing(big);
  g.add_chip_run(0, rewrite, on_chip(3));
  EXPECT_EQ(g.task(g.add_chip_run(0, both, kAny)).location, 3u);
  // Chip 3 holds small too now (the run before read it there): a reader of part of big and of
  // small stays on 3; one of part of big (40 bytes on 3) and of `other` (800 bytes on 1) goes to 1.
  TaskArgs part;
  part.in(big.view({10}, {0})).in(small);
  EXPECT_EQ(g.task(g.add_chip_run(0, part, kAny)).location, 3u);
  TaskArgs part_other;
  part_other.in(big.view({10}, {0})).in(other);
  EXPECT_EQ(g.task(g.add_chip_run(0, part_other, kAny)).location, 1u);
  // Nothing to read: the chip with the fewest runs so far (0 has none), then by index.
  TaskArgs nothing;
  nothing.output_existing(out);
  const uint32_t fresh = g.add_chip_run(0, nothing, kAny);
  EXPECT_EQ(g.task(fresh).location, 0u);
  EXPECT_EQ(g.chip_runs_on(0), 1u);
  EXPECT_EQ(g.chip_runs_on(3), 3u);
  EXPECT_EQ(g.chip_runs_on(1), 1u);
  // The same program places the same way, every time.
  for (int again = 0; again < 3; ++again) {
    NodeGraph h(4, f.memory);
    h.add_chip_run(0, both, kAny);
    h.add_chip_run(0, rewrite, on_chip(3));
    h.add_chip_run(0, both, kAny);
    h.add_chip_run(0, part, kAny);
    h.add_chip_run(0, part_other, kAny);
    h.add_chip_run(0, nothing, kAny);
    for (uint32_t id = 0; id < h.size(); ++id) EXPECT_EQ(h.task(id).location, g.task(id).location);
  }
}

TEST(NodeGraph, WhatANodeTaskMayNotBeIsRefusedNamingTheArgument) {
  Fixture f(2);
  const Tensor a = f.vector(16, 0);
  NodeGraph g(2, f.memory);
  TaskArgs out;
  out.in(a).out({4}, DataType::F32);
  Error e = error_of([&] { g.add_chip_run(0, out, kAny); });
  EXPECT_EQ(e.code(), StatusCode::InvalidArgument);
  EXPECT_NE(std::string(e.what()).find("node task 0 arg 1"), std::string::npos) << e.what();
  TaskArgs predicated;
  const NodeAllocation flag = f.memory.allocate(4, 0);
  predicated.in(a).when(Tensor::make(DeviceBuffer{flag.addr, flag.size}, {1}, DataType::I32));
  EXPECT_EQ(error_of([&] { g.add_chip_run(0, predicated, kAny); }).code(),
            StatusCode::UnsupportedFeature);
  TaskArgs early;
  early.in(a).after(0);
  EXPECT_EQ(error_of([&] { g.add_chip_run(0, early, kAny); }).code(), StatusCode::InvalidTask);
  const DeviceBuffer device = f.chips.allocate(0, 64);
  TaskArgs foreign;
  foreign.in(Tensor::make(device, {16}, DataType::F32));
  e = error_of([&] { g.add_host_task(foreign); });
  EXPECT_EQ(e.code(), StatusCode::InvalidDevicePointer);
  EXPECT_NE(std::string(e.what()).find("node task 0 arg 0"), std::string::npos) << e.what();
  TaskArgs inner;
  inner.in(Tensor::make(DeviceBuffer{a.buffer.addr + 16, 32}, {8}, DataType::F32));
  e = error_of([&] { g.add_host_task(inner); });
  EXPECT_NE(std::string(e.what()).find("not a whole node buffer"), std::string::npos) << e.what();
  TaskArgs fine;
  fine.in(a);
  e = error_of([&] { g.add_chip_run(0, fine, on_chip(2)); });
  EXPECT_NE(std::string(e.what()).find("on_chip(2)"), std::string::npos) << e.what();
  EXPECT_EQ(g.size(), 0u) << "a refused task is not added";
  EXPECT_EQ(g.add_chip_run(0, fine, on_chip(1)), 0u);
}

}  // namespace
}  // namespace chiprt::node
