// tensormap_ringbuffer runs through the whole stack (Worker, DeviceRunner, the orchestrator on an
// AICPU thread, schedulers, cores) with in-process callables: results, ring sizing, back-pressure,
// and every status code the variant raises from the public API with its message.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "chiprt/callable.h"
#include "chiprt/kernel.h"
#include "chiprt/orchestration.h"
#include "chiprt/worker.h"
#include "host/device_runner.h"
#include "host/ring_sizing.h"
#include "host/worker_access.h"
#include "host_test_support.h"

namespace chiprt {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr uint64_t kN = 256;  // elements per vector (1 KiB of F32)

// out[i] = in[i] + 1
void inc_kernel(int64_t* args) {
  const float* in = kernel::tensor_arg<float>(args, 0);
  float* out = kernel::tensor_arg<float>(args, 1);
  const uint64_t n = kernel::scalar_arg<uint64_t>(args, 2);
  for (uint64_t i = 0; i < n; ++i) out[i] = in[i] + 1.0f;
}

// acc[i] += in[i]
void acc_kernel(int64_t* args) {
  const float* in = kernel::tensor_arg<float>(args, 0);
  float* acc = kernel::tensor_arg<float>(args, 1);
  const uint64_t n = kernel::scalar_arg<uint64_t>(args, 2);
  for (uint64_t i = 0; i < n; ++i) acc[i] += in[i];
}

// SPMD: out[block] = block + 100 * block_num
void block_kernel(int64_t* args) {
  float* out = kernel::tensor_arg<float>(args, 0);
  const uint32_t block = kernel::block_idx(args);
  const uint32_t blocks = kernel::block_num(args);
  out[block] = static_cast<float>(block + 100 * blocks);
}

// Opened by an orchestration function once it submitted what must stay incomplete until then.
std::atomic<bool> g_gate_open{false};

// Waits (bounded, parking) for the gate, then marks its element.
void gated_kernel(int64_t* args) {
  float* element = kernel::tensor_arg<float>(args, 0);
  for (int i = 0; i < 20000 && !g_gate_open.load(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  element[0] = 1.0f;
}

constexpr int32_t kInc = 0;
constexpr int32_t kAcc = 1;
constexpr int32_t kBlock = 2;
constexpr int32_t kGated = 3;

const ArgSignature kIncSig = ArgSignature::of({ArgTag::In, ArgTag::Out}, 1);
const ArgSignature kAccSig = ArgSignature::of({ArgTag::In, ArgTag::InOut}, 1);
const ArgSignature kBlockSig = ArgSignature::of({ArgTag::OutputExisting}, 0);

std::vector<uint8_t> callable_with(OrchestrationEntry orchestration) {
  return CallableBuilder()
      .orchestration_function(orchestration, ArgSignature{})
      .kernel_function(kInc, CoreType::AIV, &inc_kernel, kIncSig)
      .kernel_function(kAcc, CoreType::AIV, &acc_kernel, kAccSig)
      .kernel_function(kBlock, CoreType::AIV, &block_kernel, kBlockSig)
      .kernel_function(kGated, CoreType::AIV, &gated_kernel, kBlockSig)
      .build();
}

// Run arguments: tensor 0 = x (In), tensor 1 = acc (InOut), scalar 0 = steps.
// Each step, in its own scope: y = x + 1 (runtime output), acc += y. acc ends as steps * (x + 1).
void chain_orchestration(Orchestration& orch, const TaskArgs& args) {
  const Tensor& x = args.tensor(0);
  const Tensor& acc = args.tensor(1);
  const uint64_t steps = args.scalar_bits(0);
  for (uint64_t s = 0; s < steps; ++s) {
    Scope scope(orch);
    TaskArgs inc;
    inc.in(x).out({kN}, DataType::F32).scalar(kN);
    orch.submit(kInc, CoreType::AIV, inc);
    TaskArgs accumulate;
    accumulate.in(inc.output(0)).inout(acc).scalar(kN);
    orch.submit(kAcc, CoreType::AIV, accumulate);
  }
}

// Every step's output stays referenced by the root scope until the function returns.
void root_outputs_orchestration(Orchestration& orch, const TaskArgs& args) {
  const Tensor& x = args.tensor(0);
  const uint64_t steps = args.scalar_bits(0);
  for (uint64_t s = 0; s < steps; ++s) {
    TaskArgs inc;
    inc.in(x).out({kN}, DataType::F32).scalar(kN);
    orch.submit(kInc, CoreType::AIV, inc);
  }
}

class RingRunTest : public testing::Test {
 protected:
  void SetUp() override { init(RuntimeVariant::TensormapRingbuffer); }

  void init(RuntimeVariant runtime, bool serial = false) {
    worker_ = std::make_unique<Worker>();
    WorkerOptions options;
    options.runtime = runtime;
    options.sim.clusters = 2;
    options.sim.host_threads = 2;
    options.sim.memory_bytes = 512ull << 20;
    options.sim.serial = serial;
    worker_->init(options);
    const uint64_t bytes = kN * sizeof(float);
    x_ = worker_->malloc(bytes);
    acc_ = worker_->malloc(bytes);
    std::vector<float> x(kN);
    for (uint64_t i = 0; i < kN; ++i) x[i] = static_cast<float>(i % 7);
    worker_->copy_to(x_, x.data(), bytes);
    worker_->memset(acc_, 0, bytes);
  }

  TaskArgs chain_args(uint64_t steps) const {
    TaskArgs args;
    args.in(Tensor::make(x_, {kN}, DataType::F32))
        .inout(Tensor::make(acc_, {kN}, DataType::F32))
        .scalar(steps);
    return args;
  }

  void expect_acc(float steps) {
    std::vector<float> acc(kN, -1.0f);
    worker_->copy_from(acc.data(), acc_, kN * sizeof(float));
    for (uint64_t i = 0; i < kN; ++i) {
      ASSERT_EQ(acc[i], steps * (static_cast<float>(i % 7) + 1.0f)) << "element " << i;
    }
    worker_->memset(acc_, 0, kN * sizeof(float));
  }

  // Registers `orchestration`, runs it with the chain arguments and returns the error it raised.
  Error run_error(OrchestrationEntry orchestration, const CallConfig& config = {},
                  uint64_t steps = 1) {
    const int32_t id = next_id_++;
    worker_->register_callable(id, callable_with(orchestration));
    try {
      worker_->run(id, chain_args(steps), config);
    } catch (const Error& e) {
      return e;
    }
    ADD_FAILURE() << "the run did not fail";
    return Error(StatusCode::Ok, "");
  }

  std::unique_ptr<Worker> worker_;
  DeviceBuffer x_;
  DeviceBuffer acc_;
  int32_t next_id_ = 0;
};

TEST_F(RingRunTest, ChainOfScopedStepsComputesAndReportsOrchestrationPhases) {
  worker_->register_callable(0, callable_with(&chain_orchestration));
  const RunReport report = worker_->run(0, chain_args(10));
  expect_acc(10);
  EXPECT_EQ(report.task_count, 20u);
  EXPECT_EQ(report.aicpu_threads, 4u);
  EXPECT_FALSE(report.serial);
  EXPECT_TRUE(report.phase(Phase::Orchestration).present);
  EXPECT_TRUE(report.phase(Phase::RunWall).present);
  const host::RingSizeResolution& rings = host::runner_of(*worker_).last_ring_sizes();
  EXPECT_EQ(rings.sizes.task_window[0], host::kDefaultRingTaskWindow);
  EXPECT_EQ(rings.sizes.heap_bytes[3], CallConfig::kDefaultOutputHeapBytes / 4);
}

TEST_F(RingRunTest, OneRegistrationRunsOnBothVariants) {
  worker_->register_callable(0, callable_with(&chain_orchestration));
  CallConfig host;
  host.runtime = RuntimeVariant::HostBuildGraph;
  // host_build_graph may add a dependency-only task per scope.
  EXPECT_GE(worker_->run(0, chain_args(3), host).task_count, 6u);
  expect_acc(3);
  EXPECT_EQ(worker_->run(0, chain_args(3)).task_count, 6u);
  expect_acc(3);

  // And the other way round: a Worker defaulting to host_build_graph runs the ring on request.
  init(RuntimeVariant::HostBuildGraph);
  worker_->register_callable(0, callable_with(&chain_orchestration));
  CallConfig ring;
  ring.runtime = RuntimeVariant::TensormapRingbuffer;
  EXPECT_EQ(worker_->run(0, chain_args(4), ring).task_count, 8u);
  expect_acc(4);
}

TEST_F(RingRunTest, SerialModeAndEveryThreadCountGiveTheSameResult) {
  worker_->register_callable(0, callable_with(&chain_orchestration));
  for (int threads : {2, 3}) {  // one orchestrator + one or two schedulers
    CallConfig threaded;
    threaded.aicpu_thread_num = threads;
    const RunReport report = worker_->run(0, chain_args(7), threaded);
    expect_acc(7);
    EXPECT_EQ(report.task_count, 14u);
    EXPECT_EQ(report.aicpu_threads, static_cast<uint32_t>(threads));
  }
  CallConfig config;
  config.serial = true;
  const RunReport report = worker_->run(0, chain_args(12), config);
  expect_acc(12);
  EXPECT_EQ(report.task_count, 24u);
  EXPECT_EQ(report.aicpu_threads, 1u);
  EXPECT_TRUE(report.serial);

  init(RuntimeVariant::TensormapRingbuffer, /*serial=*/true);
  worker_->register_callable(0, callable_with(&chain_orchestration));
  EXPECT_EQ(worker_->run(0, chain_args(5)).task_count, 10u);
  expect_acc(5);
}

TEST_F(RingRunTest, TinyRingsApplyBackPressureWithoutDeadlock) {
  worker_->register_callable(0, callable_with(&chain_orchestration));
  CallConfig config;
  config.rings.task_window = {16};
  config.rings.heap_bytes = {4096};  // four 1 KiB outputs per depth
  config.rings.dep_pool = {64};
  for (bool serial : {false, true}) {
    config.serial = serial;
    const RunReport report = worker_->run(0, chain_args(200), config);
    expect_acc(200);
    EXPECT_EQ(report.task_count, 400u) << "serial=" << serial;
  }
  const host::RingSizeResolution& rings = host::runner_of(*worker_).last_ring_sizes();
  EXPECT_EQ(rings.sizes.task_window[2], 16u);
  EXPECT_EQ(rings.total_heap_bytes(), 4u * 4096u);
}

// RunReport states the rings a run used and the output-heap arena it had, on both variants (what
// `chiprt bench --scaling` reads instead of the runner's internals).
TEST_F(RingRunTest, ReportStatesTheRingsUsedAndTheCommittedOutputHeap) {
  worker_->register_callable(0, callable_with(&chain_orchestration));
  CallConfig config;
  config.rings.task_window = {32, 64};
  config.rings.heap_bytes = {8192};
  const RunReport ring = worker_->run(0, chain_args(3), config);
  expect_acc(3);
  EXPECT_EQ(ring.rings.task_window, (std::array<uint64_t, kRingScopeDepths>{32, 64, 64, 64}));
  EXPECT_EQ(ring.rings.heap_bytes,
            (std::array<uint64_t, kRingScopeDepths>{8192, 8192, 8192, 8192}));
  // The dependency pool defaults to 4 x each depth's window.
  EXPECT_EQ(ring.rings.dep_pool, (std::array<uint64_t, kRingScopeDepths>{128, 256, 256, 256}));
  EXPECT_EQ(ring.rings.total_slots(), 224u);
  host::DeviceRunner& runner = host::runner_of(*worker_);
  EXPECT_EQ(ring.rings.total_slots(), runner.last_ring_sizes().total_slots());
  EXPECT_EQ(ring.output_heap_committed_bytes, runner.arenas().committed_sizes(0).output_heap);
  EXPECT_GE(ring.output_heap_committed_bytes, ring.rings.total_heap_bytes());

  CallConfig host_graph;
  host_graph.runtime = RuntimeVariant::HostBuildGraph;
  host_graph.output_heap_bytes = 1ull << 20;
  const RunReport built = worker_->run(0, chain_args(2), host_graph);
  expect_acc(2);
  EXPECT_EQ(built.rings.total_slots(), 0u);  // no rings
  EXPECT_EQ(built.rings.total_heap_bytes(), 0u);
  EXPECT_EQ(built.output_heap_committed_bytes, runner.arenas().committed_sizes(0).output_heap);
  EXPECT_GE(built.output_heap_committed_bytes, host_graph.output_heap_bytes);

  // A graph without tasks launches nothing and still states the heap it was given.
  const RunReport empty = worker_->run(0, chain_args(0), host_graph);
  EXPECT_EQ(empty.task_count, 0u);
  EXPECT_EQ(empty.output_heap_committed_bytes, built.output_heap_committed_bytes);
}

// Single-block tasks run on their slot's argument storage in place: the block context the kernel
// reads after its arguments must be (0, 1) there too, whatever the slot held before.
TEST_F(RingRunTest, SingleBlockTasksSeeBlockZeroOfOne) {
  for (bool serial : {false, true}) {
    SCOPED_TRACE(serial);
    init(RuntimeVariant::TensormapRingbuffer, serial);
    worker_->register_callable(0, callable_with([](Orchestration& orch, const TaskArgs& args) {
                                 for (int rep = 0; rep < 3; ++rep) {
                                   TaskArgs spmd;
                                   spmd.output_existing(args.tensor(1));
                                   orch.submit(TaskSpec::kernel(kBlock, CoreType::AIV, 4), spmd);
                                   TaskArgs single;
                                   single.output_existing(args.tensor(1));
                                   orch.submit(TaskSpec::kernel(kBlock, CoreType::AIV, 1), single);
                                 }
                               }));
    worker_->run(0, chain_args(0));
    std::vector<float> out(kN);
    worker_->copy_from(out.data(), acc_, kN * sizeof(float));
    // The last task, single-block, wrote out[0] = 0 + 100 * 1 after the SPMD task's 400.
    EXPECT_EQ(out[0], 100.0f);
    for (uint32_t b = 1; b < 4; ++b) EXPECT_EQ(out[b], static_cast<float>(b + 400)) << b;
  }
}

TEST_F(RingRunTest, SpmdTaskRunsEveryBlock) {
  constexpr uint32_t kBlocks = 9;  // more blocks than the 6 cores of two clusters
  worker_->register_callable(0, callable_with([](Orchestration& orch, const TaskArgs& args) {
                               TaskArgs task;
                               task.output_existing(args.tensor(1));
                               orch.submit(TaskSpec::kernel(kBlock, CoreType::AIV, kBlocks), task);
                             }));
  const RunReport report = worker_->run(0, chain_args(0));
  EXPECT_EQ(report.task_count, 1u);
  std::vector<float> out(kN);
  worker_->copy_from(out.data(), acc_, kN * sizeof(float));
  for (uint32_t b = 0; b < kBlocks; ++b) {
    EXPECT_EQ(out[b], static_cast<float>(b + 100 * kBlocks)) << "block " << b;
  }
  EXPECT_EQ(out[kBlocks], 0.0f);
}

TEST_F(RingRunTest, PredicatedTaskIsSkippedAndStillReleasesItsConsumers) {
  const DeviceBuffer flags = worker_->malloc(2 * sizeof(int32_t));
  const int32_t values[2] = {0, 1};
  worker_->copy_to(flags, values, sizeof(values));
  worker_->register_callable(
      0, callable_with([](Orchestration& orch, const TaskArgs& args) {
        const Tensor& flags = args.tensor(0);
        const Tensor& acc = args.tensor(1);
        for (uint64_t i = 0; i < 2; ++i) {  // writes acc[i] = 100 when flags[i] != 0
          TaskArgs gated;
          gated.output_existing(acc.view({1}, {i})).when(flags.view({1}, {i}));
          orch.submit(kBlock, CoreType::AIV, gated);
        }
        TaskArgs inc;  // depends on both, the skipped one included
        inc.in(acc.view({2}, {0})).out({2}, DataType::F32).scalar(uint64_t{2});
        orch.submit(kInc, CoreType::AIV, inc);
        TaskArgs accumulate;
        accumulate.in(inc.output(0)).inout(acc.view({2}, {2})).scalar(uint64_t{2});
        orch.submit(kAcc, CoreType::AIV, accumulate);
      }));
  TaskArgs args;
  args.in(Tensor::make(flags, {2}, DataType::I32)).inout(Tensor::make(acc_, {kN}, DataType::F32));
  for (bool serial : {false, true}) {
    worker_->memset(acc_, 0, kN * sizeof(float));
    CallConfig config;
    config.serial = serial;
    EXPECT_EQ(worker_->run(0, args, config).task_count, 4u);
    float acc[4];
    worker_->copy_from(acc, acc_, sizeof(acc));
    EXPECT_EQ(acc[0], 0.0f) << "the predicated-off task ran";
    EXPECT_EQ(acc[1], 100.0f);
    EXPECT_EQ(acc[2], 1.0f);
    EXPECT_EQ(acc[3], 101.0f);
  }
  worker_->free(flags);
}

// Sum of the elements get_tensor_data returned inside the orchestration (AICPU thread).
std::atomic<double> g_read_sum{0};

TEST_F(RingRunTest, OrchestrationReadsAndWritesTensorData) {
  g_read_sum = 0;
  worker_->register_callable(
      0, callable_with([](Orchestration& orch, const TaskArgs& args) {
        const Tensor& x = args.tensor(0);
        const Tensor& acc = args.tensor(1);
        std::vector<float> ones(kN, 1.0f);
        orch.set_tensor_data(acc, ones.data(), kN * sizeof(float));  // acc = 1
        TaskArgs inc;
        inc.in(x).out({kN}, DataType::F32).scalar(kN);
        orch.submit(kInc, CoreType::AIV, inc);
        std::vector<float> y(kN, 0.0f);
        orch.get_tensor_data(inc.output(0), y.data(), kN * sizeof(float));  // waits for the task
        double sum = 0;
        for (float v : y) sum += v;
        g_read_sum = sum;
        TaskArgs accumulate;
        accumulate.in(inc.output(0)).inout(acc).scalar(kN);
        orch.submit(kAcc, CoreType::AIV, accumulate);  // acc = 1 + (x + 1)
      }));
  EXPECT_EQ(worker_->run(0, chain_args(0)).task_count, 2u);
  double want = 0;
  for (uint64_t i = 0; i < kN; ++i) want += static_cast<double>(i % 7) + 1.0;
  EXPECT_EQ(g_read_sum.load(), want);
  std::vector<float> acc(kN);
  worker_->copy_from(acc.data(), acc_, kN * sizeof(float));
  for (uint64_t i = 0; i < kN; ++i) {
    ASSERT_EQ(acc[i], 2.0f + static_cast<float>(i % 7)) << "element " << i;
  }
}

TEST_F(RingRunTest, EmptyOrchestrationCompletesWithNoTasks) {
  worker_->register_callable(0, callable_with([](Orchestration&, const TaskArgs&) {}));
  EXPECT_EQ(worker_->run(0, chain_args(0)).task_count, 0u);
}

// --- errors ---------------------------------------------------------------------------------

TEST_F(RingRunTest, ReplayIsRefused) {
  worker_->register_callable(0, callable_with(&chain_orchestration));
  CallConfig config;
  config.replay_graph = true;
  try {
    worker_->run(0, chain_args(1), config);
    FAIL() << "replay_graph with tensormap_ringbuffer ran";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::InvalidConfig);
    EXPECT_THAT(e.message(), HasSubstr("replay_graph=true"));
    EXPECT_THAT(e.message(), HasSubstr("host_build_graph"));
  }
}

TEST_F(RingRunTest, InvalidRingConfigIsRefusedNamingTheField) {
  worker_->register_callable(0, callable_with(&chain_orchestration));
  CallConfig config;
  config.rings.task_window = {100};
  try {
    worker_->run(0, chain_args(1), config);
    FAIL() << "an invalid window ran";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::InvalidConfig);
    EXPECT_THAT(e.message(),
                HasSubstr("rings.task_window[0]=100: must be a power of two in [16, 1048576]"));
  }
}

TEST(RingRunEnvTest, EnvironmentSizesTheRunAndInvalidValuesFailIt) {
  auto runner_with = [](std::map<std::string, std::string> env) {
    host::RunnerOptions options = host::test::options_with_env(std::move(env));
    options.default_runtime = RuntimeVariant::TensormapRingbuffer;
    auto runner = std::make_unique<host::DeviceRunner>(host::test::make_sim(), options);
    runner->attach(0);
    runner->register_callable(0, callable_with([](Orchestration& orch, const TaskArgs&) {
                                TaskArgs task;
                                task.out({kN}, DataType::F32);
                                orch.allocate(task);
                              }));
    return runner;
  };
  auto good = runner_with({{kRingTaskWindowEnv, "32,64"}, {kRingDepPoolEnv, "128"}});
  EXPECT_EQ(good->run(0, TaskArgs{}).task_count, 1u);
  const host::RingSizeResolution& rings = good->last_ring_sizes();
  EXPECT_EQ(rings.sizes.task_window[0], 32u);
  EXPECT_EQ(rings.sizes.task_window[3], 64u);
  EXPECT_EQ(rings.sizes.dep_pool[2], 128u);
  EXPECT_EQ(rings.source[static_cast<int>(RingField::HeapBytes)], host::RingSizeSource::Default);

  auto bad = runner_with({{kRingHeapBytesEnv, "4097"}});
  try {
    bad->run(0, TaskArgs{});
    FAIL() << "an invalid CHIPRT_RING_HEAP_BYTES ran";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::InvalidConfig);
    EXPECT_THAT(e.message(), HasSubstr("CHIPRT_RING_HEAP_BYTES=\"4097\""));
    EXPECT_THAT(e.message(), HasSubstr("multiple of 64"));
  }
  EXPECT_EQ(bad->launches(), 0u);
}

