// A run's plan and steps: resolve_run_plan derives every value once from CallConfig (pure, no
// device); DeviceRunner's prepare, launch, poll / wait and collect work one at a time, in order
// only, and two prepared launches on different slots and banks can be held at once.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "chiprt/callable.h"
#include "chiprt/orchestration.h"
#include "common/chip_launch.h"
#include "host/device_runner.h"
#include "host/run_plan.h"
#include "host_test_support.h"

namespace chiprt::host {
namespace {

using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

// --- the plan ------------------------------------------------------------------------------------

struct PlanFixture {
  platform::Geometry geometry;
  EnvLookup env;
  TimeoutConfig timeouts;
  RuntimeVariant default_runtime = RuntimeVariant::HostBuildGraph;

  explicit PlanFixture(std::map<std::string, std::string> vars = {})
      : env(test::options_with_env(std::move(vars)).env) {
    geometry.clusters = 3;
    geometry.max_aicpu_threads = 8;
    geometry.default_aicpu_threads = 4;
    timeouts.scheduler_ms = 1234;
    timeouts.op_execute_us = 2'000'000;
    timeouts.stream_sync_ms = 5678;
  }
  RunPlan plan(const CallConfig& config, PlanPurpose purpose = PlanPurpose::Run) const {
    return resolve_run_plan(config, purpose,
                            PlanContext{geometry, false, default_runtime, env, timeouts});
  }
};

using test::error_of;

TEST(RunPlanTest, DefaultsResolveOnce) {
  PlanFixture fixture;
  const RunPlan plan = fixture.plan(CallConfig{});
  EXPECT_EQ(plan.variant, RuntimeVariant::HostBuildGraph);
  EXPECT_EQ(plan.shape.aicpu_threads, 4u);
  EXPECT_EQ(plan.shape.clusters, 3u);
  EXPECT_EQ(plan.shape.cores, 9u);
  EXPECT_EQ(plan.slot, 0u);
  EXPECT_EQ(plan.bank, 0u);
  EXPECT_EQ(plan.heap_bytes, CallConfig::kDefaultOutputHeapBytes);
  EXPECT_EQ(plan.max_tasks, CallConfig::kDefaultMaxTasks);
  EXPECT_FALSE(plan.replay_graph);
  EXPECT_EQ(plan.scheduler_timeout_ms, 1234u);
  EXPECT_EQ(plan.stream_sync_timeout_ms, 5678u);

  fixture.default_runtime = RuntimeVariant::TensormapRingbuffer;
  EXPECT_EQ(fixture.plan(CallConfig{}).variant, RuntimeVariant::TensormapRingbuffer);
}

TEST(RunPlanTest, CarriesTheConfiguredSizesSlotAndBank) {
  PlanFixture fixture;
  CallConfig config;
  config.output_heap_bytes = 1 << 20;
  config.max_tasks = 77;
  config.pipeline_slot = 1;
  config.arena_bank = 1;
  config.replay_graph = true;
  config.cluster_count = 2;
  config.serial = true;
  const RunPlan plan = fixture.plan(config);
  EXPECT_EQ(plan.heap_bytes, 1u << 20);
  EXPECT_EQ(plan.max_tasks, 77u);
  EXPECT_EQ(plan.slot, 1u);
  EXPECT_EQ(plan.bank, 1u);
  EXPECT_TRUE(plan.replay_graph);
  EXPECT_EQ(plan.shape.clusters, 2u);
  EXPECT_TRUE(plan.shape.serial);
  EXPECT_EQ(plan.shape.aicpu_threads, 1u);
}

// A ring run's heap is the sum of its per-depth heaps (the configured heap only sizes their
// defaults); a host_build_graph run never reads the ring variables.
TEST(RunPlanTest, RingHeapIsTheSumOfTheDepthHeaps) {
  PlanFixture fixture({{kRingTaskWindowEnv, "32"}, {kRingHeapBytesEnv, "4097"}});
  CallConfig config;
  config.runtime = RuntimeVariant::TensormapRingbuffer;
  config.output_heap_bytes = 1 << 20;
  config.rings.heap_bytes = {8192, 16384};
  const RunPlan ring = fixture.plan(config);
  EXPECT_EQ(ring.variant, RuntimeVariant::TensormapRingbuffer);
  EXPECT_EQ(ring.heap_bytes, 8192u + 3 * 16384u);
  EXPECT_EQ(ring.heap_bytes, ring.rings.total_heap_bytes());
  EXPECT_EQ(ring.rings.sizes.task_window[2], 32u);
  EXPECT_EQ(ring.rings.source[static_cast<int>(RingField::TaskWindow)],
            RingSizeSource::Environment);

  config.rings.heap_bytes.clear();
  const Error bad = error_of([&] { fixture.plan(config); });
  EXPECT_EQ(bad.code(), StatusCode::InvalidConfig);
  EXPECT_THAT(bad.message(), HasSubstr("CHIPRT_RING_HEAP_BYTES=\"4097\""));

  config.runtime = RuntimeVariant::HostBuildGraph;
  const RunPlan hbg = fixture.plan(config);
  EXPECT_EQ(hbg.heap_bytes, 1u << 20);
}

TEST(RunPlanTest, RefusesAReplayOfARingRunButAnExportIgnoresVariantAndReplay) {
  PlanFixture fixture;
  CallConfig config;
  config.runtime = RuntimeVariant::TensormapRingbuffer;
  config.replay_graph = true;
  const Error refused = error_of([&] { fixture.plan(config); });
  EXPECT_EQ(refused.code(), StatusCode::InvalidConfig);
  EXPECT_EQ(refused.message(),
            "replay_graph=true: graph replay is a host_build_graph feature; a "
            "tensormap_ringbuffer run orchestrates on the chip every time and has no graph image "
            "to replay (set replay_graph=false or run host_build_graph)");

  const RunPlan exported = fixture.plan(config, PlanPurpose::ExportGraph);
  EXPECT_EQ(exported.variant, RuntimeVariant::HostBuildGraph);
  EXPECT_FALSE(exported.replay_graph);
  EXPECT_EQ(exported.heap_bytes, CallConfig::kDefaultOutputHeapBytes);
}

TEST(RunPlanTest, AnInvalidConfigIsRefusedFirst) {
  PlanFixture fixture;
  CallConfig config;
  config.aicpu_thread_num = 1;
  config.runtime = RuntimeVariant::TensormapRingbuffer;
  config.replay_graph = true;  // also refused, but the shape is checked first
  const Error error = error_of([&] { fixture.plan(config); });
  EXPECT_EQ(error.code(), StatusCode::InvalidConfig);
  EXPECT_THAT(error.message(), HasSubstr("aicpu_thread_num=1"));
  config = {};
  config.cluster_count = 4;
  EXPECT_EQ(error_of([&] { fixture.plan(config); }).code(), StatusCode::InvalidConfig);
}

// --- the steps -----------------------------------------------------------------------------------

constexpr uint64_t kN = 64;
constexpr int32_t kAddOne = 0;
constexpr int32_t kGatedAddOne = 1;

std::atomic<bool> g_gate_open{true};

void add_one(int64_t* args) {
  float* data = kernel::tensor_arg<float>(args, 0);
  for (uint64_t i = 0; i < kN; ++i) data[i] += 1.0f;
}
// Waits (bounded) for the gate, then adds one.
void gated_add_one(int64_t* args) {
  for (int i = 0; i < 20000 && !g_gate_open.load(std::memory_order_acquire); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  add_one(args);
}

// Argument 0 (InOut): the data; scalar 0: which kernel.
void one_task(Orchestration& orch, const TaskArgs& args) {
  TaskArgs task;
  task.inout(args.tensor(0));
  orch.submit(static_cast<int32_t>(args.scalar_bits(0)), CoreType::AIV, task);
}
void no_task(Orchestration&, const TaskArgs&) {}

std::vector<uint8_t> callable_with(OrchestrationEntry orchestration) {
  const ArgSignature sig = ArgSignature::of({ArgTag::InOut}, 0);
  return CallableBuilder()
      .orchestration_function(orchestration, ArgSignature{})
      .kernel_function(kAddOne, CoreType::AIV, &add_one, sig)
      .kernel_function(kGatedAddOne, CoreType::AIV, &gated_add_one, sig)
      .build();
}

class RunStepsTest : public ::testing::TestWithParam<RuntimeVariant> {
 protected:
  void SetUp() override {
    RunnerOptions options = test::options_with_env({});
    options.default_runtime = GetParam();
    runner_ = std::make_unique<DeviceRunner>(test::make_sim(), options);
    runner_->attach(0);
    runner_->register_callable(0, callable_with(&one_task));
    runner_->register_callable(1, callable_with(&no_task));
  }
  void TearDown() override { g_gate_open.store(true); }

  DeviceBuffer zeroed_buffer() {
    DeviceBuffer buffer = runner_->allocate(kN * sizeof(float));
    runner_->memset(buffer.addr, 0, buffer.size);
    return buffer;
  }
  static TaskArgs args_for(const DeviceBuffer& buffer, int32_t kernel) {
    TaskArgs args;
    args.inout(Tensor::make(buffer, {kN}, DataType::F32)).scalar(static_cast<uint64_t>(kernel));
    return args;
  }
  std::vector<float> read(const DeviceBuffer& buffer) {
    std::vector<float> data(kN);
    runner_->copy_from_device(data.data(), buffer.addr, buffer.size);
    return data;
  }
  PreparedLaunch prepare(int32_t id, const TaskArgs& args, const CallConfig& config = {}) {
    return runner_->prepare(runner_->plan_run(config), id, args, Clock::now());
  }

  std::unique_ptr<DeviceRunner> runner_;
};

TEST_P(RunStepsTest, PollReportsARunningLaunchUntilItIsOver) {
  const DeviceBuffer data = zeroed_buffer();
  g_gate_open.store(false);
  PreparedLaunch prepared = prepare(0, args_for(data, kGatedAddOne));
  EXPECT_EQ(prepared.plan.variant, GetParam());
  EXPECT_EQ(prepared.stage, LaunchStage::Prepared);
  EXPECT_TRUE(prepared.needs_launch);
  if (GetParam() == RuntimeVariant::HostBuildGraph) {
    EXPECT_EQ(prepared.report.task_count, 1u);  // known from the image before the launch
  }
  EXPECT_EQ(runner_->launches(), 0u);

  runner_->launch(prepared);
  EXPECT_EQ(runner_->launches(), 1u);
  EXPECT_EQ(prepared.stage, LaunchStage::Launched);
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(runner_->poll(prepared)) << "poll " << i;
  EXPECT_EQ(read(data)[0], 0.0f);  // the kernel waits for the gate

  g_gate_open.store(true, std::memory_order_release);
  while (!runner_->poll(prepared)) {
  }
  EXPECT_EQ(prepared.stage, LaunchStage::Finished);
  EXPECT_GT(prepared.report.device_wall_ns, 0u);
  const RunReport report = runner_->collect(prepared);
  EXPECT_EQ(report.task_count, 1u);
  EXPECT_GE(report.host_total_ns, report.host_prepare_ns + report.device_wall_ns);
  EXPECT_EQ(read(data), std::vector<float>(kN, 1.0f));
}

// What issue 16 builds on: a run is prepared while another prepared one waits for its launch;
// each lives in its own slot and bank and completes as if run alone.
TEST_P(RunStepsTest, TwoPreparedLaunchesAreHeldAtOnce) {
  const DeviceBuffer first_data = zeroed_buffer();
  const DeviceBuffer second_data = zeroed_buffer();
  CallConfig second_config;
  second_config.pipeline_slot = 1;
  second_config.arena_bank = 1;
  PreparedLaunch first = prepare(0, args_for(first_data, kAddOne));
  PreparedLaunch second = prepare(0, args_for(second_data, kAddOne), second_config);
  EXPECT_NE(first.launch_args_addr, second.launch_args_addr);
  EXPECT_NE(first.shared_addr, second.shared_addr);

  runner_->launch(first);
  runner_->wait(first);
  EXPECT_EQ(runner_->collect(first).task_count, 1u);
  EXPECT_EQ(read(first_data), std::vector<float>(kN, 1.0f));
  EXPECT_EQ(read(second_data), std::vector<float>(kN, 0.0f));

  runner_->launch(second);
  runner_->wait(second);
  EXPECT_EQ(runner_->collect(second).task_count, 1u);
  EXPECT_EQ(read(second_data), std::vector<float>(kN, 1.0f));
  EXPECT_EQ(read(first_data), std::vector<float>(kN, 1.0f));
}

TEST_P(RunStepsTest, StepsOutOfOrderAreRefused) {
  const DeviceBuffer data = zeroed_buffer();
  PreparedLaunch prepared = prepare(0, args_for(data, kAddOne));
  const Error early_collect = error_of([&] { runner_->collect(prepared); });
  EXPECT_EQ(early_collect.code(), StatusCode::InternalError);
  EXPECT_EQ(early_collect.message(),
            "collect: the run of callable 0 is prepared; collect needs it finished (the steps: "
            "prepare, launch, poll or wait, collect)");
  EXPECT_THAT(error_of([&] { runner_->poll(prepared); }).message(),
              HasSubstr("poll: the run of callable 0 is prepared; poll needs it launched"));

  runner_->launch(prepared);
  EXPECT_THAT(error_of([&] { runner_->launch(prepared); }).message(),
              HasSubstr("launch: the run of callable 0 is launched; launch needs it prepared"));
  runner_->wait(prepared);
  EXPECT_THAT(error_of([&] { runner_->poll(prepared); }).message(),
              HasSubstr("poll: the run of callable 0 is finished"));
  EXPECT_EQ(runner_->collect(prepared).task_count, 1u);
  EXPECT_THAT(error_of([&] { runner_->collect(prepared); }).message(),
              HasSubstr("collect: the run of callable 0 is collected; collect needs it finished"));
  EXPECT_EQ(read(data), std::vector<float>(kN, 1.0f));
  EXPECT_EQ(runner_->launches(), 1u);
}

// A launch-arguments block the chip does not recognise gets no error latched into it (it may not
// be a launch block), so "no error" must not read as success: the host counts the AICPU threads
// that accepted the launch.
TEST_P(RunStepsTest, ALaunchTheChipDidNotRecogniseIsNoSuccess) {
  const DeviceBuffer data = zeroed_buffer();
  PreparedLaunch prepared = prepare(0, args_for(data, kAddOne));
  const uint32_t bad_magic = common::kLaunchMagic ^ 1u;
  runner_->copy_to_device(prepared.launch_args_addr + offsetof(common::ChipLaunchArgs, magic),
                          &bad_magic, sizeof(bad_magic));
  runner_->launch(prepared);
  runner_->wait(prepared);
  const Error error = error_of([&] { runner_->collect(prepared); });
  EXPECT_EQ(error.code(), StatusCode::InternalError);
  EXPECT_THAT(error.message(), HasSubstr("the chip accepted the launch arguments on 0 of "));
  EXPECT_THAT(error.message(), HasSubstr("the launch arguments were not recognised, so the run "
                                         "did not execute"));
  EXPECT_EQ(read(data), std::vector<float>(kN, 0.0f));
  // The device is not faulted: the next run works.
  PreparedLaunch next = prepare(0, args_for(data, kAddOne));
  runner_->launch(next);
  runner_->wait(next);
  EXPECT_EQ(runner_->collect(next).task_count, 1u);
  EXPECT_EQ(read(data), std::vector<float>(kN, 1.0f));
}

TEST_P(RunStepsTest, ARunWithNothingToLaunchIsCollectedWithoutALaunch) {
  PreparedLaunch prepared = prepare(1, TaskArgs{});
  if (GetParam() == RuntimeVariant::TensormapRingbuffer) {
    // The orchestration runs on the chip: only the launch finds out it submitted nothing.
    EXPECT_TRUE(prepared.needs_launch);
    runner_->launch(prepared);
    runner_->wait(prepared);
    EXPECT_EQ(runner_->collect(prepared).task_count, 0u);
    EXPECT_EQ(runner_->launches(), 1u);
    return;
  }
  EXPECT_FALSE(prepared.needs_launch);
  const Error error = error_of([&] { runner_->launch(prepared); });
  EXPECT_EQ(error.code(), StatusCode::InternalError);
  EXPECT_EQ(error.message(),
            "launch: the run of callable 1 has nothing to launch (its graph has no tasks); "
            "collect it");
  const RunReport report = runner_->collect(prepared);
  EXPECT_EQ(report.task_count, 0u);
  EXPECT_EQ(report.host_total_ns, report.host_prepare_ns);
  EXPECT_EQ(runner_->launches(), 0u);
}

INSTANTIATE_TEST_SUITE_P(BothVariants, RunStepsTest, ::testing::ValuesIn(test::kBothVariants),
                         [](const ::testing::TestParamInfo<RuntimeVariant>& info) {
                           return std::string(runtime_variant_name(info.param));
                         });

}  // namespace
}  // namespace chiprt::host
