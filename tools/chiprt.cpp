// chiprt: run the example workloads on the simulated chip and check them against their
// references.
//
//   chiprt list
//   chiprt run <example> [--case NAME] [--runtime host_build_graph|tensormap_ringbuffer]
//              [--clusters N] [--aicpu-threads N] [--rounds N] [--serial]
//              [--ring-window N[,N...]] [--ring-heap N[,N...]] [--ring-dep-pool N[,N...]]
//              [--graph FILE] [--isolated] [--pipeline]
//   chiprt bench [--quick] [--json FILE] [--threads N] [--tasks N] [--repetitions N] [--no-peers]
//                [--workloads NAME[,NAME...]] [--isolation none|process|both]
//                [--scaling [--scaling-sizes N,N[,N...]]]
//                [--diagnostics [--diag-switches SWITCH[,SWITCH...]]] [--pipeline] [--latency]
//                [--task-bench [--svg FILE] [--granularities US,US[,US...]]]
//
// --graph exports the first round's task graph (Worker::export_graph: the host_build_graph build
// of the same call, whatever the runtime), prints its shape and writes it as Graphviz DOT.
//
// --pipeline submits the rounds through Worker::submit, two in flight (run N+1 is prepared while
// run N executes), instead of one Worker::run after the other; the outputs are checked once, after
// the last round.
//
// --isolated runs the simulated chip in a device process of its own (SimIsolation::Process): a
// kernel that crashes or hangs ends the run with KernelCrashed / OpExecuteTimeout instead of
// taking chiprt down.
//
// The ring options size the tensormap_ringbuffer rings per scope depth 0..3 (CallConfig::rings:
// one value for every depth, or a list whose last value repeats); unset, the CHIPRT_RING_*
// variables and then the defaults apply.
//
// `bench` runs the performance suite (tools/perf/suite.h) on chiprt's variants and the peer
// runtimes that were found at configure time, and prints one table of ns per task (the
// real-kernel rows bgemm and paged_attention: wall time and efficiency; the in-process peers run
// the graph Worker::export_graph gives for the same call).
// `bench --isolation process` puts the chiprt columns' chip in a device process; `--isolation
// both` runs instead the comparison of tools/perf/isolation_compare.h: every chiprt column on every
// row and an empty run's latency, on the isolated and the in-process chip alternately, with their
// ratio.
// `bench --scaling` runs the graph workloads at several sizes instead (tools/perf/scaling.h): ns
// per task at each size, its growth, and chiprt's memory per in-flight task.
// `bench --diagnostics` measures instead what each diagnostics switch costs
// (tools/perf/diagnostics_cost.h): the empty-task graph rows with each switch on alone and with
// all, and the real-kernel rows with all, each against diagnostics off, interleaved.
// `bench --latency` times instead a small run (tools/perf/latency_bench.h): an empty run and a
// one-task run on every chiprt column, in process and isolated, as p50 / p99 over many runs.
//
// `bench --task-bench` runs the Task Bench dependence patterns instead (tools/perf/task_bench.h),
// swept over task granularity: METG(50%) per pattern and column, efficiency curves as SVG.
//
// Exit codes: 0 every round passed (bench: every available cell measured), 1 a round failed or
// the runtime reported an error, 2 usage error (bad option or value, unknown subcommand, example
// or case, a configuration the runtime refuses as invalid: InvalidConfig). docs/cli.md has it all.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <deque>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chiprt/call_config.h"
#include "chiprt/graph_export.h"
#include "chiprt/ring_sizes.h"
#include "chiprt/run_report.h"
#include "chiprt/status.h"
#include "chiprt/version.h"
#include "chiprt/worker.h"
#include "diagnostics_cost.h"
#include "example.h"
#include "isolation_compare.h"
#include "latency_bench.h"
#include "pipeline_bench.h"
#include "round_states.h"
#include "scaling.h"
#include "suite.h"
#include "task_bench.h"

namespace {

using chiprt::examples::Example;
using chiprt::examples::ExampleCase;
using chiprt::examples::Outcome;

constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

struct RunOptions {
  std::string example;
  std::string case_name;
  std::string runtime = "host_build_graph";
  int clusters = 0;       // 0 = the simulated chip's default
  int aicpu_threads = 0;  // 0 = auto
  int rounds = 1;
  bool serial = false;
  std::string core_execution = "auto";
  // tensormap_ringbuffer ring sizes as given ("" = not given).
  std::string ring_window;
  std::string ring_heap;
  std::string ring_dep_pool;
  std::string graph_path;  // --graph: write the first round's graph as Graphviz DOT ("" = no)
  bool isolated = false;   // --isolated: SimIsolation::Process
  std::string diag;        // --diag: all, or a list of collectors ("" = off)
  std::string diag_dir;    // --diag-dir: where the run directories go
  bool pipeline = false;   // --pipeline: the rounds through Worker::submit, two in flight
};

void print_list() {
  for (const Example& example : chiprt::examples::all_examples()) {
    std::printf("%s\n    %s\n", example.name.c_str(), example.description.c_str());
    for (std::size_t i = 0; i < example.cases.size(); ++i) {
      const ExampleCase& c = example.cases[i];
      std::printf("    case %-8s %s%s\n", c.name.c_str(), c.params_text().c_str(),
                  i == 0 ? "  (default)" : "");
    }
  }
}

double to_us(uint64_t ns) {
  return static_cast<double>(ns) / 1000.0;
}

// Median of a non-empty sample (the mean of the two middle values for even sizes).
double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2.0;
}

// One row of the timing table: a span per round and, for phases, a start offset per round.
struct TimingRow {
  std::string name;
  bool has_start = false;
  std::vector<double> starts_us;
  std::vector<double> spans_us;
};