TEST_F(RingRunTest, RootScopeHoldingEveryOutputDeadlocksNamingTheRing) {
  CallConfig config;
  config.rings.task_window = {16};
  const Error e = run_error(&root_outputs_orchestration, config, /*steps=*/40);
  EXPECT_EQ(e.code(), StatusCode::RingDeadlock);
  EXPECT_THAT(e.message(), HasSubstr("task window"));
  EXPECT_THAT(e.message(), HasSubstr("depth 0"));
  EXPECT_THAT(e.message(), HasSubstr("(16 slots)"));
  EXPECT_THAT(e.message(), HasSubstr("task 16 needs room"));
  EXPECT_THAT(e.message(), HasSubstr("its oldest task, task 0 (func_id 0)"));
  // The whole message survives the chip's result buffer, down to the settings to raise.
  EXPECT_THAT(e.message(),
              HasSubstr("raise CallConfig::rings.task_window[0] or CHIPRT_RING_TASK_WINDOW"));
  // The root scope cannot be ended early by the user: the hint says what to do instead.
  EXPECT_THAT(e.message(), HasSubstr("or wrap the outputs in a chiprt::Scope"));
  EXPECT_THAT(e.message(), Not(HasSubstr("end the scope sooner")));
  // The device stays usable after an orchestration error.
  worker_->register_callable(50, callable_with(&chain_orchestration));
  EXPECT_EQ(worker_->run(50, chain_args(2)).task_count, 4u);
  expect_acc(2);
}

