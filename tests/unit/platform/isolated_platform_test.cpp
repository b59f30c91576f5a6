// The isolated simulated device (sim/isolated_platform.h): device memory in a memory file mapped
// at different addresses by the host and the device process, launches of small chip programs in
// the device process, loaded objects there, every fault signal and exit() recorded with the
// faulting address and RunContext, kill_device, reset_device, output forwarding, the
// CHIPRT_SIM_ISOLATION option, and no leaked process, fd, mapping or thread over crash/reset
// cycles.
#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dirent.h>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/run_context.h"
#include "device_processes.h"
#include "libm_image.h"
#include "platform/sim/isolated_platform.h"
#include "platform/sim/sim_platform.h"

namespace chiprt::platform {
namespace {

constexpr uint64_t kGenerousWaitMs = 60'000;  // "did not hang", never a timing assertion

bool contains(const Status& status, const std::string& text) {
  return status.message().find(text) != std::string::npos;
}

SimOptions small_config(SimCoreExecution cores = SimCoreExecution::Aicpu) {
  SimOptions config;
  config.clusters = 1;
  config.aicpu_threads = 2;
  config.host_threads = 1;
  config.memory_bytes = 16ull << 20;
  config.core_execution = cores;
  config.isolation = SimIsolation::Process;
  return config;
}

// What the test programs read and write, in device memory (ctx is its device address).
enum class Action : uint32_t {
  Echo = 0,  // out[index] = in + index
  Segv,
  Bus,
  Ill,
  Fpe,
  Abort,
  Trap,
  Exit,
  Hang,
  Print,       // printf on stdout and stderr, then return
  PrintAbort,  // printf, then abort
  KickCore,    // kick core 0 through the published services; core_service runs `core_action`
  CallCos,     // out_double = cos(0) through the function at `function`
  LongLine,    // writes long_line_output() on stdout
  Daemonize,   // starts a daemon (fork, setsid, fork); out[0] = its pid as /proc names it
  WriteAt,     // writes a word at `target`
};

struct TestBlock {
  common::ChipServices services;
  Action action = Action::Echo;
  Action core_action = Action::Echo;
  uint32_t in = 0;
  uint32_t out[8] = {};
  uint64_t fault_addr = 0;  // where the program faults (written by it before it faults)
  uint64_t function = 0;
  uint64_t target = 0;
  double out_double = 0;
  uint32_t core_ran = 0;  // set by core_service (atomically: two chip threads)
};

// A real integer division (UBSan's check would abort first, a constant one would be folded).
[[gnu::noipa, gnu::no_sanitize_undefined]] int divide(int dividend, int divisor) {
  volatile int quotient = dividend / divisor;
  return quotient;
}

constexpr int kBurstLines = 2000;

// A line of 16 MiB (then a short one): a progress bar redrawn with '\r', then binary bytes (NUL,
// '\r', every value but '\n' and '[', so no prefix can appear in it by chance), deterministic.
std::string long_line_output() {
  std::string text = "progress:";
  for (int percent = 0; percent <= 100; percent += 5) {
    text += "\r[" + std::string(static_cast<std::size_t>(percent / 5), '#') +
            std::string(static_cast<std::size_t>(20 - percent / 5), ' ') + "] " +
            std::to_string(percent) + "%";
  }
  constexpr std::size_t kBinaryBytes = 16u << 20;
  uint64_t state = 0x9e3779b97f4a7c15ull;
  text.reserve(text.size() + kBinaryBytes + 16);
  for (std::size_t i = 0; i < kBinaryBytes; ++i) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    char byte = static_cast<char>(state >> 56);
    if (byte == '\n' || byte == '[') byte = static_cast<char>(byte ^ 0x80);
    text += byte;
  }
  text += "\nthe end\n";
  return text;
}

constexpr common::RunContext kKernelContext{common::RunRole::Kernel, 7, 42, 3};

void act(TestBlock* block, Action action, uint32_t index) {
  switch (action) {
    case Action::Echo:
      block->out[index] = block->in + index;
      return;
    case Action::Segv: {
      common::RunContextScope scope(kKernelContext);
      std::atomic_signal_fence(std::memory_order_seq_cst);  // the handler reads it
      volatile uintptr_t target = 0x18;                     // opaque to the compiler
      block->fault_addr = target;
      *reinterpret_cast<volatile int*>(target) = 1;
      return;
    }
    case Action::Bus: {
      common::RunContextScope scope(kKernelContext);
      std::atomic_signal_fence(std::memory_order_seq_cst);  // the handler reads it
      // A mapping past the end of its (empty) file.
      const int fd = memfd_create("chiprt-test-bus", 0);
      void* page = mmap(nullptr, 4096, PROT_READ, MAP_SHARED, fd, 0);
      block->fault_addr = reinterpret_cast<uint64_t>(page);
      (void)*static_cast<volatile int*>(page);
      return;
    }
    case Action::Ill: {
      common::RunContextScope scope(kKernelContext);
      std::atomic_signal_fence(std::memory_order_seq_cst);  // the handler reads it
      __builtin_trap();
    }
    case Action::Fpe: {
      common::RunContextScope scope(kKernelContext);
      std::atomic_signal_fence(std::memory_order_seq_cst);  // the handler reads it
      (void)divide(1, static_cast<int>(block->in));
      return;
    }
    case Action::Abort: {
      common::RunContextScope scope(kKernelContext);
      std::atomic_signal_fence(std::memory_order_seq_cst);  // the handler reads it
      std::abort();
    }
    case Action::Trap: {
      common::RunContextScope scope(kKernelContext);
      std::atomic_signal_fence(std::memory_order_seq_cst);  // the handler reads it
      std::raise(SIGTRAP);
      return;
    }
    case Action::Exit: {
      common::RunContextScope scope(kKernelContext);
      std::atomic_signal_fence(std::memory_order_seq_cst);  // the handler reads it
      std::exit(7);
    }
    case Action::Hang:
      for (;;) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    case Action::Print:
      std::printf("hello from the device\n");
      std::fprintf(stderr, "a warning from the device\n");
      return;
    case Action::PrintAbort:
      // Enough that the host forwards it only after the device died: the fault must wait for it.
      for (int line = 0; line < kBurstLines; ++line) std::printf("line %d of a burst\n", line);
      std::printf("last words\n");
      std::abort();
    case Action::KickCore:
      block->services.kick_core(block->services.ctx, 0);
      while (std::atomic_ref<uint32_t>(block->core_ran).load() == 0) std::this_thread::yield();
      return;
    case Action::LongLine: {
      const std::string text = long_line_output();
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fflush(stdout);
      return;
    }
    case Action::Daemonize:
      block->out[0] = static_cast<uint32_t>(test::start_daemon());
      return;
    case Action::WriteAt: {
      common::RunContextScope scope(kKernelContext);
      std::atomic_signal_fence(std::memory_order_seq_cst);  // the handler reads it
      block->fault_addr = block->target;
      *reinterpret_cast<volatile uint32_t*>(block->target) = 0x5a5a5a5a;
      return;
    }
    case Action::CallCos:
      block->out_double = reinterpret_cast<double (*)(double)>(block->function)(0.0);
      return;
  }
}

void test_entry(void* ctx, uint32_t index, uint32_t) {
  auto* block = static_cast<TestBlock*>(ctx);
  if (block->action == Action::Echo || index == 0) act(block, block->action, index);
}

void test_core_service(void* ctx, uint32_t) {
  auto* block = static_cast<TestBlock*>(ctx);
  act(block, block->core_action, 0);
  std::atomic_ref<uint32_t>(block->core_ran).store(1);
}

class IsolatedPlatformTest : public ::testing::Test {
 protected:
  void SetUp() override { create(small_config()); }
  void create(const SimOptions& config, const sim::IsolationTuning& tuning = {}) {
    platform_.reset();
    platform_ = std::make_unique<sim::IsolatedPlatform>(config, tuning);
    ASSERT_TRUE(platform_->attach(0).is_ok());
    ASSERT_TRUE(platform_->start_streams().is_ok());
    ASSERT_TRUE(platform_->load_chip_runtime().is_ok());
    ASSERT_TRUE(platform_->alloc(sizeof(TestBlock), 64, &block_).is_ok());
    TestBlock block;
    block.services = platform_->services();
    write(block);
  }
  void write(const TestBlock& block) {
    ASSERT_TRUE(platform_->copy_to_device(block_.addr, &block, sizeof(block)).is_ok());
  }
  TestBlock read() {
    TestBlock block;
    EXPECT_TRUE(platform_->copy_from_device(&block, block_.addr, sizeof(block)).is_ok());
    return block;
  }
  Status run(Action action, uint32_t threads = 1, Action core_action = Action::Echo) {
    TestBlock block = read();
    block.action = action;
    block.core_action = core_action;
    block.core_ran = 0;
    write(block);
    sim::LaunchPrograms programs;
    programs.ctx = reinterpret_cast<void*>(block_.addr);
    programs.aicpu_entry = &test_entry;
    programs.core_service = &test_core_service;
    programs.aicpu_threads = threads;
    programs.cores = platform_->geometry().cores();
    if (Status launched = platform_->launch_programs(programs); !launched) return launched;
    return platform_->wait(kGenerousWaitMs);
  }

