// NodeExecutor (src/node/node_executor.h): a node graph of chip runs and host tasks run across
// 1, 2 and 4 chips, on both runtime variants, in process and isolated (one table); copies made
// once per chip; a crashed chip run fails alone, its dependants cancelled and its writes
// discarded; a host task that throws.
#include "node/node_executor.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "chiprt/tensor.h"
#include "node_test_support.h"

namespace chiprt::node {
namespace {

constexpr uint64_t kN = 128;

struct Row {
  const char* name;
  RuntimeVariant runtime;
  bool in_process;
  uint32_t chips;
};
const Row kRows[] = {
    {"HostBuildGraphInProcess1", RuntimeVariant::HostBuildGraph, true, 1},
    {"HostBuildGraphInProcess2", RuntimeVariant::HostBuildGraph, true, 2},
    {"HostBuildGraphInProcess4", RuntimeVariant::HostBuildGraph, true, 4},
    {"RingInProcess1", RuntimeVariant::TensormapRingbuffer, true, 1},
    {"RingInProcess4", RuntimeVariant::TensormapRingbuffer, true, 4},
    {"HostBuildGraphIsolated2", RuntimeVariant::HostBuildGraph, false, 2},
    // Four isolated chips; two under a sanitizer (node_test_support.h).
    {"RingIsolated4", RuntimeVariant::TensormapRingbuffer, false, kUnderSanitizer ? 2u : 4u},
};

struct Node {
  explicit Node(const Row& row) : chips(options(row)), memory(chips), executor(chips, memory) {
    for (uint32_t k = 0; k < chips.count(); ++k) {
      const auto call = chips.chip(k).enter("register_callable");
      chips.chip(k).runner(call).register_callable(kCallable, add_callable());
    }
  }
  static NodeOptions options(const Row& row) {
    NodeOptions o;
    o.chips = row.chips;
    o.runtime = row.runtime;
    o.in_process = row.in_process;
    o.sim.clusters = 1;
    o.sim.memory_bytes = 256ull << 20;
    return o;
  }
  Tensor vector(Location home) {
    const NodeAllocation a = memory.allocate(kN * 4, home);
    return Tensor::make(DeviceBuffer{a.addr, a.size}, {kN}, DataType::F32);
  }
  void upload(const Tensor& t, const std::vector<float>& values) {
    memory.copy_to(t.buffer.addr, values.data(), values.size() * 4);
  }
  std::vector<float> download(const Tensor& t) {
    std::vector<float> values(kN);
    memory.copy_from(values.data(), t.buffer.addr, kN * 4);
    return values;
  }
  NodeRunResult run(const NodeGraph& graph, const std::vector<HostFunction>& host = {}) {
    std::vector<HostFunction> functions = host;
    functions.resize(graph.size());
    return executor.execute(graph, functions, CallConfig{});
  }
  NodeChips chips;
  NodeMemory memory;
  NodeExecutor executor;
};

std::vector<float> iota(float base) {
  std::vector<float> v(kN);
  for (uint64_t i = 0; i < kN; ++i) v[i] = base + static_cast<float>(i);
  return v;
}

Placement on_chip(uint32_t k) {
  return Placement{Placement::Kind::Chip, k};
}

// A host task over (in, output_existing out): out = in * 2.
void double_on_host(const HostTask& task) {
  const float* in = task.data<const float>(0);
  float* out = task.data<float>(1);
  for (uint64_t i = 0; i < task.tensor(0).numel(); ++i) out[i] = in[i] * 2.0f;
}

class NodeExecutorTest : public testing::TestWithParam<Row> {};

TEST_P(NodeExecutorTest, AGraphAcrossChipsAndTheHostComputesWhatTheHostWould) {
  Node node(GetParam());
  const uint32_t n = GetParam().chips;
  const Tensor x = node.vector(kHostLocation), y = node.vector(0), z = node.vector(1 % n);
  const Tensor w = node.vector(kHostLocation), v = node.vector(kHostLocation);
  const Tensor u = node.vector(n - 1);
  node.upload(x, iota(0.0f));
  NodeGraph graph(n, node.memory);
  std::vector<HostFunction> host(6);
  graph.add_chip_run(kCallable, add_args(x, y, 1.0f), on_chip(0));      // 0: y = x + 1
  graph.add_chip_run(kCallable, add_args(y, z, 2.0f), on_chip(1 % n));  // 1: z = y + 2
  TaskArgs twice;
  twice.in(z).output_existing(w);
  host[graph.add_host_task(twice)] = double_on_host;                     // 2: w = z * 2
  graph.add_chip_run(kCallable, add_args(w, v, 3.0f), Placement{});      // 3: v = w + 3
  graph.add_chip_run(kCallable, add_args(y, u, 10.0f), on_chip(2 % n));  // 4: u = y + 10
  const NodeRunResult result = node.run(graph, host);
  ASSERT_FALSE(result.error) << result.error->what();
  for (const NodeTaskOutcome& t : result.tasks) EXPECT_EQ(t.state, NodeTaskOutcome::State::Done);
  std::vector<float> want_v(kN), want_u(kN);
  for (uint64_t i = 0; i < kN; ++i) {
    want_v[i] = ((static_cast<float>(i) + 1.0f) + 2.0f) * 2.0f + 3.0f;
    want_u[i] = static_cast<float>(i) + 11.0f;
  }
  EXPECT_EQ(node.download(v), want_v);
  EXPECT_EQ(node.download(u), want_u);
  // Run again on what the first run left: the same program gives the same bytes.
  const NodeRunResult again = node.run(graph, host);
  ASSERT_FALSE(again.error) << again.error->what();
  EXPECT_EQ(node.download(v), want_v);
}

TEST_P(NodeExecutorTest, ARegionReadByThreeChipsIsCopiedOncePerChipUntilTheNextWrite) {
  Node node(GetParam());
  const uint32_t n = GetParam().chips;
  const Tensor x = node.vector(0);
  std::vector<Tensor> outs;
  for (uint32_t i = 0; i < 4; ++i) outs.push_back(node.vector(i % n));
  node.upload(x, iota(5.0f));
  NodeGraph graph(n, node.memory);
  for (uint32_t k = 1; k <= 3; ++k) {
    graph.add_chip_run(kCallable, add_args(x, outs[k], 0.0f), on_chip(k % n));
  }
  // A write of x on a replica chip, then a read on another chip copies x from the writer.
  graph.add_chip_run(kCallable, add_args(outs[1], x, 1.0f), on_chip(2 % n));
  graph.add_chip_run(kCallable, add_args(x, outs[0], 0.0f), on_chip(3 % n));
  const NodeRunResult result = node.run(graph);
  ASSERT_FALSE(result.error) << result.error->what();
  EXPECT_EQ(node.download(outs[0]), iota(6.0f));
  // Copies: x to each chip other than 0 among {1, 2, 3} % n once; outs[1] to chip 2 % n when it
  // lives elsewhere; x to chip 3 % n when that is not its writer.
  uint64_t expected = 0;
  std::vector<bool> has_x(n, false);
  has_x[0] = true;
  for (uint32_t k = 1; k <= 3; ++k) {
    if (!has_x[k % n]) ++expected;
    has_x[k % n] = true;
  }
  if (1 % n != 2 % n) ++expected;  // outs[1] (homed on 1 % n) read on 2 % n
  if (3 % n != 2 % n) ++expected;  // x rewritten on 2 % n, read on 3 % n
  // outs[0] (homed on 0) is made valid on 3 % n before it is written there: a kernel may write
  // only part of the region it is given, and the rest must read as it was.
  if (3 % n != 0) ++expected;
  EXPECT_EQ(result.traffic.copies, expected);
}

TEST_P(NodeExecutorTest, AHostTaskThatThrowsFailsAloneAndCancelsItsDependants) {
  Node node(GetParam());
  const uint32_t n = GetParam().chips;
  const Tensor x = node.vector(kHostLocation), y = node.vector(kHostLocation);
  const Tensor z = node.vector(0), other = node.vector(n - 1);
  node.upload(x, iota(0.0f));
  node.upload(z, iota(100.0f));
  NodeGraph graph(n, node.memory);
  std::vector<HostFunction> host(4);
  TaskArgs fails;
  fails.in(x).output_existing(y);
  host[graph.add_host_task(fails)] = [](const HostTask&) { throw std::runtime_error("no luck"); };
  graph.add_chip_run(kCallable, add_args(y, z, 1.0f), on_chip(0));          // cancelled
  graph.add_chip_run(kCallable, add_args(x, other, 1.0f), on_chip(n - 1));  // independent
  const NodeRunResult result = node.run(graph, host);
  ASSERT_TRUE(result.error);
  EXPECT_EQ(result.error->code(), StatusCode::KernelFault);
  EXPECT_NE(std::string(result.error->what()).find("node task 0 (host task) threw: no luck"),
            std::string::npos)
      << result.error->what();
  EXPECT_EQ(result.tasks[1].state, NodeTaskOutcome::State::Cancelled);
  EXPECT_NE(std::string(result.tasks[1].error->what()).find("depends on node task 0"),
            std::string::npos);
  EXPECT_EQ(result.tasks[2].state, NodeTaskOutcome::State::Done);
  EXPECT_EQ(node.download(other), iota(1.0f));
  // What the failed and the cancelled task write is refused until written again.
  for (const Tensor& t : {y, z}) {
    const Error e = error_of([&] { node.download(t); });
    EXPECT_EQ(e.code(), StatusCode::InvalidDevicePointer) << e.what();
  }
  node.upload(z, iota(7.0f));
  EXPECT_EQ(node.download(z), iota(7.0f));
}

TEST_P(NodeExecutorTest, NoMoreChipsRunAtOnceThanTheThreadBudgetAllows) {
  Node node(GetParam());
  const uint32_t n = GetParam().chips;
  const Tensor x = node.vector(kHostLocation);
  node.upload(x, iota(0.0f));
  std::vector<Tensor> outs;
  for (uint32_t i = 0; i < 2 * n; ++i) outs.push_back(node.vector(i % n));
  NodeGraph graph(n, node.memory);
  for (uint32_t i = 0; i < 2 * n; ++i) {
    graph.add_chip_run(kCallable, add_args(x, outs[i], static_cast<float>(i)), on_chip(i % n));
  }
  for (uint32_t budget : {1u, 2u}) {
    NodeExecutor limited(node.chips, node.memory, budget);
    std::vector<HostFunction> none(graph.size());
    const NodeRunResult result = limited.execute(graph, none, CallConfig{});
    ASSERT_FALSE(result.error) << result.error->what();
    EXPECT_LE(result.peak_active_chips, budget);
    EXPECT_GE(result.peak_active_chips, 1u);
    for (uint32_t i = 0; i < 2 * n; ++i)
      EXPECT_EQ(node.download(outs[i]), iota(static_cast<float>(i)));
  }
}

INSTANTIATE_TEST_SUITE_P(Chips, NodeExecutorTest, testing::ValuesIn(kRows),
                         [](const testing::TestParamInfo<Row>& info) { return info.param.name; });

// A chip run whose kernel crashes fails with the chip's named error; its dependants on other chips
// and the host are cancelled; independent work completes; after reset_chip the chip runs again.
class NodeExecutorFaultTest : public testing::TestWithParam<RuntimeVariant> {};

TEST_P(NodeExecutorFaultTest, ACrashedChipRunFailsAloneAndTheChipComesBack) {
  Node node(Row{"", GetParam(), false, 3});
  const Tensor x = node.vector(kHostLocation), y = node.vector(1), z = node.vector(2);
  const Tensor w = node.vector(kHostLocation), other = node.vector(0);
  node.upload(x, iota(0.0f));
  NodeGraph graph(3, node.memory);
  std::vector<HostFunction> host(4);
  graph.add_chip_run(kCallable, add_args(x, y, 1.0f, /*crash=*/true), on_chip(1));  // 0 crashes
  graph.add_chip_run(kCallable, add_args(y, z, 1.0f), on_chip(2));                  // 1 cancelled
  TaskArgs twice;
  twice.in(z).output_existing(w);
  host[graph.add_host_task(twice)] = double_on_host;                    // 2 cancelled
  graph.add_chip_run(kCallable, add_args(x, other, 4.0f), on_chip(0));  // 3 runs
  const NodeRunResult result = node.run(graph, host);
  ASSERT_TRUE(result.error);
  EXPECT_EQ(result.error->code(), StatusCode::KernelCrashed);
  EXPECT_NE(std::string(result.error->what()).find("Node::reset_chip(1)"), std::string::npos)
      << result.error->what();
  EXPECT_EQ(result.tasks[0].state, NodeTaskOutcome::State::Failed);
  for (uint32_t id : {1u, 2u}) {
    EXPECT_EQ(result.tasks[id].state, NodeTaskOutcome::State::Cancelled);
    EXPECT_NE(std::string(result.tasks[id].error->what())
                  .find("node task 0 (callable 7 on chip 1), which failed"),
              std::string::npos)
        << result.tasks[id].error->what();
  }
  EXPECT_EQ(result.tasks[3].state, NodeTaskOutcome::State::Done)
      << (result.tasks[3].error ? result.tasks[3].error->what() : "");
  EXPECT_EQ(node.download(other), iota(4.0f));
  const Error lost = error_of([&] { node.download(y); });
  EXPECT_NE(std::string(lost.what()).find("failed writing them"), std::string::npos) << lost.what();
  // The chip is back after its reset; y is written again there.
  node.chips.reset_chip(1);
  node.memory.chip_reset(1, "chip 1 was reset");
  NodeGraph again(3, node.memory);
  again.add_chip_run(kCallable, add_args(x, y, 1.0f), on_chip(1));
  again.add_chip_run(kCallable, add_args(y, z, 1.0f), on_chip(2));
  const NodeRunResult second = node.run(again);
  ASSERT_FALSE(second.error) << second.error->what();
  EXPECT_EQ(node.download(z), iota(2.0f));
}

INSTANTIATE_TEST_SUITE_P(Variants, NodeExecutorFaultTest,
                         testing::Values(RuntimeVariant::HostBuildGraph,
                                         RuntimeVariant::TensormapRingbuffer),
                         [](const testing::TestParamInfo<RuntimeVariant>& info) {
                           return info.param == RuntimeVariant::HostBuildGraph ? "HostBuildGraph"
                                                                               : "Ring";
                         });

}  // namespace
}  // namespace chiprt::node
