#include "isolation_support.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "chiprt/callable.h"
#include "chiprt/kernel.h"
#include "chiprt/orchestration.h"
#include "chiprt/status.h"
#include "chiprt/tensor.h"
#include "support.h"

// The device process is forked from this (by then multi-threaded) process and starts threads of
// its own; ThreadSanitizer's default, die_after_fork=1, would end it at its first thread. The
// TSAN_OPTIONS of the environment still apply on top of this default (test.sh's halt_on_error).
extern "C" const char* __tsan_default_options() {
  return "die_after_fork=0";
}

namespace chiprt::isolation_test {

void add_kernel(int64_t* args) {
  const float* a = kernel::tensor_arg<const float>(args, 0);
  float* b = kernel::tensor_arg<float>(args, 1);
  const auto f = kernel::scalar_arg<float>(args, 2);
  for (uint64_t i = 0; i < kN; ++i) b[i] = a[i] + f;
}

namespace {
void noop_kernel(int64_t*) {}
void hang_kernel(int64_t*) {
  volatile bool forever = true;
  while (forever) {
  }
}

// Scalars of a run: [0] Scenario, [1] TaskKind, [2] Fault, [3] bus address.
void suite_orchestration(Orchestration& o, const TaskArgs& run) {
  const auto scenario = static_cast<Scenario>(run.scalar_bits(0));
  const auto kind = static_cast<TaskKind>(run.scalar_bits(1));
  const auto fault = static_cast<Fault>(run.scalar_bits(2));
  const uint64_t bus = run.scalar_bits(3);
  const Tensor& x = run.tensor(0);
  if (scenario == Scenario::Normal) {
    submit_normal_run(o, x, run.tensor(1));
    return;
  }
  const Tensor tmp = submit_first_task(o, x);
  TaskArgs second;
  switch (scenario) {
    case Scenario::OrchestrationFault:
      raise_fault(fault, bus);
      return;
    case Scenario::Hang:
      second.in(tmp);
      o.submit(kHang, CoreType::AIV, second);
      return;
    case Scenario::Normal:
    case Scenario::KernelFault:
      break;
  }
  // Task 1 faults; it reads task 0's output, so task 0 completed first.
  second.in(tmp)
      .scalar(static_cast<int64_t>(fault))
      .scalar(kind == TaskKind::Spmd ? static_cast<int64_t>(kSpmdFaultBlock) : int64_t{-1})
      .scalar(bus);
  switch (kind) {
    case TaskKind::Aic:
      o.submit(kFaultAic, CoreType::AIC, second);
      break;
    case TaskKind::Aiv:
      o.submit(kFaultAiv, CoreType::AIV, second);
      break;
    case TaskKind::Mix:
      o.submit(TaskSpec::mixed({.aic = kNoopAic, .aiv0 = kFaultAiv, .aiv1 = kNoopAiv}), second);
      break;
    case TaskKind::Spmd:
      o.submit(TaskSpec::kernel(kFaultAiv, CoreType::AIV, kSpmdBlocks), second);
      break;
    case TaskKind::So:
      o.submit(kFaultSo, CoreType::AIV, second);
      break;
  }
}

CallableBuilder suite_builder() {
  CallableBuilder builder;
  builder.orchestration_function(&suite_orchestration, {})
      .kernel_function(kAdd, CoreType::AIV, &add_kernel, {})
      .kernel_function(kFaultAic, CoreType::AIC, &fault_kernel, {})
      .kernel_function(kFaultAiv, CoreType::AIV, &fault_kernel, {})
      .kernel_function(kNoopAic, CoreType::AIC, &noop_kernel, {})
      .kernel_function(kNoopAiv, CoreType::AIV, &noop_kernel, {})
      .kernel_function(kHang, CoreType::AIV, &hang_kernel, {});
  return builder;
}

uint64_t read_proc_count(const char* dir) {
  uint64_t n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir)) ++n;
  return n;
}

}  // namespace

uint64_t bus_address() {
  static const uint64_t address = [] {
    const long page = sysconf(_SC_PAGESIZE);
    const int fd = memfd_create("chiprt-isolation-bus", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, page) != 0) {
      throw std::runtime_error(std::string("bus page: memfd: ") + std::strerror(errno));
    }
    // Two pages of a one-page file: the second lies beyond the end of the file.
    void* base = mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (base == MAP_FAILED) {
      throw std::runtime_error(std::string("bus page: mmap: ") + std::strerror(errno));
    }
    return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(base)) + page;
  }();
  return address;
}

WorkerOptions isolated_options(uint32_t clusters) {
  WorkerOptions options;
  options.sim.isolation = SimIsolation::Process;
  options.sim.clusters = clusters;
  options.sim.aicpu_threads = 3;
  options.sim.host_threads = 2;
  options.sim.memory_bytes = 256ull << 20;
  return options;
}

