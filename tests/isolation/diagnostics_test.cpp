// Diagnostics (DiagnosticsConfig::all) on the isolated device (SimIsolation::Process), on both
// runtime variants, threaded and serial (one table). The collectors work across the process
// boundary and survive a run whose device process dies:
//   - a normal run writes run-0001 with every file, no error, nothing dropped, one complete slice
//     per executed block, no two slices of a core overlapping, and deps.json the graph
//     Worker::export_graph gives for the same call (its user edges with their kinds, also where
//     a threaded ring run retires producers while it submits);
//   - a crashed kernel (AIV, SPMD at block kSpmdFaultBlock, MIX) fails the run with KernelCrashed,
//     whose message names the run directory; run.json holds the error, task 0 has a complete
//     slice, and the crashed block a slice that started and never ended, on the core the message
//     names (the Dispatch record its scheduler wrote before the kernel ran lies in device memory,
//     which outlives the device process). After reset() a normal run writes run-0002;
//   - a kernel that never returns: the scheduler watchdog latches running_task_stalled naming the
//     task and its core (run.json), the isolated host then kills the device at the op execute
//     timeout (OpExecuteTimeout, as hang_test.cpp shows), and the stuck block's slice is open on
//     that core. A serial run has no watchdog beside the kernel (its one thread runs it): only the
//     op execute timeout ends it, with no stall named, and the open slice still shows it;
//   - the ring orchestration function crashing on the chip, and an orchestration function that
//     throws (both variants), write the directory with the error.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "chiprt/callable.h"
#include "chiprt/orchestration.h"
#include "chiprt/status.h"
#include "chiprt/worker.h"
#include "diag_run_checks.h"
#include "diagnostics/artifacts.h"
#include "isolation_support.h"
#include "scoped_env.h"

namespace chiprt::isolation_test {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

// An orchestration function of this file's own callable: task 0 of every scenario, then an Error.
constexpr int32_t kThrowingCallable = 2;
void throwing_orchestration(Orchestration& o, const TaskArgs& run) {
  submit_first_task(o, run.tensor(0));
  throw Error(StatusCode::InvalidArgument, "the orchestration gives up");
}

struct DiagCase {
  const char* name;
  RuntimeVariant variant;
  bool serial;
};
const DiagCase kCases[] = {
    {"HostBuildGraph_Threaded", RuntimeVariant::HostBuildGraph, false},
    {"HostBuildGraph_Serial", RuntimeVariant::HostBuildGraph, true},
    {"Ringbuffer_Threaded", RuntimeVariant::TensormapRingbuffer, false},
    {"Ringbuffer_Serial", RuntimeVariant::TensormapRingbuffer, true},
};

// The blocks of `task` in `model`.
std::vector<diagnostics::BlockRun> blocks_of(const diagnostics::RunModel& model, uint64_t task) {
  std::vector<diagnostics::BlockRun> blocks;
  for (const diagnostics::BlockRun& block : model.blocks) {
    if (block.task == task) blocks.push_back(block);
  }
  return blocks;
}

// The core a device-fault message names ("... on core N (AIV, cluster c) ..."), -1 when none.
int32_t core_named_in(const std::string& message) {
  std::smatch match;
  if (!std::regex_search(message, match, std::regex("on core ([0-9]+)"))) return -1;
  return std::stoi(match[1].str());
}

// trace.json has a task slice of `task` (block `block`) drawn without an end (args.state set).
bool trace_shows_open_slice(const std::string& run_dir, uint64_t task, uint32_t block) {
  std::ifstream file(fs::path(run_dir) / diagnostics::kTraceFile);
  const nlohmann::json trace = nlohmann::json::parse(file);
  for (const nlohmann::json& event : trace.at("traceEvents")) {
    if (event.value("ph", "") != "X" || event.value("cat", "") != "task") continue;
    const nlohmann::json& args = event.at("args");
    if (args.value("task", uint64_t{0}) == task && args.value("block", uint32_t{0}) == block &&
        args.contains("state")) {
      return true;
    }
  }
  return false;
}

class IsolatedDiagnostics : public testing::TestWithParam<DiagCase> {
 protected:
  void SetUp() override {
    bus_address();  // mapped before the device process is forked
    dir_ = fs::temp_directory_path() /
           ("chiprt_isolated_diag_" + std::to_string(::getpid()) + "_" + GetParam().name);
    fs::remove_all(dir_);
  }
  void TearDown() override {
    worker_.reset();
    fs::remove_all(dir_);
  }