std::vector<TimingRow> timing_rows(const std::vector<chiprt::RunReport>& reports) {
  std::vector<TimingRow> rows = {{"host prepare", false, {}, {}},
                                 {"device wall", false, {}, {}},
                                 {"host total", false, {}, {}}};
  for (const chiprt::RunReport& r : reports) {
    rows[0].spans_us.push_back(to_us(r.host_prepare_ns));
    rows[1].spans_us.push_back(to_us(r.device_wall_ns));
    rows[2].spans_us.push_back(to_us(r.host_total_ns));
  }
  for (int p = 0; p < chiprt::kPhaseCount; ++p) {
    const auto phase = static_cast<chiprt::Phase>(p);
    TimingRow row{std::string(chiprt::phase_name(phase)), true, {}, {}};
    for (const chiprt::RunReport& r : reports) {
      const chiprt::PhaseSpan& span = r.phase(phase);
      if (!span.present) continue;
      row.starts_us.push_back(to_us(span.start_ns));
      row.spans_us.push_back(to_us(span.span_ns));
    }
    if (!row.spans_us.empty()) rows.push_back(std::move(row));
  }
  return rows;
}

void print_timing(const std::vector<chiprt::RunReport>& reports) {
  const std::vector<TimingRow> rows = timing_rows(reports);
  if (reports.size() == 1) {
    std::printf("timing (us)         %12s %12s\n", "start", "span");
    for (const TimingRow& row : rows) {
      if (row.has_start) {
        std::printf("  %-17s %12.1f %12.1f\n", row.name.c_str(), row.starts_us[0], row.spans_us[0]);
      } else {
        std::printf("  %-17s %12s %12.1f\n", row.name.c_str(), "-", row.spans_us[0]);
      }
    }
    return;
  }
  std::printf("timing (us) over %zu rounds\n", reports.size());
  std::printf("  %-17s %12s %12s %12s %12s %7s\n", "", "start(med)", "median", "min", "max",
              "rounds");
  for (const TimingRow& row : rows) {
    const auto [min_it, max_it] = std::minmax_element(row.spans_us.begin(), row.spans_us.end());
    char start[32] = "-";
    if (row.has_start) std::snprintf(start, sizeof(start), "%.1f", median(row.starts_us));
    std::printf("  %-17s %12s %12.1f %12.1f %12.1f %7zu\n", row.name.c_str(), start,
                median(row.spans_us), *min_it, *max_it, row.spans_us.size());
  }
}

// An integer option of at least `minimum`; the message names the bound and the value given.
CLI::Validator at_least(int minimum) {
  return CLI::Validator(
      [minimum](std::string& input) -> std::string {
        int value = 0;
        const char* end = input.data() + input.size();
        const auto [ptr, ec] = std::from_chars(input.data(), end, value);
        if (ec == std::errc::result_out_of_range && ptr == end && input[0] != '-') {
          return "'" + input + "' is too large: give an integer from " + std::to_string(minimum) +
                 " to " + std::to_string(std::numeric_limits<int>::max());
        }
        if (ec != std::errc() || ptr != end || value < minimum) {
          return "must be an integer >= " + std::to_string(minimum) + ", got '" + input + "'";
        }
        return {};
      },
      "INT>=" + std::to_string(minimum));
}

// Prints the exported graph's shape and writes its DOT to `out` (opened on `path` before the run,
// so a bad path fails before any work); false (after a message) when the write fails.
bool write_graph(const chiprt::GraphExport& graph, const std::string& path, std::ofstream& out) {
  const chiprt::GraphShape shape = graph.shape();
  // The user's tasks as chiprt states them everywhere; host_build_graph's scope fences apart.
  const std::string tasks = chiprt::format_task_count(
      shape.kernel_tasks, shape.dependency_only_tasks - shape.scope_fences);
  const std::string fences =
      shape.scope_fences == 0
          ? ""
          : ", " + chiprt::format_count(shape.scope_fences) + " runtime scope fences";
  std::printf(
      "graph: %s%s, %s edges, %s sources, %s sinks, depth %s (tasks on the longest dependency "
      "chain), widest level %s tasks\n",
      tasks.c_str(), fences.c_str(), chiprt::format_count(shape.edges).c_str(),
      chiprt::format_count(shape.sources).c_str(), chiprt::format_count(shape.sinks).c_str(),
      chiprt::format_count(shape.depth).c_str(), chiprt::format_count(shape.max_width).c_str());
  out << graph.to_dot();
  out.close();
  if (!out) {
    std::fprintf(stderr, "error: cannot write the graph to '%s'\n", path.c_str());
    return false;
  }
  std::printf("graph written to %s (Graphviz DOT)\n", path.c_str());
  return true;
}

