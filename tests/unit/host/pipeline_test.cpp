// Pipelined runs (Worker::submit, RunHandle), one table over both runtime variants: submission
// order, a run reading its predecessor's output, host_build_graph preparing run N+1 while run N
// executes, cancellation of the runs using a failed run's memory (the full rule:
// run_cancellation_test.cpp), host copies of memory an admitted run uses, submits from two
// threads, an unwaited handle, close with runs in flight, try_submit, diagnostics on.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <future>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "chiprt/callable.h"
#include "chiprt/kernel.h"
#include "chiprt/orchestration.h"
#include "chiprt/worker.h"
#include "diagnostics/artifacts.h"
#include "host/log.h"
#include "host/worker_access.h"
#include "host_test_support.h"

namespace chiprt::host {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

constexpr int32_t kAddOne = 0;
constexpr int32_t kGatedAddOne = 1;
constexpr int32_t kGatedThrow = 2;
constexpr int32_t kSlow = 3;
constexpr int32_t kThrowNow = 4;
constexpr uint64_t kN = 64;

std::atomic<bool> g_gate{false};
std::atomic<uint32_t> g_gated_entered{0};
// Runs in the order their kernels executed (scalar 1 of each run).
std::mutex g_order_mutex;
std::vector<uint64_t> g_order;
// Runs whose orchestration function has run (scalar 1), in order.
std::vector<uint64_t> g_orchestrated;

void wait_for_gate() {
  g_gated_entered.fetch_add(1, std::memory_order_acq_rel);
  while (!g_gate.load(std::memory_order_acquire)) std::this_thread::sleep_for(200us);
}
void add_one(int64_t* args) {
  float* data = kernel::tensor_arg<float>(args, 0);
  for (uint64_t i = 0; i < kN; ++i) data[i] += 1.0f;
  std::lock_guard lock(g_order_mutex);
  g_order.push_back(kernel::scalar_arg<uint64_t>(args, 1));
}
void gated_add_one(int64_t* args) {
  wait_for_gate();
  add_one(args);
}
void gated_throw(int64_t*) {
  wait_for_gate();
  throw std::runtime_error("the kernel gives up");
}
void slow_kernel(int64_t*) {
  std::this_thread::sleep_for(300ms);
}
void throw_now(int64_t*) {
  throw std::runtime_error("the kernel gives up at once");
}

// Callable 1: reads element 0 of argument 0 (what the run before wrote) into g_seen, then sets
// every element to it + 100; no task.
float g_seen = -1.0f;
void read_then_write(Orchestration& orch, const TaskArgs& args) {
  const Tensor& data = args.tensor(0);
  orch.get_tensor_data(data.view({1}, {0}), &g_seen, sizeof(float));
  const std::vector<float> values(kN, g_seen + 100.0f);
  orch.set_tensor_data(data, values.data(), kN * sizeof(float));
}
// Callable 2: a task that throws at once beside one that takes 300 ms.
void throw_beside_slow(Orchestration& orch, const TaskArgs&) {
  TaskArgs slow, failing;
  orch.submit(kSlow, CoreType::AIV, slow);
  orch.submit(kThrowNow, CoreType::AIV, failing);
}
// Callable 3: drops (move-assigns over) the handle the test left in g_dropped, then one task.
RunHandle* g_dropped = nullptr;
std::unique_ptr<Worker> g_other_worker;
std::atomic<bool> g_other_dropped{false};
void drop_things(Orchestration& orch, const TaskArgs& args) {
  if (g_dropped != nullptr) *g_dropped = RunHandle();
  g_other_worker.reset();  // another Worker, with a pipeline thread: destroyed inside a run
  g_other_dropped.store(true, std::memory_order_release);
  TaskArgs task;
  task.inout(args.tensor(0)).scalar(uint64_t{0});
  orch.submit(kAddOne, CoreType::AIV, task);
}

// One task over argument 0 with the kernel named by scalar 0; scalar 1 is the run's number.
void one_task(Orchestration& orch, const TaskArgs& args) {
  {
    std::lock_guard lock(g_order_mutex);
    g_orchestrated.push_back(args.scalar_bits(1));
  }
  TaskArgs task;
  task.inout(args.tensor(0)).scalar(args.scalar_bits(1));
  orch.submit(static_cast<int32_t>(args.scalar_bits(0)), CoreType::AIV, task);
}

class PipelineTest : public ::testing::TestWithParam<RuntimeVariant> {
 protected:
  void SetUp() override {
    saved_level_ = log_level();
    set_log_level(LogLevel::Off);
    g_gate.store(false);
    g_gated_entered.store(0);
    g_order.clear();
    g_orchestrated.clear();
    g_seen = -1.0f;
    g_dropped = nullptr;
    g_other_dropped.store(false);
    test::SmallChip chip;
    chip.runtime = GetParam();
    worker_.init(test::small_worker_options(chip));
    const OrchestrationEntry orchestrations[] = {&one_task, &read_then_write, &throw_beside_slow,
                                                 &drop_things};
    for (int32_t id = 0; id < 4; ++id) {
      worker_.register_callable(
          id, CallableBuilder()
                  .orchestration_function(orchestrations[id], ArgSignature{})
                  .kernel_function(kAddOne, CoreType::AIV, &add_one, ArgSignature{})
                  .kernel_function(kGatedAddOne, CoreType::AIV, &gated_add_one, ArgSignature{})
                  .kernel_function(kGatedThrow, CoreType::AIV, &gated_throw, ArgSignature{})
                  .kernel_function(kSlow, CoreType::AIV, &slow_kernel, ArgSignature{})
                  .kernel_function(kThrowNow, CoreType::AIV, &throw_now, ArgSignature{})
                  .build());
    }
  }
  void TearDown() override {
    open_gate();
    worker_.close();
    set_log_level(saved_level_);
  }

