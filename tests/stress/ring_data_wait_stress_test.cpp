// Stress for the tensormap_ringbuffer orchestrator's data waits with several Workers (device
// runners) running at once: random graphs whose orchestration calls get_tensor_data and
// set_tensor_data between submissions, so that submissions follow a wait that a scheduler's
// completion ended while that scheduler goes back to park (where a lost wake-up would strand the
// next task). Every value get_tensor_data returns is checked inside the orchestration, and every
// run's final buffer against the host's count. Runs in both core modes, under ThreadSanitizer in
// CI (label concurrency).
//
// Environment: CHIPRT_STRESS_SEEDS=N scales the runs per runner (10 N; default N = 40).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "chiprt/callable.h"
#include "chiprt/orchestration.h"
#include "host/device_runner.h"
#include "host/log.h"
#include "stress/stress_seeds.h"
#include "unit/host/host_test_support.h"

namespace chiprt::ring_data_wait_stress {
namespace {

constexpr uint64_t kElements = 4;
constexpr uint64_t kRunsPerSeed = 10;

// Element 0 of the task's tensor counts the tasks that updated it.
void increment(int64_t* args) {
  auto* element = kernel::tensor_arg<int64_t>(args, 0);
  element[0] += 1;
}

// Mismatches get_tensor_data saw inside orchestrations (all runners).
std::atomic<uint64_t> g_bad_reads{0};

// Scalar 0: the run's seed. Tensor 0: kElements int64 counters, zero at the start. Each task
// increments one element (an inout chain per element); between submissions the function reads
// an element (get_tensor_data waits for its writers and must see every earlier increment) or
// writes one back unchanged (set_tensor_data waits for every earlier task).
void random_orchestration(Orchestration& orch, const TaskArgs& args) {
  const Tensor& counters = args.tensor(0);
  std::mt19937_64 rng(args.scalar_bits(0));
  int64_t expected[kElements] = {};
  const int tasks = 8 + static_cast<int>(rng() % 20);
  for (int i = 0; i < tasks; ++i) {
    const uint64_t e = rng() % kElements;
    TaskArgs task;
    task.inout(counters.view({1}, {e}));
    const bool aic = rng() % 3 == 0;
    orch.submit(aic ? 1 : 0, aic ? CoreType::AIC : CoreType::AIV, task);
    ++expected[e];
    switch (rng() % 5) {
      case 0: {
        const uint64_t r = rng() % kElements;
        int64_t seen = -1;
        orch.get_tensor_data(counters.view({1}, {r}), &seen, sizeof(seen));
        if (seen != expected[r]) g_bad_reads.fetch_add(1);
        break;
      }
      case 1: {
        const uint64_t w = rng() % kElements;
        orch.set_tensor_data(counters.view({1}, {w}), &expected[w], sizeof(int64_t));
        break;
      }
      default:
        break;
    }
  }
}

struct RunnerResult {
  uint64_t runs = 0;
  std::string first_error;
};

void run_many(SimCoreExecution cores, uint64_t first_seed, uint64_t runs, RunnerResult* result) {
  host::DeviceRunner runner(host::test::make_sim(/*clusters=*/2, false, 64ull << 20, 2, cores));
  runner.attach(0);
  runner.register_callable(0, CallableBuilder()
                                  .orchestration_function(&random_orchestration, {})
                                  .kernel_function(0, CoreType::AIV, &increment, {})
                                  .kernel_function(1, CoreType::AIC, &increment, {})
                                  .build());
  const DeviceBuffer counters = runner.allocate(kElements * sizeof(int64_t));
  CallConfig config = host::test::small_call_config(64);
  config.runtime = RuntimeVariant::TensormapRingbuffer;
  config.rings.task_window = {64};
  for (uint64_t r = 0; r < runs; ++r) {
    const uint64_t seed = first_seed + r;
    runner.memset(counters.addr, 0, kElements * sizeof(int64_t));
    TaskArgs args;
    args.inout(Tensor::make(counters, {kElements}, DataType::I64)).scalar(seed);
    try {
      runner.run(0, args, config);
    } catch (const Error& e) {
      result->first_error = "seed " + std::to_string(seed) + ": " + e.what();
      return;
    }
    // The host's count of the same plan.
    std::mt19937_64 rng(seed);
    int64_t want[kElements] = {};
    const int tasks = 8 + static_cast<int>(rng() % 20);
    for (int i = 0; i < tasks; ++i) {
      ++want[rng() % kElements];
      rng();  // core type
      const uint64_t call = rng() % 5;
      if (call <= 1) rng();
    }
    int64_t got[kElements] = {};
    runner.copy_from_device(got, counters.addr, sizeof(got));
    for (uint64_t e = 0; e < kElements; ++e) {
      if (got[e] != want[e]) {
        result->first_error = "seed " + std::to_string(seed) + ": element " + std::to_string(e) +
                              " is " + std::to_string(got[e]) + ", want " + std::to_string(want[e]);
        return;
      }
    }
    ++result->runs;
  }
}

TEST(RingDataWaitStress, SeveralRunnersWithDataWaitsCompleteEveryRunCorrectly) {
  const host::LogLevel saved = host::log_level();
  host::set_log_level(host::LogLevel::Off);
  g_bad_reads.store(0);
  const uint64_t runs = stress::env_count("CHIPRT_STRESS_SEEDS", 40) * kRunsPerSeed;
  const SimCoreExecution modes[] = {SimCoreExecution::Aicpu, SimCoreExecution::Executors,
                                    SimCoreExecution::Aicpu};
  std::vector<RunnerResult> results(std::size(modes));
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < std::size(modes); ++i) {
    threads.emplace_back(run_many, modes[i], 1 + i * 100000, runs, &results[i]);
  }
  for (std::thread& t : threads) t.join();
  host::set_log_level(saved);
  for (std::size_t i = 0; i < results.size(); ++i) {
    EXPECT_EQ(results[i].first_error, "") << "runner " << i;
    EXPECT_EQ(results[i].runs, runs) << "runner " << i;
  }
  EXPECT_EQ(g_bad_reads.load(), 0u) << "get_tensor_data returned a value before its writers ran";
}

}  // namespace
}  // namespace chiprt::ring_data_wait_stress