int run_example(const RunOptions& options) {
  const Example* example = chiprt::examples::find_example(options.example);
  if (example == nullptr) {
    std::fprintf(stderr, "error: unknown example '%s'; valid examples: %s\n",
                 options.example.c_str(), chiprt::examples::example_names().c_str());
    return kExitUsage;
  }
  const ExampleCase* example_case =
      options.case_name.empty() ? &example->cases.front() : example->find_case(options.case_name);
  if (example_case == nullptr) {
    std::fprintf(stderr, "error: unknown case '%s' for example '%s'; valid cases: %s\n",
                 options.case_name.c_str(), example->name.c_str(), example->case_names().c_str());
    return kExitUsage;
  }

  chiprt::WorkerOptions worker_options;
  chiprt::CallConfig config;
  if (!chiprt::parse_runtime_variant(options.runtime, &worker_options.runtime)) {
    std::fprintf(stderr,
                 "error: unknown runtime '%s'; valid: host_build_graph, "
                 "tensormap_ringbuffer\n",
                 options.runtime.c_str());
    return kExitUsage;
  }
  if (options.clusters > 0) worker_options.sim.clusters = static_cast<uint32_t>(options.clusters);
  // The chip must have at least as many scheduler processors as the run asks for.
  if (options.aicpu_threads > static_cast<int>(worker_options.sim.aicpu_threads)) {
    worker_options.sim.aicpu_threads = static_cast<uint32_t>(options.aicpu_threads);
  }
  config.aicpu_thread_num = options.aicpu_threads;
  config.serial = options.serial;
  // Checked by CLI11 against the valid names.
  chiprt::parse_sim_core_execution(options.core_execution, &worker_options.sim.core_execution);
  if (options.isolated) worker_options.sim.isolation = chiprt::SimIsolation::Process;
  const struct {
    const std::string& text;
    const char* option;
    chiprt::RingField field;
    std::vector<uint64_t>* values;
  } ring_options[] = {
      {options.ring_window, "--ring-window", chiprt::RingField::TaskWindow,
       &config.rings.task_window},
      {options.ring_heap, "--ring-heap", chiprt::RingField::HeapBytes, &config.rings.heap_bytes},
      {options.ring_dep_pool, "--ring-dep-pool", chiprt::RingField::DepPool,
       &config.rings.dep_pool},
  };
  for (const auto& ring : ring_options) {
    if (ring.text.empty()) continue;
    if (worker_options.runtime != chiprt::RuntimeVariant::TensormapRingbuffer) {
      std::fprintf(stderr,
                   "error: %s sizes the rings of the tensormap_ringbuffer runtime; add "
                   "--runtime tensormap_ringbuffer\n",
                   ring.option);
      return kExitUsage;
    }
    const chiprt::Status parsed =
        chiprt::parse_ring_sizes(ring.field, ring.option, ring.text, ring.values);
    if (!parsed.is_ok()) {
      std::fprintf(stderr, "error: %s\n", parsed.message().c_str());
      return kExitUsage;
    }
  }

  if (!options.diag.empty() || !options.diag_dir.empty()) {
    if (options.diag.empty() || options.diag_dir.empty()) {
      std::fprintf(stderr, "error: %s\n",
                   options.diag.empty()
                       ? "--diag-dir names where diagnostics go; add --diag all (or a list)"
                       : "--diag needs --diag-dir DIR: the directory the run directories go into");
      return kExitUsage;
    }
    std::string error;
    config.diagnostics.output_dir = options.diag_dir;
    // Each round's directory is written while the next round runs; flushed before the summary.
    config.diagnostics.background_write = true;
    if (!chiprt::parse_diagnostics_list(options.diag, &config.diagnostics, &error)) {
      std::fprintf(stderr, "error: --diag: %s\n", error.c_str());
      return kExitUsage;
    }
  }

  std::ofstream graph_out;
  if (!options.graph_path.empty()) {
    graph_out.open(options.graph_path);
    if (!graph_out) {
      std::fprintf(stderr, "error: --graph: cannot open '%s' for writing\n",
                   options.graph_path.c_str());
      return kExitFailure;
    }
  }

  chiprt::Worker worker;
  worker.init(worker_options);
  std::vector<chiprt::RunReport> reports;
  bool all_passed = true;
  double max_error = 0;
  std::string first_failure;
  Outcome last;
  // --graph: the first round exports the graph of its call, then runs it as usual.
  std::optional<chiprt::GraphExport> graph;
  const chiprt::examples::Executor exporting = [&](chiprt::Worker& w, int32_t callable_id,
                                                   const chiprt::TaskArgs& args,
                                                   const chiprt::CallConfig& call_config) {
    if (!graph.has_value()) graph = w.export_graph(callable_id, args, call_config);
    return w.run(callable_id, args, call_config);
  };
  // --pipeline: one example run whose executor submits every round, two in flight; each round's
  // report joins the timing table.
  const chiprt::examples::Executor pipelined = [&](chiprt::Worker& w, int32_t callable_id,
                                                   const chiprt::TaskArgs& args,
                                                   const chiprt::CallConfig& call_config) {
    // Every round but the last computes on copies of what the call writes (a call may
    // accumulate into it), two copies for two runs in flight; the last on the example's own
    // buffers, which the example checks.
    chiprt::examples::RoundStates copies(w, args, 2);
    std::deque<chiprt::RunHandle> in_flight;
    for (int round = 0; round < options.rounds; ++round) {
      if (in_flight.size() == 2) {
        reports.push_back(in_flight.front().wait());
        in_flight.pop_front();
      }
      const bool last = round + 1 == options.rounds;
      in_flight.push_back(
          w.submit(callable_id, last ? args : copies.round_args(round % 2), call_config));
    }
    while (in_flight.size() > 1) {
      reports.push_back(in_flight.front().wait());
      in_flight.pop_front();
    }
    // The loop below adds the example's report of the last round.
    return in_flight.front().wait();
  };
  const int example_runs = options.pipeline ? 1 : options.rounds;
  for (int round = 0; round < example_runs; ++round) {
    last = example->run(worker, *example_case, config,
                        options.pipeline             ? pipelined
                        : options.graph_path.empty() ? chiprt::examples::Executor{}
                                                     : exporting);
    reports.push_back(last.report);
    max_error = std::max(max_error, last.max_abs_error);
    if (!last.passed && all_passed) {
      all_passed = false;
      first_failure = "round " + std::to_string(round + 1) + ": " + last.message;
    }
  }
  // Throws (DiagnosticsError, naming the directory) when a round's directory was not written.
  worker.flush_diagnostics();
  worker.close();

  const chiprt::RunReport& report = reports.back();
  // The tasks beyond the example's kernel tasks are its dependency-only ones.
  const uint64_t dependency_only =
      last.task_count > last.kernel_tasks ? last.task_count - last.kernel_tasks : 0;
  std::printf("%s %s/%s: max abs error %.3g (tolerance %.3g), %s\n", all_passed ? "PASS" : "FAIL",
              example->name.c_str(), example_case->name.c_str(), max_error, last.tolerance,
              chiprt::format_task_count(last.kernel_tasks, dependency_only).c_str());
  if (!all_passed) std::printf("  %s\n", first_failure.c_str());
  const chiprt::SimCoreExecution kernels_on =
      chiprt::resolve_sim_core_execution(worker_options.sim);
  const bool isolated =
      chiprt::resolve_sim_isolation(worker_options.sim) == chiprt::SimIsolation::Process;
  std::printf("runtime %s, %u cores, %u AICPU threads%s%s, %d round(s)\n",
              std::string(chiprt::runtime_variant_name(worker_options.runtime)).c_str(),
              report.cores, report.aicpu_threads,
              report.serial                                   ? ", serial"
              : kernels_on == chiprt::SimCoreExecution::Aicpu ? ", kernels on the AICPU threads"
                                                              : ", kernels on executor threads",
              isolated ? ", chip in an isolated device process" : "", options.rounds);
  if (options.pipeline) std::printf("pipelined: rounds submitted with two in flight\n");
  print_timing(reports);
  if (!report.diagnostics_dir.empty()) {
    std::printf("\n%s", chiprt::diagnostics_summary(report.diagnostics_dir).c_str());
  }
  if (graph.has_value() && !write_graph(*graph, options.graph_path, graph_out)) {
    return kExitFailure;
  }
  return all_passed ? 0 : kExitFailure;
}

