// chiprt_peer_libomp: the OpenMP peer of `chiprt bench` (peer_openmp.cpp, unchanged) built by clang
// against LLVM's libomp, run as a child process by peer_libomp.cpp because libomp and GCC's libgomp
// export the same symbols and cannot share the chiprt process.
//
// Usage: chiprt_peer_libomp --threads N, then a line protocol on stdin / stdout (<- a line read,
// -> a line written):
//   -> "ready"                            once, after start-up
//   <- "prepare <shape> <tasks>"          Runner::prepare (allocation and a warm-up run)
//   -> "ok"
//   <- "run <shape> <tasks>"              Runner::run: one timed run
//   -> "ok <tasks> <wall_ns>"             wall_ns: measured in this process, by the OpenMP runner
//   -> "error <message>"                  instead of "ok": the request failed; serving goes on
// <shape> is a workloads.h shape name and <tasks> the exact task count of the parent's workload.
// The process exits 0 at end of input, 2 on bad arguments.
#include <charconv>
#include <cstdio>
#include <exception>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>

#include "runners.h"
#include "workloads.h"

namespace {

using chiprt::perf::RunResult;
using chiprt::perf::Shape;
using chiprt::perf::Workload;

// Thread counts beyond this are almost certainly a typo; the parent passes the suite's count.
constexpr unsigned kMaxThreads = 4096;

std::string shape_list() {
  std::string names;
  for (const Shape shape : chiprt::perf::kAllShapes) {
    names += (names.empty() ? "" : ", ") + std::string(chiprt::perf::shape_name(shape));
  }
  return names;
}

// A decimal count, digits only (istream would wrap "-1" to 2^64 - 1).
bool parse_count(std::string_view text, uint64_t& value) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size();
}

class Server {
 public:
  explicit Server(unsigned threads) : runner_(chiprt::perf::make_openmp_runner(threads)) {}

  // Answers one request line (without its newline).
  std::string handle(const std::string& line) {
    std::istringstream in(line);
    std::string command;
    std::string shape_text;
    std::string tasks_text;
    std::string rest;
    uint64_t tasks = 0;
    if (!(in >> command >> shape_text >> tasks_text) || (in >> rest) ||
        (command != "prepare" && command != "run") || !parse_count(tasks_text, tasks)) {
      return "error bad request '" + line +
             "'; expected 'prepare <shape> <tasks>' or 'run <shape> <tasks>'";
    }
    Shape shape = Shape::Independent;
    if (!chiprt::perf::parse_shape(shape_text, &shape)) {
      return "error unknown shape '" + shape_text + "'; expected one of " + shape_list();
    }
    if (tasks == 0) return "error tasks is 0 for " + shape_text + "; expected at least 1";
    // The graph is generated outside timing, once per (shape, tasks), like the suite does.
    if (!workload_ || workload_->shape != shape || workload_->tasks != tasks) {
      workload_ = chiprt::perf::make_workload(shape, tasks);
      if (workload_->tasks != tasks) {
        const uint64_t made = workload_->tasks;
        workload_.reset();
        return "error " + shape_text + " cannot have exactly " + std::to_string(tasks) +
               " tasks (make_workload gives " + std::to_string(made) +
               "); a request carries a built workload's exact task count, so chiprt and "
               "chiprt_peer_libomp were built from different workloads.cpp: rebuild both";
      }
    }
    try {
      if (command == "prepare") {
        runner_->prepare(*workload_);
        return "ok";
      }
      const RunResult result = runner_->run(*workload_);
      return "ok " + std::to_string(result.tasks) + " " + std::to_string(result.wall_ns);
    } catch (const std::exception& e) {
      std::string message = e.what();
      for (char& c : message) c = c == '\n' ? ' ' : c;
      return "error " + shape_text + ": " + message;
    }
  }

 private:
  std::unique_ptr<chiprt::perf::Runner> runner_;
  std::optional<Workload> workload_;
};

std::optional<unsigned> parse_threads(int argc, char** argv) {
  if (argc != 3 || std::string_view(argv[1]) != "--threads") return std::nullopt;
  const std::string_view text = argv[2];
  unsigned threads = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), threads);
  if (ec != std::errc() || end != text.data() + text.size() || threads == 0 ||
      threads > kMaxThreads) {
    return std::nullopt;
  }
  return threads;
}

}  // namespace

int main(int argc, char** argv) {
  const std::optional<unsigned> threads = parse_threads(argc, argv);
  if (!threads) {
    std::fprintf(stderr,
                 "chiprt_peer_libomp: usage: chiprt_peer_libomp --threads N (N in 1..%u), then "
                 "'prepare|run <shape> <tasks>' lines on stdin; it is started by `chiprt bench`\n",
                 kMaxThreads);
    return 2;
  }
  Server server(*threads);
  std::cout << "ready\n" << std::flush;
  std::string line;
  while (std::getline(std::cin, line)) std::cout << server.handle(line) << '\n' << std::flush;
  return 0;
}
