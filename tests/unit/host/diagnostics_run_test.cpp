// Diagnostics of real runs, on every runtime variant and core mode (one table): the run directory
// holds one slice per executed block, no two slices of a core overlap, every flow of the trace is
// an edge of the graph, deps.json is the graph Worker::export_graph gives for the same call
// (its user edges with their kinds, on every variant), and failing runs (a kernel that throws, a
// stuck kernel, an orchestration error) still write their directory with the error. Each part of a
// MIX task is a slice of its own, on its core. Full diagnostics streams make producers wait for the
// host collector instead of losing records.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "chiprt/callable.h"
#include "chiprt/orchestration.h"
#include "common/diag_layout.h"
#include "diag_run_checks.h"
#include "diagnostics/artifacts.h"
#include "host/device_runner.h"
#include "host/log.h"
#include "host_test_support.h"

namespace chiprt::host {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

constexpr uint64_t kWatchdogMs = 300;
constexpr int32_t kTouch = 0;
constexpr int32_t kThrow = 1;
constexpr int32_t kBlocking = 2;
constexpr int32_t kTouchAic = 3;

std::atomic<bool> g_release{false};

void touch_kernel(int64_t*) {}
void throw_kernel(int64_t*) {
  throw std::runtime_error("kernel refuses");
}
void blocking_kernel(int64_t*) {
  while (!g_release.load(std::memory_order_acquire)) g_release.wait(false);
}

// A layered graph over run argument 0 (a float per slot): scalar 0 layers of scalar 1 tasks; the
// task of layer l, column c reads slots c and c+1 of layer l-1 and writes its own slot, on AIV
// and AIC alternately; the last layer's first task is SPMD with 3 blocks.
void layered(Orchestration& orch, const TaskArgs& args) {
  const Tensor& grid = args.tensor(0);
  const uint64_t layers = args.scalar_bits(0);
  const uint64_t width = args.scalar_bits(1);
  auto slot = [&](uint64_t layer, uint64_t column) {
    return grid.view({1}, {layer * width + column % width});
  };
  for (uint64_t l = 0; l < layers; ++l) {
    for (uint64_t c = 0; c < width; ++c) {
      TaskArgs task;
      if (l > 0) task.in(slot(l - 1, c)).in(slot(l - 1, c + 1));
      task.output_existing(slot(l, c));
      const bool aic = (l + c) % 2 == 1;
      const uint32_t blocks = l + 1 == layers && c == 0 ? 3 : 1;
      orch.submit(
          TaskSpec::kernel(aic ? kTouchAic : kTouch, aic ? CoreType::AIC : CoreType::AIV, blocks),
          task);
    }
  }
}
// A chain of scalar 0 tasks, the last of which throws.
void chain_then_throw(Orchestration& orch, const TaskArgs& args) {
  for (uint64_t i = 0; i < args.scalar_bits(0); ++i) {
    TaskArgs task;
    task.inout(args.tensor(0).view({1}, {0}));
    orch.submit(i + 1 == args.scalar_bits(0) ? kThrow : kTouch, CoreType::AIV, task);
  }
}
// Two quick tasks, then one that blocks until the test releases it.
void quick_then_stuck(Orchestration& orch, const TaskArgs& args) {
  for (int32_t func : {kTouch, kTouch, kBlocking}) {
    TaskArgs task;
    task.inout(args.tensor(0).view({1}, {0}));
    orch.submit(func, CoreType::AIV, task);
  }
}
// One MIX task: AIC, AIV0 and AIV1 parts, each block 0 of the task on a core of its own.
void one_mix_task(Orchestration& orch, const TaskArgs& args) {
  TaskArgs task;
  task.inout(args.tensor(0).view({1}, {0}));
  orch.submit(TaskSpec::mixed({.aic = kTouchAic, .aiv0 = kTouch, .aiv1 = kTouch}), task);
}
// Submits a task, then fails.
void failing_orchestration(Orchestration& orch, const TaskArgs& args) {
  TaskArgs task;
  task.inout(args.tensor(0).view({1}, {0}));
  orch.submit(kTouch, CoreType::AIV, task);
  throw Error(StatusCode::InvalidArgument, "the orchestration gives up");
}

std::vector<uint8_t> callable_with(OrchestrationEntry orchestration) {
  return CallableBuilder()
      .orchestration_function(orchestration, ArgSignature{})
      .kernel_function(kTouch, CoreType::AIV, &touch_kernel, ArgSignature{})
      .kernel_function(kThrow, CoreType::AIV, &throw_kernel, ArgSignature{})
      .kernel_function(kBlocking, CoreType::AIV, &blocking_kernel, ArgSignature{})
      .kernel_function(kTouchAic, CoreType::AIC, &touch_kernel, ArgSignature{})
      .build();
}

struct Combination {
  const char* name;
  RuntimeVariant runtime;
  SimCoreExecution cores;
  bool serial;
};
const Combination kCombinations[] = {
    {"hbg_aicpu", RuntimeVariant::HostBuildGraph, SimCoreExecution::Aicpu, false},
    {"hbg_executors", RuntimeVariant::HostBuildGraph, SimCoreExecution::Executors, false},
    {"hbg_serial", RuntimeVariant::HostBuildGraph, SimCoreExecution::Auto, true},
    {"ring_aicpu", RuntimeVariant::TensormapRingbuffer, SimCoreExecution::Aicpu, false},
    {"ring_executors", RuntimeVariant::TensormapRingbuffer, SimCoreExecution::Executors, false},
    {"ring_serial", RuntimeVariant::TensormapRingbuffer, SimCoreExecution::Auto, true},
};

class DiagnosticsRun : public ::testing::TestWithParam<Combination> {
 protected:
  void SetUp() override {
    saved_level_ = log_level();
    set_log_level(LogLevel::Off);
    g_release.store(false);
    dir_ = fs::temp_directory_path() /
           ("chiprt_diag_run_" + std::to_string(::getpid()) + "_" + GetParam().name);
    fs::remove_all(dir_);
    const Combination& c = GetParam();
    runner_ = std::make_unique<DeviceRunner>(
        test::make_sim(/*clusters=*/2, c.serial, 256ull << 20, /*host_threads=*/2, c.cores),
        test::options_with_env({{kSchedulerTimeoutEnv, std::to_string(kWatchdogMs)},
                                {kOpExecuteTimeoutEnv, "1000000"},
                                {kStreamSyncTimeoutEnv, "1900"}}));
    runner_->attach(0);
    runner_->ensure_initialized();
    grid_ = runner_->allocate(4096 * sizeof(float));
  }
  void TearDown() override {
    g_release.store(true, std::memory_order_release);
    g_release.notify_all();
    runner_.reset();
    set_log_level(saved_level_);
    fs::remove_all(dir_);
  }