  // Launches a program that never returns (one AICPU thread, no cores).
  void launch_hang() {
    TestBlock block = read();
    block.action = Action::Hang;
    write(block);
    sim::LaunchPrograms programs{
        reinterpret_cast<void*>(block_.addr), &test_entry, &test_core_service, 1, 0, false};
    ASSERT_TRUE(platform_->launch_programs(programs).is_ok());
  }

  std::unique_ptr<sim::IsolatedPlatform> platform_;
  DeviceBuffer block_;
};

// ---- memory ----------------------------------------------------------------------------------

TEST_F(IsolatedPlatformTest, HostCopiesReachTheDeviceProcessAndBack) {
  EXPECT_TRUE(platform_->isolated());
  TestBlock block = read();
  block.in = 100;
  write(block);
  ASSERT_TRUE(run(Action::Echo, 2).is_ok());
  const TestBlock after = read();
  EXPECT_EQ(after.out[0], 100u);
  EXPECT_EQ(after.out[1], 101u);
  uint32_t word = 0;
  ASSERT_TRUE(
      platform_->load_device_word(block_.addr + offsetof(TestBlock, out) + 4, &word).is_ok());
  EXPECT_EQ(word, 101u);
  // Launches reuse the device process.
  const pid_t pid = platform_->device_pid();
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(run(Action::Echo, 2).is_ok());
  EXPECT_EQ(platform_->device_pid(), pid);
}

TEST_F(IsolatedPlatformTest, HostDereferenceOfADeviceAddressFaults) {
  DeviceBuffer buffer;
  ASSERT_TRUE(platform_->alloc(4096, 64, &buffer).is_ok());
  ASSERT_TRUE(platform_->memset(buffer.addr, 0x5a, 4096).is_ok());
  std::fflush(nullptr);
  const pid_t child = fork();
  if (child == 0) {
    signal(SIGSEGV, SIG_DFL);
    const char value = *reinterpret_cast<volatile const char*>(buffer.addr);
    _exit(value == 0x5a ? 0 : 1);
  }
  ASSERT_GT(child, 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status))
      << "a host read of device address 0x" << std::hex << buffer.addr << " did not fault";
  EXPECT_EQ(WTERMSIG(status), SIGSEGV);
}