  // The Worker; timeouts set in the environment are resolved here (its first attach).
  void start_worker() {
    worker_ = std::make_unique<Worker>();
    worker_->init(isolated_options());
    register_suite_callables(*worker_);
    worker_->register_callable(kThrowingCallable,
                               CallableBuilder()
                                   .orchestration_function(&throwing_orchestration, {})
                                   .kernel_function(kAdd, CoreType::AIV, &add_kernel, {})
                                   .build());
    allocate_buffers();
  }
  void allocate_buffers() {
    x_ = worker_->malloc(kBytes);
    y_ = worker_->malloc(kBytes);
    const std::vector<float> xs = x_values();
    worker_->copy_to(x_, xs.data(), kBytes);
    worker_->memset(y_, 0, kBytes);
  }

  CallConfig config() const {
    CallConfig config = run_config(GetParam().variant, GetParam().serial);
    config.diagnostics = DiagnosticsConfig::all(dir_.string());
    return config;
  }
  TaskArgs args(Scenario scenario, TaskKind kind = TaskKind::Aiv, Fault fault = Fault::None) const {
    return scenario_args(x_, y_, scenario, kind, fault);
  }

  // A run that must fail with `code`: the error's message, the run directory it names (the
  // latest one) and the model read back from it, whose error has `code` too (`complete` when all
  // of that holds).
  struct FailedRun {
    bool complete = false;
    std::string message;
    std::string dir;
    diagnostics::RunModel model;
  };
  FailedRun run_failing(int32_t callable, const TaskArgs& run_args, StatusCode code) {
    FailedRun failed;
    try {
      worker_->run(callable, run_args, config());
      ADD_FAILURE() << "the run succeeded";
      return failed;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      failed.message = e.message();
    }
    failed.dir = latest_diagnostics_run(dir_.string());
    if (failed.dir.empty()) {
      ADD_FAILURE() << "no run directory under " << dir_;
      return failed;
    }
    EXPECT_THAT(failed.message, HasSubstr("; diagnostics of the failed run: " + failed.dir));
    failed.model = diagnostics::read_run_directory(failed.dir);
    if (!failed.model.error.has_value()) {
      ADD_FAILURE() << "run.json of " << failed.dir << " has no error";
      return failed;
    }
    EXPECT_EQ(failed.model.error->code, static_cast<int32_t>(code)) << failed.model.error->message;
    EXPECT_TRUE(failed.model.isolated);
    failed.complete = true;
    return failed;
  }

  // A normal run with diagnostics writes `expected_dir_name` with no error, two complete slices
  // (tasks 0 and 1) and the right result.
  diagnostics::RunModel expect_normal_diagnostics_run(const char* expected_dir_name) {
    const RunReport report = worker_->run(kCallable, args(Scenario::Normal), config());
    std::vector<float> got(kN);
    worker_->copy_from(got.data(), y_, kBytes);
    const std::vector<float> xs = x_values();
    for (uint64_t i = 0; i < kN; ++i) EXPECT_EQ(got[i], xs[i] + 3) << "y[" << i << "]";
    EXPECT_EQ(fs::path(report.diagnostics_dir).filename(), expected_dir_name);
    EXPECT_EQ(report.diagnostics_records_dropped, 0u);
    diagnostics::RunModel model = diagnostics::read_run_directory(report.diagnostics_dir);
    EXPECT_FALSE(model.error.has_value()) << model.error->message;
    EXPECT_TRUE(model.isolated);
    EXPECT_EQ(model.records_dropped, 0u);
    // One block per executed block: tasks 0 and 1, once each, complete.
    std::set<uint64_t> tasks;
    for (const diagnostics::BlockRun& block : model.blocks) {
      EXPECT_TRUE(tasks.insert(block.task).second) << "task " << block.task << " twice";
      EXPECT_EQ(block.block, 0u);
      EXPECT_GE(block.core, 0) << "task " << block.task;
      EXPECT_NE(block.start_ns, diagnostics::kNoTime) << "task " << block.task;
      EXPECT_NE(block.end_ns, diagnostics::kNoTime) << "task " << block.task;
      if (block.end_ns != diagnostics::kNoTime) {
        EXPECT_LE(block.start_ns, block.end_ns);
        EXPECT_LE(block.end_ns, model.wall_ns);
      }
    }
    EXPECT_EQ(tasks, (std::set<uint64_t>{0, 1}));
    diag_checks::expect_no_overlap_per_core(model);
    diag_checks::expect_full_run_files(report.diagnostics_dir);
    return model;
  }