TEST_F(RingRunTest, HeapDeadlockNamesTheHeapRing) {
  CallConfig config;
  config.rings.heap_bytes = {4096};  // four outputs held by the root scope fill it
  const Error e = run_error(&root_outputs_orchestration, config, /*steps=*/8);
  EXPECT_EQ(e.code(), StatusCode::RingDeadlock);
  EXPECT_THAT(e.message(), HasSubstr("output heap of depth 0 (4096 bytes)"));
  EXPECT_THAT(e.message(), HasSubstr("CallConfig::rings.heap_bytes[0] or CHIPRT_RING_HEAP_BYTES"));
}

TEST_F(RingRunTest, OutputLargerThanTheHeapIsHeapExhausted) {
  CallConfig config;
  config.rings.heap_bytes = {4096};
  const Error e = run_error(
      [](Orchestration& orch, const TaskArgs&) {
        TaskArgs task;
        task.out({2048}, DataType::F32);  // 8 KiB
        orch.allocate(task);
      },
      config);
  EXPECT_EQ(e.code(), StatusCode::HeapExhausted);
  EXPECT_THAT(e.message(), HasSubstr("8192"));
  EXPECT_THAT(e.message(), HasSubstr("4096"));
}

TEST_F(RingRunTest, MoreProducersThanTheDependencyPoolIsCapacityExceeded) {
  g_gate_open = false;
  CallConfig config;
  config.rings.dep_pool = {64};
  const Error e = run_error(
      [](Orchestration& orch, const TaskArgs& args) {
        // 70 live writers of single elements (none can complete before the gate opens), then one
        // reader of the whole tensor: 70 producers cannot fit a 64-entry pool.
        const Tensor& acc = args.tensor(1);
        for (uint64_t i = 0; i < 70; ++i) {
          TaskArgs writer;
          writer.output_existing(acc.view({1}, {i}));
          orch.submit(kGated, CoreType::AIV, writer);
        }
        TaskArgs reader;
        reader.in(acc).out({kN}, DataType::F32).scalar(kN);
        orch.submit(kInc, CoreType::AIV, reader);
        g_gate_open = true;
      },
      config);
  EXPECT_EQ(e.code(), StatusCode::CapacityExceeded);
  EXPECT_THAT(e.message(), HasSubstr("task 70 (func_id 0) has 70 producers"));
  EXPECT_THAT(e.message(), HasSubstr("dependency pool of depth 0 holds 64"));
  EXPECT_THAT(e.message(), HasSubstr("CHIPRT_RING_DEP_POOL"));
}

