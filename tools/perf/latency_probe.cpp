// chiprt_latency_probe: times Worker::run of a small run from the caller's side (a steady clock
// around the call) and prints one sample per line, in nanoseconds. scripts/latency-baseline.sh
// compiles it against two builds of chiprt (an older commit and the current tree) and runs both
// alternately, so it uses only the public API those builds share: Worker, WorkerOptions,
// CallableBuilder with in-process functions, TaskArgs, Tensor and CallConfig.
//
//   chiprt_latency_probe [--runs N] [--tasks 0|1] [--column hbg|hbg/ser|hbg/replay|ring|ring/ser]
//                        [--isolated] [--warm-up N]
//
// --tasks 0: the orchestration function submits nothing (an empty run); 1: one task of an empty
// kernel. --isolated: the chip in a device process of its own (SimIsolation::Process). The chip
// is shaped as `chiprt bench` shapes it for the host's hardware threads. Exit code 0, or 1 with a
// message on stderr when a run fails.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "chiprt/call_config.h"
#include "chiprt/callable.h"
#include "chiprt/orchestration.h"
#include "chiprt/run_report.h"
#include "chiprt/task_args.h"
#include "chiprt/tensor.h"
#include "chiprt/worker.h"

namespace {

constexpr int32_t kCallable = 1;
constexpr int32_t kEmptyFunc = 1;
constexpr uint64_t kElements = 64;

void empty_kernel(int64_t*) {}

// Scalar 0: tasks to submit (0 or 1). Tensor 0: the buffer the task reads.
void probe_orchestration(chiprt::Orchestration& orch, const chiprt::TaskArgs& args) {
  const uint64_t tasks = args.scalar_bits(0);
  chiprt::TaskArgs task;
  for (uint64_t i = 0; i < tasks; ++i) {
    task.clear();
    task.in(args.tensor(0));
    orch.submit(kEmptyFunc, chiprt::CoreType::AIV, task);
  }
}

bool parse_config(const std::string& column, chiprt::CallConfig* config) {
  if (column == "hbg" || column == "hbg/ser" || column == "hbg/replay") {
    config->runtime = chiprt::RuntimeVariant::HostBuildGraph;
  } else if (column == "ring" || column == "ring/ser") {
    config->runtime = chiprt::RuntimeVariant::TensormapRingbuffer;
  } else {
    return false;
  }
  config->serial = column.ends_with("/ser");
  config->replay_graph = column == "hbg/replay";
  return true;
}

int usage(const char* why) {
  std::fprintf(stderr,
               "chiprt_latency_probe: %s\nusage: chiprt_latency_probe [--runs N] [--tasks 0|1] "
               "[--column hbg|hbg/ser|hbg/replay|ring|ring/ser] [--isolated] [--warm-up N]\n",
               why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 1000;
  int warm_up = 20;
  uint64_t tasks = 0;
  std::string column = "hbg/replay";
  bool isolated = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--runs" && has_value) {
      runs = std::atoi(argv[++i]);
    } else if (arg == "--warm-up" && has_value) {
      warm_up = std::atoi(argv[++i]);
    } else if (arg == "--tasks" && has_value) {
      tasks = std::strtoull(argv[++i], nullptr, 10);
    } else if (arg == "--column" && has_value) {
      column = argv[++i];
    } else if (arg == "--isolated") {
      isolated = true;
    } else {
      return usage(("unknown or incomplete option '" + arg + "'").c_str());
    }
  }
  chiprt::CallConfig config;
  if (runs < 1 || warm_up < 0 || tasks > 1) return usage("--runs >= 1, --tasks 0 or 1");
  if (!parse_config(column, &config)) return usage(("unknown column '" + column + "'").c_str());
  try {
    // The chip `chiprt bench` uses for the host's threads (tools/perf/chiprt_options.h).
    const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
    chiprt::WorkerOptions options;
    options.sim.host_threads = threads;
    options.sim.isolation = isolated ? chiprt::SimIsolation::Process : chiprt::SimIsolation::None;
    if (chiprt::resolve_sim_core_execution(options.sim) == chiprt::SimCoreExecution::Aicpu) {
      options.sim.aicpu_threads = std::clamp(threads, 2u, 8u);
    }
    chiprt::Worker worker;
    worker.init(options);
    worker.register_callable(
        kCallable, chiprt::CallableBuilder()
                       .orchestration_function(probe_orchestration, chiprt::ArgSignature{})
                       .kernel_function(kEmptyFunc, chiprt::CoreType::AIV, empty_kernel,
                                        chiprt::ArgSignature{})
                       .build());
    const chiprt::DeviceBuffer buffer = worker.malloc(kElements * sizeof(float));
    chiprt::TaskArgs args;
    args.in(chiprt::Tensor::make(buffer, {kElements}, chiprt::DataType::F32));
    args.scalar(tasks);
    std::vector<uint64_t> samples(static_cast<std::size_t>(runs));
    for (int i = 0; i < warm_up; ++i) worker.run(kCallable, args, config);
    for (int i = 0; i < runs; ++i) {
      const auto start = std::chrono::steady_clock::now();
      worker.run(kCallable, args, config);
      const auto end = std::chrono::steady_clock::now();
      samples[static_cast<std::size_t>(i)] = static_cast<uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count());
    }
    for (const uint64_t ns : samples) std::printf("%llu\n", static_cast<unsigned long long>(ns));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "chiprt_latency_probe: %s\n", e.what());
    return 1;
  }
  return 0;
}