  // A kernel of task kFaultingTask (of `kind`) crashes the device process.
  void expect_crash_shown(TaskKind kind) {
    start_worker();
    const FailedRun failed = run_failing(kCallable, args(Scenario::KernelFault, kind, Fault::Segv),
                                         StatusCode::KernelCrashed);
    ASSERT_TRUE(failed.complete);
    const diagnostics::RunModel& model = failed.model;
    const std::string& run_dir = failed.dir;
    const std::string& message = failed.message;
    EXPECT_THAT(model.error->message, HasSubstr("task " + std::to_string(kFaultingTask)));
    EXPECT_THAT(model.error->message, HasSubstr("SIGSEGV"));
    diag_checks::expect_full_run_files(run_dir);
    diag_checks::expect_no_overlap_per_core(model);

    // Task 0 ran before: a complete slice.
    const std::vector<diagnostics::BlockRun> first = blocks_of(model, 0);
    ASSERT_EQ(first.size(), 1u);
    EXPECT_NE(first[0].start_ns, diagnostics::kNoTime);
    EXPECT_NE(first[0].end_ns, diagnostics::kNoTime);

    // The crashed block: started (dispatched) on the core the message names, never ended. Other
    // blocks of the task (SPMD: earlier ones on the same core too; MIX: the other parts, block 0
    // each, on their own cores) may have ended, or not, when the device died.
    const uint32_t crashed_block = kind == TaskKind::Spmd ? kSpmdFaultBlock : 0;
    const int32_t crashed_core = core_named_in(message);
    EXPECT_GE(crashed_core, 0) << message;
    std::set<std::pair<uint32_t, int32_t>> seen;
    bool shown = false;
    for (const diagnostics::BlockRun& block : blocks_of(model, kFaultingTask)) {
      EXPECT_TRUE(seen.emplace(block.block, block.core).second)
          << "two slices of block " << block.block << " on core " << block.core;
      if (block.block != crashed_block || block.core != crashed_core) continue;
      shown = true;
      EXPECT_NE(block.start_ns, diagnostics::kNoTime);
      EXPECT_EQ(block.end_ns, diagnostics::kNoTime) << "the crashed kernel has an end";
    }
    EXPECT_TRUE(shown) << "no slice of task " << kFaultingTask << " block " << crashed_block
                       << " on core " << crashed_core;
    EXPECT_TRUE(trace_shows_open_slice(run_dir, kFaultingTask, crashed_block));

    // After reset() the next run writes the next directory, correctly.
    worker_->reset();
    allocate_buffers();
    expect_normal_diagnostics_run("run-0002");
  }

