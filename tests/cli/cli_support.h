// Running the built `chiprt` binary from the CLI tests: it lives at <build>/tools/chiprt, found
// from this test binary's own path. Header-only; each call runs one shell command.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

namespace chiprt::cli_test {

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

inline std::string chiprt_binary() {
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe");
  return (self.parent_path() / ".." / "tools" / "chiprt").lexically_normal().string();
}

// Runs `<env> chiprt <args>` through the shell.
inline CommandResult run_chiprt(const std::string& args, const std::string& env = "") {
  const std::string command =
      env + (env.empty() ? "" : " ") + chiprt_binary() + " " + args + " 2>&1";
  CommandResult result;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    result.output = "popen failed for: " + command;
    return result;
  }
  std::array<char, 4096> chunk{};
  std::size_t n = 0;
  while ((n = std::fread(chunk.data(), 1, chunk.size(), pipe)) > 0) {
    result.output.append(chunk.data(), n);
  }
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

}  // namespace chiprt::cli_test