  CallConfig config() const {
    CallConfig config = test::small_call_config(4096);
    config.runtime = GetParam().runtime;
    config.serial = GetParam().serial;
    config.diagnostics = DiagnosticsConfig::all(dir_.string());
    return config;
  }
  TaskArgs args(uint64_t a, uint64_t b = 0) const {
    TaskArgs args;
    args.inout(Tensor::make(grid_, {1024}, DataType::F32)).scalar(a).scalar(b);
    return args;
  }

  std::unique_ptr<DeviceRunner> runner_;
  DeviceBuffer grid_;
  fs::path dir_;
  LogLevel saved_level_ = LogLevel::Warn;
};

TEST_P(DiagnosticsRun, EveryExecutedBlockIsOneSliceAndTheGraphIsTheExportedOne) {
  constexpr uint64_t kLayers = 6, kWidth = 8;
  runner_->register_callable(0, callable_with(&layered));
  const GraphExport exported = runner_->export_graph(0, args(kLayers, kWidth), config());
  const RunReport report = runner_->run(0, args(kLayers, kWidth), config());
  ASSERT_FALSE(report.diagnostics_dir.empty());
  EXPECT_EQ(fs::path(report.diagnostics_dir).filename(), "run-0001");
  EXPECT_EQ(report.diagnostics_records_dropped, 0u);
  const diagnostics::RunModel model = diagnostics::read_run_directory(report.diagnostics_dir);
  EXPECT_FALSE(model.error.has_value());

  // One block per kernel call: every task once, the SPMD task three times.
  const uint64_t tasks = kLayers * kWidth;
  std::map<uint64_t, std::set<uint32_t>> blocks_of;
  for (const diagnostics::BlockRun& block : model.blocks) {
    ASSERT_NE(block.start_ns, diagnostics::kNoTime) << "task " << block.task;
    ASSERT_NE(block.end_ns, diagnostics::kNoTime) << "task " << block.task;
    EXPECT_LE(block.start_ns, block.end_ns);
    EXPECT_LE(block.end_ns, model.wall_ns);
    EXPECT_GE(block.core, 0);
    EXPECT_TRUE(blocks_of[block.task].insert(block.block).second) << "task " << block.task;
  }
  EXPECT_EQ(blocks_of.size(), tasks);
  EXPECT_EQ(model.blocks.size(), tasks + 2);
  EXPECT_EQ(blocks_of[(kLayers - 1) * kWidth], (std::set<uint32_t>{0, 1, 2}));
  diag_checks::expect_no_overlap_per_core(model);

  // deps.json is the graph of the call.
  diag_checks::expect_graph_is_exported(model, exported, GetParam().runtime);

  // The trace: one task slice per block, and every flow arrow (a start and a finish with one id)
  // joins the ends of a recorded edge.
  std::ifstream trace_file(fs::path(report.diagnostics_dir) / diagnostics::kTraceFile);
  const nlohmann::json trace = nlohmann::json::parse(trace_file);
  const diag_checks::EdgeSet recorded = diag_checks::edges_of(model);
  std::size_t slices = 0;
  std::map<uint64_t, int> flow_balance;
  std::set<std::pair<uint64_t, uint64_t>> flow_edges;
  for (const nlohmann::json& event : trace.at("traceEvents")) {
    const std::string ph = event.at("ph");
    if (ph == "X" && event.value("cat", "") == "task") ++slices;
    if (ph != "s" && ph != "f") continue;
    flow_balance[event.at("id").get<uint64_t>()] += ph == "s" ? 1 : -1;
    const std::pair<uint64_t, uint64_t> edge{event.at("args").at("producer").get<uint64_t>(),
                                             event.at("args").at("consumer").get<uint64_t>()};
    EXPECT_TRUE(recorded.count(edge)) << "flow " << edge.first << " -> " << edge.second;
    flow_edges.insert(edge);
  }
  EXPECT_EQ(slices, model.blocks.size());
  for (const auto& [id, balance] : flow_balance) EXPECT_EQ(balance, 0) << "flow " << id;
  // Every edge between two executed tasks is drawn.
  EXPECT_EQ(flow_edges, recorded);
  EXPECT_FALSE(flow_edges.empty());

  // The other files are there, and the report.
  diag_checks::expect_full_run_files(report.diagnostics_dir);
  EXPECT_THAT(diagnostics_summary(report.diagnostics_dir), HasSubstr("critical path: "));

  // A second run goes into the next directory.
  const RunReport second = runner_->run(0, args(kLayers, kWidth), config());
  EXPECT_EQ(fs::path(second.diagnostics_dir).filename(), "run-0002");
  EXPECT_EQ(latest_diagnostics_run(dir_.string()), second.diagnostics_dir);
}

// The parts of a MIX task are all block 0: each is a slice of its own, on its own core, with its
// own dispatch (matched by core, not by block alone).
TEST_P(DiagnosticsRun, EveryPartOfAMixTaskIsASliceOnItsCore) {
  runner_->register_callable(0, callable_with(&one_mix_task));
  const RunReport report = runner_->run(0, args(0), config());
  const diagnostics::RunModel model = diagnostics::read_run_directory(report.diagnostics_dir);
  ASSERT_EQ(model.blocks.size(), 3u);
  std::set<int32_t> cores;
  for (const diagnostics::BlockRun& block : model.blocks) {
    EXPECT_EQ(block.task, 0u);
    EXPECT_EQ(block.block, 0u);
    EXPECT_TRUE(cores.insert(block.core).second) << "core " << block.core << " twice";
    EXPECT_NE(block.dispatch_ns, diagnostics::kNoTime) << "core " << block.core;
    EXPECT_NE(block.end_ns, diagnostics::kNoTime) << "core " << block.core;
  }
}

TEST_P(DiagnosticsRun, AKernelThatThrowsStillWritesTheRunWithItsError) {
  runner_->register_callable(0, callable_with(&chain_then_throw));
  try {
    runner_->run(0, args(4), config());
    ADD_FAILURE() << "the throwing kernel must fail the run";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::KernelFault) << e.what();
    EXPECT_THAT(e.what(), HasSubstr("diagnostics of the failed run: "));
  }
  const std::string run_dir = latest_diagnostics_run(dir_.string());
  ASSERT_FALSE(run_dir.empty());
  const diagnostics::RunModel model = diagnostics::read_run_directory(run_dir);
  ASSERT_TRUE(model.error.has_value());
  EXPECT_EQ(model.error->code, static_cast<int32_t>(StatusCode::KernelFault));
  EXPECT_THAT(model.error->message, HasSubstr("kernel refuses"));
  // The three tasks before it ran, and so did the one that threw (its span ends at the throw).
  std::set<uint64_t> ran;
  for (const diagnostics::BlockRun& block : model.blocks) {
    if (block.end_ns != diagnostics::kNoTime) ran.insert(block.task);
  }
  EXPECT_EQ(ran, (std::set<uint64_t>{0, 1, 2, 3}));
}