  std::unique_ptr<Worker> worker_;
  DeviceBuffer x_{};
  DeviceBuffer y_{};
  fs::path dir_;
};

TEST_P(IsolatedDiagnostics, NormalRunWritesEveryFileAndTheExportedGraph) {
  start_worker();
  const GraphExport exported = worker_->export_graph(kCallable, args(Scenario::Normal), config());
  const diagnostics::RunModel model = expect_normal_diagnostics_run("run-0001");
  diag_checks::expect_graph_is_exported(model, exported, GetParam().variant);
}

TEST_P(IsolatedDiagnostics, CrashedAivKernelIsShownWhereItRanAndResetRecovers) {
  expect_crash_shown(TaskKind::Aiv);
}
TEST_P(IsolatedDiagnostics, CrashedSpmdBlockIsShownWhereItRanAndResetRecovers) {
  expect_crash_shown(TaskKind::Spmd);
}
TEST_P(IsolatedDiagnostics, CrashedMixPartIsShownWhereItRanAndResetRecovers) {
  expect_crash_shown(TaskKind::Mix);
}

TEST_P(IsolatedDiagnostics, HangingKernelIsNamedAndShownWhereItRuns) {
  // The ordering rule of src/host/timeouts.h: scheduler < op execute < stream sync, stream sync
  // more than 1.5 s above the scheduler timeout. The op execute timeout is well above the
  // scheduler's, so the watchdog has latched the stall before the host kills the device.
  test::ScopedEnv scheduler("CHIPRT_SCHEDULER_TIMEOUT_MS", "200");
  test::ScopedEnv op_execute("CHIPRT_OP_EXECUTE_TIMEOUT_US", "1000000");
  test::ScopedEnv stream_sync("CHIPRT_STREAM_SYNC_TIMEOUT_MS", "2000");
  start_worker();
  const FailedRun failed =
      run_failing(kCallable, args(Scenario::Hang), StatusCode::OpExecuteTimeout);
  ASSERT_TRUE(failed.complete);
  const diagnostics::RunModel& model = failed.model;
  const std::string& message = failed.message;
  const int32_t hung_core = core_named_in(message);
  EXPECT_GE(hung_core, 0) << message;
  if (!GetParam().serial) {
    // The scheduler's watchdog named the stall first.
    EXPECT_EQ(model.error->stall, "running_task_stalled");
    EXPECT_EQ(model.error->stuck_task, kFaultingTask);
    EXPECT_EQ(model.error->stuck_core, hung_core);
    EXPECT_THAT(message, HasSubstr("the scheduler watchdog reported first"));
  } else {
    EXPECT_EQ(model.error->stall, "");
  }
  const std::vector<diagnostics::BlockRun> first = blocks_of(model, 0);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_NE(first[0].end_ns, diagnostics::kNoTime);
  const std::vector<diagnostics::BlockRun> hung = blocks_of(model, kFaultingTask);
  ASSERT_EQ(hung.size(), 1u);
  EXPECT_EQ(hung[0].core, hung_core);
  EXPECT_NE(hung[0].start_ns, diagnostics::kNoTime);
  EXPECT_EQ(hung[0].end_ns, diagnostics::kNoTime);
  EXPECT_TRUE(trace_shows_open_slice(failed.dir, kFaultingTask, 0));
}

TEST_P(IsolatedDiagnostics, CrashedRingOrchestrationWritesItsError) {
  if (GetParam().variant != RuntimeVariant::TensormapRingbuffer) {
    GTEST_SKIP() << "host_build_graph orchestrates on the host: a crash there is the host's";
  }
  start_worker();
  const FailedRun failed =
      run_failing(kCallable, args(Scenario::OrchestrationFault, TaskKind::Aiv, Fault::Segv),
                  StatusCode::KernelCrashed);
  ASSERT_TRUE(failed.complete);
  EXPECT_THAT(failed.model.error->message, HasSubstr("orchestration"));
  EXPECT_THAT(failed.model.error->message, HasSubstr("SIGSEGV"));
  worker_->reset();
  allocate_buffers();
  expect_normal_diagnostics_run("run-0002");
}

TEST_P(IsolatedDiagnostics, ThrowingOrchestrationWritesItsError) {
  start_worker();
  const FailedRun failed =
      run_failing(kThrowingCallable, args(Scenario::Normal), StatusCode::InvalidArgument);
  ASSERT_TRUE(failed.complete);
  EXPECT_THAT(failed.model.error->message, HasSubstr("the orchestration gives up"));
  // Not a device fault: the next run needs no reset.
  expect_normal_diagnostics_run("run-0002");
}

INSTANTIATE_TEST_SUITE_P(Isolated, IsolatedDiagnostics, testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace chiprt::isolation_test
