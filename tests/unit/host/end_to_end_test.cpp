// Runs through the whole stack (host runner, orchestrator, scheduler, cores, sim platform) with
// callables assembled from in-process function pointers.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <map>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "chiprt/callable.h"
#include "chiprt/kernel.h"
#include "chiprt/orchestration.h"
#include "chiprt/worker.h"
#include "host/device_runner.h"
#include "host/log.h"
#include "host/worker_access.h"
#include "host_test_support.h"

namespace chiprt {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kElements = 1024;
constexpr uint64_t kTasks = 4;

// c[i] = a[i] + b[i] over args[3] elements.
void vadd_kernel(int64_t* args) {
  const float* a = kernel::tensor_arg<float>(args, 0);
  const float* b = kernel::tensor_arg<float>(args, 1);
  float* c = kernel::tensor_arg<float>(args, 2);
  const uint64_t n = kernel::scalar_arg<uint64_t>(args, 3);
  for (uint64_t i = 0; i < n; ++i) c[i] = a[i] + b[i];
}

// Four tasks, each adding one quarter of the vectors.
void vadd_orchestration(Orchestration& orch, const TaskArgs& args) {
  const Tensor& a = args.tensor(0);
  const Tensor& b = args.tensor(1);
  const Tensor& c = args.tensor(2);
  const uint64_t per_task = a.numel() / kTasks;
  for (uint64_t k = 0; k < kTasks; ++k) {
    TaskArgs task;
    task.in(a.view({per_task}, {k * per_task}))
        .in(b.view({per_task}, {k * per_task}))
        .output_existing(c.view({per_task}, {k * per_task}))
        .scalar(per_task);
    orch.submit(0, CoreType::AIV, task);
  }
}

void empty_orchestration(Orchestration&, const TaskArgs&) {}

const ArgSignature kVaddKernelSig =
    ArgSignature::of({ArgTag::In, ArgTag::In, ArgTag::OutputExisting}, 1);
const ArgSignature kVaddOrchSig =
    ArgSignature::of({ArgTag::In, ArgTag::In, ArgTag::OutputExisting}, 0);

std::vector<uint8_t> vadd_callable() {
  return CallableBuilder()
      .orchestration_function(&vadd_orchestration, kVaddOrchSig)
      .kernel_function(0, CoreType::AIV, &vadd_kernel, kVaddKernelSig)
      .build();
}

std::vector<uint8_t> empty_callable() {
  return CallableBuilder()
      .orchestration_function(&empty_orchestration, ArgSignature{})
      .kernel_function(0, CoreType::AIV, &vadd_kernel, kVaddKernelSig)
      .build();
}

// Device buffers and host data of one vector add.
struct VaddBuffers {
  std::vector<float> a, b;
  DeviceBuffer da, db, dc;
  TaskArgs args;
};

VaddBuffers make_vadd(Worker& worker, float seed) {
  VaddBuffers v;
  v.a.resize(kElements);
  v.b.resize(kElements);
  for (uint64_t i = 0; i < kElements; ++i) {
    v.a[i] = seed + static_cast<float>(i);
    v.b[i] = 0.5f * static_cast<float>(i) - seed;
  }
  const uint64_t bytes = kElements * sizeof(float);
  v.da = worker.malloc(bytes);
  v.db = worker.malloc(bytes);
  v.dc = worker.malloc(bytes);
  worker.copy_to(v.da, v.a.data(), bytes);
  worker.copy_to(v.db, v.b.data(), bytes);
  worker.memset(v.dc, 0, bytes);
  v.args.in(Tensor::make(v.da, {kElements}, DataType::F32))
      .in(Tensor::make(v.db, {kElements}, DataType::F32))
      .output_existing(Tensor::make(v.dc, {kElements}, DataType::F32));
  return v;
}

void expect_vadd_result(Worker& worker, const VaddBuffers& v) {
  std::vector<float> c(kElements, -1.0f);
  worker.copy_from(c.data(), v.dc, kElements * sizeof(float));
  for (uint64_t i = 0; i < kElements; ++i) {
    ASSERT_EQ(c[i], v.a[i] + v.b[i]) << "element " << i;
  }
}

WorkerOptions small_options(bool serial = false) {
  return host::test::small_worker_options({.memory_bytes = 512ull << 20, .serial = serial});
}

CallConfig small_config() {
  return host::test::small_call_config(1024);
}

TEST(EndToEnd, VectorAddThroughFourTasks) {
  Worker worker;
  worker.init(small_options());
  worker.register_callable(0, vadd_callable());
  VaddBuffers v = make_vadd(worker, 1.0f);
  RunReport report = worker.run(0, v.args, small_config());
  EXPECT_EQ(report.task_count, kTasks);
  EXPECT_FALSE(report.serial);
  EXPECT_GE(report.aicpu_threads, 2u);
  EXPECT_EQ(report.cores, 6u);
  EXPECT_GT(report.host_total_ns, 0u);
  EXPECT_GE(report.host_total_ns, report.host_prepare_ns);
  EXPECT_TRUE(report.phase(Phase::GraphBuild).present);
  EXPECT_TRUE(report.phase(Phase::RunWall).present);
  expect_vadd_result(worker, v);

  // Runs repeat on the same arenas.
  VaddBuffers w = make_vadd(worker, 7.0f);
  worker.run(0, w.args, small_config());
  expect_vadd_result(worker, w);
  worker.close();
}

TEST(EndToEnd, ZeroTaskGraph) {
  Worker worker;
  worker.init(small_options());
  worker.register_callable(3, empty_callable());
  const uint64_t launches_before = host::runner_of(worker).launches();
  RunReport report = worker.run(3, TaskArgs{}, small_config());
  EXPECT_EQ(report.task_count, 0u);
  EXPECT_EQ(host::runner_of(worker).launches(), launches_before);  // nothing for the chip to do
  report = worker.run(3, TaskArgs{}, small_config());
  EXPECT_EQ(report.task_count, 0u);
}

TEST(EndToEnd, SerialRunOnAThreadedPlatform) {
  Worker worker;
  worker.init(small_options());
  worker.register_callable(0, vadd_callable());
  VaddBuffers v = make_vadd(worker, 2.0f);
  CallConfig config = small_config();
  config.serial = true;
  RunReport report = worker.run(0, v.args, config);
  EXPECT_TRUE(report.serial);
  EXPECT_EQ(report.aicpu_threads, 1u);
  expect_vadd_result(worker, v);
  // And threaded again afterwards on the same platform.
  VaddBuffers w = make_vadd(worker, 3.0f);
  report = worker.run(0, w.args, small_config());
  EXPECT_FALSE(report.serial);
  expect_vadd_result(worker, w);
}

TEST(EndToEnd, SerialPlatform) {
  Worker worker;
  worker.init(small_options(/*serial=*/true));
  worker.register_callable(0, vadd_callable());
  VaddBuffers v = make_vadd(worker, 4.0f);
  RunReport report = worker.run(0, v.args, small_config());
  EXPECT_TRUE(report.serial);
  EXPECT_EQ(report.aicpu_threads, 1u);
  expect_vadd_result(worker, v);
}

TEST(EndToEnd, FewerClustersAndExplicitThreads) {
  Worker worker;
  worker.init(small_options());
  worker.register_callable(0, vadd_callable());
  VaddBuffers v = make_vadd(worker, 5.0f);
  CallConfig config = small_config();
  config.cluster_count = 1;
  config.aicpu_thread_num = 2;
  RunReport report = worker.run(0, v.args, config);
  EXPECT_EQ(report.cores, 3u);
  EXPECT_EQ(report.aicpu_threads, 2u);
  expect_vadd_result(worker, v);
}

TEST(EndToEnd, ReplayReusesThePrebuiltImage) {
  Worker worker;
  worker.init(small_options());
  worker.register_callable(0, vadd_callable());
  VaddBuffers v = make_vadd(worker, 6.0f);
  CallConfig config = small_config();
  config.replay_graph = true;
  RunReport first = worker.run(0, v.args, config);
  EXPECT_TRUE(first.phase(Phase::GraphBuild).present);
  EXPECT_EQ(host::runner_of(worker).replayed_runs(), 0u);

  worker.memset(v.dc, 0, kElements * sizeof(float));
  RunReport second = worker.run(0, v.args, config);
  EXPECT_EQ(host::runner_of(worker).replayed_runs(), 1u);
  EXPECT_EQ(second.task_count, kTasks);
  EXPECT_FALSE(second.phase(Phase::GraphBuild).present);  // orchestration skipped
  expect_vadd_result(worker, v);

  // Different arguments: orchestrate again.
  VaddBuffers w = make_vadd(worker, 8.0f);
  worker.run(0, w.args, config);
  EXPECT_EQ(host::runner_of(worker).replayed_runs(), 1u);
  expect_vadd_result(worker, w);

  // Bank 1 never uses bank 0's cache: it builds its own image, then replays it.
  config.arena_bank = 1;
  RunReport on_bank_1 = worker.run(0, w.args, config);
  EXPECT_TRUE(on_bank_1.phase(Phase::GraphBuild).present);
  EXPECT_EQ(host::runner_of(worker).replayed_runs(), 1u);
  worker.run(0, w.args, config);
  EXPECT_EQ(host::runner_of(worker).replayed_runs(), 2u);
  expect_vadd_result(worker, w);
  // And bank 0 still replays its own.
  config.arena_bank = 0;
  EXPECT_FALSE(worker.run(0, w.args, config).phase(Phase::GraphBuild).present);
  EXPECT_EQ(host::runner_of(worker).replayed_runs(), 3u);
}

// c = c * 2 + k for k = 0 .. kChainSteps-1, one INOUT task per step: only the submission order
// gives the right result, so a replay must wire every dependency again.
constexpr int64_t kChainSteps = 8;
void scale_add_kernel(int64_t* args) {
  float* c = kernel::tensor_arg<float>(args, 0);
  const auto step = static_cast<float>(kernel::scalar_arg<int64_t>(args, 1));
  for (uint64_t i = 0; i < kElements; ++i) c[i] = c[i] * 2.0f + step;
}
void scale_add_chain_orchestration(Orchestration& orch, const TaskArgs& args) {
  for (int64_t k = 0; k < kChainSteps; ++k) {
    TaskArgs task;
    task.inout(args.tensor(0)).scalar(k);
    orch.submit(0, CoreType::AIV, task);
  }
}

TEST(EndToEnd, ReplaysLaunchAnImageTheChipCheckedPrevalidated) {
  Worker worker;
  worker.init(small_options());
  const ArgSignature sig = ArgSignature::of({ArgTag::InOut}, 1);
  worker.register_callable(0, CallableBuilder()
                                  .orchestration_function(&scale_add_chain_orchestration,
                                                          ArgSignature::of({ArgTag::InOut}, 0))
                                  .kernel_function(0, CoreType::AIV, &scale_add_kernel, sig)
                                  .build());
  const DeviceBuffer dc = worker.malloc(kElements * sizeof(float));
  TaskArgs args;
  args.inout(Tensor::make(dc, {kElements}, DataType::F32));
  CallConfig config = small_config();
  config.replay_graph = true;
  float want = 1.0f;
  for (int64_t k = 0; k < kChainSteps; ++k) want = want * 2.0f + static_cast<float>(k);
  auto run_and_check = [&](const char* what) {
    SCOPED_TRACE(what);
    const std::vector<float> ones(kElements, 1.0f);
    worker.copy_to(dc, ones.data(), kElements * sizeof(float));
    worker.run(0, args, config);
    std::vector<float> got(kElements);
    worker.copy_from(got.data(), dc, kElements * sizeof(float));
    EXPECT_THAT(got, ::testing::Each(want));
  };
  run_and_check("caching run");  // built, cached, checked by the chip
  EXPECT_EQ(host::runner_of(worker).prevalidated_launches(), 0u);
  run_and_check("first replay");
  run_and_check("second replay");
  EXPECT_EQ(host::runner_of(worker).replayed_runs(), 2u);
  EXPECT_EQ(host::runner_of(worker).prevalidated_launches(), 2u);

  // Another cluster count builds and caches a new image: its first launch is checked again.
  config.cluster_count = 1;
  run_and_check("new image");
  EXPECT_EQ(host::runner_of(worker).prevalidated_launches(), 2u);
  run_and_check("replay of the new image");
  EXPECT_EQ(host::runner_of(worker).prevalidated_launches(), 3u);
  worker.free(dc);
}

// Reads a[0] from orchestration code before submitting the vector add.
float g_peeked = 0.0f;
void peeking_vadd_orchestration(Orchestration& orch, const TaskArgs& args) {
  orch.get_tensor_data(args.tensor(0).view({1}, {0}), &g_peeked, sizeof(float));
  vadd_orchestration(orch, args);
}

TEST(EndToEnd, ReplayNeverCachesAGraphWhoseOrchestrationTouchedTensorData) {
  Worker worker;
  worker.init(small_options());
  worker.register_callable(0, CallableBuilder()
                                  .orchestration_function(&peeking_vadd_orchestration, kVaddOrchSig)
                                  .kernel_function(0, CoreType::AIV, &vadd_kernel, kVaddKernelSig)
                                  .build());
  VaddBuffers v = make_vadd(worker, 3.0f);
  CallConfig config = small_config();
  config.replay_graph = true;
  worker.run(0, v.args, config);
  EXPECT_EQ(g_peeked, 3.0f);
  // The orchestration must run again to read the new a[0].
  v.a[0] = 11.0f;
  worker.copy_to(v.da, v.a.data(), kElements * sizeof(float));
  RunReport second = worker.run(0, v.args, config);
  EXPECT_EQ(host::runner_of(worker).replayed_runs(), 0u);
  EXPECT_TRUE(second.phase(Phase::GraphBuild).present);
  EXPECT_EQ(g_peeked, 11.0f);
  expect_vadd_result(worker, v);
}

TEST(EndToEnd, CloseFreesEveryDeviceResource) {
  Worker worker;
  worker.init(small_options());
  worker.register_callable(0, vadd_callable());
  VaddBuffers v = make_vadd(worker, 1.0f);
  worker.run(0, v.args, small_config());
  host::DeviceRunner& runner = host::runner_of(worker);
  EXPECT_GT(runner.memory().tracked_count(), 3u);
  runner.finalize();
  EXPECT_EQ(runner.memory().tracked_count(), 0u);
  EXPECT_EQ(runner.platform().bytes_in_use(), 0u);
}

// tmp = a + b (runtime-allocated output), c = tmp + b: the second task depends on the first
// through the output heap.
void two_stage_orchestration(Orchestration& orch, const TaskArgs& args) {
  const Tensor& a = args.tensor(0);
  const Tensor& b = args.tensor(1);
  const Tensor& c = args.tensor(2);
  Scope scope(orch);
  TaskArgs first;
  // Twice the needed size, so a 4 KiB heap (the smallest valid one) cannot hold it.
  first.in(a).in(b).out({2 * a.numel()}, DataType::F32).scalar(a.numel());
  orch.submit(1, CoreType::AIV, first);
  TaskArgs second;
  second.in(first.output(0).view({a.numel()}, {0})).in(b).output_existing(c).scalar(a.numel());
  orch.submit(0, CoreType::AIV, second);
}

std::vector<uint8_t> two_stage_callable() {
  return CallableBuilder()
      .orchestration_function(&two_stage_orchestration, kVaddOrchSig)
      .kernel_function(0, CoreType::AIV, &vadd_kernel, kVaddKernelSig)
      .kernel_function(1, CoreType::AIV, &vadd_kernel,
                       ArgSignature::of({ArgTag::In, ArgTag::In, ArgTag::Out}, 1))
      .build();
}

TEST(EndToEnd, IntermediatesLiveInTheOutputHeap) {
  Worker worker;
  worker.init(small_options());
  worker.register_callable(0, two_stage_callable());
  VaddBuffers v = make_vadd(worker, 1.5f);
  // The user's two tasks on both variants; host_build_graph's fence of the scope that owned the
  // intermediate is counted apart, as an internal task.
  for (const RuntimeVariant variant :
       {RuntimeVariant::HostBuildGraph, RuntimeVariant::TensormapRingbuffer}) {
    SCOPED_TRACE(runtime_variant_name(variant));
    CallConfig config = small_config();
    config.runtime = variant;
    worker.memset(v.dc, 0, kElements * sizeof(float));
    const RunReport report = worker.run(0, v.args, config);
    EXPECT_EQ(report.task_count, 2u);
    EXPECT_EQ(report.internal_task_count, variant == RuntimeVariant::HostBuildGraph ? 1u : 0u);
    std::vector<float> c(kElements);
    worker.copy_from(c.data(), v.dc, kElements * sizeof(float));
    for (uint64_t i = 0; i < kElements; ++i) {
      ASSERT_EQ(c[i], (v.a[i] + v.b[i]) + v.b[i]) << "element " << i;
    }
  }

  CallConfig tiny_heap = small_config();
  tiny_heap.output_heap_bytes = 4096;  // the intermediate needs 8 KiB
  try {
    worker.run(0, v.args, tiny_heap);
    ADD_FAILURE() << "the output heap is too small";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::HeapExhausted) << e.what();
  }
  worker.run(0, v.args, small_config());  // the device is still usable
}