// What the orchestration function observed after its first error (written on the AICPU thread,
// read after the run).
std::atomic<bool> g_failed_seen{false};
std::atomic<int64_t> g_after_error_id{0};
std::atomic<int32_t> g_latched_code{0};

TEST_F(RingRunTest, UnknownFuncIdLatchesAndLaterCallsAreNoOps) {
  g_failed_seen = false;
  g_after_error_id = 0;
  g_latched_code = 0;
  const Error e = run_error([](Orchestration& orch, const TaskArgs& args) {
    TaskArgs bad;
    bad.in(args.tensor(0)).out({kN}, DataType::F32).scalar(kN);
    orch.submit(9, CoreType::AIV, bad);
    TaskArgs good;
    good.in(args.tensor(0)).out({kN}, DataType::F32).scalar(kN);
    g_after_error_id = orch.submit(kInc, CoreType::AIV, good);
    orch.scope_end();  // would be ScopeMismatch; ignored after the latch
    g_failed_seen = orch.failed();
    g_latched_code = static_cast<int32_t>(orch.error().code());
  });
  EXPECT_EQ(e.code(), StatusCode::UnknownFuncId);
  EXPECT_THAT(e.message(), HasSubstr("func_id 9 is not provided by the active callable"));
  EXPECT_TRUE(g_failed_seen.load());
  EXPECT_EQ(g_after_error_id.load(), kNoTask);
  EXPECT_EQ(g_latched_code.load(), static_cast<int32_t>(StatusCode::UnknownFuncId));
}

