// The LLVM libomp peer: the OpenMP peer's graphs (peer_openmp.cpp) compiled by clang against LLVM's
// libomp into the chiprt_peer_libomp executable (tools/perf/llvm_omp), which this runner starts as
// a child process: libomp and GCC's libgomp export the same omp_* / GOMP_* symbols, so they cannot
// share the chiprt process. Each run's wall time is the child's own, taken in-process around
// building and running the graph exactly as in the libgomp column; process start-up and the
// socket round trip are outside it.
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "runners.h"

extern char** environ;

namespace chiprt::perf {

namespace {

constexpr const char* kExecutableName = "chiprt_peer_libomp";
constexpr const char* kPathVariable = "CHIPRT_PEER_LIBOMP";
// How long a child may take to exit once its input is closed before it is killed.
constexpr auto kExitGrace = std::chrono::seconds(5);

bool is_executable_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* name = ::sigabbrev_np(sig);
    return "was killed by signal " + std::to_string(sig) +
           (name != nullptr ? " (SIG" + std::string(name) + ")" : "");
  }
  return "ended with wait status " + std::to_string(status);
}

// One chiprt_peer_libomp process and a socket on its stdin and stdout. Closing the socket ends
// the child (end of input), which the destructor then reaps.
class ChildProcess {
 public:
  ChildProcess(const std::string& path, unsigned threads) : path_(path) {
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
      throw std::system_error(errno, std::generic_category(),
                              "socketpair for " + path + " (too many open files?)");
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    // dup2 clears close-on-exec on the child's stdin / stdout; the other ends stay closed there.
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
    const std::string threads_text = std::to_string(threads);
    std::vector<char*> argv = {const_cast<char*>(path.c_str()), const_cast<char*>("--threads"),
                               const_cast<char*>(threads_text.c_str()), nullptr};
    const int error = ::posix_spawn(&pid_, path.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    if (error != 0) {
      ::close(fds[0]);
      throw std::system_error(
          error, std::generic_category(),
          "cannot start " + path + " (set " + kPathVariable + " to a built chiprt_peer_libomp)");
    }
    fd_ = fds[0];
  }

  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  ~ChildProcess() {
    if (fd_ >= 0) ::close(fd_);
    if (pid_ > 0) reap();
  }

  // Sends one request line and returns the child's answer line; `what` names the request in
  // errors.
  std::string exchange(const std::string& request, const std::string& what) {
    if (fd_ < 0) {
      throw std::runtime_error(std::string(kExecutableName) + " (" + path_ +
                               ") stopped after an earlier error; '" + request + "' not sent");
    }
    const std::string line = request + "\n";
    std::size_t sent = 0;
    while (sent < line.size()) {
      const ssize_t n = ::send(fd_, line.data() + sent, line.size() - sent, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) fail("did not take " + what + " (" + std::strerror(errno) + ")");
      sent += static_cast<std::size_t>(n);
    }
    return read_line(what);
  }

  // The next line the child writes, without its newline.
  std::string read_line(const std::string& what) {
    for (;;) {
      const std::size_t newline = buffer_.find('\n');
      if (newline != std::string::npos) {
        std::string line = buffer_.substr(0, newline);
        buffer_.erase(0, newline + 1);
        return line;
      }
      char chunk[512];
      const ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) fail("gave no readable answer to " + what + " (" + std::strerror(errno) + ")");
      if (n == 0) fail("closed its output before answering " + what);
      buffer_.append(chunk, static_cast<std::size_t>(n));
    }
  }

  // Ends the child and throws an error naming it, its exit status and `what` went wrong.
  [[noreturn]] void fail(const std::string& what) {
    std::string status = "is gone";
    if (fd_ >= 0) {
      ::close(fd_);
      fd_ = -1;
    }
    if (pid_ > 0) status = describe_wait_status(reap());
    throw std::runtime_error(std::string(kExecutableName) + " (" + path_ + ") " + what + "; it " +
                             status + " (its stderr above says why)");
  }