void throwing_orchestration(Orchestration&, const TaskArgs&) {
  throw std::runtime_error("user orchestration bug");
}

TEST(EndToEnd, OrchestrationFailureDoesNotFaultTheDevice) {
  Worker worker;
  worker.init(small_options());
  worker.register_callable(1, CallableBuilder()
                                  .orchestration_function(&throwing_orchestration, ArgSignature{})
                                  .kernel_function(0, CoreType::AIV, &vadd_kernel, kVaddKernelSig)
                                  .build());
  worker.register_callable(0, vadd_callable());
  try {
    worker.run(1, TaskArgs{}, small_config());
    ADD_FAILURE() << "the orchestration throws";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::OrchestrationFailed) << e.what();
    EXPECT_THAT(e.message(), HasSubstr("user orchestration bug"));
  }
  VaddBuffers v = make_vadd(worker, 2.5f);
  worker.run(0, v.args, small_config());
  expect_vadd_result(worker, v);
}

// --- watchdog and concurrency: a kernel that blocks until released ---------------------------

std::atomic<bool> g_release{false};
std::atomic<int> g_entered{0};

void blocking_kernel(int64_t*) {
  g_entered.fetch_add(1, std::memory_order_acq_rel);
  g_entered.notify_all();
  while (!g_release.load(std::memory_order_acquire)) g_release.wait(false);
}

