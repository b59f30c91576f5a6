// The host side of device faults, against a test double of an isolated device
// (fault_platform.h): a crashed device ends the run with KernelCrashed naming what crashed, a
// kernel past the op execute timeout gets the device killed and the run ends with
// OpExecuteTimeout (also after the scheduler watchdog reported first), a faulted device refuses
// work until DeviceRunner::reset_device (Worker::reset), which re-registers the callables,
// returns the quarantined memory and makes the old buffers "lost".
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "chiprt/callable.h"
#include "chiprt/kernel.h"
#include "chiprt/orchestration.h"
#include "common/run_context.h"
#include "fault_platform.h"
#include "host/device_runner.h"
#include "host/log.h"
#include "host/run_steps.h"
#include "host_test_support.h"

namespace chiprt::host {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Clock = std::chrono::steady_clock;
using Kind = platform::DeviceFault::Kind;

// --- chip code of the tests -----------------------------------------------------------------

std::shared_ptr<test::FaultControl> g_control;
platform::DeviceFault g_fault;  // what the crashing code dies of
int g_crash_block = -1;         // crash only in this SPMD block (-1: every block)
std::atomic<bool> g_release{false};
std::atomic<bool> g_spinning{false};

void hold_until_released() {
  g_spinning.store(true, std::memory_order_release);
  while (!g_release.load(std::memory_order_acquire)) g_release.wait(false);
}
void release_held() {
  g_release.store(true, std::memory_order_release);
  g_release.notify_all();
}

// Dies as the device's signal handler would see it: the thread's run context is the record.
void crashing_kernel(int64_t* args) {
  if (g_crash_block >= 0 && kernel::block_idx(args) != static_cast<uint32_t>(g_crash_block)) {
    return;
  }
  g_control->crash(g_fault, common::current_run_context());
  hold_until_released();
}
void stuck_kernel(int64_t*) {
  hold_until_released();
}
// Keeps the launch progressing until the test releases the stuck kernel.
void short_kernel(int64_t*) {
  if (!g_release.load(std::memory_order_acquire)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}
constexpr uint64_t kN = 16;
void add_one(int64_t* args) {
  float* data = kernel::tensor_arg<float>(args, 0);
  for (uint64_t i = 0; i < kN; ++i) data[i] += 1.0f;
}

void one_aic_task(Orchestration& orch, const TaskArgs&) {
  TaskArgs task;
  orch.submit(0, CoreType::AIC, task);
}
void two_block_aiv_task(Orchestration& orch, const TaskArgs&) {
  TaskArgs task;
  orch.submit(TaskSpec::kernel(0, CoreType::AIV, 2), task);
}
// A stuck AIV task while many short AIC tasks keep the launch progressing.
void stuck_among_progress(Orchestration& orch, const TaskArgs&) {
  TaskArgs stuck;
  orch.submit(1, CoreType::AIV, stuck);
  for (int i = 0; i < 3000; ++i) {
    TaskArgs task;
    orch.submit(2, CoreType::AIC, task);
  }
}
void crashing_orchestration(Orchestration&, const TaskArgs&) {
  g_control->crash(g_fault, common::current_run_context());
  hold_until_released();
}
void stuck_orchestration(Orchestration&, const TaskArgs&) {
  hold_until_released();
}
void add_one_task(Orchestration& orch, const TaskArgs& args) {
  TaskArgs task;
  task.inout(args.tensor(0));
  orch.submit(0, CoreType::AIV, task);
}

std::vector<uint8_t> callable(OrchestrationEntry orchestration, CoreType core = CoreType::AIC,
                              KernelEntry kernel = &crashing_kernel) {
  return CallableBuilder()
      .orchestration_function(orchestration, ArgSignature{})
      .kernel_function(0, core, kernel, ArgSignature{})
      .kernel_function(1, CoreType::AIV, &stuck_kernel, ArgSignature{})
      .kernel_function(2, CoreType::AIC, &short_kernel, ArgSignature{})
      .build();
}
std::vector<uint8_t> add_one_callable() {
  return CallableBuilder()
      .orchestration_function(&add_one_task, ArgSignature::of({ArgTag::InOut}))
      .kernel_function(0, CoreType::AIV, &add_one, ArgSignature::of({ArgTag::InOut}))
      .build();
}

// --- the fixture ----------------------------------------------------------------------------

struct Timeouts {
  const char* scheduler_ms = "10000";
  const char* op_execute_us = "20000000";
  const char* stream_sync_ms = "30000";
};

class DeviceFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_level_ = log_level();
    set_log_level(LogLevel::Off);
    g_control = std::make_shared<test::FaultControl>();
    g_fault = platform::DeviceFault{};
    g_crash_block = -1;
    g_release.store(false);
    g_spinning.store(false);
  }
  void TearDown() override {
    release_held();
    if (runner_ != nullptr) {
      // The held chip code returns; a reset lets the in-process launch drain before teardown.
      try {
        runner_->reset_device();
      } catch (const Error&) {
      }
      runner_.reset();
    }
    g_control.reset();
    set_log_level(saved_level_);
  }