TEST_F(IsolatedPlatformTest, TracksAllocationsInTheRegion) {
  const uint64_t base_in_use = platform_->bytes_in_use();
  EXPECT_EQ(platform_->capacity(), 16ull << 20);
  DeviceBuffer a, b, c;
  ASSERT_TRUE(platform_->alloc(1000, 64, &a).is_ok());
  ASSERT_TRUE(platform_->alloc(5000, 4096, &b).is_ok());
  ASSERT_TRUE(platform_->alloc(64, 1, &c).is_ok());
  EXPECT_EQ(b.addr % 4096, 0u);
  EXPECT_EQ(platform_->bytes_in_use(), base_in_use + 6064);
  std::vector<uint8_t> data(1000, 7);
  EXPECT_TRUE(platform_->copy_to_device(a.addr, data.data(), data.size()).is_ok());
  const Status overflow = platform_->copy_to_device(a.addr + 1, data.data(), data.size());
  EXPECT_EQ(overflow.code(), StatusCode::InvalidDevicePointer);
  EXPECT_TRUE(contains(overflow, "overflows allocation")) << overflow.message();
  EXPECT_EQ(platform_->copy_from_device(data.data(), 16, 4).code(),
            StatusCode::InvalidDevicePointer);
  // First fit: a freed range is reused.
  ASSERT_TRUE(platform_->free(b.addr).is_ok());
  const Status twice = platform_->free(b.addr);
  EXPECT_EQ(twice.code(), StatusCode::InvalidDevicePointer);
  EXPECT_TRUE(contains(twice, "double free")) << twice.message();
  DeviceBuffer reused;
  ASSERT_TRUE(platform_->alloc(4096, 4096, &reused).is_ok());
  EXPECT_EQ(reused.addr, b.addr);
  // Too much, then everything once the free ranges coalesced.
  DeviceBuffer huge;
  EXPECT_EQ(platform_->alloc(17ull << 20, 64, &huge).code(), StatusCode::OutOfDeviceMemory);
  for (uint64_t addr : {a.addr, c.addr, reused.addr, block_.addr}) {
    ASSERT_TRUE(platform_->free(addr).is_ok());
  }
  EXPECT_EQ(platform_->bytes_in_use(), 0u);
  ASSERT_TRUE(platform_->alloc(16ull << 20, 64, &huge).is_ok());
  EXPECT_EQ(platform_->alloc(64, 64, &a).code(), StatusCode::OutOfDeviceMemory);
  ASSERT_TRUE(platform_->free(huge.addr).is_ok());
  ASSERT_TRUE(platform_->alloc(sizeof(TestBlock), 64, &block_).is_ok());
}

TEST_F(IsolatedPlatformTest, AbandonedMemoryIsQuarantinedUntilReset) {
  DeviceBuffer big;
  ASSERT_TRUE(platform_->alloc(12ull << 20, 64, &big).is_ok());
  platform_->abandon_memory();
  EXPECT_EQ(platform_->bytes_in_use(), 0u);
  EXPECT_EQ(platform_->free(big.addr).code(), StatusCode::InvalidDevicePointer);
  DeviceBuffer again;
  EXPECT_EQ(platform_->alloc(12ull << 20, 64, &again).code(), StatusCode::OutOfDeviceMemory);
  ASSERT_TRUE(platform_->reset_device().is_ok());
  EXPECT_TRUE(platform_->alloc(12ull << 20, 64, &again).is_ok());
}

// ---- launches, services, objects -------------------------------------------------------------

TEST_F(IsolatedPlatformTest, PublishedServicesKickCoresOnTheDevice) {
  create(small_config(SimCoreExecution::Executors));
  ASSERT_TRUE(platform_->services().complete());
  ASSERT_TRUE(run(Action::KickCore, 1, Action::Echo).is_ok());
  EXPECT_EQ(read().core_ran, 1u);
}

TEST_F(IsolatedPlatformTest, ObjectsAreLoadedAndCalledInTheDeviceProcess) {
  const std::vector<uint8_t> image = libm_image();
  ASSERT_GT(image.size(), 1024u);
  const uint64_t in_use = platform_->bytes_in_use();
  LoadedObject object;
  ASSERT_TRUE(platform_->load_object(image, &object).is_ok());
  EXPECT_EQ(platform_->bytes_in_use(), in_use);  // the staging allocation is released
  uint64_t cos_addr = 0;
  ASSERT_TRUE(platform_->resolve_symbol(object, "cos", &cos_addr).is_ok());
  EXPECT_EQ(platform_->resolve_symbol(object, "no_such_symbol", &cos_addr).code(),
            StatusCode::LoadFailed);
  ASSERT_TRUE(platform_->resolve_symbol(object, "cos", &cos_addr).is_ok());
  TestBlock block = read();
  block.function = cos_addr;
  write(block);
  ASSERT_TRUE(run(Action::CallCos).is_ok());
  EXPECT_DOUBLE_EQ(read().out_double, 1.0);
  ASSERT_TRUE(platform_->unload_object(object).is_ok());
  EXPECT_EQ(platform_->unload_object(object).code(), StatusCode::InvalidArgument);
  const std::vector<uint8_t> garbage(4096, 0x41);
  EXPECT_EQ(platform_->load_object(garbage, &object).code(), StatusCode::LoadFailed);
}

// ---- faults ----------------------------------------------------------------------------------

struct FaultCase {
  Action action;
  int signal;  // 0: exit
  const char* name;
};

class IsolatedFaultTest : public IsolatedPlatformTest,
                          public ::testing::WithParamInterface<FaultCase> {};

