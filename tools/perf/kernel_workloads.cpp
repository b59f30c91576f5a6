#include "kernel_workloads.h"

#include <string>

#include "chiprt/run_report.h"
#include "chiprt/status.h"
#include "chiprt/worker.h"
#include "chiprt_options.h"
#include "example.h"
#include "kernel_graph.h"
#include "runners.h"

namespace chiprt::perf {

std::string_view kernel_workload_name(KernelWorkload workload) noexcept {
  switch (workload) {
    case KernelWorkload::Bgemm:
      return "bgemm";
    case KernelWorkload::PagedAttention:
      return "paged_attention";
  }
  return "invalid";
}

bool parse_kernel_workload(std::string_view name, KernelWorkload* out) noexcept {
  for (const KernelWorkload workload : kAllKernelWorkloads) {
    if (kernel_workload_name(workload) == name) {
      *out = workload;
      return true;
    }
  }
  return false;
}

std::optional<CallConfig> kernel_column_config(std::string_view column_id) {
  CallConfig config;
  config.measure_kernel_time = true;
  if (column_id == "host_build_graph") {
    config.runtime = RuntimeVariant::HostBuildGraph;
  } else if (column_id == "host_build_graph_serial") {
    config.runtime = RuntimeVariant::HostBuildGraph;
    config.serial = true;
  } else if (column_id == "host_build_graph_replay") {
    config.runtime = RuntimeVariant::HostBuildGraph;
    config.replay_graph = true;
  } else if (column_id == "tensormap_ringbuffer") {
    config.runtime = RuntimeVariant::TensormapRingbuffer;
  } else if (column_id == "tensormap_ringbuffer_serial") {
    config.runtime = RuntimeVariant::TensormapRingbuffer;
    config.serial = true;
  } else {
    return std::nullopt;
  }
  return config;
}

KernelBenchDevice::KernelBenchDevice(unsigned threads, SimIsolation isolation)
    : worker_(std::make_unique<Worker>()) {
  // The same chip as the graph rows' chiprt columns.
  worker_->init(bench_worker_options(threads, isolation));
}

KernelBenchDevice::~KernelBenchDevice() = default;

void KernelBenchDevice::flush_diagnostics() {
  worker_->flush_diagnostics();
}

namespace {

// Runs the bench case of `workload`'s example on `worker` through `executor` and checks it.
RunReport run_checked(Worker& worker, KernelWorkload workload, const CallConfig& config,
                      const examples::Executor& executor) {
  const std::string name(kernel_workload_name(workload));
  const examples::Example* example = examples::find_example(name);
  if (example == nullptr) {
    throw Error(StatusCode::InternalError,
                "bench row '" + name +
                    "' has no example of that name (examples: " + examples::example_names() + ")");
  }
  const examples::ExampleCase* example_case = example->find_case(kKernelBenchCase);
  if (example_case == nullptr) {
    throw Error(StatusCode::InternalError,
                "example '" + name + "' has no case '" + std::string(kKernelBenchCase) +
                    "' for the bench row (cases: " + example->case_names() + ")");
  }
  const examples::Outcome outcome = example->run(worker, *example_case, config, executor);
  if (!outcome.passed) {
    throw Error(StatusCode::InternalError,
                name + "/" + example_case->name + " computed a wrong result: " + outcome.message);
  }
  if (!outcome.report.kernel_time_measured) {
    throw Error(StatusCode::InternalError,
                name + ": the run report has no kernel time although measure_kernel_time was set");
  }
  return outcome.report;
}

}  // namespace

KernelRunResult KernelBenchDevice::run(KernelWorkload workload, const CallConfig& config) {
  const RunReport report = run_checked(*worker_, workload, config, examples::run_on_worker);
  KernelRunResult result;
  result.tasks = report.task_count;
  result.wall_ns = report.host_total_ns;
  result.device_wall_ns = report.device_wall_ns;
  result.records_dropped = report.diagnostics_records_dropped;
  result.kernel_ns = report.kernel_ns;
  // host_build_graph measures its graph build on the host; a replay skips it.
  result.replayed = config.replay_graph && !report.phase(Phase::GraphBuild).present;
  return result;
}

KernelRunResult KernelBenchDevice::run_on_peer(KernelWorkload workload, DagRunner& peer) {
  // The graph is the call's description, like a Workload: exporting it is not timed.
  const examples::Executor on_peer = [&peer](Worker& worker, int32_t callable_id,
                                             const TaskArgs& args, const CallConfig& config) {
    const GraphExport graph = worker.export_graph(callable_id, args, config);
    return run_graph_export(peer, graph);
  };
  CallConfig config;
  config.runtime = RuntimeVariant::HostBuildGraph;
  config.measure_kernel_time = true;
  const RunReport report = run_checked(*worker_, workload, config, on_peer);
  KernelRunResult result;
  result.tasks = report.task_count;
  result.wall_ns = report.host_total_ns;
  result.kernel_ns = report.kernel_ns;
  return result;
}

}  // namespace chiprt::perf