TEST_P(DiagnosticsRun, AStuckKernelIsNamedAsTheStallAndShownWhereItRan) {
  if (GetParam().serial) GTEST_SKIP() << "a serial launch runs the stuck kernel on its only thread";
  runner_->register_callable(0, callable_with(&quick_then_stuck));
  try {
    runner_->run(0, args(0), config());
    ADD_FAILURE() << "the stuck kernel must end the run";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::SchedulerTimeout) << e.what();
  }
  const std::string run_dir = latest_diagnostics_run(dir_.string());
  ASSERT_FALSE(run_dir.empty());
  const diagnostics::RunModel model = diagnostics::read_run_directory(run_dir);
  ASSERT_TRUE(model.error.has_value());
  EXPECT_EQ(model.error->stall, "running_task_stalled");
  EXPECT_EQ(model.error->stuck_task, 2);
  // The stuck task has a slice that started and never ended, on the core the error names.
  bool shown = false;
  for (const diagnostics::BlockRun& block : model.blocks) {
    if (block.task != 2) continue;
    shown = true;
    EXPECT_NE(block.start_ns, diagnostics::kNoTime);
    EXPECT_EQ(block.end_ns, diagnostics::kNoTime);
    EXPECT_EQ(block.core, model.error->stuck_core);
  }
  EXPECT_TRUE(shown);
}