TEST_P(IsolatedFaultTest, RecordsTheSignalAddressAndRunContext) {
  const FaultCase fault_case = GetParam();
  const Status waited = run(fault_case.action);
  ASSERT_EQ(waited.code(), StatusCode::KernelCrashed) << waited.to_string();
  const DeviceFault fault = platform_->device_fault();
  if (fault_case.signal != 0) {
    EXPECT_EQ(fault.kind, DeviceFault::Kind::Signal);
    EXPECT_EQ(fault.signal, fault_case.signal);
    EXPECT_TRUE(contains(waited, fault_case.name)) << waited.message();
  } else {
    EXPECT_EQ(fault.kind, DeviceFault::Kind::Exit);
    EXPECT_EQ(fault.exit_code, 7);
    EXPECT_TRUE(contains(waited, "exited with code 7")) << waited.message();
  }
  EXPECT_GT(fault.pid, 0);
  EXPECT_TRUE(contains(waited, "pid " + std::to_string(fault.pid))) << waited.message();
  ASSERT_TRUE(fault.context_known);
  EXPECT_EQ(fault.role, common::RunRole::Kernel);
  EXPECT_EQ(fault.func_id, 7);
  EXPECT_EQ(fault.task_id, 42u);
  EXPECT_EQ(fault.unit, 3u);
  EXPECT_TRUE(contains(waited, "kernel func_id 7 (task 42 on core 3)")) << waited.message();
  // The host still reads device memory after the death.
  const TestBlock block = read();
  if (fault_case.signal == SIGSEGV || fault_case.signal == SIGBUS) {
    ASSERT_TRUE(fault.has_fault_addr);
    EXPECT_EQ(fault.fault_addr, block.fault_addr);
    char at[32];
    std::snprintf(at, sizeof(at), " at 0x%llx", static_cast<unsigned long long>(block.fault_addr));
    EXPECT_TRUE(contains(waited, at)) << waited.message();
  }
  if (fault_case.signal == SIGILL || fault_case.signal == SIGFPE) {
    EXPECT_TRUE(fault.has_fault_addr);  // the faulting instruction
  }
  // Every later command reports the same death; the process is gone.
  EXPECT_EQ(platform_->device_pid(), -1);
  EXPECT_EQ(platform_->wait(0).code(), StatusCode::KernelCrashed);
  EXPECT_EQ(platform_->wait_aicpu(0).code(), StatusCode::KernelCrashed);
  EXPECT_EQ(platform_->recover().code(), StatusCode::KernelCrashed);
  EXPECT_EQ(run(Action::Echo).code(), StatusCode::KernelCrashed);
  platform_->stop_streams();
  EXPECT_EQ(waitpid(fault.pid, nullptr, WNOHANG), -1);  // reaped
}

INSTANTIATE_TEST_SUITE_P(Signals, IsolatedFaultTest,
                         ::testing::Values(FaultCase{Action::Segv, SIGSEGV, "SIGSEGV"},
                                           FaultCase{Action::Bus, SIGBUS, "SIGBUS"},
                                           FaultCase{Action::Ill, SIGILL, "SIGILL"},
                                           FaultCase{Action::Fpe, SIGFPE, "SIGFPE"},
                                           FaultCase{Action::Abort, SIGABRT, "SIGABRT"},
                                           FaultCase{Action::Trap, SIGTRAP, "SIGTRAP"},
                                           FaultCase{Action::Exit, 0, "exit"}),
                         [](const auto& info) { return std::string(info.param.name); });

// --- several devices in one process (a node's chips) -------------------------------------------

// Each table row starts the devices one way: forked by this thread, which by then runs other
// devices' output forwarders, or by a fork server started while the process was single-threaded.
enum class Starter { ThisThread, ForkServer };

class SeveralDevices : public ::testing::TestWithParam<Starter> {
 protected:
  void SetUp() override {
#if defined(__SANITIZE_THREAD__)
    if (GetParam() == Starter::ThisThread) {
      // A second device forked while the first one's forwarder thread runs: its first thread
      // reuses that thread's stack (glibc reclaims it at the fork), and ThreadSanitizer, which
      // still lists the parent's threads, ends the device ("dup thread"). The fork server row is
      // the way around it, and runs.
      GTEST_SKIP() << "a multi-threaded fork (see the comment); the fork server row runs";
    }
#endif
    if (GetParam() == Starter::ForkServer) {
      ASSERT_TRUE(sim::IsolatedPlatform::start_fork_server(&server_).is_ok());
    }
  }
  std::unique_ptr<sim::IsolatedPlatform> make(int device) {
    auto platform =
        std::make_unique<sim::IsolatedPlatform>(small_config(), sim::IsolationTuning{}, server_);
    EXPECT_TRUE(platform->attach(device).is_ok());
    EXPECT_TRUE(platform->start_streams().is_ok());
    return platform;
  }
  // Runs `action` on `device` over its block at `block_addr` (written with `block` first).
  static Status run_on(sim::IsolatedPlatform& device, uint64_t block_addr, TestBlock block,
                       Action action) {
    block.services = device.services();
    block.action = action;
    if (Status status = device.copy_to_device(block_addr, &block, sizeof(block)); !status) {
      return status;
    }
    sim::LaunchPrograms programs;
    programs.ctx = reinterpret_cast<void*>(block_addr);
    programs.aicpu_entry = &test_entry;
    programs.core_service = &test_core_service;
    programs.aicpu_threads = 2;
    programs.cores = device.geometry().cores();
    if (Status launched = device.launch_programs(programs); !launched) return launched;
    return device.wait(kGenerousWaitMs);
  }
  std::shared_ptr<sim::ForkServer> server_;
};