void one_task_orchestration(Orchestration& orch, const TaskArgs&) {
  TaskArgs task;
  orch.submit(0, CoreType::AIV, task);
}

std::vector<uint8_t> blocking_callable() {
  return CallableBuilder()
      .orchestration_function(&one_task_orchestration, ArgSignature{})
      .kernel_function(0, CoreType::AIV, &blocking_kernel, ArgSignature{})
      .build();
}

// Releases the blocked kernel when the test ends, whatever happened (declared after the runner,
// so it runs before the runner and its platform are destroyed).
struct ReleaseKernelAtExit {
  ReleaseKernelAtExit() {
    g_release.store(false);
    g_entered.store(0);
  }
  ~ReleaseKernelAtExit() {
    g_release.store(true, std::memory_order_release);
    g_release.notify_all();
  }
};

std::unique_ptr<platform::Platform> make_sim() {
  return host::test::make_sim(/*clusters=*/1);
}

host::RunnerOptions short_watchdog() {
  return host::test::options_with_env({{host::kSchedulerTimeoutEnv, "100"},
                                       {host::kOpExecuteTimeoutEnv, "200000"},
                                       {host::kStreamSyncTimeoutEnv, "1700"}});
}

TEST(EndToEnd, WatchdogReportsTheStuckTaskAndFaultsTheDevice) {
  const host::LogLevel saved = host::log_level();
  host::set_log_level(host::LogLevel::Off);
  host::DeviceRunner runner(make_sim(), short_watchdog());
  ReleaseKernelAtExit release;
  runner.attach(0);
  ASSERT_EQ(runner.timeouts().scheduler_ms, 100u);
  runner.register_callable(0, blocking_callable());
  try {
    runner.run(0, TaskArgs{}, small_config());
    ADD_FAILURE() << "the run should have hit the scheduler watchdog";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::SchedulerTimeout) << e.what();
    EXPECT_THAT(e.message(), HasSubstr("task 0"));
    EXPECT_THAT(e.message(), HasSubstr("func_id 0"));
    EXPECT_THAT(e.message(), HasSubstr("core"));
    EXPECT_THAT(e.message(), HasSubstr("further runs are refused"));
  }
  EXPECT_TRUE(runner.faulted());
  try {
    runner.run(0, TaskArgs{}, small_config());
    ADD_FAILURE() << "a faulted device must refuse runs";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::DeviceFaulted) << e.what();
  }
  host::set_log_level(saved);
}