 private:
  // Waits for the child to exit (its input is closed), killing it after kExitGrace.
  int reap() {
    int status = 0;
    const auto deadline = std::chrono::steady_clock::now() + kExitGrace;
    for (;;) {
      const pid_t done = ::waitpid(pid_, &status, WNOHANG);
      if (done == pid_ || (done < 0 && errno != EINTR)) break;
      if (std::chrono::steady_clock::now() >= deadline) {
        ::kill(pid_, SIGKILL);
        while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
        }
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    pid_ = -1;
    return status;
  }

  std::string path_;
  pid_t pid_ = -1;
  int fd_ = -1;
  std::string buffer_;  // bytes read past the last returned line
};

class LibompRunner final : public Runner, public TaskBenchGraphRunner {
 public:
  LibompRunner(const std::string& path, unsigned threads) : child_(path, threads) {
    const std::string hello = child_.read_line("its start-up");
    if (hello != "ready") {
      child_.fail("answered '" + hello + "' instead of 'ready' while starting");
    }
  }

  void prepare(const Workload& workload) override {
    const std::string answer = ask("prepare", workload);
    if (answer != "ok") protocol_error("prepare", workload, answer);
  }

  RunResult run(const Workload& workload) override {
    const std::string answer = ask("run", workload);
    std::istringstream in(answer);
    std::string ok;
    RunResult result;
    std::string rest;
    if (!(in >> ok >> result.tasks >> result.wall_ns) || ok != "ok" || (in >> rest)) {
      protocol_error("run", workload, answer);
    }
    return result;
  }

  uint64_t run_task_bench(uint8_t pattern, uint64_t width, uint64_t height,
                          uint64_t iterations) override {
    const std::string request = "taskbench " + std::to_string(pattern) + " " +
                                std::to_string(width) + " " + std::to_string(height) + " " +
                                std::to_string(iterations);
    std::string answer = child_.exchange(request, "'" + request + "'");
    if (answer.rfind("error ", 0) == 0) throw std::runtime_error(answer.substr(6));
    std::istringstream in(answer);
    std::string ok;
    uint64_t tasks = 0;
    uint64_t wall_ns = 0;
    std::string rest;
    if (!(in >> ok >> tasks >> wall_ns) || ok != "ok" || (in >> rest)) {
      child_.fail("answered '" + answer + "' to " + request +
                  ", which is not the protocol of tools/perf/llvm_omp/peer_libomp_main.cpp "
                  "(rebuild chiprt_peer_libomp)");
    }
    return wall_ns;
  }

 private:
  std::string ask(const char* command, const Workload& workload) {
    const std::string request = std::string(command) + " " +
                                std::string(shape_name(workload.shape)) + " " +
                                std::to_string(workload.tasks);
    std::string answer = child_.exchange(request, "'" + request + "'");
    if (answer.rfind("error ", 0) == 0) throw std::runtime_error(answer.substr(6));
    return answer;
  }

  [[noreturn]] void protocol_error(const char* command, const Workload& workload,
                                   const std::string& answer) {
    child_.fail("answered '" + answer + "' to " + command + " " +
                std::string(shape_name(workload.shape)) +
                ", which is not the protocol of tools/perf/llvm_omp/peer_libomp_main.cpp "
                "(rebuild chiprt_peer_libomp)");
  }

  ChildProcess child_;
};

}  // namespace

std::string locate_llvm_openmp_peer(std::string& why) {
  if (const char* chosen = std::getenv(kPathVariable); chosen != nullptr && *chosen != '\0') {
    if (is_executable_file(chosen)) return chosen;
    why = std::string(kPathVariable) + "=" + chosen +
          " is not an executable file; point it at a built " + kExecutableName + " or unset it";
    return {};
  }
  // Next to the running binary (the chiprt CLI's directory), then where this build tree puts it.
  std::vector<std::string> candidates;
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) candidates.push_back((self.parent_path() / kExecutableName).string());
  if (candidates.empty() || candidates.front() != CHIPRT_PEER_LLVM_OPENMP_PATH) {
    candidates.emplace_back(CHIPRT_PEER_LLVM_OPENMP_PATH);
  }
  for (const std::string& candidate : candidates) {
    if (is_executable_file(candidate)) return candidate;
  }
  why = std::string(kExecutableName) + " not found at " + candidates.front() +
        (candidates.size() > 1 ? " nor " + candidates.back() : "") + "; build it (ninja " +
        kExecutableName + ") or set " + kPathVariable + " to its path";
  return {};
}

std::unique_ptr<Runner> make_llvm_openmp_runner(unsigned threads) {
  std::string why;
  const std::string path = locate_llvm_openmp_peer(why);
  if (path.empty()) throw std::runtime_error(why);
  return std::make_unique<LibompRunner>(path, threads);
}

}  // namespace chiprt::perf