  DeviceRunner& make_runner(const Timeouts& timeouts = {},
                            SimCoreExecution cores = SimCoreExecution::Executors,
                            FacadeText facade = {}) {
    RunnerOptions options =
        test::options_with_env({{kSchedulerTimeoutEnv, timeouts.scheduler_ms},
                                {kOpExecuteTimeoutEnv, timeouts.op_execute_us},
                                {kStreamSyncTimeoutEnv, timeouts.stream_sync_ms}});
    options.facade = std::move(facade);
    runner_ = std::make_unique<DeviceRunner>(
        std::make_unique<test::FaultPlatform>(test::make_sim(1, false, 64ull << 20, 2, cores),
                                              g_control),
        options);
    runner_->attach(0);
    return *runner_;
  }

  // Runs and returns the error the run ends with.
  Error run_error(int32_t id, const CallConfig& config = test::small_call_config(4096)) {
    try {
      runner_->run(id, TaskArgs{}, config);
    } catch (const Error& e) {
      return e;
    }
    ADD_FAILURE() << "the run should fail";
    return Error(StatusCode::Ok, "");
  }

  static CallConfig ring_config() {
    CallConfig config = test::small_call_config(64);
    config.runtime = RuntimeVariant::TensormapRingbuffer;
    return config;
  }

  std::unique_ptr<DeviceRunner> runner_;
  LogLevel saved_level_ = LogLevel::Warn;
};

platform::DeviceFault signal_fault(int signal, uint64_t addr = 0, bool has_addr = false) {
  platform::DeviceFault fault;
  fault.kind = Kind::Signal;
  fault.signal = signal;
  fault.has_fault_addr = has_addr;
  fault.fault_addr = addr;
  return fault;
}

// --- KernelCrashed --------------------------------------------------------------------------

struct CrashCase {
  const char* name;
  platform::DeviceFault fault;
  const char* event;  // what the message says the kernel did
};

class KernelCrash : public DeviceFaultTest, public ::testing::WithParamInterface<CrashCase> {};

TEST_P(KernelCrash, NamesTheTaskKernelCoreBlockAndWhatHappened) {
  DeviceRunner& runner = make_runner();
  runner.register_callable(0, callable(&one_aic_task));
  g_fault = GetParam().fault;
  const Error e = run_error(0);
  EXPECT_EQ(e.code(), StatusCode::KernelCrashed) << e.what();
  EXPECT_EQ(e.message(),
            std::string("callable id 0: device crash: task 0 (kernel func_id 0, function kernel) "
                        "on core 0 (AIC, cluster 0), block 0 of 1, ") +
                GetParam().event +
                " (device process pid 4242); device memory is lost; call Worker::reset()");
  EXPECT_TRUE(runner.faulted());
}

INSTANTIATE_TEST_SUITE_P(
    Faults, KernelCrash,
    ::testing::Values(
        CrashCase{"Segv", signal_fault(SIGSEGV, 0x10, true),
                  "raised SIGSEGV (invalid memory reference) at address 0x10"},
        CrashCase{"Bus", signal_fault(SIGBUS, 0x7f00, true),
                  "raised SIGBUS (bus error: misaligned access or memory past the end of a "
                  "mapping) at address 0x7f00"},
        // SIGFPE and SIGILL carry the instruction's address, which the message leaves out.
        CrashCase{"Fpe", signal_fault(SIGFPE, 0x401000, true),
                  "raised SIGFPE (arithmetic fault, e.g. integer division by zero)"},
        CrashCase{"Ill", signal_fault(SIGILL, 0x401000, true),
                  "raised SIGILL (illegal instruction)"},
        CrashCase{"Abort", signal_fault(SIGABRT), "raised SIGABRT (abort() or a failed assert)"},
        CrashCase{"Exit",
                  [] {
                    platform::DeviceFault fault;
                    fault.kind = Kind::Exit;
                    fault.exit_code = 3;
                    return fault;
                  }(),
                  "called exit(3)"}),
    [](const ::testing::TestParamInfo<CrashCase>& info) { return std::string(info.param.name); });