  static void open_gate() { g_gate.store(true, std::memory_order_release); }
  // Waits (at most 10 s) until `count` gated kernels have started.
  static bool gated_started(uint32_t count) {
    for (int i = 0; i < 10000; ++i) {
      if (g_gated_entered.load(std::memory_order_acquire) >= count) return true;
      std::this_thread::sleep_for(1ms);
    }
    return false;
  }

  DeviceBuffer zeroed() {
    DeviceBuffer buffer = worker_.malloc(kN * sizeof(float));
    worker_.memset(buffer, 0, kN * sizeof(float));
    return buffer;
  }
  static TaskArgs args_for(const DeviceBuffer& buffer, int32_t kernel, uint64_t run) {
    TaskArgs args;
    args.inout(Tensor::make(buffer, {kN}, DataType::F32))
        .scalar(static_cast<uint64_t>(kernel))
        .scalar(run);
    return args;
  }
  std::vector<float> read(const DeviceBuffer& buffer) {
    std::vector<float> out(kN);
    worker_.copy_from(out.data(), buffer, kN * sizeof(float));
    return out;
  }
  CallConfig config() const {
    CallConfig config = test::small_call_config(64);
    config.runtime = GetParam();
    return config;
  }
  static std::vector<uint64_t> order() {
    std::lock_guard lock(g_order_mutex);
    return g_order;
  }
  static std::vector<uint64_t> orchestrated() {
    std::lock_guard lock(g_order_mutex);
    return g_orchestrated;
  }