// `chiprt report DIR`: DIR is a run directory, or a --diag-dir whose latest run is meant.
int run_report(const std::string& dir) {
  std::string run_dir = dir;
  if (!std::filesystem::exists(std::filesystem::path(dir) / "run.json")) {
    run_dir = chiprt::latest_diagnostics_run(dir);
    if (run_dir.empty()) {
      std::fprintf(stderr,
                   "error: '%s' is neither a diagnostics run directory (no run.json) nor a "
                   "directory holding run-NNNN directories\n",
                   dir.c_str());
      return kExitFailure;
    }
  }
  std::printf("%s", chiprt::diagnostics_summary(run_dir).c_str());
  std::printf("report: %s\n", chiprt::rewrite_diagnostics_report(run_dir).c_str());
  return 0;
}

struct BenchOptions {
  bool quick = false;
  std::string json_path;
  int threads = 0;      // 0 = host hardware threads
  int tasks = 0;        // 0 = the suite's size (100000, --quick 10000)
  int repetitions = 0;  // 0 = 5, --quick 3
  bool no_peers = false;
  std::vector<std::string> workloads;  // empty = every row
  bool scaling = false;
  std::vector<std::string>
      scaling_sizes;      // empty = 10000,100000,1000000 (--quick 1000,10000,100000)
  std::string isolation;  // --isolation: none, process, both ("" = not given: Default)
  bool diagnostics = false;
  std::vector<std::string> diag_switches;  // --diag-switches: empty = every switch and all
  bool pipeline = false;                   // --pipeline: sequential runs against submit
  bool latency = false;                    // --latency: p50 / p99 of a small run
  bool task_bench = false;                 // --task-bench: Task Bench patterns and METG
  std::string svg_path;                    // --svg: the task bench curves (default: by --json)
  std::vector<double> granularities;       // --granularities: task durations in us
};

bool write_json(const std::string& path, const nlohmann::json& json) {
  std::ofstream out(path);
  out << json.dump(2) << "\n";
  if (!out) {
    std::fprintf(stderr, "error: cannot write the JSON table to '%s'\n", path.c_str());
    return false;
  }
  return true;
}

// A report's end: prints its table, writes its JSON when --json asked; the exit code (1 when a
// cell or row was not measured or the JSON could not be written).
int finish_bench_report(const BenchOptions& options, const std::string& table,
                        const nlohmann::json& json, bool all_measured) {
  std::printf("%s", table.c_str());
  if (!options.json_path.empty() && !write_json(options.json_path, json)) return kExitFailure;
  return all_measured ? 0 : kExitFailure;
}

int run_bench_scaling(const BenchOptions& options) {
  chiprt::perf::ScalingOptions scaling;
  scaling.quick = options.quick;
  scaling.threads = static_cast<unsigned>(options.threads);
  if (options.quick) scaling.sizes = {1000, 10000, 100000};
  std::string error;
  if (!options.scaling_sizes.empty() &&
      !chiprt::perf::parse_scaling_sizes(options.scaling_sizes, &scaling.sizes, &error)) {
    std::fprintf(stderr, "error: --scaling-sizes: %s\n", error.c_str());
    return kExitUsage;
  }
  if (options.repetitions > 0) scaling.repetitions = options.repetitions;
  scaling.cell_budget_s = options.quick ? 2.0 : scaling.cell_budget_s;
  scaling.peers = !options.no_peers;
  if (!options.workloads.empty()) {
    chiprt::perf::SuiteOptions selection;
    if (!chiprt::perf::select_workloads(options.workloads, &selection, &error)) {
      std::fprintf(stderr, "error: --workloads: %s\n", error.c_str());
      return kExitUsage;
    }
    if (!selection.kernel_workloads.empty()) {
      std::fprintf(
          stderr,
          "error: --workloads: %s is a real-kernel row of fixed size; --scaling runs the "
          "graph workloads (independent, chain, fan, wavefront, random_dag)\n",
          std::string(chiprt::perf::kernel_workload_name(selection.kernel_workloads[0])).c_str());
      return kExitUsage;
    }
    scaling.shapes = selection.shapes;
  }
  const chiprt::perf::ScalingResult result = chiprt::perf::run_scaling(scaling, stderr);
  return finish_bench_report(options, chiprt::perf::format_scaling_table(result),
                             chiprt::perf::scaling_to_json(result),
                             chiprt::perf::all_scaling_cells_measured(result));
}

