// Worker calls made from inside a run (issue 11, item 2): from an orchestration function or a
// kernel, on both runtime variants and both core modes, a Worker method fails at once with
// ReentrantCall naming the method and where it was called from; the run fails cleanly with that
// error (a kernel's throw is its KernelFault), the device is not faulted and the next run works.
// Calls from another host thread while a run is in flight wait for it (the Worker serialises).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "chiprt/callable.h"
#include "chiprt/orchestration.h"
#include "chiprt/worker.h"
#include "host/device_runner.h"
#include "host/log.h"
#include "host/timeouts.h"
#include "host/worker_access.h"
#include "host_test_support.h"
#include "scoped_env.h"

namespace chiprt {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

enum class Place { Orchestration, Kernel };
enum class Call { None, Malloc, Run };

// What the callable's orchestration function and kernel do, set by the test before each run.
std::atomic<Worker*> g_worker{nullptr};
std::atomic<Place> g_place{Place::Orchestration};
std::atomic<Call> g_call{Call::None};
std::atomic<int> g_kernel_runs{0};
// The error the reentrant call threw where it was made (the kernel's is not in KernelFault's
// message).
std::mutex g_seen_mutex;
std::optional<Error> g_seen;

void make_the_call(Place here) {
  if (g_place.load() != here) return;
  Worker* worker = g_worker.load();
  try {
    switch (g_call.load()) {
      case Call::None:
        return;
      case Call::Malloc:
        worker->malloc(64);
        return;
      case Call::Run:
        worker->run(0, TaskArgs{});
        return;
    }
  } catch (const Error& e) {
    std::lock_guard lock(g_seen_mutex);
    g_seen = e;
    throw;
  }
}

void calling_kernel(int64_t*) {
  g_kernel_runs.fetch_add(1);
  make_the_call(Place::Kernel);
}

void calling_orchestration(Orchestration& orch, const TaskArgs&) {
  make_the_call(Place::Orchestration);
  TaskArgs task;
  orch.submit(0, CoreType::AIV, task);
}

std::vector<uint8_t> calling_callable() {
  return CallableBuilder()
      .orchestration_function(&calling_orchestration, ArgSignature{})
      .kernel_function(0, CoreType::AIV, &calling_kernel, ArgSignature{})
      .build();
}

using test::ScopedEnv;  // the Worker reads the timeouts from the environment at init

struct Case {
  RuntimeVariant runtime;
  Place place;
  Call call;
  SimCoreExecution cores;
};

void PrintTo(const Case& c, std::ostream* os);

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  std::string name = c.runtime == RuntimeVariant::HostBuildGraph ? "HostBuildGraph" : "Ring";
  name += c.place == Place::Orchestration ? "_Orchestration" : "_Kernel";
  name += c.call == Call::Malloc ? "_Malloc" : "_Run";
  name += c.cores == SimCoreExecution::Aicpu ? "_Aicpu" : "_Executors";
  return name;
}

void PrintTo(const Case& c, std::ostream* os) {
  *os << case_name(::testing::TestParamInfo<Case>(c, 0));
}

class ReentrantCall : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    saved_ = host::log_level();
    host::set_log_level(host::LogLevel::Off);
  }
  void TearDown() override { host::set_log_level(saved_); }
  host::LogLevel saved_ = host::LogLevel::Warn;
};