  Worker worker_;
  LogLevel saved_level_ = LogLevel::Warn;
};

// Each run adds one to the buffer its predecessor wrote: 20 runs through a pipeline two deep
// leave 20, executed in submission order, each handle with its own report.
TEST_P(PipelineTest, RunsCompleteInSubmissionOrderAndReadTheirPredecessorsOutput) {
  const DeviceBuffer data = zeroed();
  std::vector<RunHandle> handles;
  for (uint64_t run = 1; run <= 20; ++run) {
    handles.push_back(worker_.submit(0, args_for(data, kAddOne, run), config()));
    EXPECT_LE(worker_.runs_in_flight(), 2u);
  }
  for (uint64_t run = 1; run <= 20; ++run) {
    const RunHandle& handle = handles[run - 1];
    EXPECT_EQ(handle.sequence(), run);
    const RunReport report = handle.wait();
    EXPECT_EQ(report.task_count, 1u);
    EXPECT_TRUE(handle.ready());
  }
  EXPECT_EQ(read(data), std::vector<float>(kN, 20.0f));
  std::vector<uint64_t> expected(20);
  for (uint64_t i = 0; i < 20; ++i) expected[i] = i + 1;
  EXPECT_EQ(order(), expected);
  EXPECT_EQ(worker_.runs_in_flight(), 0u);
  // run() after the stream: nothing admitted, it runs at once.
  worker_.run(0, args_for(data, kAddOne, 21), config());
  EXPECT_EQ(read(data), std::vector<float>(kN, 21.0f));
}

// While run 1 executes (held by its kernel), run 2 is admitted; host_build_graph orchestrates it
// during run 1 (the overlap), tensormap_ringbuffer only once run 1 is collected (its
// orchestration runs on the chip). Either way run 2 executes after run 1.
TEST_P(PipelineTest, TheNextRunIsPreparedWhileOneExecutes) {
  const DeviceBuffer first = zeroed();
  const DeviceBuffer second = zeroed();
  RunHandle one = worker_.submit(0, args_for(first, kGatedAddOne, 1), config());
  ASSERT_TRUE(gated_started(1));
  RunHandle two = worker_.submit(0, args_for(second, kAddOne, 2), config());
  EXPECT_EQ(worker_.runs_in_flight(), 2u);
  if (GetParam() == RuntimeVariant::HostBuildGraph) {
    for (int i = 0; i < 10000 && orchestrated().size() < 2; ++i) std::this_thread::sleep_for(1ms);
    EXPECT_EQ(orchestrated(), (std::vector<uint64_t>{1, 2})) << "run 2 orchestrated under run 1";
  }
  EXPECT_FALSE(one.ready());
  EXPECT_FALSE(two.wait_for(20ms));
  open_gate();
  two.wait();
  EXPECT_TRUE(one.ready());
  EXPECT_EQ(order(), (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(orchestrated(), (std::vector<uint64_t>{1, 2}));
}

// A failing run cancels the later runs using the memory it was writing (the one admitted during
// its run, and one submitted after it) until the host rewrites that memory; other runs run.
TEST_P(PipelineTest, AFailedRunCancelsTheRunsUsingItsMemoryUntilTheHostRewritesIt) {
  const DeviceBuffer data = zeroed();
  RunHandle failing = worker_.submit(0, args_for(data, kGatedThrow, 1), config());
  ASSERT_TRUE(gated_started(1));
  RunHandle successor = worker_.submit(0, args_for(data, kAddOne, 2), config());
  open_gate();
  const Error failure = test::error_of([&] { failing.wait(); });
  EXPECT_EQ(failure.code(), StatusCode::KernelFault) << failure.what();
  const Error cancelled = test::error_of([&] { successor.wait(); });
  EXPECT_EQ(cancelled.code(), StatusCode::Cancelled);
  EXPECT_THAT(cancelled.message(), HasSubstr("run 2 of callable 0 was not launched: it names "
                                             "memory ["));
  EXPECT_THAT(cancelled.message(), HasSubstr("poisoned by run 1, which failed with KernelFault: "));
  // Waiting again throws the same error.
  EXPECT_EQ(test::error_of([&] { successor.wait(); }).message(), cancelled.message());
  EXPECT_TRUE(order().empty());
  EXPECT_EQ(read(data), std::vector<float>(kN, 0.0f));

  const DeviceBuffer other = zeroed();
  RunHandle elsewhere = worker_.submit(0, args_for(other, kAddOne, 3), config());
  RunHandle later = worker_.submit(0, args_for(data, kAddOne, 4), config());
  EXPECT_EQ(elsewhere.wait().task_count, 1u);
  EXPECT_THAT(test::error_of([&] { later.wait(); }).message(),
              HasSubstr("poisoned by run 1, which failed with KernelFault: "));
  worker_.memset(data, 0, kN * sizeof(float));
  RunHandle rewritten = worker_.submit(0, args_for(data, kAddOne, 5), config());
  rewritten.wait();
  EXPECT_EQ(read(data), std::vector<float>(kN, 1.0f));
}

// copy_from of a buffer an admitted run writes waits for the run; other memory is not held up.
TEST_P(PipelineTest, AHostReadOfARunsBufferWaitsForItAndOtherBuffersDoNot) {
  const DeviceBuffer written = zeroed();
  const DeviceBuffer other = zeroed();
  RunHandle run = worker_.submit(0, args_for(written, kGatedAddOne, 1), config());
  ASSERT_TRUE(gated_started(1));
  EXPECT_EQ(read(other), std::vector<float>(kN, 0.0f));  // returns while the run is held
  const float marker = 5.0f;
  worker_.copy_to(other, &marker, sizeof(marker));
  auto blocked = std::async(std::launch::async, [&] { return read(written); });
  EXPECT_EQ(blocked.wait_for(50ms), std::future_status::timeout) << "the read did not wait";
  open_gate();
  EXPECT_EQ(blocked.get(), std::vector<float>(kN, 1.0f));  // what the run wrote
  EXPECT_EQ(run.wait().task_count, 1u);
}

// free of a buffer an admitted run uses waits for the run too.
TEST_P(PipelineTest, FreeOfARunsBufferWaitsForIt) {
  const DeviceBuffer data = zeroed();
  RunHandle run = worker_.submit(0, args_for(data, kGatedAddOne, 1), config());
  ASSERT_TRUE(gated_started(1));
  auto freeing = std::async(std::launch::async, [&] { worker_.free(data); });
  EXPECT_EQ(freeing.wait_for(50ms), std::future_status::timeout) << "free did not wait";
  open_gate();
  freeing.get();
  EXPECT_EQ(run.wait().task_count, 1u);
}

TEST_P(PipelineTest, SubmitFromTwoThreads) {
  constexpr uint64_t kRuns = 12;
  const DeviceBuffer a = zeroed();
  const DeviceBuffer b = zeroed();
  std::mutex sequences_mutex;
  std::set<uint64_t> sequences;
  auto submitter = [&](const DeviceBuffer& buffer, uint64_t base) {
    std::vector<RunHandle> handles;
    for (uint64_t i = 0; i < kRuns; ++i) {
      handles.push_back(worker_.submit(0, args_for(buffer, kAddOne, base + i), config()));
    }
    for (RunHandle& handle : handles) {
      handle.wait();
      std::lock_guard lock(sequences_mutex);
      EXPECT_TRUE(sequences.insert(handle.sequence()).second);
    }
  };
  std::thread first(submitter, a, 100);
  std::thread second(submitter, b, 200);
  first.join();
  second.join();
  EXPECT_EQ(read(a), std::vector<float>(kN, static_cast<float>(kRuns)));
  EXPECT_EQ(read(b), std::vector<float>(kN, static_cast<float>(kRuns)));
  EXPECT_EQ(sequences.size(), 2 * kRuns);
  EXPECT_EQ(*sequences.begin(), 1u);
  EXPECT_EQ(*sequences.rbegin(), 2 * kRuns);
  // Each thread's runs executed in its own submission order.
  std::vector<uint64_t> of_a, of_b;
  for (uint64_t run : order()) (run < 200 ? of_a : of_b).push_back(run);
  EXPECT_TRUE(std::is_sorted(of_a.begin(), of_a.end()));
  EXPECT_TRUE(std::is_sorted(of_b.begin(), of_b.end()));
}

// A handle destroyed without wait() waits for its run.
TEST_P(PipelineTest, AnUnwaitedHandleWaitsWhenDestroyed) {
  const DeviceBuffer data = zeroed();
  { RunHandle dropped = worker_.submit(0, args_for(data, kAddOne, 1), config()); }
  EXPECT_EQ(order(), (std::vector<uint64_t>{1}));
  RunHandle moved_over = worker_.submit(0, args_for(data, kAddOne, 2), config());
  moved_over = worker_.submit(0, args_for(data, kAddOne, 3), config());  // waits for run 2
  ASSERT_GE(order().size(), 2u);  // run 3 may be done as well by now
  EXPECT_EQ(order()[1], 2u);
  moved_over.wait();
  EXPECT_EQ(read(data), std::vector<float>(kN, 3.0f));
}

// close() with runs admitted finishes them; their handles hold the results; submit after close
// is refused.
TEST_P(PipelineTest, CloseFinishesTheAdmittedRuns) {
  const DeviceBuffer data = zeroed();
  RunHandle one = worker_.submit(0, args_for(data, kGatedAddOne, 1), config());
  RunHandle two = worker_.submit(0, args_for(data, kAddOne, 2), config());
  ASSERT_TRUE(gated_started(1));
  auto closing = std::async(std::launch::async, [&] { worker_.close(); });
  EXPECT_EQ(closing.wait_for(50ms), std::future_status::timeout) << "close did not wait";
  open_gate();
  closing.get();
  EXPECT_TRUE(one.ready());
  EXPECT_TRUE(two.ready());
  EXPECT_EQ(one.wait().task_count, 1u);
  EXPECT_EQ(two.wait().task_count, 1u);
  EXPECT_EQ(order(), (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(test::error_of([&] { worker_.submit(0, TaskArgs{}, config()); }).code(),
            StatusCode::AlreadyClosed);
}

// Two threads close at once while runs are admitted: both return once the runs are done, and
// neither finalizes the device under the pipeline thread.
TEST_P(PipelineTest, ConcurrentCloseFromTwoThreads) {
  const DeviceBuffer data = zeroed();
  RunHandle one = worker_.submit(0, args_for(data, kGatedAddOne, 1), config());
  RunHandle two = worker_.submit(0, args_for(data, kAddOne, 2), config());
  ASSERT_TRUE(gated_started(1));
  auto first = std::async(std::launch::async, [&] { worker_.close(); });
  auto second = std::async(std::launch::async, [&] { worker_.close(); });
  EXPECT_EQ(second.wait_for(20ms), std::future_status::timeout) << "a close did not wait";
  open_gate();
  first.get();
  second.get();
  EXPECT_EQ(one.wait().task_count, 1u);
  EXPECT_EQ(two.wait().task_count, 1u);
}

TEST_P(PipelineTest, TrySubmitSaysNoWhileTwoRunsAreAdmitted) {
  const DeviceBuffer data = zeroed();
  RunHandle one, two, three;
  ASSERT_TRUE(worker_.try_submit(0, args_for(data, kGatedAddOne, 1), config(), &one));
  ASSERT_TRUE(gated_started(1));
  ASSERT_TRUE(worker_.try_submit(0, args_for(data, kAddOne, 2), config(), &two));
  EXPECT_FALSE(worker_.try_submit(0, args_for(data, kAddOne, 3), config(), &three));
  EXPECT_FALSE(three.valid());
  open_gate();
  one.wait();
  two.wait();
  ASSERT_TRUE(worker_.try_submit(0, args_for(data, kAddOne, 3), config(), &three));
  three.wait();
  EXPECT_EQ(read(data), std::vector<float>(kN, 3.0f));
}

// Errors a run() would throw come from wait(); an empty handle names itself.
TEST_P(PipelineTest, ErrorsComeFromTheHandle) {
  RunHandle unknown = worker_.submit(7, TaskArgs{}, config());
  EXPECT_EQ(test::error_of([&] { unknown.wait(); }).code(), StatusCode::UnknownCallable);
  RunHandle empty;
  const Error error = test::error_of([&] { empty.wait(); });
  EXPECT_EQ(error.code(), StatusCode::InvalidArgument);
  EXPECT_THAT(error.message(), HasSubstr("empty handle"));
  Worker fresh;
  EXPECT_EQ(test::error_of([&] { fresh.submit(0, TaskArgs{}); }).code(),
            StatusCode::NotInitialized);
}

// Run 2's orchestration reads and writes (get/set_tensor_data) the buffer run 1 writes, while
// run 1 executes: host_build_graph orchestrates run 2 under run 1 and its data calls wait for run
// 1 there; either way they see run 1's result and land after it, as with run() one by one.
TEST_P(PipelineTest, TheNextRunsTensorDataCallsSeeThePreviousRunsResult) {
  const DeviceBuffer data = zeroed();
  RunHandle one = worker_.submit(0, args_for(data, kGatedAddOne, 1), config());
  ASSERT_TRUE(gated_started(1));
  TaskArgs args;
  args.inout(Tensor::make(data, {kN}, DataType::F32));
  RunHandle two = worker_.submit(1, args, config());
  std::this_thread::sleep_for(20ms);  // run 2 is being prepared (or queued) meanwhile
  EXPECT_FALSE(two.ready());
  open_gate();
  one.wait();
  two.wait();
  EXPECT_EQ(g_seen, 1.0f);
  EXPECT_EQ(read(data), std::vector<float>(kN, 101.0f));
}

// A run that fails while its AICPU threads linger (a kernel throws beside a slow one), with a run
// admitted during that time: the failure stays a KernelFault (the device is not abandoned), the
// admitted run (which shares no memory with it) runs, and the Worker goes on working.
TEST_P(PipelineTest, AnAdmissionDuringAFailingRunsWaitDoesNotFaultTheDevice) {
  const DeviceBuffer data = zeroed();
  RunHandle failing = worker_.submit(2, TaskArgs{}, config());
  std::this_thread::sleep_for(100ms);
  RunHandle next = worker_.submit(0, args_for(data, kAddOne, 1), config());
  EXPECT_EQ(test::error_of([&] { failing.wait(); }).code(), StatusCode::KernelFault);
  EXPECT_EQ(next.wait().task_count, 1u);
  RunHandle later = worker_.submit(0, args_for(data, kAddOne, 2), config());
  EXPECT_EQ(later.wait().task_count, 1u);
  EXPECT_FALSE(host::runner_of(worker_).faulted());
}

// Inside a run, dropping a handle does not wait for its run (that run may wait for this one), and
// destroying another Worker that has a pipeline thread stops that thread cleanly.
TEST_P(PipelineTest, HandlesAndWorkersDroppedInsideARun) {
  const DeviceBuffer data = zeroed();
  g_other_worker = std::make_unique<Worker>();
  g_other_worker->init(test::small_worker_options());
  g_other_worker->submit(7, TaskArgs{}).valid();  // unknown callable: fails, the thread stays
  RunHandle held = worker_.submit(0, args_for(data, kGatedAddOne, 1), config());
  ASSERT_TRUE(gated_started(1));
  g_dropped = &held;
  TaskArgs args;
  args.inout(Tensor::make(data, {kN}, DataType::F32));
  RunHandle dropper = worker_.submit(3, args, config());
  if (GetParam() == RuntimeVariant::HostBuildGraph) {
    // Its orchestration runs under run 1 and returns although run 1 is held.
    for (int i = 0; i < 10000 && !g_other_dropped.load(std::memory_order_acquire); ++i) {
      std::this_thread::sleep_for(1ms);
    }
    EXPECT_TRUE(g_other_dropped.load(std::memory_order_acquire));
  }
  open_gate();
  dropper.wait();
  EXPECT_FALSE(held.valid());
  EXPECT_EQ(g_other_worker, nullptr);
  EXPECT_EQ(read(data), std::vector<float>(kN, 2.0f));
}

// A successor cancelled after it was prepared with diagnostics writes its directory and gives its
// device memory back.
TEST_P(PipelineTest, ACancelledSuccessorWithDiagnosticsLeaksNoDeviceMemory) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("chiprt_pipeline_cancel_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const DeviceBuffer data = zeroed();
  CallConfig with_diag = config();
  with_diag.diagnostics = DiagnosticsConfig::all(dir.string());
  // One good run on each bank first: what stays committed between runs.
  worker_.submit(0, args_for(data, kAddOne, 1), with_diag).wait();
  worker_.submit(0, args_for(data, kAddOne, 2), with_diag).wait();
  const uint64_t baseline = worker_.device_bytes_in_use();
  for (int round = 0; round < 3; ++round) {
    g_gate.store(false);
    g_gated_entered.store(0);
    worker_.memset(data, 0, kN * sizeof(float));  // clears what the last round's failure poisoned
    RunHandle failing = worker_.submit(0, args_for(data, kGatedThrow, 3), with_diag);
    ASSERT_TRUE(gated_started(1));
    RunHandle successor = worker_.submit(0, args_for(data, kAddOne, 4), with_diag);
    std::this_thread::sleep_for(5ms);
    open_gate();
    EXPECT_EQ(test::error_of([&] { failing.wait(); }).code(), StatusCode::KernelFault);
    const Error cancelled = test::error_of([&] { successor.wait(); });
    EXPECT_EQ(cancelled.code(), StatusCode::Cancelled);
  }
  EXPECT_EQ(worker_.device_bytes_in_use(), baseline);
  std::filesystem::remove_all(dir);
}

// replay_graph with runs alternating between the banks: each bank caches its own image, so
// after one build per bank every run replays (host_build_graph); tensormap_ringbuffer refuses a
// replay from the handle, as run() does.
TEST_P(PipelineTest, ReplayRunsReplayInBothBanks) {
  const DeviceBuffer data = zeroed();
  CallConfig replay = config();
  replay.replay_graph = true;
  if (GetParam() == RuntimeVariant::TensormapRingbuffer) {
    RunHandle refused = worker_.submit(0, args_for(data, kAddOne, 1), replay);
    EXPECT_EQ(test::error_of([&] { refused.wait(); }).code(), StatusCode::InvalidConfig);
    return;
  }
  std::vector<RunHandle> handles;
  for (int i = 0; i < 8; ++i) {
    handles.push_back(worker_.submit(0, args_for(data, kAddOne, 1), replay));
  }
  for (RunHandle& handle : handles) handle.wait();
  EXPECT_EQ(read(data), std::vector<float>(kN, 8.0f));
  EXPECT_EQ(host::runner_of(worker_).replayed_runs(), 6u);
  // The orchestration ran once per bank.
  EXPECT_EQ(orchestrated().size(), 2u);
}

// Diagnostics with runs overlapping: each run its own directory, complete.
TEST_P(PipelineTest, DiagnosticsOfOverlappingRuns) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("chiprt_pipeline_diag_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const DeviceBuffer data = zeroed();
  CallConfig with_diag = config();
  with_diag.diagnostics = DiagnosticsConfig::all(dir.string());
  std::vector<RunHandle> handles;
  for (uint64_t run = 1; run <= 4; ++run) {
    handles.push_back(worker_.submit(0, args_for(data, kAddOne, run), with_diag));
  }
  std::set<std::string> dirs;
  for (RunHandle& handle : handles) {
    const RunReport report = handle.wait();
    EXPECT_TRUE(dirs.insert(report.diagnostics_dir).second);
    EXPECT_TRUE(
        std::filesystem::exists(std::filesystem::path(report.diagnostics_dir) / "trace.json"));
    EXPECT_THAT(diagnostics_summary(report.diagnostics_dir), HasSubstr("critical path: "));
  }
  EXPECT_EQ(dirs.size(), 4u);
  EXPECT_EQ(read(data), std::vector<float>(kN, 4.0f));
  std::filesystem::remove_all(dir);
}

// The trace shows what overlaps, once two runs' directories are put on one clock by their
// anchors (host ns from the run's start, chip cycles: the sim chip's cycles are the steady
// clock's ns): host_build_graph's run 2 orchestration (a host span) lies inside run 1's kernel;
// tensormap_ringbuffer's run 2 submits (chip-side spans of its orchestrator) start after it.
TEST_P(PipelineTest, TheTraceShowsWhatOverlapsTheExecutingRun) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("chiprt_pipeline_trace_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const DeviceBuffer first = zeroed();
  const DeviceBuffer second = zeroed();
  CallConfig with_diag = config();
  with_diag.diagnostics = DiagnosticsConfig::all(dir.string());
  const host::DeviceRunner& runner = host::runner_of(worker_);
  const uint64_t graphs_before = runner.host_graphs_built();
  RunHandle one = worker_.submit(0, args_for(first, kGatedAddOne, 1), with_diag);
  ASSERT_TRUE(gated_started(1));
  RunHandle two = worker_.submit(0, args_for(second, kAddOne, 2), with_diag);
  const bool host_orchestration = GetParam() == RuntimeVariant::HostBuildGraph;
  if (host_orchestration) {
    // Run 2's graph built, its orchestration span ended: not merely its function called (the
    // span ends after the graph is finished, which under ThreadSanitizer outlasted a release
    // that followed the call).
    for (int i = 0; i < 10000 && runner.host_graphs_built() < graphs_before + 2; ++i) {
      std::this_thread::sleep_for(1ms);
    }
    ASSERT_EQ(runner.host_graphs_built(), graphs_before + 2) << "run 2 was not built under run 1";
  } else {
    std::this_thread::sleep_for(20ms);  // time for run 2 to be prepared (nothing to wait for)
  }
  open_gate();
  const diagnostics::RunModel executing =
      diagnostics::read_run_directory(one.wait().diagnostics_dir);
  const diagnostics::RunModel next = diagnostics::read_run_directory(two.wait().diagnostics_dir);
  // Chip-clock ns of a time of `model` (ns from its run's start).
  auto absolute = [](const diagnostics::RunModel& model, uint64_t run_ns) {
    EXPECT_EQ(model.clock_hz, 1'000'000'000u);
    const auto [anchor_ns, anchor_cycles] = model.anchors.front();
    return anchor_cycles - anchor_ns + run_ns;
  };
  ASSERT_EQ(executing.blocks.size(), 1u);
  const diagnostics::BlockRun& kernel = executing.blocks.front();
  if (host_orchestration) {
    const diagnostics::HostSpan* orchestration = nullptr;
    for (const diagnostics::HostSpan& span : next.host_spans) {
      if (span.name == "orchestration") orchestration = &span;
    }
    ASSERT_NE(orchestration, nullptr);
    EXPECT_GE(absolute(next, orchestration->begin_ns), absolute(executing, kernel.start_ns));
    EXPECT_LE(absolute(next, orchestration->end_ns), absolute(executing, kernel.end_ns));
  } else {
    int submits = 0;
    for (const diagnostics::ThreadSpan& span : next.thread_spans) {
      if (span.kind != diagnostics::ThreadSpan::Kind::Submit) continue;
      ++submits;
      EXPECT_GE(absolute(next, span.begin_ns), absolute(executing, kernel.end_ns));
    }
    EXPECT_EQ(submits, 1);
  }
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(BothVariants, PipelineTest, ::testing::ValuesIn(test::kBothVariants),
                         [](const ::testing::TestParamInfo<RuntimeVariant>& info) {
                           return std::string(runtime_variant_name(info.param));
                         });

}  // namespace
}  // namespace chiprt::host
