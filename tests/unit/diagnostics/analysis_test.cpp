// analyze() on hand-built graphs with given times: the critical path, the split of each step's
// wait, kernel statistics, utilisation and the verdict, computed exactly.
#include "diagnostics/analysis.h"

#include <gtest/gtest.h>

namespace chiprt::diagnostics {
namespace {

constexpr int kOrch = static_cast<int>(WaitKind::Orchestrator);
constexpr int kData = static_cast<int>(WaitKind::Data);
constexpr int kSched = static_cast<int>(WaitKind::Scheduler);
constexpr int kCore = static_cast<int>(WaitKind::Core);
constexpr int kLaunch = static_cast<int>(WaitKind::Launch);
constexpr int kUnmeasured = static_cast<int>(WaitKind::Unmeasured);

// A model of `clusters` clusters (AIC cores 0..clusters-1, AIV after).
RunModel make_model(uint32_t clusters) {
  RunModel model;
  model.variant = "host_build_graph";
  model.shape.clusters = clusters;
  model.shape.device_clusters = clusters;
  model.shape.cores = clusters * 3;
  model.have_edges = true;
  model.kernels = {{1, "gemm", CoreType::AIV, ""}, {2, "add", CoreType::AIC, ""}};
  return model;
}

void add_task(RunModel& model, uint64_t task, int32_t func_id, CoreType type, uint64_t submit,
              uint64_t ready) {
  TaskNode node;
  node.task = task;
  node.func_id = func_id;
  node.core_type = type;
  node.submit_begin_ns = submit == kNoTime ? kNoTime : 0;
  node.submit_end_ns = submit;
  node.ready_ns = ready;
  model.nodes.push_back(node);
}

void add_block(RunModel& model, uint64_t task, uint32_t block, int32_t core, uint64_t dispatch,
               uint64_t start, uint64_t end) {
  model.blocks.push_back({task, block, core, dispatch, start, end, end});
}

std::vector<uint64_t> path_tasks(const Analysis& analysis) {
  std::vector<uint64_t> tasks;
  for (const PathStep& step : analysis.path) tasks.push_back(step.task);
  return tasks;
}

TEST(DiagnosticsAnalysis, ChainSplitsEveryGapExactly) {
  RunModel model = make_model(2);
  add_task(model, 0, 1, CoreType::AIV, 0, 0);
  add_task(model, 1, 1, CoreType::AIV, 5, 120);
  add_task(model, 2, 1, CoreType::AIV, 6, 240);
  add_block(model, 0, 0, 2, 0, 10, 110);
  add_block(model, 1, 0, 2, 125, 130, 230);
  add_block(model, 2, 0, 3, 250, 255, 355);
  model.edges = {{0, 1}, {1, 2}};
  model.wall_ns = 400;
  const Analysis a = analyze(model);
  ASSERT_EQ(path_tasks(a), (std::vector<uint64_t>{0, 1, 2}));
  EXPECT_EQ(a.path[0].gap_ns, 0u);
  EXPECT_EQ(a.path[0].main_wait, WaitKind::Unmeasured);
  EXPECT_EQ(a.path[1].gap_ns, 20u);
  EXPECT_EQ(a.path[1].waited_ns[kOrch], 0u);
  EXPECT_EQ(a.path[1].waited_ns[kData], 10u);
  EXPECT_EQ(a.path[1].waited_ns[kSched], 5u);
  EXPECT_EQ(a.path[1].waited_ns[kCore], 0u);
  EXPECT_EQ(a.path[1].waited_ns[kLaunch], 5u);
  EXPECT_EQ(a.path[1].main_wait, WaitKind::Data);
  EXPECT_EQ(a.path[2].gap_ns, 25u);
  EXPECT_EQ(a.path[2].waited_ns[kData], 10u);
  EXPECT_EQ(a.path[2].waited_ns[kSched], 10u);
  EXPECT_EQ(a.path[2].waited_ns[kLaunch], 5u);
  EXPECT_EQ(a.path[2].core, 3);
  EXPECT_EQ(a.path_ns, 300u);
  EXPECT_EQ(a.path_with_waits_ns, 345u);
  EXPECT_EQ(a.chip_span_ns, 345u);
  EXPECT_EQ(a.task_time_ns, 300u);
  // Core 2 ran 200 ns, core 3 100 ns, over a chip span of 345 ns.
  EXPECT_DOUBLE_EQ(a.parallelism, 300.0 / 345.0);
  EXPECT_EQ(a.waited_ns[kData], 20u);
  EXPECT_EQ(a.waited_ns[kSched], 15u);
  EXPECT_EQ(a.waited_ns[kLaunch], 10u);
  EXPECT_EQ(a.waited_ns[kUnmeasured], 0u);
  EXPECT_EQ(a.bound, Bound::Kernels);
  EXPECT_EQ(a.verdict.rfind("kernels: 87% of the critical path", 0), 0u) << a.verdict;
  EXPECT_NE(a.verdict.find("gemm (func 1)"), std::string::npos);
  EXPECT_TRUE(a.caveats.empty());
  const std::string summary = format_summary(model, a, "out/run-0001");
  EXPECT_NE(summary.find("diagnostics: out/run-0001"), std::string::npos) << summary;
  EXPECT_NE(summary.find("critical path: 3 task(s), 300 ns of kernels, 345 ns with waits"),
            std::string::npos)
      << summary;
  EXPECT_NE(summary.find("gemm (func 1): 3 block(s), total 300 ns"), std::string::npos);
  EXPECT_NE(summary.find("cores: 2 used"), std::string::npos) << summary;
  EXPECT_NE(summary.find("verdict: kernels:"), std::string::npos);
}

TEST(DiagnosticsAnalysis, DiamondFollowsTheProducerThatFinishedLast) {
  RunModel model = make_model(2);
  add_task(model, 0, 1, CoreType::AIV, 0, 0);
  add_task(model, 1, 1, CoreType::AIV, 0, 100);
  add_task(model, 2, 1, CoreType::AIV, 0, 100);
  add_task(model, 3, 1, CoreType::AIV, 0, 300);
  add_block(model, 0, 0, 2, 0, 0, 100);
  add_block(model, 1, 0, 2, 100, 100, 300);  // the longer branch
  add_block(model, 2, 0, 3, 100, 100, 150);
  add_block(model, 3, 0, 4, 300, 310, 400);
  model.edges = {{0, 1}, {0, 2}, {1, 3}, {2, 3}};
  const Analysis a = analyze(model);
  ASSERT_EQ(path_tasks(a), (std::vector<uint64_t>{0, 1, 3}));
  EXPECT_EQ(a.path[2].gap_ns, 10u);
  EXPECT_EQ(a.path[2].waited_ns[kLaunch], 10u);
  EXPECT_EQ(a.path[2].main_wait, WaitKind::Launch);
  EXPECT_EQ(a.path_ns, 390u);
  EXPECT_EQ(a.path_with_waits_ns, 400u);
  EXPECT_EQ(a.task_time_ns, 440u);
}

TEST(DiagnosticsAnalysis, FanOutOnOneCoreIsCoreBound) {
  RunModel model = make_model(1);  // one AIC core: core 0
  for (uint64_t t = 0; t < 4; ++t) add_task(model, t, 2, CoreType::AIC, 0, t == 0 ? 0 : 50);
  add_block(model, 0, 0, 0, 0, 0, 50);
  add_block(model, 1, 0, 0, 50, 50, 150);
  add_block(model, 2, 0, 0, 150, 150, 250);
  add_block(model, 3, 0, 0, 250, 250, 300);
  model.edges = {{0, 1}, {0, 2}, {0, 3}};
  const Analysis a = analyze(model);
  ASSERT_EQ(path_tasks(a), (std::vector<uint64_t>{0, 3}));
  EXPECT_EQ(a.path[1].gap_ns, 200u);
  EXPECT_EQ(a.path[1].waited_ns[kCore], 200u);
  EXPECT_EQ(a.path[1].waited_ns[kSched], 0u);
  EXPECT_EQ(a.path[1].main_wait, WaitKind::Core);
  EXPECT_EQ(a.bound, Bound::TooFewCores);
  EXPECT_EQ(a.verdict.rfind("too_few_cores:", 0), 0u) << a.verdict;
  ASSERT_EQ(a.cores.size(), 1u);
  EXPECT_DOUBLE_EQ(a.cores[0].utilisation, 1.0);
  EXPECT_EQ(a.cores[0].label, "AIC c0 (core 0)");
}

TEST(DiagnosticsAnalysis, CoreWaitCountsOnlyWhileEveryEligibleCoreIsBusy) {
  RunModel model = make_model(1);  // AIV cores 1 and 2
  add_task(model, 0, 1, CoreType::AIV, 0, 0);
  add_task(model, 1, 1, CoreType::AIV, 0, 0);
  add_task(model, 2, 1, CoreType::AIV, 0, 0);
  add_task(model, 3, 1, CoreType::AIV, 0, 100);
  add_block(model, 0, 0, 1, 0, 0, 100);
  add_block(model, 1, 0, 1, 100, 100, 160);  // core 1 busy to 160
  add_block(model, 2, 0, 2, 0, 0, 130);      // core 2 busy to 130
  add_block(model, 3, 0, 2, 150, 150, 200);  // ready 100, both busy until 130
  model.edges = {{0, 3}};
  const Analysis a = analyze(model);
  ASSERT_EQ(path_tasks(a), (std::vector<uint64_t>{0, 3}));
  EXPECT_EQ(a.path[1].waited_ns[kCore], 30u);
  EXPECT_EQ(a.path[1].waited_ns[kSched], 20u);
}

TEST(DiagnosticsAnalysis, LateOrchestratorIsOrchestrationBoundAndRingWhenRingsWereFull) {
  RunModel model = make_model(2);
  model.variant = "tensormap_ringbuffer";
  add_task(model, 0, 1, CoreType::AIV, 0, 0);
  add_task(model, 1, 1, CoreType::AIV, 400, 400);
  add_block(model, 0, 0, 2, 0, 0, 100);
  add_block(model, 1, 0, 2, 410, 420, 520);
  model.edges = {{0, 1}};
  Analysis a = analyze(model);
  ASSERT_EQ(path_tasks(a), (std::vector<uint64_t>{0, 1}));
  EXPECT_EQ(a.path[1].gap_ns, 320u);
  EXPECT_EQ(a.path[1].waited_ns[kOrch], 300u);
  EXPECT_EQ(a.path[1].waited_ns[kData], 0u);
  EXPECT_EQ(a.path[1].waited_ns[kSched], 10u);
  EXPECT_EQ(a.path[1].waited_ns[kLaunch], 10u);
  EXPECT_EQ(a.path[1].main_wait, WaitKind::Orchestrator);
  EXPECT_EQ(a.bound, Bound::Orchestration);

  ScopeStat scope;
  scope.waits[0] = 3;
  scope.wait_ns[0] = 200;
  model.scopes.push_back(scope);
  a = analyze(model);
  EXPECT_EQ(a.bound, Bound::Ring);
  EXPECT_NE(a.verdict.find("rings.task_window"), std::string::npos) << a.verdict;
}

TEST(DiagnosticsAnalysis, SchedulingBound) {
  RunModel model = make_model(2);
  add_task(model, 0, 1, CoreType::AIV, 0, 0);
  add_task(model, 1, 1, CoreType::AIV, 0, 10);
  add_block(model, 0, 0, 2, 0, 0, 10);
  add_block(model, 1, 0, 2, 100, 105, 115);
  model.edges = {{0, 1}};
  const Analysis a = analyze(model);
  EXPECT_EQ(a.path[1].waited_ns[kSched], 90u);
  EXPECT_EQ(a.path[1].waited_ns[kLaunch], 5u);
  EXPECT_EQ(a.bound, Bound::Scheduling);
  EXPECT_EQ(a.verdict.rfind("scheduling:", 0), 0u);
}

TEST(DiagnosticsAnalysis, UnmeasuredWaitsAreUnknownBound) {
  RunModel model = make_model(2);
  add_task(model, 0, 1, CoreType::AIV, kNoTime, kNoTime);
  add_task(model, 1, 1, CoreType::AIV, kNoTime, kNoTime);
  add_block(model, 0, 0, 2, kNoTime, 0, 10);
  add_block(model, 1, 0, 3, kNoTime, 100, 110);
  model.edges = {{0, 1}};
  const Analysis a = analyze(model);
  ASSERT_EQ(path_tasks(a), (std::vector<uint64_t>{0, 1}));
  EXPECT_EQ(a.path[1].waited_ns[kUnmeasured], 90u);
  EXPECT_EQ(a.bound, Bound::Unknown);
  EXPECT_FALSE(a.caveats.empty());
}

TEST(DiagnosticsAnalysis, SpmdTaskSpansFirstStartToLastEnd) {
  RunModel model = make_model(2);
  add_task(model, 0, 1, CoreType::AIV, 0, 0);
  model.nodes.back().block_num = 3;
  add_task(model, 1, 1, CoreType::AIV, 0, 65);
  add_block(model, 0, 0, 2, 5, 10, 50);
  add_block(model, 0, 1, 3, 5, 12, 60);
  add_block(model, 0, 2, 4, 5, 15, 55);
  add_block(model, 1, 0, 2, 66, 70, 80);
  model.edges = {{0, 1}};
  const Analysis a = analyze(model);
  ASSERT_EQ(path_tasks(a), (std::vector<uint64_t>{0, 1}));
  EXPECT_EQ(a.path[0].start_ns, 10u);
  EXPECT_EQ(a.path[0].end_ns, 60u);
  EXPECT_EQ(a.path[0].core, 2);
  EXPECT_EQ(a.path[1].gap_ns, 10u);
  EXPECT_EQ(a.path[1].waited_ns[kData], 5u);
  EXPECT_EQ(a.path[1].waited_ns[kSched], 1u);
  EXPECT_EQ(a.path[1].waited_ns[kLaunch], 4u);
  EXPECT_EQ(a.path_ns, 60u);
  ASSERT_EQ(a.kernels.size(), 1u);
  EXPECT_EQ(a.kernels[0].count, 4u);
  EXPECT_EQ(a.task_time_ns, 40u + 48u + 40u + 10u);
  EXPECT_EQ(a.cores.size(), 3u);
}

TEST(DiagnosticsAnalysis, EmptyModel) {
  const RunModel model;
  const Analysis a = analyze(model);
  EXPECT_TRUE(a.path.empty());
  EXPECT_TRUE(a.kernels.empty());
  EXPECT_TRUE(a.cores.empty());
  EXPECT_EQ(a.bound, Bound::Unknown);
  EXPECT_FALSE(a.verdict.empty());
  EXPECT_NE(format_summary(model, a, "/tmp/x/run-0001").find("verdict: unknown"),
            std::string::npos);
}

TEST(DiagnosticsAnalysis, TaskThatNeverRanAndFailedRun) {
  RunModel model = make_model(2);
  add_task(model, 0, 1, CoreType::AIV, 0, 0);
  add_task(model, 1, 1, CoreType::AIV, 0, kNoTime);
  add_task(model, 2, 1, CoreType::AIV, 0, 100);
  add_block(model, 0, 0, 2, 0, 0, 100);
  add_block(model, 1, 0, -1, kNoTime, kNoTime, kNoTime);
  add_block(model, 2, 0, 3, 100, 100, kNoTime);  // still running
  model.edges = {{0, 1}, {0, 2}};
  model.wall_ns = 500;
  model.error = RunError{27, "SchedulerTimeout", "stuck", "", "running_task_stalled", 2, 3};
  const Analysis a = analyze(model);
  EXPECT_EQ(path_tasks(a), (std::vector<uint64_t>{0}));
  EXPECT_EQ(a.task_time_ns, 100u);
  EXPECT_EQ(a.chip_span_ns, 100u);
  bool never = false, running = false, failed = false;
  for (const std::string& c : a.caveats) {
    never |= c.find("1 task(s) never ran") != std::string::npos;
    running |= c.find("still running") != std::string::npos;
    failed |= c.find("SchedulerTimeout") != std::string::npos;
  }
  EXPECT_TRUE(never && running && failed);
  EXPECT_NE(format_summary(model, a, "d").find("error: SchedulerTimeout"), std::string::npos);
}

// A failed run's verdict is its failure, however its critical path looks.
TEST(DiagnosticsAnalysis, AFailedRunsVerdictIsItsFailure) {
  RunModel model = make_model(2);
  add_task(model, 0, 1, CoreType::AIV, 0, 0);
  add_task(model, 1, 1, CoreType::AIV, 0, 100);
  add_block(model, 0, 0, 2, 0, 0, 100);
  add_block(model, 1, 0, 2, 100, 200, kNoTime);  // the hung kernel
  model.edges = {{0, 1}};
  model.wall_ns = 5000;
  model.error = RunError{31, "OpExecuteTimeout",     "gemm (func 1) on core 2 ran past 1000 ms",
                         "", "running_task_stalled", 1,
                         2};
  Analysis a = analyze(model);
  EXPECT_EQ(a.bound, Bound::Failed);
  EXPECT_EQ(a.verdict,
            "failed: OpExecuteTimeout (running_task_stalled): gemm (func 1) on core 2 ran past "
            "1000 ms");
  EXPECT_EQ(bound_name(a.bound), std::string("failed"));

  // A fault with no task finished: still the failure, not "no critical path".
  RunModel crashed = make_model(2);
  add_task(crashed, 0, 1, CoreType::AIV, 0, 0);
  add_block(crashed, 0, 0, 2, 0, 0, kNoTime);
  crashed.error = RunError{30, "KernelCrashed", "kernel gemm raised SIGSEGV", "", "", 0, 2};
  a = analyze(crashed);
  EXPECT_EQ(a.bound, Bound::Failed);
  EXPECT_EQ(a.verdict, "failed: KernelCrashed: kernel gemm raised SIGSEGV");
}

// Kernels 40%, orchestration 30%, scheduling 30% of the path: no cause reaches the threshold.
TEST(DiagnosticsAnalysis, ABalancedRunHasNoDominantCause) {
  RunModel model = make_model(2);
  add_task(model, 0, 1, CoreType::AIV, 0, 0);
  add_task(model, 1, 1, CoreType::AIV, 50, 50);
  add_block(model, 0, 0, 2, 0, 0, 20);
  add_block(model, 1, 0, 2, 80, 80, 100);  // 30 orchestration, 30 scheduling, 20 kernel
  model.edges = {{0, 1}};
  const Analysis a = analyze(model);
  ASSERT_EQ(a.path_with_waits_ns, 100u);
  EXPECT_EQ(a.bound, Bound::NoDominantCause);
  EXPECT_EQ(a.verdict,
            "no dominant cause: no part of the critical path reaches 50% (kernels 40%, "
            "orchestration 30%, scheduling 30%, busy cores 0%, unmeasured 0%)");
  EXPECT_EQ(bound_name(a.bound), std::string("no_dominant_cause"));
}

// Two tasks in a chain, the second ready 90 ns after the first ended: scheduling latency is
// 83% of the critical path.
RunModel scheduling_bound_model(uint32_t aicpu_threads, uint32_t kernel_threads) {
  RunModel model = make_model(2);
  model.shape.aicpu_threads = aicpu_threads;
  model.shape.kernel_threads = kernel_threads;
  add_task(model, 0, 1, CoreType::AIV, 0, 0);
  add_task(model, 1, 1, CoreType::AIV, 0, 10);
  add_block(model, 0, 0, 2, 0, 0, 10);
  add_block(model, 1, 0, 2, 100, 105, 115);
  model.edges = {{0, 1}};
  return model;
}

// The verdict names its evidence (share and times) and the threshold; on a loaded host it says
// so, and does not ask for more scheduler threads.
TEST(DiagnosticsAnalysis, TheVerdictNamesItsEvidenceThresholdAndTheHostsLoad) {
  RunModel model = scheduling_bound_model(3, 4);
  model.host_load = {0.5, 0.7, 16};
  Analysis a = analyze(model);
  EXPECT_EQ(a.bound, Bound::Scheduling);
  EXPECT_EQ(a.verdict.rfind("scheduling: 83% of the critical path (95 ns of 115 ns, at least the "
                            "50% that names a cause)",
                            0),
            0u)
      << a.verdict;
  EXPECT_NE(a.verdict.find("more scheduler threads (aicpu_thread_num)"), std::string::npos);
  EXPECT_EQ(a.verdict.find("loaded"), std::string::npos) << a.verdict;

  model.host_load = {6.5, 6.8, 2};
  a = analyze(model);
  EXPECT_EQ(a.bound, Bound::Scheduling);
  EXPECT_NE(a.verdict.find("the host was loaded (1-minute load average 6.50 at the start, 6.80 at "
                           "the end, at least its 2 hardware threads)"),
            std::string::npos)
      << a.verdict;
  EXPECT_NE(a.verdict.find("more scheduler threads would not help"), std::string::npos)
      << a.verdict;
  EXPECT_NE(format_summary(model, a, "d").find("the host was loaded"), std::string::npos);
}

// Kernels on the AICPU threads: the chip ran 4 host threads, not 4 AICPU + 4 kernel threads, so
// an unloaded 8-thread host still has CPUs for more scheduler threads; 8 host threads (kernels on
// an executor pool of their own) do not.
TEST(DiagnosticsAnalysis, SchedulerThreadAdviceCountsEachHostThreadOnce) {
  RunModel model = scheduling_bound_model(4, 4);
  model.shape.host_threads = 4;
  model.host_load = {0.5, 0.7, 8};
  Analysis a = analyze(model);
  ASSERT_EQ(a.bound, Bound::Scheduling);
  EXPECT_NE(a.verdict.find("more scheduler threads (aicpu_thread_num)"), std::string::npos)
      << a.verdict;
  model.shape.host_threads = 8;
  a = analyze(model);
  EXPECT_NE(a.verdict.find("the run's 8 host threads (AICPU threads and the threads that ran "
                           "kernels) already reach the host's 8 hardware threads"),
            std::string::npos)
      << a.verdict;
}

// Parallelism is the cores' busy time over the chip span: 60 independent tasks on 3 cores reach
// 3, never more (task time over the critical path's task time would be 60).
TEST(DiagnosticsAnalysis, ParallelismNeverExceedsTheCores) {
  RunModel model = make_model(1);  // AIV cores 1 and 2, AIC core 0
  model.shape.kernel_threads = 2;
  for (uint64_t t = 0; t < 60; ++t) {
    const int32_t core = static_cast<int32_t>(t % 3);
    add_task(model, t, core == 0 ? 2 : 1, core == 0 ? CoreType::AIC : CoreType::AIV, 0, 0);
    add_block(model, t, 0, core, 10 * (t / 3), 10 * (t / 3), 10 * (t / 3) + 10);
  }
  const Analysis a = analyze(model);
  EXPECT_EQ(a.task_time_ns, 600u);
  EXPECT_EQ(a.chip_span_ns, 200u);
  EXPECT_DOUBLE_EQ(a.parallelism, 3.0);
  EXPECT_NE(format_summary(model, a, "d")
                .find("parallelism 3.00 of 3 cores (2 host threads ran "
                      "kernels)"),
            std::string::npos)
      << format_summary(model, a, "d");
}

TEST(DiagnosticsAnalysis, WithoutEdgesThePathFollowsTiming) {
  RunModel model = make_model(2);
  model.have_edges = false;
  add_block(model, 0, 0, 2, kNoTime, 0, 100);
  add_block(model, 1, 0, 3, kNoTime, 50, 150);
  add_block(model, 2, 0, 2, kNoTime, 160, 200);
  const Analysis a = analyze(model);
  ASSERT_EQ(path_tasks(a), (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(a.path[0].gap_ns, 50u);
  EXPECT_EQ(a.path[0].waited_ns[kUnmeasured], 50u);
  EXPECT_EQ(a.path[1].gap_ns, 10u);
  EXPECT_EQ(a.path[1].func_id, -1);
  EXPECT_EQ(a.bound, Bound::Kernels);
  ASSERT_FALSE(a.caveats.empty());
  EXPECT_NE(a.caveats[0].find("timing only"), std::string::npos);
}

TEST(DiagnosticsAnalysis, KernelPercentilesAreNearestRank) {
  RunModel model = make_model(2);
  for (uint64_t t = 0; t < 100; ++t) {
    add_task(model, t, 1, CoreType::AIV, 0, 0);
    add_block(model, t, 0, 2 + static_cast<int32_t>(t % 4), 0, 1000 * t, 1000 * t + t + 1);
  }
  add_task(model, 100, 2, CoreType::AIC, 0, 0);
  add_block(model, 100, 0, 0, 0, 0, 7);
  const Analysis a = analyze(model);
  ASSERT_EQ(a.kernels.size(), 2u);
  EXPECT_EQ(a.kernels[0].func_id, 1);
  EXPECT_EQ(a.kernels[0].label, "gemm (func 1)");
  EXPECT_EQ(a.kernels[0].count, 100u);
  EXPECT_EQ(a.kernels[0].total_ns, 5050u);
  EXPECT_EQ(a.kernels[0].mean_ns, 50u);
  EXPECT_EQ(a.kernels[0].p50_ns, 50u);
  EXPECT_EQ(a.kernels[0].p99_ns, 99u);
  EXPECT_EQ(a.kernels[0].max_ns, 100u);
  EXPECT_EQ(a.kernels[1].p50_ns, 7u);
  EXPECT_EQ(a.kernels[1].p99_ns, 7u);
}

TEST(DiagnosticsAnalysis, UtilisationIsBusyOverChipSpan) {
  RunModel model = make_model(2);
  model.have_edges = false;
  add_block(model, 0, 0, 2, kNoTime, 0, 200);
  add_block(model, 1, 0, 5, kNoTime, 0, 50);
  const Analysis a = analyze(model);
  ASSERT_EQ(a.cores.size(), 2u);
  EXPECT_EQ(a.cores[0].core, 2u);
  EXPECT_DOUBLE_EQ(a.cores[0].utilisation, 1.0);
  EXPECT_EQ(a.cores[1].core, 5u);
  EXPECT_EQ(a.cores[1].label, "AIV1 c1 (core 5)");
  EXPECT_DOUBLE_EQ(a.cores[1].utilisation, 0.25);
}

TEST(DiagnosticsRunModel, CoreNumberingAndLabels) {
  ChipShape shape;
  shape.device_clusters = 24;
  EXPECT_EQ(core_slot(shape, 3).cluster, 3u);
  EXPECT_EQ(core_slot(shape, 3).lane, 0u);
  EXPECT_EQ(core_slot(shape, 24 + 7).cluster, 3u);
  EXPECT_EQ(core_slot(shape, 24 + 7).lane, 2u);
  EXPECT_EQ(core_label(shape, 30), "AIV0 c3 (core 30)");
  RunModel model;
  model.kernels = {{3, "gemm_tile", CoreType::AIC, ""}, {4, "", CoreType::AIV, ""}};
  EXPECT_EQ(model.kernel_label(3), "gemm_tile (func 3)");
  EXPECT_EQ(model.kernel_label(4), "func 4");
  EXPECT_EQ(model.kernel_label(9), "func 9");
  EXPECT_EQ(model.kernel(9), nullptr);
  // A display name wins over the symbol; an in-process function has only a name.
  model.kernels.push_back({5, "kernel_entry", CoreType::AIV, "qk"});
  model.kernels.push_back({6, "", CoreType::AIV, "add one"});
  EXPECT_EQ(model.kernel_label(5), "qk (func 5)");
  EXPECT_EQ(model.kernel_label(6), "add one (func 6)");
  EXPECT_EQ(wait_kind_name(WaitKind::Core), std::string("core"));
  EXPECT_EQ(bound_name(Bound::TooFewCores), std::string("too_few_cores"));
}

}  // namespace
}  // namespace chiprt::diagnostics