TEST_F(DeviceFaultTest, AnSpmdBlockOnAnAivCoreIsNamedWithItsBlock) {
  DeviceRunner& runner = make_runner();
  runner.register_callable(0, callable(&two_block_aiv_task, CoreType::AIV));
  g_fault = signal_fault(SIGSEGV, 0x8, true);
  g_crash_block = 1;
  const Error e = run_error(0);
  EXPECT_EQ(e.code(), StatusCode::KernelCrashed) << e.what();
  // Cores 1 and 2 are cluster 0's AIV cores; either may run block 1.
  EXPECT_THAT(e.message(), ::testing::MatchesRegex(
                               "callable id 0: device crash: task 0 \\(kernel func_id 0, function "
                               "kernel\\) on core [12] \\(AIV, cluster 0\\), block 1 of 2, raised "
                               "SIGSEGV .* at address 0x8 .*"));
}

TEST_F(DeviceFaultTest, ADeathWithoutContextNamesTheCoresThatWereExecuting) {
  DeviceRunner& runner = make_runner();
  runner.register_callable(0, callable(&one_aic_task, CoreType::AIC, &stuck_kernel));
  // The kernel is held; the device then "dies" without a record.
  std::thread killer([] {
    while (!g_spinning.load(std::memory_order_acquire)) std::this_thread::yield();
    g_control->crash_without_context(signal_fault(SIGKILL));
  });
  const Error e = run_error(0);
  killer.join();
  EXPECT_EQ(e.code(), StatusCode::KernelCrashed) << e.what();
  EXPECT_EQ(e.message(),
            "callable id 0: device crash: the device process raised SIGKILL (killed); it "
            "recorded no thread; executing then: task 0 (kernel func_id 0, function kernel) on "
            "core 0 (AIC, cluster 0), block 0 of 1 (device process pid 4242); device memory is "
            "lost; call Worker::reset()");
}

// A device that died (without a record) before it took the launch, e.g. killed from outside
// between runs: the launch's handshake cells were never set up by the chip, so no core is named
// (their zeroed memory must not read as "task 0 ... block 0 of 0" on every core).
TEST_F(DeviceFaultTest, ADeathBeforeTheLaunchNamesNoCore) {
  DeviceRunner& runner = make_runner();
  runner.register_callable(0, callable(&one_aic_task));
  g_control->crash_at_next_launch(signal_fault(SIGKILL));
  const Error e = run_error(0);
  EXPECT_EQ(e.code(), StatusCode::KernelCrashed) << e.what();
  EXPECT_EQ(e.message(),
            "callable id 0: device crash: the device process raised SIGKILL (killed); it "
            "recorded no thread, and no core was executing a task (device process pid 4242); "
            "device memory is lost; call Worker::reset()");
}

// A device the platform killed (it stopped answering) is reported with the platform's summary,
// which names the reason once.
TEST_F(DeviceFaultTest, AKilledDeviceNamesTheReasonOnce) {
  DeviceRunner& runner = make_runner();
  runner.register_callable(0, callable(&one_aic_task));
  g_control->kill("it did not answer wait within 5020 ms");
  const Error e = run_error(0);
  EXPECT_EQ(e.code(), StatusCode::DeviceFaulted) << e.what();
  EXPECT_EQ(e.message(),
            "callable id 0: the device was lost: the device process was killed: it did not "
            "answer wait within 5020 ms; device memory is lost; call Worker::reset()");
}

TEST_F(DeviceFaultTest, AChipOrchestrationCrashNamesTheOrchestrationFunction) {
  DeviceRunner& runner = make_runner();
  runner.register_callable(0, callable(&crashing_orchestration),
                           RuntimeVariant::TensormapRingbuffer);
  g_fault = signal_fault(SIGABRT);
  const Error e = run_error(0, ring_config());
  EXPECT_EQ(e.code(), StatusCode::KernelCrashed) << e.what();
  EXPECT_EQ(e.message(),
            "callable id 0: device crash: the orchestration function of callable 0 on AICPU "
            "thread 0 raised SIGABRT (abort() or a failed assert) (device process pid 4242); "
            "device memory is lost; call Worker::reset()");
}