TEST_P(DiagnosticsRun, AFailingOrchestrationStillWritesTheRunWithItsError) {
  runner_->register_callable(0, callable_with(&failing_orchestration));
  EXPECT_THROW(runner_->run(0, args(0), config()), Error);
  const std::string run_dir = latest_diagnostics_run(dir_.string());
  ASSERT_FALSE(run_dir.empty());
  const diagnostics::RunModel model = diagnostics::read_run_directory(run_dir);
  ASSERT_TRUE(model.error.has_value());
  EXPECT_THAT(model.error->message, HasSubstr("the orchestration gives up"));
}

// Streams of 64 records for a run of thousands of records per stream: the producers wait for the
// host collector's drain (backing off) and nothing is lost.
TEST_P(DiagnosticsRun, FullStreamsWaitForTheCollectorAndLoseNothing) {
  constexpr uint64_t kLayers = 40, kWidth = 25;
  runner_->set_diag_stream_records(64);
  runner_->register_callable(0, callable_with(&layered));
  const RunReport report = runner_->run(0, args(kLayers, kWidth), config());
  EXPECT_EQ(report.diagnostics_records_dropped, 0u);
  const diagnostics::RunModel model = diagnostics::read_run_directory(report.diagnostics_dir);
  EXPECT_EQ(model.records_dropped, 0u);
  EXPECT_EQ(model.blocks.size(), kLayers * kWidth + 2);
}

