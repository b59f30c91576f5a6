// Errors raised on the chip while a kernel runs (KernelFault, ReentrantCall from a kernel) name the
// task by the TaskId submit returned, on both runtime variants, threaded and serial: not by the
// index the scheduler hands the core, which counts host_build_graph's scope fences and is a ring
// slot (per scope depth) on tensormap_ringbuffer. Kept apart from the conformance table because
// these messages also name the core, which differs between runs.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "chiprt/call_config.h"
#include "chiprt/callable.h"
#include "chiprt/kernel.h"
#include "chiprt/orchestration.h"
#include "chiprt/status.h"
#include "chiprt/task_args.h"
#include "chiprt/worker.h"

namespace chiprt {
namespace {

constexpr int32_t kThrows = 0;
constexpr int32_t kCallsWorker = 1;

Worker* g_worker = nullptr;

void throwing_kernel(int64_t*) {
  throw std::runtime_error("boom");
}
void worker_calling_kernel(int64_t*) {
  g_worker->device_bytes_in_use();  // refused: ReentrantCall naming the kernel's task
}

// Three scopes that own an output each (three fences on host_build_graph, three tasks in the
// depth-1 ring on tensormap_ringbuffer), then task 3 runs the kernel `func_id`.
void three_scopes_then_kernel(Orchestration& o, const TaskArgs& run) {
  for (int k = 0; k < 3; ++k) {
    Scope scope(o);
    TaskArgs outputs;
    outputs.out({4}, DataType::F32);
    o.allocate(outputs);
  }
  TaskArgs t;
  t.scalar(run.scalar_bits(0));
  o.submit(static_cast<int32_t>(run.scalar_bits(0)), CoreType::AIV, t);
}

class ChipMessageTaskIds : public ::testing::Test {
 protected:
  void SetUp() override {
    WorkerOptions options;
    options.sim.clusters = 2;
    options.sim.host_threads = 2;
    options.sim.memory_bytes = 256ull << 20;
    worker_.init(options);
    worker_.register_callable(
        0, CallableBuilder()
               .orchestration_function(&three_scopes_then_kernel, {})
               .kernel_function(kThrows, CoreType::AIV, &throwing_kernel, {})
               .kernel_function(kCallsWorker, CoreType::AIV, &worker_calling_kernel, {})
               .build());
    g_worker = &worker_;
  }
  void TearDown() override { g_worker = nullptr; }

  // The message of the run's error on every variant and mode.
  void expect_message_names(int32_t func_id, StatusCode code, const std::string& needle) {
    for (RuntimeVariant variant :
         {RuntimeVariant::HostBuildGraph, RuntimeVariant::TensormapRingbuffer}) {
      for (bool serial : {false, true}) {
        SCOPED_TRACE(std::string(runtime_variant_name(variant)) +
                     (serial ? " serial" : " threaded"));
        CallConfig config;
        config.runtime = variant;
        config.serial = serial;
        config.output_heap_bytes = 1 << 20;
        TaskArgs args;
        args.scalar(static_cast<uint64_t>(func_id));
        try {
          worker_.run(0, args, config);
          ADD_FAILURE() << "the run succeeded";
        } catch (const Error& e) {
          EXPECT_EQ(e.code(), code);
          EXPECT_NE(e.message().find(needle), std::string::npos) << e.message();
        }
      }
    }
  }

  Worker worker_;
};

TEST_F(ChipMessageTaskIds, KernelFaultNamesTheSubmittedTaskId) {
  expect_message_names(kThrows, StatusCode::KernelFault,
                       "kernel func_id 0 of task 3 threw an exception on core");
}

TEST_F(ChipMessageTaskIds, ReentrantCallFromAKernelNamesTheSubmittedTaskId) {
  expect_message_names(kCallsWorker, StatusCode::KernelFault, "kernel func_id 1 (task 3 on core");
}

}  // namespace
}  // namespace chiprt
