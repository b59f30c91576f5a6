// What diagnostics cost, per switch (CallConfig::diagnostics), on the simulated chip:
//
//   BM_DiagEmpty/<workload>/<column>/<switch>/tasks:N
//       the suite's empty-task graphs (independent, chain) on host_build_graph and
//       tensormap_ringbuffer, threaded, with one switch on (off, swimlane=1..4, tasks, deps,
//       counters, all). The time is Worker::run entry to return, so it includes writing the run
//       directory; counters exec_ns_per_task (launch to completion) and total_ns_per_task. Compare
//       a switch's row with the `off` row of the same run: the difference per task is its
//       overhead.
//   BM_DiagKernels/<workload>/<column>/<switch>
//       the bgemm and paged_attention examples' `bench` case (real kernels) with diagnostics off
//       and all on (the wall time with all on should stay within 10% of off).
//
// The run directories go to a temporary directory removed after every iteration (untimed).
// Quick run: chiprt_bench --benchmark_filter='BM_Diag' --benchmark_min_time=0.05
#include <benchmark/benchmark.h>

#include <unistd.h>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "bench_support.h"
#include "chiprt/call_config.h"
#include "chiprt/diagnostics.h"
#include "chiprt/run_report.h"
#include "chiprt_options.h"
#include "chiprt_runner.h"
#include "kernel_workloads.h"
#include "runners.h"
#include "workloads.h"

namespace {

using namespace chiprt;
using chiprt::bench::bench_threads;
using chiprt::bench::PhaseCounters;
using chiprt::bench::suite_workload;
using perf::Shape;

struct Switch {
  const char* name;
  const char* list;  // parse_diagnostics_list; nullptr: off
};
const Switch kSwitches[] = {
    {"off", nullptr},
    {"swimlane1", "swimlane=1"},
    {"swimlane2", "swimlane=2"},
    {"swimlane3", "swimlane=3"},
    {"swimlane4", "swimlane=4"},
    {"tasks", "tasks"},
    {"deps", "deps"},
    {"counters", "counters"},
    {"all", "all"},
};

std::filesystem::path diag_dir() {
  static const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("chiprt_bench_diag_" + std::to_string(::getpid()));
  return dir;
}

CallConfig with_switch(CallConfig config, const Switch& s) {
  if (s.list == nullptr) return config;
  config.diagnostics.output_dir = diag_dir().string();
  std::string error;
  if (!parse_diagnostics_list(s.list, &config.diagnostics, &error)) throw std::runtime_error(error);
  return config;
}

std::shared_ptr<perf::ChiprtDevice> diag_device() {
  static const std::shared_ptr<perf::ChiprtDevice> device =
      perf::make_chiprt_device(bench_threads(), 100000);
  return device;
}

void BM_DiagEmpty(benchmark::State& state, Shape shape, perf::ChiprtMode mode, Switch s) {
  const perf::Workload& workload = suite_workload(shape, static_cast<uint64_t>(state.range(0)));
  PhaseCounters counters;
  try {
    const CallConfig config = with_switch(perf::chiprt_mode_config(mode), s);
    perf::ChiprtRunner runner(diag_device(), config);
    runner.prepare(workload);
    for (auto _ : state) {
      const perf::RunResult r = runner.run(workload);
      state.SetIterationTime(static_cast<double>(r.wall_ns) * 1e-9);
      counters.add(runner.last_report(), config.runtime);
      std::filesystem::remove_all(diag_dir());
    }
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  counters.set(state);
  state.counters["tasks"] = static_cast<double>(workload.tasks);
}

void BM_DiagKernels(benchmark::State& state, perf::KernelWorkload workload, std::string column,
                    Switch s) {
  try {
    static perf::KernelBenchDevice device(bench_threads());
    const CallConfig config = with_switch(*perf::kernel_column_config(column), s);
    device.run(workload, config);  // warm-up
    std::filesystem::remove_all(diag_dir());
    for (auto _ : state) {
      const perf::KernelRunResult r = device.run(workload, config);
      state.SetIterationTime(static_cast<double>(r.wall_ns) * 1e-9);
      std::filesystem::remove_all(diag_dir());
    }
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

const bool kRegistered = [] {
  const std::pair<const char*, perf::ChiprtMode> columns[] = {
      {"host_build_graph", perf::ChiprtMode::HostBuildGraph},
      {"tensormap_ringbuffer", perf::ChiprtMode::Ringbuffer}};
  for (const Shape shape : {Shape::Independent, Shape::Chain}) {
    for (const auto& [column, mode] : columns) {
      for (const Switch& s : kSwitches) {
        const std::string name =
            "BM_DiagEmpty/" + std::string(perf::shape_name(shape)) + "/" + column + "/" + s.name;
        benchmark::RegisterBenchmark(name.c_str(), BM_DiagEmpty, shape, mode, s)
            ->Arg(10000)
            ->ArgName("tasks")
            ->UseManualTime()
            ->Unit(benchmark::kMillisecond);
      }
    }
  }
  for (const perf::KernelWorkload workload : perf::kAllKernelWorkloads) {
    for (const auto& [column, mode] : columns) {
      for (const Switch& s : {kSwitches[0], kSwitches[std::size(kSwitches) - 1]}) {
        const std::string name = "BM_DiagKernels/" +
                                 std::string(perf::kernel_workload_name(workload)) + "/" + column +
                                 "/" + s.name;
        benchmark::RegisterBenchmark(name.c_str(), BM_DiagKernels, workload, std::string(column), s)
            ->UseManualTime()
            ->Unit(benchmark::kMillisecond);
      }
    }
  }
  return true;
}();

}  // namespace