// Each device its own process and memory; each launch sees only its own bytes. With the fork
// server a host thread allocates all along, as a node's threads would: a fork of this thread
// would copy the allocator's lock held (the ASan allocator's is not fork-safe), which is what the
// server is for; this thread's own fork is tested with no other thread allocating.
TEST_P(SeveralDevices, FourLiveAtOnceEachWithItsOwnProcessAndMemory) {
  struct Allocating {
    std::atomic<bool> stop{false};
    std::atomic<std::size_t> allocated{0};
    std::thread thread;
    ~Allocating() {
      stop.store(true);
      if (thread.joinable()) thread.join();
    }
  } busy;
  if (GetParam() == Starter::ForkServer) {
    busy.thread = std::thread([&busy] {
      while (!busy.stop.load()) {
        busy.allocated += std::make_unique<std::vector<int>>(1000, 1)->size();
      }
    });
  }
  constexpr int kDevices = 4;
  std::vector<std::unique_ptr<sim::IsolatedPlatform>> devices;
  std::vector<DeviceBuffer> blocks(kDevices);
  std::set<pid_t> pids;
  for (int d = 0; d < kDevices; ++d) {
    devices.push_back(make(d));
    ASSERT_TRUE(devices[d]->alloc(sizeof(TestBlock), 64, &blocks[d]).is_ok());
    pids.insert(devices[d]->device_pid());
  }
  EXPECT_EQ(pids.size(), static_cast<std::size_t>(kDevices));
  for (int d = 0; d < kDevices; ++d) {
    TestBlock block;
    block.in = 1000u * static_cast<uint32_t>(d + 1);
    const Status ran = run_on(*devices[d], blocks[d].addr, block, Action::Echo);
    ASSERT_TRUE(ran.is_ok()) << "device " << d << ": " << ran.to_string();
    ASSERT_TRUE(devices[d]->copy_from_device(&block, blocks[d].addr, sizeof(block)).is_ok());
    EXPECT_EQ(block.out[0], 1000u * static_cast<uint32_t>(d + 1)) << "device " << d;
    EXPECT_EQ(block.out[1], 1000u * static_cast<uint32_t>(d + 1) + 1) << "device " << d;
  }
  busy.stop.store(true);
  if (busy.thread.joinable()) busy.thread.join();
  devices.clear();
  server_.reset();
  // Every device's init was this process's child (the fork server's CLONE_PARENT included), and
  // every one is reaped, the server too.
  errno = 0;
  EXPECT_EQ(waitpid(-1, nullptr, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD);
}

// Another device's memory is mapped in this process (and, for the fork server, was when it
// started): a kernel writing through that host address faults instead of changing it.
TEST_P(SeveralDevices, AKernelCannotWriteAnotherDevicesMemoryThroughTheHostsMapping) {
  // Made before the server (its view is in the server's copy of this process) and after it.
  server_.reset();
  auto before_server = std::make_unique<sim::IsolatedPlatform>(small_config());
  if (GetParam() == Starter::ForkServer) {
    ASSERT_TRUE(sim::IsolatedPlatform::start_fork_server(&server_).is_ok());
  }
  std::unique_ptr<sim::IsolatedPlatform> after_server = make(1);
  std::unique_ptr<sim::IsolatedPlatform> writer = make(2);
  DeviceBuffer block;
  ASSERT_TRUE(writer->alloc(sizeof(TestBlock), 64, &block).is_ok());
  for (sim::IsolatedPlatform* other : {before_server.get(), after_server.get()}) {
    DeviceBuffer theirs;
    ASSERT_TRUE(other->alloc(4096, 64, &theirs).is_ok());
    const std::vector<uint8_t> bytes(4096, 0x11);
    ASSERT_TRUE(other->copy_to_device(theirs.addr, bytes.data(), bytes.size()).is_ok());
    TestBlock test;
    test.target = reinterpret_cast<uint64_t>(other->host_view_of(theirs.addr + 64));
    const Status waited = run_on(*writer, block.addr, test, Action::WriteAt);
    ASSERT_EQ(waited.code(), StatusCode::KernelCrashed) << waited.to_string();
    EXPECT_EQ(writer->device_fault().signal, SIGSEGV);
    EXPECT_EQ(writer->device_fault().fault_addr, test.target);
    std::vector<uint8_t> after(bytes.size());
    ASSERT_TRUE(other->copy_from_device(after.data(), theirs.addr, after.size()).is_ok());
    EXPECT_EQ(after, bytes);
    ASSERT_TRUE(writer->reset_device().is_ok());
    ASSERT_TRUE(writer->start_streams().is_ok());
    ASSERT_TRUE(writer->alloc(sizeof(TestBlock), 64, &block).is_ok());
  }
}

INSTANTIATE_TEST_SUITE_P(StartedBy, SeveralDevices,
                         ::testing::Values(Starter::ThisThread, Starter::ForkServer),
                         [](const auto& info) {
                           return std::string(info.param == Starter::ThisThread ? "ThisThread"
                                                                                : "ForkServer");
                         });

// The fork server refuses a range it has in use (the host then takes another) and, once it is
// gone, every request says so instead of hanging.
TEST(ForkServer, RefusesARangeInUseAndReportsItsOwnEnd) {
  std::shared_ptr<sim::ForkServer> server;
  ASSERT_TRUE(sim::IsolatedPlatform::start_fork_server(&server).is_ok());
  static char in_the_image[1 << 16];
  const Status taken =
      server->reserve(reinterpret_cast<uintptr_t>(in_the_image) & ~uintptr_t{4095}, 4096);
  EXPECT_EQ(taken.code(), StatusCode::InvalidArgument) << taken.to_string();
  EXPECT_NE(taken.message().find("in use"), std::string::npos) << taken.message();

  ASSERT_EQ(kill(server->pid(), SIGKILL), 0);
  const Status lost = server->reserve(0x7e0000000000, 4096);
  EXPECT_EQ(lost.code(), StatusCode::InternalError) << lost.to_string();
  EXPECT_NE(
      lost.message().find("the fork server (pid " + std::to_string(server->pid()) + ") ended"),
      std::string::npos)
      << lost.message();
  try {
    sim::IsolatedPlatform platform(small_config(), sim::IsolationTuning{}, server);
    ADD_FAILURE() << "a platform needs its server to reserve its device range";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::InternalError) << e.what();
  }
  server.reset();
  errno = 0;
  EXPECT_EQ(waitpid(-1, nullptr, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD);
}

TEST_F(IsolatedPlatformTest, FaultOnAnExecutorThreadIsRecorded) {
  create(small_config(SimCoreExecution::Executors));
  const Status waited = run(Action::KickCore, 1, Action::Segv);
  ASSERT_EQ(waited.code(), StatusCode::KernelCrashed) << waited.to_string();
  const DeviceFault fault = platform_->device_fault();
  EXPECT_EQ(fault.signal, SIGSEGV);
  EXPECT_EQ(fault.role, common::RunRole::Kernel);
  EXPECT_EQ(fault.fault_addr, 0x18u);
}

TEST_F(IsolatedPlatformTest, ADeviceKilledFromOutsideIsNoticedWithoutARecord) {
  launch_hang();
  const pid_t pid = platform_->device_pid();
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  const Status waited = platform_->wait(kGenerousWaitMs);
  ASSERT_EQ(waited.code(), StatusCode::KernelCrashed) << waited.to_string();
  const DeviceFault fault = platform_->device_fault();
  EXPECT_EQ(fault.kind, DeviceFault::Kind::Signal);
  EXPECT_EQ(fault.signal, SIGKILL);
  EXPECT_FALSE(fault.context_known);
  EXPECT_EQ(fault.pid, pid);
}

TEST_F(IsolatedPlatformTest, KillDeviceStopsAStuckLaunch) {
  launch_hang();
  EXPECT_EQ(platform_->wait(20).code(), StatusCode::StreamSyncTimeout);
  const pid_t pid = platform_->device_pid();
  ASSERT_TRUE(platform_->kill_device("kernel exceeded its op execute timeout").is_ok());
  const DeviceFault fault = platform_->device_fault();
  EXPECT_EQ(fault.kind, DeviceFault::Kind::Killed);
  EXPECT_EQ(fault.reason, "kernel exceeded its op execute timeout");
  EXPECT_EQ(fault.pid, pid);
  EXPECT_EQ(waitpid(pid, nullptr, WNOHANG), -1);
  const Status waited = platform_->wait(0);
  EXPECT_EQ(waited.code(), StatusCode::DeviceFaulted);
  EXPECT_TRUE(contains(waited, "killed by the host: kernel exceeded")) << waited.message();
  EXPECT_EQ(platform_->recover().code(), StatusCode::DeviceFaulted);
  // A second kill keeps the first reason.
  ASSERT_TRUE(platform_->kill_device("again").is_ok());
  EXPECT_EQ(platform_->device_fault().reason, "kernel exceeded its op execute timeout");
  // The host's mapping still works.
  EXPECT_EQ(read().action, Action::Hang);
}

TEST_F(IsolatedPlatformTest, ResetGivesAFreshDevice) {
  TestBlock block = read();
  block.in = 9;
  write(block);
  const uint64_t old_addr = block_.addr;
  ASSERT_EQ(run(Action::Abort).code(), StatusCode::KernelCrashed);
  ASSERT_TRUE(platform_->reset_device().is_ok());
  EXPECT_EQ(platform_->device_fault().kind, DeviceFault::Kind::None);
  EXPECT_EQ(platform_->bytes_in_use(), 0u);
  EXPECT_EQ(platform_->live_allocations(), 0u);
  EXPECT_EQ(platform_->free(old_addr).code(), StatusCode::InvalidDevicePointer);
  uint32_t word = 0;
  EXPECT_EQ(platform_->load_device_word(old_addr, &word).code(), StatusCode::InvalidDevicePointer);
  // The next launch forks a new device process on fresh (zeroed) memory at another range.
  ASSERT_TRUE(platform_->start_streams().is_ok());
  ASSERT_TRUE(platform_->load_chip_runtime().is_ok());
  ASSERT_TRUE(platform_->alloc(sizeof(TestBlock), 64, &block_).is_ok());
  EXPECT_NE(block_.addr, old_addr);
  const TestBlock fresh = read();
  EXPECT_EQ(fresh.in, 0u);
  ASSERT_TRUE(run(Action::Echo, 2).is_ok());
  EXPECT_EQ(read().out[1], 1u);
}

// ---- what the device forks --------------------------------------------------------------------

// A daemon a program started (in a session and process group of its own) ends with the device
// however the device ends (reset, killed by the host as on a timeout, the platform destroyed),
// with the device's init in a pid namespace (where this process may create one) and as a
// subreaper (forced here; what an unprivileged process gets).
class IsolatedDaemonTest : public IsolatedPlatformTest, public ::testing::WithParamInterface<bool> {
 protected:
  void SetUp() override {}
  void create_device() {
    sim::IsolationTuning tuning;
    tuning.pid_namespace = GetParam();
    create(small_config(), tuning);
    if (!GetParam()) {
      EXPECT_FALSE(platform_->pid_namespace());
    }
  }
  pid_t run_daemon_program() {
    EXPECT_TRUE(run(Action::Daemonize).is_ok());
    const pid_t daemon = static_cast<pid_t>(read().out[0]);
    EXPECT_GT(daemon, 0);
    EXPECT_FALSE(test::process_gone(daemon)) << "the daemon is not running";
    return daemon;
  }
};

TEST_P(IsolatedDaemonTest, ADaemonEndsWithTheDevice) {
  create_device();
  std::printf("[ measured ] the device's init %s\n",
              platform_->pid_namespace() ? "is pid 1 of a pid namespace" : "is a subreaper");
  pid_t daemon = run_daemon_program();
  ASSERT_TRUE(platform_->reset_device().is_ok());
  EXPECT_TRUE(test::gone_soon(daemon)) << "a daemon outlived reset_device";

  create_device();
  daemon = run_daemon_program();
  ASSERT_TRUE(platform_->kill_device("a test's timeout").is_ok());
  EXPECT_TRUE(test::gone_soon(daemon)) << "a daemon outlived kill_device";

  create_device();
  daemon = run_daemon_program();
  platform_.reset();
  EXPECT_TRUE(test::gone_soon(daemon)) << "a daemon outlived the platform";
}

INSTANTIATE_TEST_SUITE_P(Init, IsolatedDaemonTest, ::testing::Values(true, false),
                         [](const auto& info) {
                           return std::string(info.param ? "PidNamespace" : "Subreaper");
                         });

// ---- output ----------------------------------------------------------------------------------

std::string drain_pipe(int fd) {
  std::string text;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n <= 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
  }
  return text;
}