TEST_F(RingRunTest, LatchedErrorWinsOverALaterException) {
  const Error e = run_error([](Orchestration& orch, const TaskArgs& args) {
    TaskArgs bad;
    bad.in(args.tensor(0)).out({kN}, DataType::F32).scalar(kN);
    orch.submit(kInc, CoreType::AIC, bad);
    throw std::runtime_error("thrown after the error");
  });
  EXPECT_EQ(e.code(), StatusCode::CoreTypeMismatch);
  EXPECT_THAT(e.message(), HasSubstr("func_id 0 runs on aiv cores"));
}

struct ErrorCase {
  const char* name;
  OrchestrationEntry orchestration;
  StatusCode code;
  const char* message;
};

TEST_F(RingRunTest, EveryOrchestrationErrorComesBackWithItsCodeAndMessage) {
  const ErrorCase cases[] = {
      {"core type",
       [](Orchestration& orch, const TaskArgs& args) {
         TaskArgs t;
         t.in(args.tensor(0)).out({kN}, DataType::F32).scalar(kN);
         orch.submit(kInc, CoreType::AIC, t);
       },
       StatusCode::CoreTypeMismatch, "func_id 0 runs on aiv cores but task 0 (func_id 0)"},
      {"signature",
       [](Orchestration& orch, const TaskArgs& args) {
         TaskArgs t;
         t.in(args.tensor(0)).scalar(kN);
         orch.submit(kInc, CoreType::AIV, t);
       },
       StatusCode::SignatureMismatch, "func_id 0: expected 2 tensor args, got 1"},
      {"too many args",
       [](Orchestration& orch, const TaskArgs& args) {
         TaskArgs t;
         for (int i = 0; i <= kMaxTaskTensors; ++i) t.in(args.tensor(0));
         orch.submit(kInc, CoreType::AIV, t);
       },
       StatusCode::TooManyArgs, "more than 16 tensor arguments"},
      {"view out of bounds",
       [](Orchestration& orch, const TaskArgs& args) {
         Tensor shifted = args.tensor(0);
         shifted.start_offset = kN;  // the whole view lies past the buffer
         TaskArgs t;
         t.in(shifted).out({kN}, DataType::F32).scalar(kN);
         orch.submit(kInc, CoreType::AIV, t);
       },
       StatusCode::ViewOutOfBounds, "task 0 (func_id 0) arg 0"},
      {"invalid task",
       [](Orchestration& orch, const TaskArgs& args) {
         TaskArgs t;
         t.in(args.tensor(0)).out({kN}, DataType::F32).scalar(kN).after(5);
         orch.submit(kInc, CoreType::AIV, t);
       },
       StatusCode::InvalidTask, "explicit dependency on task 5 is not an earlier task"},
      {"scope end without begin", [](Orchestration& orch, const TaskArgs&) { orch.scope_end(); },
       StatusCode::ScopeMismatch, "scope_end"},
      {"auto inside manual",
       [](Orchestration& orch, const TaskArgs&) {
         orch.scope_begin(ScopeMode::Manual);
         orch.scope_begin(ScopeMode::Auto);
         orch.scope_end();
         orch.scope_end();
       },
       StatusCode::InvalidScope, "manual"},
      {"allocate with an input",
       [](Orchestration& orch, const TaskArgs& args) {
         TaskArgs t;
         t.in(args.tensor(0));
         orch.allocate(t);
       },
       StatusCode::InvalidArgument, "an allocation-only task takes Out tensors only"},
      {"scope left open", [](Orchestration& orch, const TaskArgs&) { orch.scope_begin(); },
       StatusCode::ScopeMismatch, "1 scope(s) still open"},
      {"exception",
       [](Orchestration&, const TaskArgs&) { throw std::runtime_error("boom at step 3"); },
       StatusCode::OrchestrationFailed, "boom at step 3"},
  };
  for (const ErrorCase& c : cases) {
    SCOPED_TRACE(c.name);
    const Error e = run_error(c.orchestration);
    EXPECT_EQ(e.code(), c.code) << e.what();
    EXPECT_THAT(e.message(), HasSubstr(c.message));
    // The orchestrator's own message, as host_build_graph reports it: no launch prefix.
    EXPECT_THAT(e.message(), Not(HasSubstr("callable id"))) << e.what();
  }
  // Each failed run left the device usable.
  worker_->register_callable(60, callable_with(&chain_orchestration));
  EXPECT_EQ(worker_->run(60, chain_args(1)).task_count, 2u);
  expect_acc(1);
}