TEST_P(DiagnosticsRun, CountersDegradeToCpuTimeWhenPerfEventsAreRefused) {
  ::setenv("CHIPRT_SIM_PERF_COUNTERS", "off", 1);
  runner_->register_callable(0, callable_with(&layered));
  CallConfig counters_only = config();
  counters_only.diagnostics = DiagnosticsConfig{};
  counters_only.diagnostics.hardware_counters = true;
  counters_only.diagnostics.output_dir = dir_.string();
  const RunReport report = runner_->run(0, args(2, 4), counters_only);
  ::unsetenv("CHIPRT_SIM_PERF_COUNTERS");
  const diagnostics::RunModel model = diagnostics::read_run_directory(report.diagnostics_dir);
  EXPECT_THAT(model.counters_note, HasSubstr("CHIPRT_SIM_PERF_COUNTERS=off"));
  ASSERT_EQ(model.counters.size(), 2u * 4u + 2u);
  for (const diagnostics::TaskCounters& c : model.counters) {
    EXPECT_EQ(c.valid, static_cast<uint32_t>(common::kDiagHaveCpuTime)) << "task " << c.task;
  }
  // Counters alone write no trace.
  EXPECT_FALSE(fs::exists(fs::path(report.diagnostics_dir) / diagnostics::kTraceFile));
  EXPECT_TRUE(fs::exists(fs::path(report.diagnostics_dir) / diagnostics::kCountersFile));
}

INSTANTIATE_TEST_SUITE_P(AllModes, DiagnosticsRun, ::testing::ValuesIn(kCombinations),
                         [](const auto& info) { return std::string(info.param.name); });

// Bad switches are refused before anything runs, naming the field.
TEST(DiagnosticsConfigCheck, BadSwitchesAreInvalidConfig) {
  DeviceRunner runner(test::make_sim());
  runner.attach(0);
  CallConfig config;
  config.diagnostics.swimlane_level = 5;
  config.diagnostics.output_dir = "/tmp";
  try {
    runner.plan_run(config);
    ADD_FAILURE() << "swimlane_level 5 must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::InvalidConfig);
    EXPECT_THAT(e.what(), HasSubstr("diagnostics.swimlane_level=5"));
  }
  config.diagnostics.swimlane_level = 1;
  config.diagnostics.output_dir.clear();
  try {
    runner.plan_run(config);
    ADD_FAILURE() << "a collector without output_dir must be refused";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("output_dir is empty"));
  }
}

TEST(DiagnosticsConfigCheck, TheSwitchListParses) {
  DiagnosticsConfig config;
  std::string error;
  ASSERT_TRUE(parse_diagnostics_list("swimlane=2,tasks,counters", &config, &error)) << error;
  EXPECT_EQ(config.swimlane_level, 2);
  EXPECT_TRUE(config.task_timing);
  EXPECT_TRUE(config.hardware_counters);
  EXPECT_FALSE(config.dependency_graph);
  ASSERT_TRUE(parse_diagnostics_list("all", &config, &error));
  EXPECT_EQ(config.swimlane_level, DiagnosticsConfig::kMaxSwimlaneLevel);
  EXPECT_EQ(config.args_dump_level, 1);
  for (const char* bad : {"", "swimlane=9", "args=0", "tasks=1", "bogus", "tasks,,deps"}) {
    DiagnosticsConfig untouched;
    EXPECT_FALSE(parse_diagnostics_list(bad, &untouched, &error)) << bad;
    EXPECT_FALSE(error.empty()) << bad;
    EXPECT_FALSE(untouched.any()) << bad;
  }
  // 'all' inside a list, and an empty entry, are named as what they are.
  EXPECT_FALSE(parse_diagnostics_list("all,tasks", &config, &error));
  EXPECT_NE(error.find("'all' stands alone"), std::string::npos) << error;
  EXPECT_FALSE(parse_diagnostics_list("tasks,,deps", &config, &error));
  EXPECT_NE(error.find("an empty entry in 'tasks,,deps'"), std::string::npos) << error;
}

}  // namespace
}  // namespace chiprt::host
