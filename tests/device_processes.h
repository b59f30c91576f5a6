// What tests of the isolated device share about the processes chip code starts: a daemon started
// the way a daemon starts itself (fork, setsid, fork again, stdio to /dev/null), pids as /proc
// names them (the test's view, whatever pid namespace the device's processes run in: getpid()
// and fork() there count in theirs), and whether a process is gone. Header-only. report_self and
// start_daemon's children use only async-signal-safe calls (they run in forked children of a
// multi-threaded device).
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

namespace chiprt::test {

// Writes this process's pid as /proc names it into `fd` (a pipe's write end).
inline void report_self(int fd) {
  char self[32] = {};
  (void)!readlink("/proc/self", self, sizeof(self) - 1);
  (void)!write(fd, self, sizeof(self));
}

// Reads what report_self wrote into `fd` (then closes it): the pid, or -1.
inline pid_t read_reported_pid(int fd) {
  char self[32] = {};
  const ssize_t got = read(fd, self, sizeof(self) - 1);
  close(fd);
  return got > 0 ? static_cast<pid_t>(std::atoi(self)) : -1;
}

// Starts a daemon (in a session and process group of its own, its parent gone) that pauses for
// ever; returns its pid as /proc names it, or -1.
inline pid_t start_daemon() {
  int report[2];
  if (pipe(report) != 0) return -1;
  const pid_t child = fork();
  if (child < 0) return -1;
  if (child == 0) {
    setsid();
    if (fork() == 0) {
      report_self(report[1]);
      const int null = open("/dev/null", O_RDWR);
      for (int fd : {0, 1, 2}) dup2(null, fd);
      close_range(3, ~0u, 0);
      for (;;) pause();
    }
    _exit(0);
  }
  close(report[1]);
  const pid_t daemon = read_reported_pid(report[0]);
  waitpid(child, nullptr, 0);
  return daemon;
}

// Whether process `pid` no longer runs (gone, or a zombie).
inline bool process_gone(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;
  const std::size_t close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() &&
         (line[close + 2] == 'Z' || line[close + 2] == 'X');
}

// Whether process `pid` is gone within a few seconds (it should be at once: the bound only keeps
// a failure from waiting for ever). Kills it when it is not.
inline bool gone_soon(pid_t pid) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!process_gone(pid) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (process_gone(pid)) return true;
  kill(pid, SIGKILL);
  return false;
}

}  // namespace chiprt::test