// Kernels of RendezvousTest: each records its host thread, then waits (bounded, parking) until
// kRendezvousTasks kernels have started. With kernels inline on the AICPU threads, they can all
// start only when as many AICPU threads run kernels at once.
constexpr int kRendezvousTasks = 2;
std::atomic<int> g_rendezvous_started{0};
std::mutex g_rendezvous_mutex;
std::set<std::thread::id> g_rendezvous_threads;

void rendezvous_kernel(int64_t*) {
  {
    std::lock_guard<std::mutex> lock(g_rendezvous_mutex);
    g_rendezvous_threads.insert(std::this_thread::get_id());
  }
  g_rendezvous_started.fetch_add(1);
  for (int i = 0; i < 5000 && g_rendezvous_started.load() < kRendezvousTasks; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void rendezvous_orchestration(Orchestration& orch, const TaskArgs&) {
  for (int i = 0; i < kRendezvousTasks; ++i) {
    TaskArgs task;
    orch.submit(0, CoreType::AIV, task);
  }
}

// A threaded ring run with kernels on its 2 AICPU threads (1 orchestrator + 1 scheduler): once
// orchestration is done, the orchestrator thread schedules and runs kernels of its own cores
// rather than idling until the single scheduler has run every kernel alone.
TEST(RingOrchestratorThreadTest, RunsKernelsAfterOrchestratingWhenKernelsRunOnTheAicpuThreads) {
  WorkerOptions options;
  options.runtime = RuntimeVariant::TensormapRingbuffer;
  options.sim.clusters = 2;
  options.sim.aicpu_threads = 2;
  options.sim.core_execution = SimCoreExecution::Aicpu;
  options.sim.memory_bytes = 256ull << 20;
  Worker worker;
  worker.init(options);
  worker.register_callable(
      1, CallableBuilder()
             .orchestration_function(&rendezvous_orchestration, ArgSignature{})
             .kernel_function(0, CoreType::AIV, &rendezvous_kernel, ArgSignature::of({}, 0))
             .build());
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE(round);
    g_rendezvous_started = 0;
    g_rendezvous_threads.clear();
    const RunReport report = worker.run(1, TaskArgs());
    EXPECT_EQ(report.task_count, static_cast<uint64_t>(kRendezvousTasks));
    // Both AICPU threads ran a kernel; a single one would have run them one after the other,
    // the first waiting out its bound alone.
    EXPECT_EQ(g_rendezvous_threads.size(), 2u);
    EXPECT_EQ(g_rendezvous_started.load(), kRendezvousTasks);
  }
}

}  // namespace
}  // namespace chiprt