// The device may die while it takes the launch (an orchestration function that crashes at once):
// the run ends the same way, with the same message.
TEST_F(DeviceFaultTest, ACrashDuringTheLaunchEndsTheRunTheSameWay) {
  DeviceRunner& runner = make_runner();
  runner.register_callable(0, callable(&stuck_orchestration), RuntimeVariant::TensormapRingbuffer);
  platform::DeviceFault fault = signal_fault(SIGSEGV, 0, true);
  fault.context_known = true;
  fault.role = common::RunRole::ChipOrchestration;
  g_control->crash_at_next_launch(fault);
  const Error e = run_error(0, ring_config());
  EXPECT_EQ(e.code(), StatusCode::KernelCrashed) << e.what();
  EXPECT_EQ(e.message(),
            "callable id 0: device crash: the orchestration function of callable 0 on AICPU "
            "thread 0 raised SIGSEGV (invalid memory reference) at address 0x0 (device process "
            "pid 4242); device memory is lost; call Worker::reset()");
  EXPECT_TRUE(runner.faulted());
  EXPECT_EQ(runner.launches(), 0u);
}

// --- after the fault: refusal, reset, callables, buffers, capacity ----------------------------

TEST_F(DeviceFaultTest, AFaultedDeviceRefusesWorkUntilResetThenRunsTheSameCallables) {
  DeviceRunner& runner = make_runner();
  runner.register_callable(0, callable(&one_aic_task));
  runner.register_callable(1, add_one_callable());
  const DeviceBuffer old_buffer = runner.allocate(kN * sizeof(float));
  g_fault = signal_fault(SIGSEGV, 0x10, true);
  EXPECT_EQ(run_error(0).code(), StatusCode::KernelCrashed);

  for (const std::function<void()>& call : std::vector<std::function<void()>>{
           [&] { runner.run(1, TaskArgs{}); }, [&] { runner.allocate(64); },
           [&] { runner.register_callable(2, add_one_callable()); }}) {
    try {
      call();
      ADD_FAILURE() << "a faulted device must refuse";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), StatusCode::DeviceFaulted) << e.what();
      EXPECT_THAT(e.message(), HasSubstr("raised SIGSEGV (invalid memory reference)"));
      EXPECT_THAT(e.message(), HasSubstr("call Worker::reset()"));
    }
  }
  EXPECT_TRUE(runner.has_callable(0));  // still registered with the host

  release_held();
  runner.reset_device();
  EXPECT_FALSE(runner.faulted());
  EXPECT_EQ(runner.reset_count(), 1u);
  EXPECT_EQ(g_control->resets.load(), 1);
  EXPECT_TRUE(runner.has_callable(0));
  EXPECT_TRUE(runner.has_callable(1));

  // The old buffer is lost: every use names the reset.
  const std::string lost = "device buffer " + hex(old_buffer.addr) + " (" +
                           std::to_string(kN * sizeof(float)) +
                           " bytes) was lost when the device was reset (reset 1); allocate a "
                           "new one";
  float host[kN] = {};
  auto expect_lost = [&](const std::function<void()>& call) {
    try {
      call();
      ADD_FAILURE() << "a lost buffer must be refused";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), StatusCode::InvalidDevicePointer) << e.what();
      EXPECT_THAT(e.message(), HasSubstr(lost));
    }
  };
  expect_lost([&] { runner.copy_to_device(old_buffer.addr, host, sizeof(host)); });
  expect_lost([&] { runner.copy_from_device(host, old_buffer.addr, sizeof(host)); });
  expect_lost([&] { runner.memset(old_buffer.addr, 0, sizeof(host)); });
  expect_lost([&] {
    TaskArgs args;
    args.inout(Tensor::make(old_buffer, {kN}, DataType::F32));
    runner.run(1, args, test::small_call_config(64));
  });
  expect_lost([&] { runner.free(old_buffer.addr); });

  // The re-registered callable runs on the new device with the right result.
  const DeviceBuffer data = runner.allocate(kN * sizeof(float));
  runner.memset(data.addr, 0, data.size);
  TaskArgs args;
  args.inout(Tensor::make(data, {kN}, DataType::F32));
  runner.run(1, args, test::small_call_config(64));
  runner.run(1, args, test::small_call_config(64));
  std::vector<float> out(kN);
  runner.copy_from_device(out.data(), data.addr, data.size);
  EXPECT_EQ(out, std::vector<float>(kN, 2.0f));
}

