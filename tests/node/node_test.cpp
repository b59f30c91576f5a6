// Node (include/chiprt/node.h), the public API: a one-chip node computes exactly what a Worker
// does; a graph of chip runs and host tasks over buffers homed on chips and the host; the report;
// faults and reset_chip; every refusal names the call; create/destroy cycles leave nothing behind.
#include "chiprt/node.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "chiprt/worker.h"
#include "isolation_support.h"
#include "node_test_support.h"

namespace chiprt::node {
namespace {

constexpr uint64_t kN = 96;
constexpr uint64_t kBytes = kN * sizeof(float);

std::vector<float> random_floats(uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
  std::vector<float> v(kN);
  for (float& x : v) x = dist(rng);
  return v;
}

std::vector<float> read(Node& node, NodeBuffer b) {
  std::vector<float> v(kN);
  node.copy_from(v.data(), b, kBytes);
  return v;
}

NodeOptions node_options(RuntimeVariant runtime, bool in_process, uint32_t chips) {
  NodeOptions o;
  o.chips = chips;
  o.runtime = runtime;
  o.in_process = in_process;
  o.sim.clusters = 1;
  o.sim.memory_bytes = 256ull << 20;
  return o;
}

class NodeApiTest : public testing::TestWithParam<RuntimeVariant> {};

// The same three runs (y = x + 0.1, z = y + 0.7, w = z + y's first... as adds) on a Worker and on a
// one-chip node, from the same random floats: the bytes are identical.
TEST_P(NodeApiTest, AOneChipNodeGivesWhatAWorkerGivesBitForBit) {
  const std::vector<float> x = random_floats(11);
  const float steps[] = {0.1f, 0.7f, -1.3f};
  std::vector<float> from_worker(kN);
  {
    Worker worker;
    WorkerOptions options;
    options.runtime = GetParam();
    options.sim = default_node_chip_options();
    options.sim.clusters = 1;
    worker.init(options);
    worker.register_callable(kCallable, add_callable());
    DeviceBuffer a = worker.malloc(kBytes), b = worker.malloc(kBytes);
    worker.copy_to(a, x.data(), kBytes);
    for (float step : steps) {
      worker.run(kCallable, add_args(Tensor::make(a, {kN}, DataType::F32),
                                     Tensor::make(b, {kN}, DataType::F32), step));
      std::swap(a, b);
    }
    worker.copy_from(from_worker.data(), a, kBytes);
  }
  for (bool in_process : {true, false}) {
    SCOPED_TRACE(in_process ? "in process" : "isolated");
    Node node;
    node.init(node_options(GetParam(), in_process, 1));
    node.register_callable(kCallable, add_callable());
    NodeBuffer a = node.malloc(kBytes, 0), b = node.malloc(kBytes, 0);
    node.copy_to(a, x.data(), kBytes);
    const NodeRunReport report = node.run([&](NodeOrchestration& orch, const TaskArgs&) {
      NodeBuffer from = a, to = b;
      for (float step : steps) {
        orch.submit(kCallable, add_args(from.tensor({kN}, DataType::F32),
                                        to.tensor({kN}, DataType::F32), step));
        std::swap(from, to);
      }
    });
    EXPECT_EQ(report.tasks.size(), 3u);
    EXPECT_EQ(report.copies, 0u) << "one chip: nothing to copy";
    const std::vector<float> from_node = read(node, b);  // three swaps: the result is in b
    EXPECT_EQ(std::memcmp(from_node.data(), from_worker.data(), kBytes), 0);
  }
}

TEST_P(NodeApiTest, AGraphOfChipRunsAndHostTasksAcrossFourChips) {
  Node node;
  node.init(node_options(GetParam(), /*in_process=*/true, 4));
  EXPECT_EQ(node.chips(), 4u);
  node.register_callable(kCallable, add_callable());
  for (uint32_t k = 0; k < 4; ++k) EXPECT_TRUE(node.has_callable(kCallable, k));
  const std::vector<float> x = random_floats(3);
  const NodeBuffer in = node.malloc(kBytes);  // on the host
  std::vector<NodeBuffer> parts;
  for (uint32_t k = 0; k < 4; ++k) parts.push_back(node.malloc(kBytes, k));
  const NodeBuffer sum = node.malloc(kBytes);
  node.copy_to(in, x.data(), kBytes);
  TaskArgs run_args;
  run_args.in(in.tensor({kN}, DataType::F32));
  const NodeRunReport report = node.run(
      [&](NodeOrchestration& orch, const TaskArgs& args) {
        EXPECT_EQ(orch.chips(), 4u);
        for (uint32_t k = 0; k < 4; ++k) {  // parts[k] = in + k, on chip k
          const TaskId id = orch.submit(
              kCallable,
              add_args(args.tensor(0), parts[k].tensor({kN}, DataType::F32), static_cast<float>(k)),
              on_chip(k));
          EXPECT_EQ(orch.placement_of(id), k);
        }
        TaskArgs reduce;  // sum = parts[0] + ... + parts[3], on the host
        for (const NodeBuffer& p : parts) reduce.in(p.tensor({kN}, DataType::F32));
        reduce.output_existing(sum.tensor({kN}, DataType::F32));
        const TaskId host = orch.submit_host(
            [](const HostTask& task) {
              float* out = task.data<float>(4);
              for (uint64_t i = 0; i < kN; ++i) {
                out[i] = 0;
                for (int p = 0; p < 4; ++p) out[i] += task.data<const float>(p)[i];
              }
            },
            reduce);
        EXPECT_EQ(orch.placement_of(host), kHostHome);
        // Then sum + 1 wherever sum is... on the host: placed by load, on chip 0 (all have one
        // run).
        orch.submit(kCallable, add_args(sum.tensor({kN}, DataType::F32),
                                        parts[0].tensor({kN}, DataType::F32), 1.0f));
      },
      run_args);
  ASSERT_EQ(report.tasks.size(), 6u);
  EXPECT_TRUE(report.tasks[4].host_task);
  EXPECT_EQ(report.tasks[4].chip, kHostHome);
  EXPECT_TRUE(report.tasks[5].placed_by_data);
  EXPECT_EQ(report.tasks[5].chip, 0u);
  EXPECT_GT(report.copies, 0u);
  EXPECT_GT(report.copy_bytes, 0u);
  std::vector<float> want(kN);
  for (uint64_t i = 0; i < kN; ++i) {
    float s = 0;
    for (int p = 0; p < 4; ++p) s += x[i] + static_cast<float>(p);
    want[i] = s + 1.0f;
  }
  EXPECT_EQ(read(node, parts[0]), want);
}

TEST_P(NodeApiTest, ACrashedChipFailsTheRunNamingItsResetAndComesBackAfterIt) {
  Node node;
  node.init(node_options(GetParam(), /*in_process=*/false, 2));
  node.register_callable(kCallable, add_callable());
  const NodeBuffer a = node.malloc(kBytes, 0), b = node.malloc(kBytes, 1);
  const NodeBuffer c = node.malloc(kBytes, 0);
  node.copy_to(a, random_floats(1).data(), kBytes);
  const Error crash = error_of([&] {
    node.run([&](NodeOrchestration& orch, const TaskArgs&) {
      orch.submit(kCallable,
                  add_args(a.tensor({kN}, DataType::F32), b.tensor({kN}, DataType::F32), 1.0f,
                           /*crash=*/true),
                  on_chip(1));
      orch.submit(kCallable,
                  add_args(a.tensor({kN}, DataType::F32), c.tensor({kN}, DataType::F32), 1.0f),
                  on_chip(0));
    });
  });
  EXPECT_EQ(crash.code(), StatusCode::KernelCrashed);
  EXPECT_NE(std::string(crash.what()).find("Node::reset_chip(1)"), std::string::npos)
      << crash.what();
  // The independent run on chip 0 completed.
  std::vector<float> want = random_floats(1);
  for (float& v : want) v += 1.0f;
  EXPECT_EQ(read(node, c), want);
  // Chip 1 refuses work until its reset; then it runs again.
  const Error refused = error_of([&] {
    node.run([&](NodeOrchestration& orch, const TaskArgs&) {
      orch.submit(kCallable,
                  add_args(a.tensor({kN}, DataType::F32), b.tensor({kN}, DataType::F32), 2.0f),
                  on_chip(1));
    });
  });
  EXPECT_EQ(refused.code(), StatusCode::DeviceFaulted) << refused.what();
  node.reset_chip(1);
  node.run([&](NodeOrchestration& orch, const TaskArgs&) {
    orch.submit(kCallable,
                add_args(a.tensor({kN}, DataType::F32), b.tensor({kN}, DataType::F32), 1.0f),
                on_chip(1));
  });
  EXPECT_EQ(read(node, b), want);
}

INSTANTIATE_TEST_SUITE_P(Variants, NodeApiTest,
                         testing::Values(RuntimeVariant::HostBuildGraph,
                                         RuntimeVariant::TensormapRingbuffer),
                         [](const testing::TestParamInfo<RuntimeVariant>& info) {
                           return info.param == RuntimeVariant::HostBuildGraph ? "HostBuildGraph"
                                                                               : "Ring";
                         });

// A chip run's orchestration function (host_build_graph: on a host thread of the chip's pipeline)
// that calls the node running it: refused, not a deadlock.
Node* g_calling_node = nullptr;
StatusCode g_inner_code = StatusCode::Ok;
std::string g_inner_message;
void orchestration_calling_the_node(Orchestration& o, const TaskArgs& run) {
  try {
    g_calling_node->malloc(4);
  } catch (const Error& e) {
    g_inner_code = e.code();
    g_inner_message = e.what();
  }
  add_orchestration(o, run);
}

TEST(NodeApi, AChipRunCallingItsNodeIsRefused) {
  Node node;
  node.init(node_options(RuntimeVariant::HostBuildGraph, true, 1));
  CallableBuilder builder;
  builder.orchestration_function(&orchestration_calling_the_node, {})
      .kernel_function(kAddFunc, CoreType::AIV, &add_kernel, {});
  node.register_callable(kCallable, builder.build());
  const NodeBuffer a = node.malloc(kBytes, 0), b = node.malloc(kBytes, 0);
  node.memset(a, 0, kBytes);
  g_calling_node = &node;
  node.run([&](NodeOrchestration& orch, const TaskArgs&) {
    orch.submit(kCallable,
                add_args(a.tensor({kN}, DataType::F32), b.tensor({kN}, DataType::F32), 1.0f));
  });
  EXPECT_EQ(g_inner_code, StatusCode::ReentrantCall);
  EXPECT_NE(g_inner_message.find("Node::malloc called from inside a run"), std::string::npos)
      << g_inner_message;
  EXPECT_EQ(read(node, b), std::vector<float>(kN, 1.0f));
}

TEST(NodeApi, EveryRefusalNamesTheCall) {
  Node node;
  EXPECT_EQ(error_of([&] { node.malloc(8); }).code(), StatusCode::NotInitialized);
  EXPECT_FALSE(node.initialized());
  node.init(node_options(RuntimeVariant::HostBuildGraph, true, 2));
  EXPECT_TRUE(node.initialized());
  EXPECT_EQ(error_of([&] { node.init(); }).code(), StatusCode::InvalidArgument);
  node.register_callable(kCallable, add_callable());
  const NodeBuffer b = node.malloc(16);
  uint8_t bytes[32] = {};
  Error e = error_of([&] { node.copy_to(b, bytes, 8, 12); });
  EXPECT_EQ(e.code(), StatusCode::InvalidArgument);
  EXPECT_NE(std::string(e.what()).find("Node::copy_to: offset 12 + 8 bytes exceeds"),
            std::string::npos)
      << e.what();
  EXPECT_EQ(error_of([&] { node.copy_from(bytes, NodeBuffer{}, 1); }).code(),
            StatusCode::InvalidDevicePointer);
  EXPECT_NE(std::string(error_of([&] { node.malloc(8, 2); }).what()).find("home chip 2"),
            std::string::npos);
  const uint32_t missing[] = {1, 5};
  EXPECT_EQ(error_of([&] { node.register_callable(3, add_callable(), missing); }).code(),
            StatusCode::InvalidArgument);
  EXPECT_FALSE(node.has_callable(3, 1)) << "nothing registered when a chip does not exist";
  EXPECT_EQ(error_of([&] { node.run({}); }).code(), StatusCode::InvalidArgument);
  e = error_of([&] {
    node.run([](NodeOrchestration&, const TaskArgs&) { throw std::runtime_error("bad plan"); });
  });
  EXPECT_EQ(e.code(), StatusCode::OrchestrationFailed);
  EXPECT_NE(std::string(e.what()).find("bad plan"), std::string::npos);
  // A call on the node from inside its run: from a host task, and from the orchestration.
  e = error_of([&] {
    node.run([&](NodeOrchestration& orch, const TaskArgs&) {
      TaskArgs args;
      args.in(b.tensor({4}, DataType::F32));
      orch.submit_host([&](const HostTask&) { node.copy_from(bytes, b, 4); }, args);
    });
  });
  EXPECT_EQ(e.code(), StatusCode::ReentrantCall) << e.what();
  EXPECT_NE(std::string(e.what()).find("Node::copy_from called from inside a run"),
            std::string::npos)
      << e.what();
  e = error_of([&] { node.run([&](NodeOrchestration&, const TaskArgs&) { node.malloc(4); }); });
  EXPECT_EQ(e.code(), StatusCode::ReentrantCall) << e.what();
  node.free(b);
  EXPECT_EQ(error_of([&] { node.free(b); }).code(), StatusCode::InvalidDevicePointer);
  node.close();
  node.close();
  EXPECT_EQ(error_of([&] { node.malloc(8); }).code(), StatusCode::AlreadyClosed);
}

constexpr int kCycles = kUnderSanitizer ? 4 : 100;

// Nodes created, used and destroyed leave no process, fd or thread behind; the isolated ones
// (every fourth) start a fork server and device processes each time.
TEST(NodeApi, CreateDestroyCyclesLeaveNothingBehind) {
  isolation_test::ProcessResources before;
  for (int cycle = 0; cycle <= kCycles; ++cycle) {
    if (cycle == 1) before = isolation_test::process_resources();
    Node node;
    node.init(node_options(RuntimeVariant::HostBuildGraph, cycle % 4 != 0, 2));
    node.register_callable(kCallable, add_callable());
    const NodeBuffer a = node.malloc(kBytes, 0), b = node.malloc(kBytes, 1);
    node.memset(a, 0, kBytes);
    node.run([&](NodeOrchestration& orch, const TaskArgs&) {
      orch.submit(kCallable,
                  add_args(a.tensor({kN}, DataType::F32), b.tensor({kN}, DataType::F32), 1.0f),
                  on_chip(cycle % 2));
    });
  }
  const auto after = isolation_test::process_resources();
  EXPECT_EQ(after.live_children, before.live_children) << after.describe();
  EXPECT_EQ(after.zombie_children, 0u) << after.describe();
  EXPECT_EQ(after.fds, before.fds) << after.describe();
  EXPECT_EQ(after.threads, before.threads) << after.describe();
  EXPECT_LT(after.rss_bytes, before.rss_bytes + (64ull << 20)) << after.describe();
}

}  // namespace
}  // namespace chiprt::node