// --isolation both: the isolated chip against the in-process one, interleaved.
int run_bench_isolation(const BenchOptions& options, const chiprt::perf::SuiteOptions& suite) {
  chiprt::perf::IsolationOptions compare;
  compare.threads = suite.threads;
  compare.tasks = suite.tasks;
  compare.repetitions = suite.repetitions;
  compare.latency_runs = options.quick ? 50 : 200;
  compare.shapes = suite.shapes;
  compare.kernel_workloads = suite.kernel_workloads;
  const chiprt::perf::IsolationResult result =
      chiprt::perf::run_isolation_comparison(compare, stderr);
  return finish_bench_report(options, chiprt::perf::format_isolation_table(result),
                             chiprt::perf::isolation_to_json(result),
                             chiprt::perf::all_isolation_rows_measured(result));
}

// --diagnostics: each diagnostics switch on against off, interleaved.
int run_bench_diagnostics(const BenchOptions& options, const chiprt::perf::SuiteOptions& suite) {
  chiprt::perf::DiagnosticsCostOptions cost;
  cost.threads = suite.threads;
  cost.tasks = suite.tasks;
  cost.repetitions = suite.repetitions;
  if (!options.workloads.empty()) {
    cost.shapes = suite.shapes;
    cost.kernel_workloads = suite.kernel_workloads;
  }
  if (!options.diag_switches.empty()) {
    std::string error;
    if (!chiprt::perf::check_diagnostics_switches(options.diag_switches, &error)) {
      std::fprintf(stderr, "error: --diag-switches: %s\n", error.c_str());
      return kExitUsage;
    }
    cost.switches = options.diag_switches;
  }
  const chiprt::perf::DiagnosticsCostResult result =
      chiprt::perf::run_diagnostics_cost(cost, stderr);
  return finish_bench_report(options, chiprt::perf::format_diagnostics_table(result),
                             chiprt::perf::diagnostics_to_json(result),
                             chiprt::perf::all_diagnostics_rows_measured(result));
}

// --pipeline: streams of runs one after the other against two in flight, interleaved.
int run_bench_pipeline(const BenchOptions& options) {
  chiprt::perf::PipelineOptions pipeline;
  pipeline.threads = static_cast<unsigned>(options.threads);
  if (options.repetitions > 0) pipeline.repetitions = options.repetitions;
  if (options.quick) pipeline.runs = 50;
  const chiprt::perf::PipelineResult result =
      chiprt::perf::run_pipeline_comparison(pipeline, stderr);
  return finish_bench_report(options, chiprt::perf::format_pipeline_table(result),
                             chiprt::perf::pipeline_to_json(result),
                             chiprt::perf::all_pipeline_rows_measured(result));
}

// --latency: an empty and a one-task run on every chiprt column, in process and isolated.
int run_bench_latency(const BenchOptions& options) {
  chiprt::perf::LatencyOptions latency;
  latency.threads = static_cast<unsigned>(options.threads);
  latency.runs = options.repetitions > 0 ? options.repetitions : (options.quick ? 200 : 1000);
  latency.batch = std::min(latency.batch, latency.runs);
  const chiprt::perf::LatencyResult result = chiprt::perf::run_latency_bench(latency, stderr);
  return finish_bench_report(options, chiprt::perf::format_latency_table(result),
                             chiprt::perf::latency_to_json(result),
                             chiprt::perf::all_latency_rows_measured(result));
}

// --svg FILE, else --json FILE with .svg for its extension, else none.
std::string task_bench_svg_path(const BenchOptions& options) {
  if (!options.svg_path.empty() || options.json_path.empty()) return options.svg_path;
  std::filesystem::path path(options.json_path);
  return path.replace_extension(".svg").string();
}

int run_bench_task_bench(const BenchOptions& options) {
  chiprt::perf::TaskBenchOptions tb =
      options.quick ? chiprt::perf::quick_task_bench_options() : chiprt::perf::TaskBenchOptions{};
  tb.threads = static_cast<unsigned>(options.threads);
  tb.peers = !options.no_peers;
  if (options.repetitions > 0) tb.repetitions = options.repetitions;
  if (!options.granularities.empty()) {
    tb.granularities_us = options.granularities;
    std::sort(tb.granularities_us.begin(), tb.granularities_us.end(), std::greater<>());
    tb.granularities_us.erase(std::unique(tb.granularities_us.begin(), tb.granularities_us.end()),
                              tb.granularities_us.end());
  }
  std::string error;
  if (!options.workloads.empty() &&
      !chiprt::perf::select_tb_patterns(options.workloads, &tb, &error)) {
    std::fprintf(stderr, "error: --workloads: %s\n", error.c_str());
    return kExitUsage;
  }
  const chiprt::perf::TaskBenchResult result = chiprt::perf::run_task_bench(tb, stderr);
  const std::string svg_path = task_bench_svg_path(options);
  if (!svg_path.empty()) {
    std::ofstream out(svg_path);
    out << chiprt::perf::task_bench_svg(result);
    if (!out) {
      std::fprintf(stderr, "error: cannot write the SVG curves to '%s'\n", svg_path.c_str());
      return kExitFailure;
    }
    std::fprintf(stderr, "bench: task-bench efficiency curves written to %s\n", svg_path.c_str());
  }
  return finish_bench_report(options, chiprt::perf::format_task_bench_table(result),
                             chiprt::perf::task_bench_to_json(result),
                             chiprt::perf::all_task_bench_cells_measured(result));
}

