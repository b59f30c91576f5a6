// Stress: random task graphs on the simulated chip, checked bit for bit against a serial host
// reference (see random_dag.h), across launch shapes, host thread counts, serial mode and both
// runtime variants.
//
// Environment:
//   CHIPRT_STRESS_SEEDS=N      seeds per configuration (default 40). The ThreadSanitizer run is
//                              ~10x slower and sets a smaller N to stay within a few minutes.
//   CHIPRT_STRESS_ONLY_SEED=S  run only seed S (to reproduce a failure; messages name the seed).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "stress/random_dag.h"
#include "stress/stress_seeds.h"

namespace chiprt::stress {
namespace {

constexpr uint64_t kDefaultSeeds = 40;
constexpr uint64_t kFirstSeed = kFirstStressSeed;
// Generous: a run that takes this long is hung, not slow (even under ThreadSanitizer).
constexpr std::chrono::seconds kHangLimit{600};
// Stop a configuration after this many failing seeds; more say nothing new.
constexpr int kMaxReportedFailures = 3;

// A plan and its reference result, generated once per seed and shared by every configuration.
struct Case {
  DagPlan plan;
  std::vector<std::vector<float>> expected;
};

const Case& case_for(uint64_t seed, const PlanOptions& options = {}) {
  static std::mutex mutex;
  static std::map<std::tuple<uint64_t, uint32_t, uint32_t>, std::unique_ptr<Case>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto& entry = cache[{seed, options.min_tasks, options.max_tasks}];
  if (!entry) {
    entry = std::make_unique<Case>();
    entry->plan = generate_plan(seed, options);
    entry->expected = run_reference(entry->plan);
  }
  return *entry;
}

// Aborts the process with a message if the scope is not left within `limit`: a hung runtime must
// fail the suite, naming the test, instead of blocking CI.
class HangGuard {
 public:
  HangGuard(std::string what, std::chrono::seconds limit)
      : thread_([this, what = std::move(what), limit] {
          std::unique_lock<std::mutex> lock(mutex_);
          if (!cv_.wait_for(lock, limit, [this] { return done_; })) {
            std::fprintf(stderr, "%s did not finish within %lld s: the runtime is hung\n",
                         what.c_str(), static_cast<long long>(limit.count()));
            std::abort();
          }
        }) {}
  ~HangGuard() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

struct StressConfig {
  const char* name;
  SimOptions sim;
  CallConfig call;
};

StressConfig make_config(const char* name, void (*tweak)(StressConfig&)) {
  StressConfig config{name, SimOptions{}, CallConfig{}};
  tweak(config);
  return config;
}

const StressConfig kConfigs[] = {
    make_config("Threaded", [](StressConfig&) {}),
    make_config("KernelsOnAicpuThreads",
                [](StressConfig& c) { c.sim.core_execution = SimCoreExecution::Aicpu; }),
    make_config("KernelsOnExecutors",
                [](StressConfig& c) { c.sim.core_execution = SimCoreExecution::Executors; }),
    make_config("HostThreads1",
                [](StressConfig& c) {
                  c.sim.core_execution = SimCoreExecution::Executors;
                  c.sim.host_threads = 1;
                }),
    make_config("HostThreads2",
                [](StressConfig& c) {
                  c.sim.core_execution = SimCoreExecution::Executors;
                  c.sim.host_threads = 2;
                }),
    make_config("OneSchedulerKernelsOnIt",
                [](StressConfig& c) {
                  c.sim.core_execution = SimCoreExecution::Aicpu;
                  c.call.aicpu_thread_num = 2;
                }),
    make_config("SimSerial", [](StressConfig& c) { c.sim.serial = true; }),
    make_config("CallSerial", [](StressConfig& c) { c.call.serial = true; }),
    make_config("OneClusterOfEight", [](StressConfig& c) { c.call.cluster_count = 1; }),
    make_config("ThreeClusters", [](StressConfig& c) { c.sim.clusters = 3; }),
    make_config("OneScheduler", [](StressConfig& c) { c.call.aicpu_thread_num = 2; }),
    // The configurations above run host_build_graph (the Worker's default variant). Plans keep
    // top-level outputs alive to the end, which pins depth 0's rings from the first such task
    // on: the dependency pool must hold every edge of the run's depth-0 tasks.
    make_config("Ringbuffer",
                [](StressConfig& c) {
                  c.call.runtime = RuntimeVariant::TensormapRingbuffer;
                  c.call.rings.dep_pool = {1 << 16};
                }),
    make_config("RingbufferSerial",
                [](StressConfig& c) {
                  c.call.runtime = RuntimeVariant::TensormapRingbuffer;
                  c.call.rings.dep_pool = {1 << 16};
                  c.call.serial = true;
                }),
};

void PrintTo(const StressConfig& config, std::ostream* os) {
  *os << config.name;
}

class StressRandomDag : public ::testing::TestWithParam<StressConfig> {};

TEST_P(StressRandomDag, MatchesSerialReference) {
  const StressConfig& config = GetParam();
  HangGuard guard(std::string("StressRandomDag/") + config.name, kHangLimit);
  WorkerOptions options;
  options.sim = config.sim;
  StressDevice device(options);
  int failures = 0;
  uint64_t tasks = 0;
  for (uint64_t seed : stress_seeds(kDefaultSeeds)) {
    const Case& c = case_for(seed);
    tasks += c.plan.task_count;
    const std::string failure = device.run_and_compare(c.plan, c.expected, config.call);
    if (!failure.empty()) {
      ADD_FAILURE() << config.name << ": " << failure;
      if (++failures == kMaxReportedFailures) break;
    }
  }
  RecordProperty("tasks", static_cast<int>(tasks));
}

INSTANTIATE_TEST_SUITE_P(Configs, StressRandomDag, ::testing::ValuesIn(kConfigs),
                         [](const ::testing::TestParamInfo<StressConfig>& info) {
                           return std::string(info.param.name);
                         });

// The generator itself: plans are reproducible from the seed and exercise what they claim to.
TEST(StressPlanGenerator, SameSeedSamePlanAndCoverage) {
  uint64_t outs = 0, joins = 0, deps = 0, wars = 0, slices = 0, transposes = 0, flats = 0,
           scopes = 0;
  uint64_t tags[kArgTagCount]{};
  for (uint64_t seed = kFirstSeed; seed < kFirstSeed + 10; ++seed) {
    const DagPlan& plan = case_for(seed).plan;
    const DagPlan again = generate_plan(seed);
    ASSERT_EQ(plan.steps.size(), again.steps.size()) << "seed " << seed;
    EXPECT_EQ(plan.task_count, again.task_count) << "seed " << seed;
    EXPECT_EQ(run_reference(again), case_for(seed).expected) << "seed " << seed;
    EXPECT_GE(plan.task_count, 50u) << "seed " << seed;
    EXPECT_LE(plan.kernel_task_count, 2000u) << "seed " << seed;
    outs += plan.outs.size();
    deps += plan.explicit_dep_count;
    wars += plan.war_hazard_count;
    for (const PlanStep& step : plan.steps) {
      if (step.kind == StepKind::ScopeBegin) ++scopes;
      if (step.kind == StepKind::Dummy && step.arg_count == 0) ++joins;
      for (int a = 0; a < step.arg_count; ++a) {
        const ViewDesc& v = step.args[a].view;
        ++tags[static_cast<int>(step.args[a].tag)];
        slices += v.slice_step != 0;
        transposes += v.transposed;
        flats += v.flat && v.buffer >= 0;
        if (step.args[a].tag == ArgTag::NoDep) {
          EXPECT_EQ(v.buffer, 0) << "NoDep on a written buffer";
        }
        if (v.buffer == 0) {
          EXPECT_FALSE(arg_tag_writes(step.args[a].tag)) << "buffer 0 written";
        }
      }
      EXPECT_LE(step.dep_count, kMaxExplicitDeps);
    }
  }
  for (int t = 0; t < kArgTagCount; ++t)
    EXPECT_GT(tags[t], 0u) << "no argument tagged " << arg_tag_name(static_cast<ArgTag>(t));
  EXPECT_GT(outs, 0u);
  EXPECT_GT(deps, 0u) << "no explicit dependencies generated";
  EXPECT_GT(wars, 0u) << "no write-after-read hazards generated";
  EXPECT_GT(joins, 0u) << "no join tasks generated";
  EXPECT_GT(slices, 0u);
  EXPECT_GT(transposes, 0u);
  EXPECT_GT(flats, 0u);
  EXPECT_GT(scopes, 0u);
}

// The reference is order-sensitive: running a writer before a task it must follow (an earlier
// reader of what it writes, ordered by no after()) changes the result, so the suite catches a
// runtime that misses write-after-read hazards.
TEST(StressPlanGenerator, ReferenceDetectsReordering) {
  const Case& c = case_for(kFirstSeed);
  int tried = 0;
  int changed = 0;
  for (size_t i = 0; i < c.plan.steps.size() && tried < 20; ++i) {
    const PlanStep& writer = c.plan.steps[i];
    if (writer.kind != StepKind::Kernel || writer.war_reader < 0) continue;
    for (size_t j = 0; j < i; ++j) {
      if (c.plan.steps[j].kind != StepKind::Kernel ||
          c.plan.steps[j].task_index != writer.war_reader)
        continue;
      DagPlan swapped = c.plan;
      std::swap(swapped.steps[i], swapped.steps[j]);
      ++tried;
      changed += run_reference(swapped) != c.expected;
      break;
    }
  }
  ASSERT_GT(tried, 0) << "seed " << kFirstSeed << " has no kernel-to-kernel hazard to swap";
  EXPECT_GT(changed, 0) << "none of " << tried << " reorderings changed the reference result";
}

// Many small runs on one Worker: state that leaks from one run into the next (tensor map, task
// slots, ready queues, output heap, kernel table) shows up as a wrong result or growing memory.
TEST(StressRepeatedRuns, TwoHundredSmallGraphsOnOneWorker) {
  HangGuard guard("StressRepeatedRuns", kHangLimit);
  StressDevice device(WorkerOptions{});
  const PlanOptions small{50, 50};
  constexpr int kRuns = 200;
  constexpr int kSettleRuns = 20;
  // Retained buffers (staging, graph images) may grow to the largest graph seen; a per-run leak of
  // even one 50-task graph image (several KiB) exceeds this over 180 runs.
  constexpr uint64_t kAllowedGrowth = 256 << 10;
  uint64_t settled_bytes = 0;
  for (int run = 0; run < kRuns; ++run) {
    const Case& c = case_for(1000 + run, small);
    CallConfig config;
    config.serial = run % 7 == 3;  // serial runs interleaved with threaded ones
    const std::string failure = device.run_and_compare(c.plan, c.expected, config);
    ASSERT_EQ(failure, "") << "run " << run;
    if (run == kSettleRuns) settled_bytes = device.worker().device_bytes_in_use();
  }
  const uint64_t final_bytes = device.worker().device_bytes_in_use();
  EXPECT_LE(final_bytes, settled_bytes + kAllowedGrowth)
      << "device memory in use grew from " << settled_bytes << " bytes after run " << kSettleRuns
      << " to " << final_bytes << " after run " << kRuns;
}

// A 24-cluster chip (72 simulated cores) on the default host threads: no livelock, no false
// watchdog timeout, correct results.
TEST(StressWideChip, TwentyFourClustersOnDefaultHostThreads) {
  HangGuard guard("StressWideChip", kHangLimit);
  WorkerOptions options;
  options.sim.clusters = 24;
  StressDevice device(options);
  const PlanOptions large{2000, 2000};
  const uint64_t seeds = std::min<uint64_t>(4, stress_seeds(kDefaultSeeds).size());
  for (uint64_t i = 0; i < seeds; ++i) {
    const Case& c = case_for(500 + i, large);
    RunReport report;
    const std::string failure = device.run_and_compare(c.plan, c.expected, CallConfig{}, &report);
    ASSERT_EQ(failure, "");
    EXPECT_EQ(report.cores, 72u) << "a 24-cluster run should use all 72 cores";
  }
}

}  // namespace
}  // namespace chiprt::stress
