// CallConfig::measure_kernel_time: each core sums its kernels' CPU time and the run report carries
// the total; off by default (zero, not measured). Kernels burn a known amount of thread CPU time,
// so the measured sum has a hard lower bound whatever the host's load.
#include <gtest/gtest.h>

#include <ctime>
#include <string>
#include <tuple>

#include "chiprt/callable.h"
#include "chiprt/kernel.h"
#include "chiprt/orchestration.h"
#include "chiprt/worker.h"

namespace chiprt {
namespace {

constexpr uint64_t kTasks = 8;
constexpr uint64_t kBurnNs = 2'000'000;  // per task

uint64_t thread_cpu_ns() {
  timespec now;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(now.tv_nsec);
}

// Spins until this thread has used args[0] ns of CPU time (not wall time: a preempted spin would
// otherwise end early).
void burn_kernel(int64_t* args) {
  const uint64_t burn_ns = kernel::scalar_arg<uint64_t>(args, 0);
  const uint64_t start = thread_cpu_ns();
  while (thread_cpu_ns() - start < burn_ns) {
  }
}

// Scalars: task count, burn ns per task. Independent AIV tasks.
void burn_orchestration(Orchestration& orch, const TaskArgs& args) {
  const uint64_t tasks = args.scalar_bits(0);
  for (uint64_t i = 0; i < tasks; ++i) {
    TaskArgs task;
    task.scalar(args.scalar_bits(1));
    orch.submit(0, CoreType::AIV, task);
  }
}

std::vector<uint8_t> burn_callable() {
  return CallableBuilder()
      .orchestration_function(&burn_orchestration, ArgSignature::of({}, 2))
      .kernel_function(0, CoreType::AIV, &burn_kernel, ArgSignature::of({}, 1))
      .build();
}

// runtime variant, serial run, kernels on the AICPU threads (else on executor threads)
using Param = std::tuple<RuntimeVariant, bool, SimCoreExecution>;

class KernelTime : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    WorkerOptions options;
    options.sim.clusters = 2;
    options.sim.host_threads = 2;
    options.sim.memory_bytes = 256ull << 20;
    options.sim.core_execution = std::get<2>(GetParam());
    worker_.init(options);
    worker_.register_callable(kCallable, burn_callable());
  }

  CallConfig config(bool measure) const {
    CallConfig c;
    c.runtime = std::get<0>(GetParam());
    c.serial = std::get<1>(GetParam());
    c.measure_kernel_time = measure;
    return c;
  }

  RunReport run(uint64_t tasks, uint64_t burn_ns, const CallConfig& c) {
    TaskArgs args;
    args.scalar(tasks).scalar(burn_ns);
    return worker_.run(kCallable, args, c);
  }

  static constexpr int32_t kCallable = 1;
  Worker worker_;
};

TEST_P(KernelTime, SumsAtLeastTheCpuTimeEveryKernelBurned) {
  const RunReport report = run(kTasks, kBurnNs, config(true));
  EXPECT_TRUE(report.kernel_time_measured);
  EXPECT_GE(report.task_count, kTasks);
  EXPECT_GE(report.kernel_ns, kTasks * kBurnNs);
}

TEST_P(KernelTime, OffByDefault) {
  EXPECT_FALSE(CallConfig{}.measure_kernel_time);
  const RunReport report = run(kTasks, kBurnNs, config(false));
  EXPECT_FALSE(report.kernel_time_measured);
  EXPECT_EQ(report.kernel_ns, 0u);
}

TEST_P(KernelTime, EveryRunStartsFromZero) {
  const RunReport burned = run(kTasks, kBurnNs, config(true));
  ASSERT_GE(burned.kernel_ns, kTasks * kBurnNs);
  // Kernels that return at once cannot use the previous run's 16 ms of CPU time: a total that
  // large would be the previous run's accumulators carried over.
  const RunReport empty = run(kTasks, 0, config(true));
  EXPECT_TRUE(empty.kernel_time_measured);
  EXPECT_LT(empty.kernel_ns, kTasks * kBurnNs);
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  std::string name(runtime_variant_name(std::get<0>(info.param)));
  name += std::get<1>(info.param) ? "_serial" : "_threaded";
  name += "_kernels_on_";
  name += sim_core_execution_name(std::get<2>(info.param));
  return name;
}

INSTANTIATE_TEST_SUITE_P(AllModes, KernelTime,
                         ::testing::Combine(::testing::Values(RuntimeVariant::HostBuildGraph,
                                                              RuntimeVariant::TensormapRingbuffer),
                                            ::testing::Bool(),
                                            ::testing::Values(SimCoreExecution::Executors,
                                                              SimCoreExecution::Aicpu)),
                         param_name);

}  // namespace
}  // namespace chiprt