TEST_P(ReentrantCall, FailsAtOnceNamingTheCallAndThePlaceAndTheWorkerStaysUsable) {
  const Case& c = GetParam();
  // Without the refusal these runs hang (host_build_graph orchestration: the Worker's lock is
  // taken again on the same thread) or end in a watchdog or stream timeout that abandons the
  // device; short timeouts and a bounded wait keep such a failure from stalling the suite.
  auto* worker = new Worker();
  {
    ScopedEnv scheduler(host::kSchedulerTimeoutEnv, "300");
    ScopedEnv op(host::kOpExecuteTimeoutEnv, "500000");
    ScopedEnv stream(host::kStreamSyncTimeoutEnv, "2000");
    WorkerOptions options = host::test::small_worker_options({.clusters = 1, .runtime = c.runtime});
    options.sim.core_execution = c.cores;
    worker->init(options);
  }
  worker->register_callable(0, calling_callable());
  g_worker = worker;
  g_place = c.place;
  g_call = c.call;
  {
    std::lock_guard lock(g_seen_mutex);
    g_seen.reset();
  }

  std::packaged_task<std::optional<Error>()> task([worker] {
    try {
      worker->run(0, TaskArgs{});
    } catch (const Error& e) {
      return std::optional<Error>(e);
    }
    return std::optional<Error>();
  });
  std::future<std::optional<Error>> outcome = task.get_future();
  std::thread runner_thread(std::move(task));
  if (outcome.wait_for(20s) != std::future_status::ready) {
    // Leak the Worker and the thread: they are stuck, and destroying them would hang too.
    runner_thread.detach();
    FAIL() << "the run with a reentrant Worker call did not end within 20 s";
  }
  runner_thread.join();
  const std::optional<Error> error = outcome.get();
  ASSERT_TRUE(error.has_value()) << "the run should fail";

  std::optional<Error> seen;
  {
    std::lock_guard lock(g_seen_mutex);
    seen = g_seen;
  }
  ASSERT_TRUE(seen.has_value()) << "the reentrant call did not throw; the run threw "
                                << error->what();
  EXPECT_EQ(seen->code(), StatusCode::ReentrantCall) << seen->what();
  const std::string method = c.call == Call::Malloc ? "Worker::malloc" : "Worker::run";
  EXPECT_THAT(seen->message(), HasSubstr(method + " called from inside a run"));
  if (c.place == Place::Kernel) {
    EXPECT_THAT(seen->message(), HasSubstr("kernel func_id 0"));
    EXPECT_EQ(error->code(), StatusCode::KernelFault) << error->what();
  } else {
    EXPECT_THAT(seen->message(),
                HasSubstr(c.runtime == RuntimeVariant::HostBuildGraph
                              ? "orchestration function of a host_build_graph run"
                              : "orchestration function of a tensormap_ringbuffer run"));
    EXPECT_EQ(error->code(), StatusCode::ReentrantCall) << error->what();
    EXPECT_THAT(error->message(), HasSubstr(method + " called from inside a run"));
  }
  EXPECT_THAT(std::string(seen->hint()), HasSubstr("outside"));

  // The device was not poisoned: the next run passes.
  EXPECT_FALSE(host::runner_of(*worker).faulted());
  g_call = Call::None;
  const int before = g_kernel_runs.load();
  RunReport report = worker->run(0, TaskArgs{});
  EXPECT_EQ(report.task_count, 1u);
  EXPECT_EQ(g_kernel_runs.load(), before + 1);
  delete worker;
  g_worker = nullptr;
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (RuntimeVariant runtime :
       {RuntimeVariant::HostBuildGraph, RuntimeVariant::TensormapRingbuffer}) {
    for (Call call : {Call::Malloc, Call::Run}) {
      for (Place place : {Place::Orchestration, Place::Kernel}) {
        for (SimCoreExecution cores : {SimCoreExecution::Aicpu, SimCoreExecution::Executors}) {
          cases.push_back({runtime, place, call, cores});
        }
      }
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Table, ReentrantCall, ::testing::ValuesIn(all_cases()), case_name);

// The Worker serialises calls: one made from another host thread while a run is in flight waits
// for the run and then succeeds (it is not refused).
std::atomic<bool> g_release{false};
std::atomic<bool> g_kernel_entered{false};

void waiting_kernel(int64_t*) {
  g_kernel_entered.store(true);
  g_kernel_entered.notify_all();
  while (!g_release.load()) g_release.wait(false);
}

void one_task_orchestration(Orchestration& orch, const TaskArgs&) {
  TaskArgs task;
  orch.submit(0, CoreType::AIV, task);
}

TEST(WorkerThreads, ACallFromAnotherThreadDuringARunWaitsForIt) {
  Worker worker;
  worker.init(host::test::small_worker_options({.clusters = 1}));
  worker.register_callable(0,
                           CallableBuilder()
                               .orchestration_function(&one_task_orchestration, ArgSignature{})
                               .kernel_function(0, CoreType::AIV, &waiting_kernel, ArgSignature{})
                               .build());
  g_release = false;
  g_kernel_entered = false;
  std::future<RunReport> run =
      std::async(std::launch::async, [&] { return worker.run(0, TaskArgs{}); });
  while (!g_kernel_entered.load()) g_kernel_entered.wait(false);
  std::future<DeviceBuffer> other =
      std::async(std::launch::async, [&] { return worker.malloc(64); });
  // The run holds the Worker until its kernel is released, so the other call cannot be done yet.
  EXPECT_EQ(other.wait_for(100ms), std::future_status::timeout);
  g_release = true;
  g_release.notify_all();
  EXPECT_EQ(run.get().task_count, 1u);
  const DeviceBuffer buffer = other.get();
  EXPECT_FALSE(buffer.empty());
  worker.free(buffer);
}

// The runner's own guard: run() entered again while a run is in flight (here from the
// host_build_graph orchestration function, through a DeviceRunner reference) is refused.
host::DeviceRunner* g_runner = nullptr;
std::optional<Error> g_runner_error;

void runner_reentering_orchestration(Orchestration& orch, const TaskArgs&) {
  try {
    g_runner->run(0, TaskArgs{});
  } catch (const Error& e) {
    g_runner_error = e;
  }
  TaskArgs task;
  orch.submit(0, CoreType::AIV, task);
}

void noop_kernel(int64_t*) {}

TEST(DeviceRunnerGuard, RunEnteredDuringARunIsRefusedWithInvalidArgument) {
  host::DeviceRunner runner(host::test::make_sim(/*clusters=*/1));
  runner.attach(0);
  runner.register_callable(
      0, CallableBuilder()
             .orchestration_function(&runner_reentering_orchestration, ArgSignature{})
             .kernel_function(0, CoreType::AIV, &noop_kernel, ArgSignature{})
             .build());
  g_runner = &runner;
  g_runner_error.reset();
  EXPECT_EQ(runner.run(0, TaskArgs{}, host::test::small_call_config(16)).task_count, 1u);
  ASSERT_TRUE(g_runner_error.has_value());
  EXPECT_EQ(g_runner_error->code(), StatusCode::InvalidArgument) << g_runner_error->what();
  EXPECT_THAT(g_runner_error->message(), HasSubstr("another run is in progress"));
  g_runner = nullptr;
}

}  // namespace
}  // namespace chiprt