CallConfig run_config(RuntimeVariant variant, bool serial) {
  CallConfig config;
  config.runtime = variant;
  config.serial = serial;
  config.output_heap_bytes = 1 << 20;
  return config;
}

void register_suite_callables(Worker& worker, bool with_object) {
  worker.register_callable(kCallable, suite_builder().build());
  if (with_object) {
    worker.register_callable(
        kSoCallable,
        suite_builder()
            .kernel_object(kFaultSo, CoreType::AIV, examples::read_chip_object(kFaultObjectTarget),
                           {}, kKernelSymbol, "fault")
            .build());
  }
}

TaskArgs scenario_args(DeviceBuffer x, DeviceBuffer y, Scenario scenario, TaskKind kind,
                       Fault fault) {
  TaskArgs args;
  args.in(Tensor::make(x, {kN}, DataType::F32))
      .output_existing(Tensor::make(y, {kN}, DataType::F32))
      .scalar(static_cast<int64_t>(scenario))
      .scalar(static_cast<int64_t>(kind))
      .scalar(static_cast<int64_t>(fault))
      .scalar(bus_address());
  return args;
}

std::vector<float> x_values() {
  std::vector<float> x(kN);
  for (uint64_t i = 0; i < kN; ++i) x[i] = static_cast<float>(i);
  return x;
}

void expect_works_after_reset(Worker& worker, DeviceBuffer stale, RuntimeVariant variant) {
  try {
    const std::vector<float> x = x_values();
    worker.copy_to(stale, x.data(), kBytes);
    ADD_FAILURE() << "a buffer of the device before the reset was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::InvalidDevicePointer) << e.what();
    EXPECT_NE(e.message().find("reset"), std::string::npos) << e.message();
  }
  expect_normal_run(worker, variant);
}

void expect_normal_run(Worker& worker, RuntimeVariant variant) {
  // Fresh buffers: x and y for the run, and one the run never names.
  const DeviceBuffer x = worker.malloc(kBytes);
  const DeviceBuffer y = worker.malloc(kBytes);
  const DeviceBuffer untouched = worker.malloc(kBytes);
  const std::vector<float> xs = x_values();
  std::vector<float> pattern(kN);
  for (uint64_t i = 0; i < kN; ++i) pattern[i] = 1000.0f - static_cast<float>(i);
  worker.copy_to(x, xs.data(), kBytes);
  worker.memset(y, 0, kBytes);
  worker.copy_to(untouched, pattern.data(), kBytes);
  worker.run(kCallable, scenario_args(x, y, Scenario::Normal), run_config(variant, false));
  std::vector<float> got(kN);
  worker.copy_from(got.data(), y, kBytes);
  for (uint64_t i = 0; i < kN; ++i) ASSERT_EQ(got[i], xs[i] + 3) << "y[" << i << "]";
  worker.copy_from(got.data(), x, kBytes);
  EXPECT_EQ(got, xs) << "x changed";
  worker.copy_from(got.data(), untouched, kBytes);
  EXPECT_EQ(got, pattern) << "a buffer the run does not name changed";
  worker.free(x);
  worker.free(y);
  worker.free(untouched);
}

std::string ProcessResources::describe() const {
  std::ostringstream text;
  text << "fds " << fds << ", threads " << threads << ", RSS " << rss_bytes / 1024 << " KiB, "
       << live_children << " live child process(es), " << zombie_children << " unreaped";
  return text.str();
}

ProcessResources process_resources() {
  ProcessResources r;
  r.fds = read_proc_count("/proc/self/fd") - 1;  // the directory iterator's own fd
  r.threads = read_proc_count("/proc/self/task");
  std::ifstream statm("/proc/self/statm");
  uint64_t size_pages = 0, resident_pages = 0;
  statm >> size_pages >> resident_pages;
  r.rss_bytes = resident_pages * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream children(task.path() / "children");
    int pid = 0;
    while (children >> pid) {
      std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
      std::string line;
      std::getline(stat, line);
      // "pid (comm) S ...": the state follows the last ')'.
      const std::size_t close = line.rfind(')');
      const char state =
          close != std::string::npos && close + 2 < line.size() ? line[close + 2] : '?';
      if (state == 'Z' || state == 'X') {
        ++r.zombie_children;
      } else if (!line.empty()) {
        ++r.live_children;
      }
    }
  }
  return r;
}

bool has_unreaped_child() {
  siginfo_t info{};
  if (waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0) return false;  // ECHILD
  return info.si_pid != 0;
}

uint64_t process_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace chiprt::isolation_test