TEST(EndToEnd, ConcurrentRunIsRefusedWhileOneIsInFlight) {
  host::DeviceRunner runner(make_sim(), host::RunnerOptions{});
  ReleaseKernelAtExit release;
  runner.attach(0);
  runner.register_callable(0, blocking_callable());
  std::atomic<bool> first_ok{false};
  std::thread first([&] {
    try {
      runner.run(0, TaskArgs{}, small_config());
      first_ok = true;
    } catch (const Error& e) {
      ADD_FAILURE() << e.what();
    }
  });
  while (g_entered.load(std::memory_order_acquire) == 0) g_entered.wait(0);
  try {
    runner.run(0, TaskArgs{}, small_config());
    ADD_FAILURE() << "a second concurrent run must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::InvalidArgument);
    EXPECT_THAT(e.message(), HasSubstr("another run is in progress"));
  }
  // An export shares the guard: it would reset the output heap under the running graph.
  try {
    runner.export_graph(0, TaskArgs{}, small_config());
    ADD_FAILURE() << "an export while a run is in flight must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::InvalidArgument);
    EXPECT_THAT(e.message(), HasSubstr("export_graph: another run is in progress"));
  }
  g_release.store(true, std::memory_order_release);
  g_release.notify_all();
  first.join();
  EXPECT_TRUE(first_ok.load());
  EXPECT_EQ(runner.export_graph(0, TaskArgs{}, small_config()).tasks.size(), 1u);
}

TEST(EndToEnd, ConcurrentStressWorkerRunsSerialise) {
  Worker worker;
  worker.init(small_options());
  worker.register_callable(0, vadd_callable());
  constexpr int kThreads = 3;
  constexpr int kRuns = 4;
  std::vector<VaddBuffers> buffers;
  for (int t = 0; t < kThreads; ++t) buffers.push_back(make_vadd(worker, 10.0f * (t + 1)));
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRuns; ++r) {
        try {
          worker.run(0, buffers[t].args, small_config());
        } catch (const Error& e) {
          ADD_FAILURE() << "thread " << t << " run " << r << ": " << e.what();
          failures.fetch_add(1);
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  for (const VaddBuffers& v : buffers) expect_vadd_result(worker, v);
}

}  // namespace
}  // namespace chiprt