TEST_F(DeviceFaultTest, AResetReturnsTheMemoryAFaultQuarantined) {
  DeviceRunner& runner = make_runner();
  runner.register_callable(0, callable(&one_aic_task));
  runner.ensure_initialized();
  const uint64_t baseline = runner.bytes_in_use();  // status block and the callable's upload
  const uint64_t capacity = runner.platform().capacity();
  for (int fault = 0; fault < 3; ++fault) {
    runner.allocate(capacity / 4);
    // Held in every round: a dead device writes nothing more, and a kernel that returned at once
    // would let the in-process chip write the launch's cells while the host reads them.
    g_release.store(false, std::memory_order_release);
    g_fault = signal_fault(SIGSEGV, 0x10, true);
    EXPECT_EQ(run_error(0).code(), StatusCode::KernelCrashed);
    release_held();
    runner.reset_device();
    EXPECT_EQ(runner.bytes_in_use(), baseline) << "after fault " << fault;
    const DeviceBuffer large = runner.allocate(capacity * 3 / 4);
    runner.free(large.addr);
  }
  EXPECT_EQ(runner.reset_count(), 3u);
}

// --- OpExecuteTimeout -----------------------------------------------------------------------

class OpExecute : public DeviceFaultTest, public ::testing::WithParamInterface<SimCoreExecution> {};

// One stuck kernel and nothing else: the scheduler watchdog reports it first (100 ms); the
// isolated host waits on past the fault grace (1 s) to the kernel's op-execute deadline (1.4 s),
// kills the device and reports both.
TEST_P(OpExecute, AfterTheWatchdogTheHostWaitsForTheKernelsDeadlineAndKills) {
  DeviceRunner& runner = make_runner({"100", "1400000", "3000"}, GetParam());
  runner.register_callable(0, callable(&one_aic_task, CoreType::AIC, &stuck_kernel));
  CallConfig config = test::small_call_config(64);
  config.aicpu_thread_num = 2;
  const Error e = run_error(0, config);
  EXPECT_EQ(e.code(), StatusCode::OpExecuteTimeout) << e.what();
  EXPECT_THAT(e.message(),
              HasSubstr("callable id 0: task 0 (kernel func_id 0, function kernel) on core 0 "
                        "(AIC, cluster 0), block 0 of 1, ran longer than the op execute timeout "
                        "(1400000 us, CHIPRT_OP_EXECUTE_TIMEOUT_US); the device process (pid "
                        "4242) was killed; the scheduler watchdog reported first: "));
  EXPECT_THAT(e.message(), HasSubstr("; device memory is lost; call Worker::reset()"));
  EXPECT_EQ(g_control->kills.load(), 1);
  EXPECT_THAT(g_control->kill_reason(), HasSubstr("op execute timeout: core 0"));
  EXPECT_TRUE(runner.faulted());
  // Released after the assertions, so the in-process thread ends.
}

INSTANTIATE_TEST_SUITE_P(KernelsOn, OpExecute,
                         ::testing::Values(SimCoreExecution::Executors, SimCoreExecution::Aicpu),
                         [](const ::testing::TestParamInfo<SimCoreExecution>& info) {
                           return std::string(info.param == SimCoreExecution::Aicpu ? "Aicpu"
                                                                                    : "Executors");
                         });

// The launch keeps progressing (short AIC tasks), so the watchdog never fires: the op execute
// timeout alone ends the run, naming the stuck AIV task.
TEST_F(DeviceFaultTest, AStuckKernelAmongProgressingTasksIsKilledAtItsOpExecuteDeadline) {
  DeviceRunner& runner = make_runner({"100", "300000", "2000"});
  runner.register_callable(0, callable(&stuck_among_progress));
  const Error e = run_error(0);
  EXPECT_EQ(e.code(), StatusCode::OpExecuteTimeout) << e.what();
  EXPECT_THAT(e.message(),
              ::testing::MatchesRegex("callable id 0: task 0 \\(kernel func_id 1, function "
                                      "kernel\\) on core [12] \\(AIV, cluster 0\\), block 0 of 1, "
                                      "ran longer than the op execute timeout \\(300000 us, .*"));
  EXPECT_THAT(e.message(), Not(HasSubstr("watchdog")));
  EXPECT_EQ(g_control->kills.load(), 1);
}

