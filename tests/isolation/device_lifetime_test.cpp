// How long a device process lives: as long as its host process, not as long as the host thread
// that happened to start it. A Worker initialised (or reset) on a thread that then exits keeps its
// device; a host process that dies takes its device processes with it; every process a kernel
// forks, a daemon too, ends with the device. And what it holds and reaches: none of the host's
// file descriptors, and no signal to its parent reaches the host.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "chiprt/callable.h"
#include "chiprt/orchestration.h"
#include "chiprt/status.h"
#include "chiprt/worker.h"
#include "device_processes.h"
#include "isolation_support.h"

namespace chiprt::isolation_test {
namespace {

TEST(DeviceLifetime, DeviceStartedOnAThreadThatExitedKeepsWorking) {
  Worker worker;
  std::thread([&] {
    worker.init(isolated_options());
    register_suite_callables(worker);
    expect_normal_run(
        worker, RuntimeVariant::HostBuildGraph);  // the device process is forked on this thread
  }).join();
  // Give a device that would die with its forking thread the time to die.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  expect_normal_run(worker, RuntimeVariant::HostBuildGraph);
}

TEST(DeviceLifetime, DeviceStartedByAResetOnAnotherThreadKeepsWorking) {
  Worker worker;
  worker.init(isolated_options());
  register_suite_callables(worker);
  expect_normal_run(worker, RuntimeVariant::HostBuildGraph);
  std::thread([&] { worker.reset(); }).join();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  expect_normal_run(worker, RuntimeVariant::HostBuildGraph);
}

// A pipe of the host's (as an application would use one to a child process): once the host closes
// its write end, the reader sees end of file, although a device process was forked while it was
// open.
TEST(DeviceLifetime, TheDeviceHoldsNoDescriptorOfTheHost) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  Worker worker;
  worker.init(isolated_options());
  register_suite_callables(worker);
  expect_normal_run(worker, RuntimeVariant::HostBuildGraph);  // the device process runs
  close(fds[1]);
  pollfd readable{fds[0], POLLIN, 0};
  const int ready = poll(&readable, 1, 2000);
  char byte = 0;
  if (ready == 1) {
    EXPECT_EQ(read(fds[0], &byte, 1), 0);
  }
  close(fds[0]);
  EXPECT_EQ(ready, 1) << "the device process holds the pipe's write end";
}

// The children of process `pid` (its threads' children lists).
std::vector<pid_t> children_of(pid_t pid) {
  std::vector<pid_t> out;
  std::ifstream children("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) +
                         "/children");
  for (pid_t child = 0; children >> child;) out.push_back(child);
  return out;
}

TEST(DeviceLifetime, DeviceDiesWithItsHostProcess) {
  // A host process of its own: it starts a device, reports the pids of the device's init (its
  // child) and of the device process (the init's) and dies at once, closing nothing (as a
  // crashing host would).
  int report[2];
  ASSERT_EQ(pipe(report), 0);
  const pid_t host = fork();
  ASSERT_GE(host, 0);
  if (host == 0) {
    close(report[0]);
    Worker worker;
    worker.init(isolated_options());
    register_suite_callables(worker);
    const DeviceBuffer x = worker.malloc(kBytes);
    const DeviceBuffer y = worker.malloc(kBytes);
    worker.run(kCallable, scenario_args(x, y, Scenario::Normal),
               run_config(RuntimeVariant::HostBuildGraph, false));
    const std::vector<pid_t> inits = children_of(getpid());
    const std::vector<pid_t> devices =
        inits.size() == 1 ? children_of(inits[0]) : std::vector<pid_t>{};
    const pid_t pids[2] = {inits.size() == 1 ? inits[0] : -1,
                           devices.size() == 1 ? devices[0] : -1};
    (void)!write(report[1], pids, sizeof(pids));
    _exit(0);
  }
  close(report[1]);
  pid_t pids[2] = {-1, -1};
  const ssize_t got = read(report[0], pids, sizeof(pids));
  close(report[0]);
  int status = 0;
  ASSERT_EQ(waitpid(host, &status, 0), host);
  ASSERT_EQ(got, static_cast<ssize_t>(sizeof(pids)));
  ASSERT_GT(pids[0], 0) << "the host did not see exactly one child (the device's init)";
  ASSERT_GT(pids[1], 0) << "the device's init did not have exactly one child (the device)";
  // They notice (they wait on a pidfd of the host).
  EXPECT_TRUE(test::gone_soon(pids[1])) << "device process " << pids[1] << " outlived its host";
  EXPECT_TRUE(test::gone_soon(pids[0])) << "the device's init " << pids[0] << " outlived its host";
}

// A buffer lost in a reset stays refused however many resets later, even once the new devices
// handed out many buffers of its size (no device address is ever handed out twice).
TEST(DeviceLifetime, ABufferLostInAResetStaysLostAfterMoreResets) {
  Worker worker;
  worker.init(isolated_options());
  register_suite_callables(worker);
  const DeviceBuffer stale = worker.malloc(kBytes);
  std::vector<uint64_t> handed_out;
  for (int reset = 0; reset < 4; ++reset) {
    worker.reset();
    for (int i = 0; i < 8; ++i) handed_out.push_back(worker.malloc(kBytes).addr);
  }
  for (const uint64_t addr : handed_out) EXPECT_NE(addr, stale.addr);
  const std::vector<float> x = x_values();
  try {
    worker.copy_to(stale, x.data(), kBytes);
    ADD_FAILURE() << "a buffer of the device before 4 resets was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::InvalidDevicePointer) << e.what();
    EXPECT_NE(e.message().find("reset"), std::string::npos) << e.message();
  }
  expect_normal_run(worker, RuntimeVariant::HostBuildGraph);
}

// Writes the pid reported into `read_end` (test::report_self) to the file at `path`.
void relay_pid(int read_end, const char* path) {
  const pid_t pid = test::read_reported_pid(read_end);
  if (pid <= 0) return;
  if (FILE* file = std::fopen(path, "w")) {
    std::fprintf(file, "%d\n", static_cast<int>(pid));
    std::fclose(file);
  }
}

// A kernel that forks, then crashes: what it forked ends with the device process.
// The kernel reports the pid in a file (the device keeps no descriptor of the host's, and its
// memory is abandoned after the crash); the path is set before the device is forked.
char g_fork_report_path[64] = {};
void fork_then_crash_kernel(int64_t*) {
  int report[2];
  if (pipe(report) != 0) abort();
  const pid_t child = fork();
  if (child == 0) {
    test::report_self(report[1]);
    for (;;) pause();
  }
  close(report[1]);
  relay_pid(report[0], g_fork_report_path);
  abort();
}
void fork_orchestration(Orchestration& o, const TaskArgs&) {
  TaskArgs task;
  o.submit(0, CoreType::AIV, task);
}

TEST(DeviceLifetime, WhatAKernelForkedEndsWithTheDevice) {
  std::snprintf(g_fork_report_path, sizeof(g_fork_report_path), "/tmp/chiprt-fork-%d.txt",
                static_cast<int>(getpid()));
  std::remove(g_fork_report_path);
  Worker worker;
  worker.init(isolated_options());
  CallableBuilder builder;
  builder.orchestration_function(&fork_orchestration, {})
      .kernel_function(0, CoreType::AIV, &fork_then_crash_kernel, {});
  worker.register_callable(0, builder.build());
  try {
    worker.run(0, TaskArgs{});
    ADD_FAILURE() << "the crashing kernel's run succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::KernelCrashed) << e.what();
  }
  int forked = -1;
  {
    std::ifstream report(g_fork_report_path);
    report >> forked;
  }
  std::remove(g_fork_report_path);
  ASSERT_GT(forked, 0);
  EXPECT_TRUE(test::gone_soon(forked))
      << "process " << forked << ", forked by a kernel, outlived its device";
  worker.reset();
}

// A kernel that daemonises a child (fork, setsid, fork again, stdio to /dev/null) and returns: the
// daemon, in a session and process group of its own, ends with the device all the same. It reports
// its pid as /proc names it (the host's view, whatever pid namespace it runs in) through a pipe to
// the kernel, which writes it to a file, the path set before the device is forked.
char g_daemon_report_path[64] = {};
void daemonising_kernel(int64_t*) {
  const pid_t daemon = test::start_daemon();
  if (daemon <= 0) return;
  if (FILE* file = std::fopen(g_daemon_report_path, "w")) {
    std::fprintf(file, "%d\n", static_cast<int>(daemon));
    std::fclose(file);
  }
}

enum class DeviceEnd { Reset, Close, Destroy };

void daemon_ends_with_the_device(DeviceEnd end) {
  std::snprintf(g_daemon_report_path, sizeof(g_daemon_report_path), "/tmp/chiprt-daemon-%d.txt",
                static_cast<int>(getpid()));
  std::remove(g_daemon_report_path);
  auto worker = std::make_unique<Worker>();
  worker->init(isolated_options());
  register_suite_callables(*worker);  // for the normal run after a reset
  constexpr int32_t kDaemonCallable = 9;
  CallableBuilder builder;
  builder.orchestration_function(&fork_orchestration, {})
      .kernel_function(0, CoreType::AIV, &daemonising_kernel, {});
  worker->register_callable(kDaemonCallable, builder.build());
  worker->run(kDaemonCallable, TaskArgs{});
  int daemon = -1;
  {
    std::ifstream report(g_daemon_report_path);
    report >> daemon;
  }
  std::remove(g_daemon_report_path);
  ASSERT_GT(daemon, 0) << "the kernel did not report its daemon";
  ASSERT_FALSE(test::process_gone(daemon)) << "the daemon is not running";
  switch (end) {
    case DeviceEnd::Reset:
      worker->reset();
      break;
    case DeviceEnd::Close:
      worker->close();
      break;
    case DeviceEnd::Destroy:
      worker.reset();
      break;
  }
  EXPECT_TRUE(test::gone_soon(daemon))
      << "process " << daemon << ", daemonised by a kernel, outlived its device";
  if (end == DeviceEnd::Reset) expect_normal_run(*worker, RuntimeVariant::HostBuildGraph);
}

TEST(DeviceLifetime, ADaemonAKernelStartedEndsWithAReset) {
  daemon_ends_with_the_device(DeviceEnd::Reset);
}
TEST(DeviceLifetime, ADaemonAKernelStartedEndsWithClose) {
  daemon_ends_with_the_device(DeviceEnd::Close);
}
TEST(DeviceLifetime, ADaemonAKernelStartedEndsWithTheWorker) {
  daemon_ends_with_the_device(DeviceEnd::Destroy);
}

// A kernel that signals its parent process: the host is not its parent (the device's init is),
// so it is neither stopped nor killed. The host is a process of its own here, so that a stopped
// or killed host fails the test instead of stopping the suite.
int g_parent_signal = 0;
void signal_parent_kernel(int64_t*) {
  kill(getppid(), g_parent_signal);
}

void signal_to_the_parent_spares_the_host(int signal) {
  g_parent_signal = signal;
  std::fflush(nullptr);
  const pid_t host = fork();
  ASSERT_GE(host, 0);
  if (host == 0) {
    int code = 0;
    {
      Worker worker;
      worker.init(isolated_options());
      CallableBuilder builder;
      builder.orchestration_function(&fork_orchestration, {})
          .kernel_function(0, CoreType::AIV, &signal_parent_kernel, {});
      worker.register_callable(0, builder.build());
      try {
        worker.run(0, TaskArgs{});
      } catch (const Error&) {
        code = 2;  // the device may end with its parent (without a pid namespace): still no harm
      }
      worker.close();
    }
    _exit(code);
  }
  int status = 0;
  pid_t waited = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while ((waited = waitpid(host, &status, WNOHANG | WUNTRACED)) == 0 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (waited != host || WIFSTOPPED(status)) {
    kill(host, SIGKILL);
    waitpid(host, nullptr, 0);
  }
  ASSERT_EQ(waited, host) << "the host did not finish within 30 s";
  ASSERT_FALSE(WIFSTOPPED(status)) << "a kernel stopped the host with " << sigabbrev_np(signal);
  ASSERT_FALSE(WIFSIGNALED(status)) << "the host died of signal " << WTERMSIG(status);
  EXPECT_TRUE(WIFEXITED(status));
  const int code = WEXITSTATUS(status);
  EXPECT_TRUE(code == 0 || code == 2) << "exit code " << code;
  std::printf("[ measured ] the kernel's run %s\n", code == 0 ? "succeeded" : "failed (named)");
}

TEST(DeviceLifetime, AKernelCannotStopTheHostThroughItsParent) {
  signal_to_the_parent_spares_the_host(SIGSTOP);
}
TEST(DeviceLifetime, AKernelCannotKillTheHostThroughItsParent) {
  signal_to_the_parent_spares_the_host(SIGKILL);
}

}  // namespace
}  // namespace chiprt::isolation_test