// Reads a pipe slowly (1 KiB a millisecond), so a writer of a burst waits for it.
class SlowReader {
 public:
  explicit SlowReader(int fd) : fd_(fd) {
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    thread_ = std::thread([this] {
      char buffer[1024];
      for (;;) {
        {
          std::lock_guard lock(mutex_);
          if (stop_) return;
          const ssize_t n = ::read(fd_, buffer, sizeof(buffer));
          if (n > 0) text_.append(buffer, static_cast<std::size_t>(n));
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    });
  }
  ~SlowReader() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    thread_.join();
  }
  // Everything written so far: what was read and what waits in the pipe.
  std::string written() {
    std::lock_guard lock(mutex_);
    return text_ + drain_pipe(fd_);
  }

 private:
  const int fd_;
  std::mutex mutex_;
  bool stop_ = false;
  std::string text_;
  std::thread thread_;
};

TEST_F(IsolatedPlatformTest, DeviceOutputIsForwardedWithAPrefix) {
  int out[2];
  int err[2];
  ASSERT_EQ(pipe2(out, O_CLOEXEC), 0);
  ASSERT_EQ(pipe2(err, O_NONBLOCK | O_CLOEXEC), 0);
  sim::IsolationTuning tuning;
  tuning.stdout_fd = out[1];
  tuning.stderr_fd = err[1];
  {
    platform_.reset();
    platform_ = std::make_unique<sim::IsolatedPlatform>(small_config(), tuning);
    ASSERT_TRUE(platform_->attach(5).is_ok());
    ASSERT_TRUE(platform_->start_streams().is_ok());
    // Started after the fork: a host thread at the fork would make TSan kill a device process
    // that starts threads (die_after_fork).
    SlowReader reader(out[0]);
    ASSERT_TRUE(platform_->alloc(sizeof(TestBlock), 64, &block_).is_ok());
    ASSERT_TRUE(run(Action::Print).is_ok());
    // A crash: everything the kernel printed before it is on the host's stream when the fault is
    // reported, though the host's stream is slower than the kernel.
    const Status crashed = run(Action::PrintAbort);
    ASSERT_EQ(crashed.code(), StatusCode::KernelCrashed);
    const std::string stdout_text = reader.written();
    std::string expected = "[chiprt device 5] hello from the device\n";
    for (int line = 0; line < kBurstLines; ++line) {
      expected += "[chiprt device 5] line " + std::to_string(line) + " of a burst\n";
    }
    expected += "[chiprt device 5] last words\n";
    EXPECT_EQ(stdout_text.size(), expected.size());
    EXPECT_TRUE(stdout_text == expected) << stdout_text.substr(0, 200);
    EXPECT_EQ(drain_pipe(err[0]), "[chiprt device 5] a warning from the device\n");
    platform_.reset();
  }
  for (int fd : {out[0], out[1], err[0], err[1]}) ::close(fd);
}

// A line of 16 MiB without a newline (a progress bar, then binary bytes): the host holds a bounded
// part of it at any time, and its stream gets exactly the device's bytes, in pieces: the first
// under the prefix, the later ones under the continuation prefix, no newline added between them.
TEST_F(IsolatedPlatformTest, ALongLineIsForwardedInBoundedPiecesUnaltered) {
  int out[2];
  ASSERT_EQ(pipe2(out, O_CLOEXEC), 0);
  sim::IsolationTuning tuning;
  tuning.stdout_fd = out[1];
  create(small_config(), tuning);
  // Started after the fork (see DeviceOutputIsForwardedWithAPrefix).
  std::string captured;
  std::thread reader([&] {
    char buffer[65536];
    for (ssize_t n; (n = ::read(out[0], buffer, sizeof(buffer))) != 0;) {
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) break;
      captured.append(buffer, static_cast<std::size_t>(n));
    }
  });
  const Status ran = run(Action::LongLine);
  const uint64_t peak = platform_->output_line_peak();
  platform_.reset();  // the device's output is all forwarded
  ::close(out[1]);
  reader.join();
  ::close(out[0]);
  ASSERT_TRUE(ran.is_ok()) << ran.to_string();
  const std::string expected = long_line_output();
  std::printf("[ measured ] %zu bytes forwarded; the host held at most %llu bytes of a line\n",
              expected.size(), static_cast<unsigned long long>(peak));
  EXPECT_LE(peak, 2 * sim::IsolatedPlatform::kOutputLineBytes)
      << "the host held the long line whole";