int run_bench(const BenchOptions& options) {
  if (options.latency) return run_bench_latency(options);
  if (options.task_bench) return run_bench_task_bench(options);
  if (options.scaling) return run_bench_scaling(options);
  if (options.pipeline) return run_bench_pipeline(options);
  chiprt::perf::SuiteOptions suite;
  suite.quick = options.quick;
  suite.threads = static_cast<unsigned>(options.threads);
  suite.tasks =
      options.tasks > 0 ? static_cast<uint64_t>(options.tasks) : (options.quick ? 10000 : 100000);
  suite.repetitions = options.repetitions > 0 ? options.repetitions : (options.quick ? 3 : 5);
  suite.cell_budget_s = options.quick ? 2.0 : 30.0;
  suite.peers = !options.no_peers;
  std::string selection_error;
  if (!options.workloads.empty() &&
      !chiprt::perf::select_workloads(options.workloads, &suite, &selection_error)) {
    std::fprintf(stderr, "error: --workloads: %s\n", selection_error.c_str());
    return kExitUsage;
  }
  if (options.diagnostics) return run_bench_diagnostics(options, suite);
  // Checked by CLI11 against none, process, both.
  if (options.isolation == "both") return run_bench_isolation(options, suite);
  if (!options.isolation.empty()) {
    chiprt::parse_sim_isolation(options.isolation, &suite.isolation);
  }
  const chiprt::perf::SuiteResult result = chiprt::perf::run_suite(suite, stderr);
  return finish_bench_report(options, chiprt::perf::format_table(result),
                             chiprt::perf::to_json(result),
                             chiprt::perf::all_cells_measured(result));
}

// Edit distance between two words (insertions, deletions, substitutions, adjacent swaps).
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t substitute = d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, substitute});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

// The first word of the command line must name a subcommand. CLI11 would call an unknown one, or
// an option other than --help and --version before it, "A subcommand is required"; this names the
// word (and the closest subcommand) instead. False (after the message) when it is not one.
bool check_subcommand_name(const CLI::App& app, int argc, char** argv) {
  if (argc < 2) return true;  // nothing: CLI11 says a subcommand is required
  const std::string_view given = argv[1];
  if (argv[1][0] == '-') {
    if (given == "-h" || given == "--help" || given == "--version") return true;
    std::string names;
    for (const CLI::App* sub : app.get_subcommands({})) {
      names += (names.empty() ? "" : ", ") + sub->get_name();
    }
    std::fprintf(stderr,
                 "error: '%s' is not an option of chiprt itself (only --help and --version are); "
                 "a subcommand's options come after it, e.g. chiprt run bgemm --serial "
                 "(subcommands: %s; chiprt SUBCOMMAND --help lists its options)\n",
                 argv[1], names.c_str());
    return false;
  }
  std::string names;
  std::string closest;
  std::size_t closest_distance = 0;
  for (const CLI::App* sub : app.get_subcommands({})) {
    const std::string& name = sub->get_name();
    if (name == given) return true;
    names += (names.empty() ? "" : ", ") + name;
    const std::size_t distance = edit_distance(given, name);
    if (closest.empty() || distance < closest_distance) {
      closest = name;
      closest_distance = distance;
    }
  }
  std::fprintf(stderr, "error: unknown subcommand '%s'", argv[1]);
  if (closest_distance <= std::max<std::size_t>(2, closest.size() / 2)) {
    std::fprintf(stderr, "; did you mean '%s'?", closest.c_str());
  }
  std::fprintf(stderr, " (subcommands: %s; chiprt --help says more)\n", names.c_str());
  return false;
}

// An option or positional given as an empty string ('', "" or --case=) would read as not given
// (the default case, no graph file, no diagnostics); refused instead, naming it. False (after the
// message) when one is empty.
bool check_no_empty_values(const CLI::App& app) {
  for (const CLI::App* sub : app.get_subcommands()) {
    for (const CLI::Option* option : sub->get_options()) {
      if (option->count() == 0 || option->get_type_size_min() == 0) continue;  // absent, or a flag
      for (const std::string& value : option->results()) {
        if (!value.empty()) continue;
        const std::string name = option->get_positional() && option->get_lnames().empty()
                                     ? "the " + option->get_name() + " argument"
                                     : option->get_name();
        std::fprintf(stderr, "error: %s is empty; %s (chiprt %s --help)\n", name.c_str(),
                     option->get_positional() ? "give one"
                                              : "give a value, or leave the option out for its "
                                                "default",
                     sub->get_name().c_str());
        return false;
      }
    }
  }
  return true;
}