namespace chiprt::node {
namespace {

Node& in_process_node(Node& node, uint32_t chips) {
  node.init(node_options(RuntimeVariant::HostBuildGraph, /*in_process=*/true, chips));
  node.register_callable(kCallable, add_callable());
  return node;
}

TaskArgs inout_of(const NodeBuffer& b, uint64_t n = kN) {
  TaskArgs args;
  args.inout(b.tensor({n}, DataType::F32));
  return args;
}

// Thousands of tasks made ready at once by one host task: the scheduler's ready list grows while
// it is walked.
TEST(NodeApiEdges, ThousandsOfTasksReadyAtOnce) {
  Node node;
  in_process_node(node, 1);
  const NodeBuffer x = node.malloc(kBytes);
  node.memset(x, 0, kBytes);
  int ran = 0;
  node.run([&](NodeOrchestration& orch, const TaskArgs&) {
    orch.submit_host([](const HostTask& t) { t.data<float>(0)[0] = 5.0f; }, inout_of(x));
    for (int i = 0; i < 3000; ++i) {
      TaskArgs read;
      read.in(x.tensor({kN}, DataType::F32));
      orch.submit_host([&ran](const HostTask& t) { ran += t.data<const float>(0)[0] == 5.0f; },
                       read);
    }
  });
  EXPECT_EQ(ran, 3000);
}

// A task whose input a cancelled task would later overwrite still runs (the overwrite is
// discarded only once the run ends), and what the cancelled task would have written is lost after.
TEST(NodeApiEdges, AnIndependentReaderRunsBeforeACancelledTaskLosesItsOutput) {
  Node node;
  in_process_node(node, 1);
  const NodeBuffer a = node.malloc(kBytes), b = node.malloc(kBytes), c = node.malloc(kBytes);
  const std::vector<float> ones(kN, 1.0f);
  for (const NodeBuffer& buf : {a, b, c}) node.copy_to(buf, ones.data(), kBytes);
  float seen_b = 0;
  const Error e = error_of([&] {
    node.run([&](NodeOrchestration& orch, const TaskArgs&) {
      orch.submit_host([](const HostTask& t) { t.data<float>(0)[0] = 2.0f; }, inout_of(a));  // 0
      orch.submit_host([](const HostTask&) { throw std::runtime_error("task 1 fails"); },
                       inout_of(c));  // 1
      TaskArgs reads;                 // 2: reads a and b, depends on 0 only
      reads.in(a.tensor({kN}, DataType::F32)).in(b.tensor({kN}, DataType::F32));
      orch.submit_host([&](const HostTask& t) { seen_b = t.data<const float>(1)[0]; }, reads);
      TaskArgs overwrite;  // 3: depends on 1 (reads c) and on 2 (overwrites b): cancelled
      overwrite.in(c.tensor({kN}, DataType::F32)).output_existing(b.tensor({kN}, DataType::F32));
      orch.submit_host([](const HostTask&) {}, overwrite);
    });
  });
  EXPECT_EQ(e.code(), StatusCode::KernelFault) << e.what();
  EXPECT_EQ(seen_b, 1.0f) << "task 2 ran, on b as it was";
  const Error lost = error_of([&] { read(node, b); });
  EXPECT_EQ(lost.code(), StatusCode::InvalidDevicePointer);
  EXPECT_NE(std::string(lost.what()).find("node task 3 (host task) was cancelled"),
            std::string::npos)
      << lost.what();
}

// Lost bytes stay lost under a strided write (it may not write them all); a dense write clears
// them.
TEST(NodeApiEdges, AStridedWriteLeavesTheBytesItSkipsLost) {
  Node node;
  in_process_node(node, 1);
  const NodeBuffer x = node.malloc(kBytes);
  node.memset(x, 0, kBytes);
  EXPECT_THROW(node.run([&](NodeOrchestration& orch, const TaskArgs&) {
    orch.submit_host([](const HostTask&) { throw std::runtime_error("lost"); }, inout_of(x));
  }),
               Error);
  node.run([&](NodeOrchestration& orch, const TaskArgs&) {
    TaskArgs even;
    even.output_existing(x.tensor({kN}, DataType::F32).slice(0, 0, kN, 2));
    orch.submit_host(
        [](const HostTask& t) {
          for (uint64_t i = 0; i < t.tensor(0).numel(); ++i) {
            t.data<float>(0)[i * t.tensor(0).strides[0]] = 3.0f;
          }
        },
        even);
  });
  std::vector<float> back(kN);
  const Error odd = error_of([&] { node.copy_from(back.data(), x, kBytes); });
  EXPECT_EQ(odd.code(), StatusCode::InvalidDevicePointer) << "the odd elements were never written";
  EXPECT_NE(std::string(odd.what()).find("failed writing them"), std::string::npos) << odd.what();
  node.memset(x, 0, kBytes);
  node.copy_from(back.data(), x, kBytes);
  EXPECT_EQ(back, std::vector<float>(kN, 0.0f));
}

// Calls on a node from inside its own run are refused, not deadlocked; a nested node's run inside
// a host task leaves the outer node current again.
TEST(NodeApiEdges, CallsFromInsideItsOwnRunAreRefusedAlsoAfterANestedRun) {
  Node outer, inner;
  in_process_node(outer, 1);
  in_process_node(inner, 1);
  const NodeBuffer x = outer.malloc(kBytes);
  outer.memset(x, 0, kBytes);
  std::vector<StatusCode> codes;
  bool initialized = false;
  outer.run([&](NodeOrchestration& orch, const TaskArgs&) {
    orch.submit_host(
        [&](const HostTask&) {
          initialized = outer.initialized();
          codes.push_back(error_of([&] { outer.init(); }).code());
          inner.run([](NodeOrchestration&, const TaskArgs&) {});
          codes.push_back(error_of([&] { outer.chips(); }).code());
          codes.push_back(error_of([&] { outer.close(); }).code());
        },
        inout_of(x));
  });
  EXPECT_TRUE(initialized);
  EXPECT_EQ(codes, (std::vector<StatusCode>{StatusCode::ReentrantCall, StatusCode::ReentrantCall,
                                            StatusCode::ReentrantCall}));
  EXPECT_EQ(outer.chips(), 1u);
}

// A long chain whose first task fails: every dependant is cancelled without deep recursion.
TEST(NodeApiEdges, ALongChainAfterAFailureIsCancelledWhole) {
  Node node;
  in_process_node(node, 1);
  const NodeBuffer x = node.malloc(kBytes);
  node.memset(x, 0, kBytes);
  constexpr int kChain = 20000;
  int ran = 0;
  const Error e = error_of([&] {
    node.run([&](NodeOrchestration& orch, const TaskArgs&) {
      orch.submit_host([](const HostTask&) { throw std::runtime_error("first"); }, inout_of(x));
      for (int i = 1; i < kChain; ++i) {
        orch.submit_host([&ran](const HostTask&) { ++ran; }, inout_of(x));
      }
    });
  });
  EXPECT_EQ(e.code(), StatusCode::KernelFault);
  EXPECT_EQ(ran, 0);
}

// A host task that kept the NodeOrchestration cannot grow the graph being run (that hung): refused.
TEST(NodeApiEdges, AKeptOrchestrationRefusesSubmissionsOnceItsFunctionReturned) {
  Node node;
  in_process_node(node, 1);
  const NodeBuffer x = node.malloc(kBytes), y = node.malloc(kBytes);
  node.memset(x, 0, kBytes);
  std::vector<StatusCode> codes;
  node.run([&](NodeOrchestration& orch, const TaskArgs&) {
    TaskArgs read;
    read.in(x.tensor({kN}, DataType::F32));
    orch.submit_host(
        [&](const HostTask&) {
          codes.push_back(error_of([&] {
                            orch.submit(kCallable, add_args(x.tensor({kN}, DataType::F32),
                                                            y.tensor({kN}, DataType::F32), 1.0f));
                          }).code());
          codes.push_back(error_of([&] { orch.submit_host([](const HostTask&) {}, read); }).code());
          codes.push_back(orch.placement_of(0) == kHostHome ? StatusCode::Ok
                                                            : StatusCode::InternalError);
        },
        read);
  });
  EXPECT_EQ(codes, (std::vector<StatusCode>{StatusCode::InvalidArgument,
                                            StatusCode::InvalidArgument, StatusCode::Ok}));
}

// A registration that fails on one chip registers on none.
TEST(NodeApiEdges, ARegistrationThatFailsOnOneChipRegistersOnNone) {
  Node node;
  node.init(node_options(RuntimeVariant::HostBuildGraph, /*in_process=*/true, 3));
  const uint32_t one[] = {1};
  node.register_callable(kCallable, add_callable(), one);
  const Error e = error_of([&] { node.register_callable(kCallable, add_callable()); });
  EXPECT_EQ(e.code(), StatusCode::DuplicateCallable);
  EXPECT_NE(std::string(e.what()).find("nothing was registered on any chip"), std::string::npos)
      << e.what();
  EXPECT_FALSE(node.has_callable(kCallable, 0));
  EXPECT_TRUE(node.has_callable(kCallable, 1));
  EXPECT_FALSE(node.has_callable(kCallable, 2));
  const Error free_twice = error_of([&] {
    const NodeBuffer b = node.malloc(8);
    node.free(b);
    node.free(b);
  });
  EXPECT_NE(std::string(free_twice.what()).find("Node::free:"), std::string::npos)
      << free_twice.what();
}

TEST(NodeApiEdges, HugeOrMisplacedRequestsAreNamedErrors) {
  Node node;
  node.init(node_options(RuntimeVariant::HostBuildGraph, /*in_process=*/true, 3));
  for (uint64_t bytes : {~uint64_t{0}, ~uint64_t{0} - 200, uint64_t{1} << 62}) {
    EXPECT_EQ(error_of([&] { node.malloc(bytes); }).code(), StatusCode::OutOfDeviceMemory);
  }
  const uint32_t only_one[] = {1};
  node.register_callable(kCallable, add_callable(), only_one);
  const NodeBuffer a = node.malloc(kBytes, 0), b = node.malloc(kBytes, 0);
  node.memset(a, 0, kBytes);
  const NodeRunReport report = node.run([&](NodeOrchestration& orch, const TaskArgs&) {
    orch.submit(kCallable,
                add_args(a.tensor({kN}, DataType::F32), b.tensor({kN}, DataType::F32), 1.0f));
  });
  EXPECT_EQ(report.tasks[0].chip, 1u) << "placed on the one chip that has the callable";
  Error e = error_of([&] {
    node.run([&](NodeOrchestration& orch, const TaskArgs&) {
      orch.submit(kCallable,
                  add_args(a.tensor({kN}, DataType::F32), b.tensor({kN}, DataType::F32), 1.0f),
                  on_chip(0));
    });
  });
  EXPECT_EQ(e.code(), StatusCode::UnknownCallable);
  EXPECT_NE(std::string(e.what()).find("not registered on chip 0"), std::string::npos) << e.what();
  e = error_of([&] {
    node.run([&](NodeOrchestration& orch, const TaskArgs&) {
      orch.submit(kCallable + 1,
                  add_args(a.tensor({kN}, DataType::F32), b.tensor({kN}, DataType::F32), 1.0f));
    });
  });
  EXPECT_NE(std::string(e.what()).find("registered on no chip"), std::string::npos) << e.what();
}

}  // namespace
}  // namespace chiprt::node