  const std::string prefix = "[chiprt device 0] ";
  const std::string continuation = "[chiprt device 0+] ";
  std::string bytes;
  std::size_t pieces = 0;
  bool line_start = true;
  for (std::size_t at = 0; at < captured.size();) {
    const std::string& expected_prefix = line_start ? prefix : continuation;
    ASSERT_EQ(captured.compare(at, expected_prefix.size(), expected_prefix), 0)
        << "at byte " << at << " of the host's stream: " << captured.substr(at, 40);
    const std::size_t data = at + expected_prefix.size();
    const std::size_t newline = captured.find('\n', data);
    const std::size_t next_piece = captured.find(continuation, data);
    if (next_piece < newline) {
      bytes.append(captured, data, next_piece - data);
      line_start = false;
      at = next_piece;
      ++pieces;
    } else {
      ASSERT_NE(newline, std::string::npos) << "the host's stream ends inside a line";
      bytes.append(captured, data, newline + 1 - data);
      line_start = true;
      at = newline + 1;
    }
  }
  EXPECT_GE(pieces, (16u << 20) / (2 * sim::IsolatedPlatform::kOutputLineBytes));
  EXPECT_EQ(bytes.size(), expected.size());
  EXPECT_TRUE(bytes == expected) << "the forwarded bytes differ from the device's";
}

// ---- options ---------------------------------------------------------------------------------

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_.empty()) {
      unsetenv(name_);
    } else {
      setenv(name_, old_.c_str(), 1);
    }
  }

 private:
  const char* name_;
  std::string old_;
};