// A stuck orchestration function runs no kernel: once the watchdog reported it and the fault
// grace is over, the isolated host kills the device instead of leaving the thread spinning.
TEST_F(DeviceFaultTest, StuckChipThreadsOutsideKernelsAreKilledAfterTheGrace) {
  DeviceRunner& runner = make_runner({"100", "300000", "2000"});
  runner.register_callable(0, callable(&stuck_orchestration), RuntimeVariant::TensormapRingbuffer);
  const Error e = run_error(0, ring_config());
  EXPECT_EQ(e.code(), StatusCode::SchedulerTimeout) << e.what();
  EXPECT_THAT(e.message(), HasSubstr("the device process was killed"));
  EXPECT_EQ(g_control->kills.load(), 1);
  EXPECT_TRUE(runner.faulted());
}

// In process nothing is killed: the watchdog's fault is reported as before.
TEST_F(DeviceFaultTest, InProcessTheWatchdogStillEndsTheRunAndNothingIsKilled) {
  g_control->isolated.store(false);
  DeviceRunner& runner = make_runner({"100", "1400000", "3000"});
  runner.register_callable(0, callable(&one_aic_task, CoreType::AIC, &stuck_kernel));
  const Error e = run_error(0);
  EXPECT_EQ(e.code(), StatusCode::SchedulerTimeout) << e.what();
  EXPECT_EQ(g_control->kills.load(), 0);
}

// --- the facade's calls in the texts ---------------------------------------------------------

// A runner behind another facade than a Worker (a chip of a node) names that facade's reset and
// malloc in every text that tells the user what to do, and never a Worker they do not have.
FacadeText node_chip_facade() {
  FacadeText facade;
  facade.owner = "Node";
  facade.reset_call = "Node::reset_chip(2)";
  facade.malloc_call = "Node::malloc";
  return facade;
}

TEST_F(DeviceFaultTest, TheTextsNameTheFacadesResetAndMallocAfterAKernelCrash) {
  DeviceRunner& runner = make_runner({}, SimCoreExecution::Executors, node_chip_facade());
  runner.register_callable(0, callable(&one_aic_task));
  runner.register_callable(1, add_one_callable());
  g_fault = signal_fault(SIGSEGV, 0x10, true);
  const Error crash = run_error(0);
  EXPECT_EQ(crash.code(), StatusCode::KernelCrashed) << crash.what();
  EXPECT_THAT(crash.message(), HasSubstr("; device memory is lost; call Node::reset_chip(2)"));
  EXPECT_THAT(crash.message(), Not(HasSubstr("Worker")));
  try {
    runner.allocate(64);
    ADD_FAILURE() << "a faulted device must refuse";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::DeviceFaulted) << e.what();
    EXPECT_THAT(e.message(), HasSubstr("; call Node::reset_chip(2)"));
    EXPECT_THAT(e.message(), Not(HasSubstr("Worker")));
  }

  release_held();
  runner.reset_device();
  TaskArgs args;
  args.inout(Tensor::make(DeviceBuffer{0x1000, kN * sizeof(float)}, {kN}, DataType::F32));
  try {
    runner.run(1, args, test::small_call_config(64));
    ADD_FAILURE() << "a buffer that is no allocation must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::InvalidDevicePointer) << e.what();
    EXPECT_THAT(e.message(), HasSubstr("not inside a live device allocation from Node::malloc; "
                                       "pass buffers from Node::malloc that have not been freed"));
    EXPECT_THAT(e.message(), Not(HasSubstr("Worker")));
  }
}

TEST_F(DeviceFaultTest, TheTextsNameTheFacadesResetWhenTheWatchdogAbandonsTheDevice) {
  DeviceRunner& runner =
      make_runner({"100", "300000", "2000"}, SimCoreExecution::Executors, node_chip_facade());
  runner.register_callable(0, callable(&stuck_orchestration), RuntimeVariant::TensormapRingbuffer);
  const Error e = run_error(0, ring_config());
  EXPECT_EQ(e.code(), StatusCode::SchedulerTimeout) << e.what();
  EXPECT_THAT(e.message(), HasSubstr(" abandoned, further runs are refused until "
                                     "Node::reset_chip(2)"));
  EXPECT_THAT(e.message(), Not(HasSubstr("Worker")));
}

}  // namespace
}  // namespace chiprt::host