// `chiprt run --help`: what the rows of the timing table the run prints mean.
constexpr const char* kTimingLegend =
    "The timing table (us; with --rounds N: the median, min and max over the rounds):\n"
    "  host prepare        Worker::run entry to the launch (includes host_build_graph's graph "
    "build)\n"
    "  device wall         the launch to the chip reporting completion\n"
    "  host total          Worker::run entry to its return\n"
    "  then the chip's phases, each with its start (from the earliest phase) and span:\n"
    "  run_wall            first chip thread start to last thread end\n"
    "  preamble            chip thread start-up until the run's state is readable\n"
    "  load                reading the graph image / resolving the kernels\n"
    "  graph_build         building the graph (host_build_graph: on the host, before the "
    "launch)\n"
    "  orchestration       the on-chip orchestration window (tensormap_ringbuffer)\n"
    "  scheduling          first dispatch to last completion\n"
    "  post_orchestration  scheduling after the orchestration finished (tensormap_ringbuffer)\n"
    "Exit codes: 0 every round passed, 1 a round failed or the runtime reported an error, 2 "
    "usage error (a bad option or value, an unknown example or case, an invalid configuration).";

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"chiprt: run example workloads on the simulated chip and check their results"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "chiprt " CHIPRT_VERSION_STRING,
                       "print chiprt's version and exit");
  CLI::App* list = app.add_subcommand("list", "list the examples and their cases");
  CLI::App* run = app.add_subcommand("run", "run one example case and check it");
  RunOptions options;
  run->add_option("example", options.example, "example name (see `chiprt list`)")->required();
  run->add_option("--case", options.case_name, "case name (default: the example's first case)");
  run->add_option("--runtime", options.runtime, "runtime variant")
      ->check(CLI::IsMember({"host_build_graph", "tensormap_ringbuffer"}));
  run->add_option("--clusters", options.clusters,
                  "clusters of the simulated chip (1 AIC + 2 AIV each; default 8, at most 24)")
      ->check(at_least(1));
  run->add_option("--aicpu-threads", options.aicpu_threads,
                  "AICPU threads of the run: 0 = auto, otherwise 2 to 8 (orchestrator + scheduler)")
      ->check(at_least(0));
  run->add_option("--rounds", options.rounds, "run the case N times; timing shows median/min/max")
      ->check(at_least(1));
  run->add_flag("--serial", options.serial,
                "run the chip side on one host thread in a deterministic order");
  run->add_option("--cores-on", options.core_execution,
                  "where the simulated cores' kernels run: aicpu (on the scheduler thread owning "
                  "the core), executors (on executor threads), auto (aicpu when the host has no "
                  "more hardware threads than AICPU threads; default, or CHIPRT_SIM_CORES)")
      ->check(CLI::IsMember({"auto", "aicpu", "executors"}));
  run->add_option("--graph", options.graph_path,
                  "export the first round's task graph (the host_build_graph build of the call), "
                  "print its shape and write it to FILE as Graphviz DOT");
  run->add_flag("--pipeline", options.pipeline,
                "submit the rounds with Worker::submit, two in flight (run N+1 prepared while run "
                "N executes); the outputs are checked after the last round")
      ->excludes(run->get_option("--graph"));
  run->add_flag("--isolated", options.isolated,
                "run the simulated chip in a device process of its own: a kernel that crashes or "
                "hangs ends the run with a device error (KernelCrashed, OpExecuteTimeout) instead "
                "of killing chiprt (default: in process, or CHIPRT_SIM_ISOLATION)");
  run->add_option("--ring-window", options.ring_window,
                  "tensormap_ringbuffer task slots per scope depth: N or N,N,... (power of two "
                  "in [16, 1048576]; default 1024 or CHIPRT_RING_TASK_WINDOW)");
  run->add_option("--ring-heap", options.ring_heap,
                  "tensormap_ringbuffer output heap bytes per scope depth: N or N,N,... "
                  "(multiple of 64, >= 4096; default output heap / 4 or CHIPRT_RING_HEAP_BYTES)");
  run->add_option("--ring-dep-pool", options.ring_dep_pool,
                  "tensormap_ringbuffer dependency entries per scope depth: N or N,N,... "
                  "(>= 64; default 4 x window or CHIPRT_RING_DEP_POOL)");

  run->add_option("--diag", options.diag,
                  "collect diagnostics: all, or a comma-separated list of swimlane[=1-4], tasks, "
                  "deps, scopes, args[=1-3], counters (needs --diag-dir)");
  run->add_option("--diag-dir", options.diag_dir,
                  "directory the diagnostics go into: one run-NNNN directory per round");
  run->footer(kTimingLegend);
  std::string report_dir;
  CLI::App* report = app.add_subcommand(
      "report", "print a diagnostics run directory's summary and rewrite its report.html");
  report->add_option("dir", report_dir, "a run directory (run-NNNN) or the --diag-dir above it")
      ->required();
  CLI::App* bench = app.add_subcommand(
      "bench", "time the fixed graph suite on chiprt's variants and the installed peer runtimes");
  BenchOptions bench_options;
  bench->add_flag("--quick", bench_options.quick,
                  "reduced suite (10000 tasks, 3 repetitions) for smoke checks");
  bench->add_option("--json", bench_options.json_path, "also write the table as JSON to FILE");
  bench
      ->add_option("--threads", bench_options.threads,
                   "worker threads of chiprt (simulated chip host threads) and of every peer; "
                   "0 = host hardware threads")
      ->check(at_least(0));
  CLI::Option* tasks_option =
      bench->add_option("--tasks", bench_options.tasks, "tasks per workload (default 100000)")
          ->check(at_least(1));
  bench->add_option("--repetitions", bench_options.repetitions, "timed runs per cell (default 5)")
      ->check(at_least(1));
  bench->add_flag("--no-peers", bench_options.no_peers, "run the chiprt columns only");
  bench
      ->add_option("--workloads", bench_options.workloads,
                   "run only these rows, comma separated (" + chiprt::perf::workload_names() +
                       "; default all)")
      ->delimiter(',');
  CLI::Option* scaling_option = bench->add_flag(
      "--scaling", bench_options.scaling,
      "run the graph workloads at several sizes (--scaling-sizes) and print ns per task at each, "
      "its growth from the smallest to the largest size, and chiprt's memory per in-flight task");
  scaling_option->excludes(tasks_option);
  bench
      ->add_option("--scaling-sizes", bench_options.scaling_sizes,
                   "task counts of --scaling, comma separated, at least two (default "
                   "10000,100000,1000000; --quick 1000,10000,100000)")
      ->delimiter(',')
      ->needs(scaling_option);
  CLI::Option* isolation_option =
      bench
          ->add_option(
              "--isolation", bench_options.isolation,
              "where the chiprt columns' chip lives: none (in process), process (an isolated "
              "device process), both (instead of the suite: every chiprt column on every row "
              "and an empty run's latency, alternately on both, with their ratio); default: "
              "CHIPRT_SIM_ISOLATION, else in process")
          ->check(CLI::IsMember({"none", "process", "both"}))
          ->excludes(scaling_option);
  CLI::Option* diagnostics_option =
      bench
          ->add_flag("--diagnostics", bench_options.diagnostics,
                     "instead of the suite: what each diagnostics switch costs, on against off "
                     "interleaved, on both runtime variants in process (graph rows: independent, "
                     "chain with each switch alone and all; bgemm, paged_attention with all)")
          ->excludes(scaling_option)
          ->excludes(isolation_option);
  bench
      ->add_option("--diag-switches", bench_options.diag_switches,
                   "the switches --diagnostics measures, comma separated, each one switch as "
                   "`chiprt run --diag` names it or all (default swimlane=1,swimlane=2,"
                   "swimlane=3,swimlane=4,tasks,deps,scopes,args=1,counters,all)")
      ->delimiter(',')
      ->needs(diagnostics_option);
  CLI::Option* pipeline_option =
      bench
          ->add_flag(
              "--pipeline", bench_options.pipeline,
              "instead of the suite: streams of 200 runs (bgemm and paged_attention case "
              "small on both variants, a host-heavy graph on host_build_graph) one after the "
              "other against two in flight (Worker::submit), interleaved: runs per second and "
              "their ratio")
          ->excludes(scaling_option)
          ->excludes(isolation_option)
          ->excludes(diagnostics_option)
          ->excludes(tasks_option);
  CLI::Option* latency_option =
      bench
          ->add_flag(
              "--latency", bench_options.latency,
              "instead of the suite: the latency of a small run (an empty run and a one-task "
              "run) on every chiprt column, in process and isolated, interleaved: p50 and p99 "
              "over 1000 runs per cell (--quick 200, --repetitions N), and p99/p50")
          ->excludes(scaling_option)
          ->excludes(isolation_option)
          ->excludes(diagnostics_option)
          ->excludes(pipeline_option)
          ->excludes(tasks_option);
  CLI::Option* task_bench_option =
      bench
          ->add_flag("--task-bench", bench_options.task_bench,
                     "instead of the suite: the Task Bench dependence patterns (--workloads "
                     "selects them: " +
                         chiprt::perf::tb_pattern_names() +
                         ") swept over task granularity on every column: METG(50%) in us per "
                         "pattern and column, efficiency curves as SVG (--quick: trivial, "
                         "stencil_1d, fft at width = threads, a few granularities)")
          ->excludes(scaling_option)
          ->excludes(isolation_option)
          ->excludes(diagnostics_option)
          ->excludes(tasks_option);
  task_bench_option->excludes(pipeline_option)->excludes(latency_option);
  bench
      ->add_option("--svg", bench_options.svg_path,
                   "--task-bench: write the efficiency curves to FILE (default: next to --json "
                   "FILE, with .svg for its extension)")
      ->needs(task_bench_option);
  bench
      ->add_option("--granularities", bench_options.granularities,
                   "--task-bench: the task durations to sweep in us, comma separated (default "
                   "1024,256,64,16,4,1; --quick 256,32,4,1)")
      ->delimiter(',')
      ->check(CLI::PositiveNumber)
      ->needs(task_bench_option);

  if (!check_subcommand_name(app, argc, argv)) return kExitUsage;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);  // prints help or the parse error
    return rc == 0 ? 0 : kExitUsage;
  }
  if (!check_no_empty_values(app)) return kExitUsage;

  try {
    if (list->parsed()) {
      print_list();
      return 0;
    }
    if (bench->parsed()) return run_bench(bench_options);
    if (report->parsed()) return run_report(report_dir);
    return run_example(options);
  } catch (const chiprt::Error& e) {
    // what() is "[NAME] message (hint: ...)". A configuration the runtime refuses as invalid
    // (from the options or a CHIPRT_* variable) is the command's mistake: a usage error.
    std::fprintf(stderr, "error: %s\n", e.what());
    if (e.code() == chiprt::StatusCode::DiagnosticsError && run->parsed()) {
      std::fprintf(stderr,
                   "  --diag-dir sets CallConfig::diagnostics.output_dir: give a directory chiprt "
                   "can create or write into\n");
    }
    if (e.code() != chiprt::StatusCode::InvalidConfig) return kExitFailure;
    // A CHIPRT_* variable's error names it; an option's names the field the option sets.
    if (run->parsed() && std::string_view(e.what()).find("CHIPRT_") == std::string_view::npos) {
      std::fprintf(stderr,
                   "  the options behind these fields: --clusters N sets SimOptions.clusters (1 to "
                   "24); --aicpu-threads N sets aicpu_thread_num and SimOptions.aicpu_threads (0 "
                   "= auto, or 2 to 8); --ring-window, --ring-heap and --ring-dep-pool set rings; "
                   "CHIPRT_* variables set others (docs/guide/configuration.md)\n");
    }
    return kExitUsage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
  }
  return kExitFailure;
}
