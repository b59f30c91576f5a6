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
//   <- "taskbench <pattern> <width> <height> <iterations>"
//                                         one timed run of a `chiprt bench --task-bench` graph:
//                                         <pattern> a TbPattern value (task_bench_patterns.h),
//                                         every task spinning <iterations> (task_bench_kernel.h)
//   -> "ok <tasks> <wall_ns>"
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
#include "task_bench_kernel.h"
#include "task_bench_patterns.h"
#include "task_dag.h"
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
    if (line.rfind("taskbench ", 0) == 0) return handle_task_bench(line);
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
  static void spin_body(void* context, uint64_t) noexcept {
    const double sink = chiprt::perf::tb_spin(*static_cast<const uint64_t*>(context));
    asm volatile("" : : "x"(sink));
  }

  std::string handle_task_bench(const std::string& line) {
    std::istringstream in(line);
    std::string command;
    std::string texts[4];
    std::string rest;
    uint64_t values[4] = {};
    bool ok = static_cast<bool>(in >> command >> texts[0] >> texts[1] >> texts[2] >> texts[3]) &&
              !(in >> rest);
    for (int i = 0; ok && i < 4; ++i) ok = parse_count(texts[i], values[i]);
    if (!ok || values[0] >= std::size(chiprt::perf::kAllTbPatterns) || values[1] == 0 ||
        values[2] == 0) {
      return "error bad request '" + line +
             "'; expected 'taskbench <pattern> <width> <height> <iterations>' with a pattern "
             "below " +
             std::to_string(std::size(chiprt::perf::kAllTbPatterns)) +
             " and a width and height of at least 1";
    }
    chiprt::perf::TbGraph graph;
    graph.pattern = static_cast<chiprt::perf::TbPattern>(values[0]);
    graph.width = values[1];
    graph.height = values[2];
    uint64_t iterations = values[3];
    auto* dag_runner = dynamic_cast<chiprt::perf::DagRunner*>(runner_.get());
    if (dag_runner == nullptr) return "error the OpenMP runner does not run task DAGs";
    try {
      // The predecessor lists are the graph's description: built outside timing.
      const chiprt::perf::TbTaskLists lists = chiprt::perf::tb_task_lists(graph);
      chiprt::perf::TaskDag dag;
      dag.tasks = lists.offsets.size() - 1;
      dag.offsets = lists.offsets.data();
      dag.preds = lists.preds.data();
      dag.body = spin_body;
      dag.context = &iterations;
      const uint64_t wall_ns = dag_runner->run_dag(dag);
      return "ok " + std::to_string(dag.tasks) + " " + std::to_string(wall_ns);
    } catch (const std::exception& e) {
      std::string message = e.what();
      for (char& c : message) c = c == '\n' ? ' ' : c;
      return "error taskbench: " + message;
    }
  }

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