TEST(SimIsolationOptionTest, NamesParseAndTheEnvironmentAppliesToDefault) {
  for (SimIsolation mode : {SimIsolation::Default, SimIsolation::None, SimIsolation::Process}) {
    SimIsolation parsed = SimIsolation::Default;
    ASSERT_TRUE(parse_sim_isolation(sim_isolation_name(mode), &parsed));
    EXPECT_EQ(parsed, mode);
  }
  SimIsolation parsed = SimIsolation::None;
  EXPECT_FALSE(parse_sim_isolation("Process", &parsed));
  SimOptions options;
  {
    ScopedEnv env("CHIPRT_SIM_ISOLATION", nullptr);
    EXPECT_EQ(resolve_sim_isolation(options), SimIsolation::None);
  }
  {
    ScopedEnv env("CHIPRT_SIM_ISOLATION", "process");
    EXPECT_EQ(resolve_sim_isolation(options), SimIsolation::Process);
    options.isolation = SimIsolation::None;  // an explicit choice wins
    EXPECT_EQ(resolve_sim_isolation(options), SimIsolation::None);
    options.isolation = SimIsolation::Default;
    std::unique_ptr<Platform> platform;
    SimOptions small;
    small.memory_bytes = 1 << 20;
    ASSERT_TRUE(sim::create_sim_platform(small, &platform).is_ok());
    EXPECT_TRUE(platform->isolated());
    EXPECT_NE(dynamic_cast<sim::IsolatedPlatform*>(platform.get()), nullptr);
  }
  {
    ScopedEnv env("CHIPRT_SIM_ISOLATION", "none");
    std::unique_ptr<Platform> platform;
    ASSERT_TRUE(sim::create_sim_platform(SimOptions{}, &platform).is_ok());
    EXPECT_FALSE(platform->isolated());
  }
}

TEST(SimIsolationOptionTest, BadValuesNameTheVariableOrField) {
  {
    ScopedEnv env("CHIPRT_SIM_ISOLATION", "sandbox");
    std::unique_ptr<Platform> platform;
    const Status status = sim::create_sim_platform(SimOptions{}, &platform);
    EXPECT_EQ(status.code(), StatusCode::InvalidConfig);
    EXPECT_TRUE(contains(status, "CHIPRT_SIM_ISOLATION='sandbox'")) << status.message();
    EXPECT_TRUE(contains(status, "process, none")) << status.message();
    EXPECT_THROW(resolve_sim_isolation(SimOptions{}), Error);
  }
  SimOptions options;
  options.isolation = static_cast<SimIsolation>(9);
  const Status status = sim::validate_sim_options(options);
  EXPECT_EQ(status.code(), StatusCode::InvalidConfig);
  EXPECT_TRUE(contains(status, "SimOptions.isolation")) << status.message();
}

// ---- no leaks --------------------------------------------------------------------------------

std::size_t entries(const char* dir) {
  std::size_t count = 0;
  DIR* handle = opendir(dir);
  if (handle == nullptr) return 0;
  while (readdir(handle) != nullptr) ++count;
  closedir(handle);
  return count;
}

// Lines of /proc/self/maps, all of them or those naming `name`.
std::size_t mappings(const char* name = nullptr) {
  std::ifstream maps("/proc/self/maps");
  std::size_t count = 0;
  for (std::string line; std::getline(maps, line);) {
    if (name == nullptr || line.find(name) != std::string::npos) ++count;
  }
  return count;
}

// One device's life: `cycles` launches that crash, each followed by a reset, then a clean
// shutdown.
void crash_reset_cycles(int cycles) {
  sim::IsolatedPlatform platform(small_config());
  ASSERT_TRUE(platform.attach(0).is_ok());
  for (int cycle = 0; cycle < cycles; ++cycle) {
    ASSERT_TRUE(platform.start_streams().is_ok()) << cycle;
    DeviceBuffer buffer;
    ASSERT_TRUE(platform.alloc(sizeof(TestBlock), 64, &buffer).is_ok());
    TestBlock block;
    block.action = cycle % 2 == 0 ? Action::Segv : Action::Exit;
    ASSERT_TRUE(platform.copy_to_device(buffer.addr, &block, sizeof(block)).is_ok());
    sim::LaunchPrograms programs{
        reinterpret_cast<void*>(buffer.addr), &test_entry, &test_core_service, 1, 0, false};
    // The crash may come before the launch's reply (then the launch reports it) or after.
    Status ended = platform.launch_programs(programs);
    if (ended.is_ok()) ended = platform.wait(kGenerousWaitMs);
    ASSERT_EQ(ended.code(), StatusCode::KernelCrashed) << cycle << ": " << ended.to_string();
    ASSERT_TRUE(platform.reset_device().is_ok()) << cycle;
  }
  ASSERT_TRUE(platform.start_streams().is_ok());
}

TEST(IsolatedPlatformLeakTest, CrashResetCyclesLeaveNoProcessFdMappingOrThread) {
  // The first host thread's allocator arena and cached stack stay for the process: warm them up.
  crash_reset_cycles(1);
  const std::size_t fds = entries("/proc/self/fd");
  const std::size_t threads = entries("/proc/self/task");
  [[maybe_unused]] const std::size_t maps = mappings();
  crash_reset_cycles(50);
  EXPECT_EQ(entries("/proc/self/fd"), fds);
  EXPECT_EQ(entries("/proc/self/task"), threads);
  EXPECT_EQ(mappings("chiprt-device-memory"), 0u);
  // Each device leaves two mappings if it leaks (its memory file and its device range); the
  // host's allocators (a sanitizer's especially) may add a few of their own meanwhile. Under
  // ThreadSanitizer every address range ever mapped keeps shadow mappings of its own (2 to 4 per
  // cycle measured), and device ranges are never reused (no device address is handed out twice),
  // so there only the device's own mappings are checked (by name, above).
#if !defined(__SANITIZE_THREAD__)
  EXPECT_LE(mappings(), maps + 8);
#endif
  errno = 0;
  EXPECT_EQ(waitpid(-1, nullptr, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD);
}

}  // namespace
}  // namespace chiprt::platform
