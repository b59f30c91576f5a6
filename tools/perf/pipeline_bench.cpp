#include "pipeline_bench.h"

#include <chrono>
#include <deque>
#include <exception>
#include <functional>
#include <string>

#include "chiprt/callable.h"
#include "chiprt/kernel.h"
#include "chiprt/orchestration.h"
#include "chiprt/worker.h"
#include "chiprt_options.h"
#include "example.h"
#include "round_states.h"
#include "suite.h"

namespace chiprt::perf {

namespace {

using Clock = std::chrono::steady_clock;

constexpr RuntimeVariant kColumns[] = {RuntimeVariant::HostBuildGraph,
                                       RuntimeVariant::TensormapRingbuffer};
constexpr const char* kExampleRows[] = {"bgemm", "paged_attention"};
constexpr const char* kExampleCase = "small";
constexpr int32_t kHostHeavyCallable = 60;

// Keeps the calling thread busy (not asleep) for `us` microseconds: host prepare work, or a
// kernel occupying its core.
void busy_for_us(uint64_t us) {
  const Clock::time_point end = Clock::now() + std::chrono::microseconds(us);
  while (Clock::now() < end) {
  }
}
void busy_kernel(int64_t* args) {
  busy_for_us(kernel::scalar_arg<uint64_t>(args, 0));
}
// host_heavy: scalar 0 is the busy time; the orchestration spends it, then submits one task that
// spends it on a core.
void host_heavy_orchestration(Orchestration& orch, const TaskArgs& args) {
  const uint64_t us = args.scalar_bits(0);
  busy_for_us(us);
  TaskArgs task;
  task.scalar(us);
  orch.submit(0, CoreType::AIV, task);
}

}  // namespace

double time_pipeline_stream(Worker& worker, int runs, bool pipelined, int32_t callable_id,
                            const TaskArgs& args, const CallConfig& config) {
  const Clock::time_point start = Clock::now();
  if (pipelined) {
    std::deque<RunHandle> in_flight;
    for (int i = 0; i < runs; ++i) {
      if (in_flight.size() == 2) {
        in_flight.front().wait();
        in_flight.pop_front();
      }
      in_flight.push_back(worker.submit(callable_id, args, config));
    }
    while (!in_flight.empty()) {
      in_flight.front().wait();
      in_flight.pop_front();
    }
  } else {
    for (int i = 0; i < runs; ++i) worker.run(callable_id, args, config);
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return seconds > 0 ? runs / seconds : 0;
}

void register_host_heavy(Worker& worker, int32_t callable_id) {
  worker.register_callable(callable_id,
                           CallableBuilder()
                               .orchestration_function(&host_heavy_orchestration, ArgSignature{})
                               .kernel_function(0, CoreType::AIV, &busy_kernel, ArgSignature{})
                               .build());
}

TaskArgs host_heavy_args(uint64_t busy_us) {
  TaskArgs args;
  args.scalar(busy_us);
  return args;
}

namespace {

// Interleaved sequential / pipelined streams of one call into `row`.
void measure(Worker& worker, const PipelineOptions& options, int32_t callable_id,
             const TaskArgs& args, const CallConfig& config, PipelineRow* row) {
  run_interleaved_pair(options.repetitions, [&](int side, bool timed) {
    const double rate =
        time_pipeline_stream(worker, options.runs, side == 1, callable_id, args, config);
    if (timed) (side == 1 ? row->pipelined : row->sequential).push_back(rate);
  });
}
// The same for an example's call: the streams compute on copies of what the call writes (it may
// accumulate), one copy per run in flight, so the example's buffers stay as uploaded.
void measure_example(Worker& worker, const PipelineOptions& options, int32_t callable_id,
                     const TaskArgs& args, const CallConfig& config, PipelineRow* row) {
  examples::RoundStates copies(worker, args, 2);
  const TaskArgs on_copy = copies.round_args(0);
  measure(worker, options, callable_id, on_copy, config, row);
}

void finish_row(PipelineRow* row) {
  row->sequential_median = median_of(row->sequential);
  row->pipelined_median = median_of(row->pipelined);
  row->ratio = row->sequential_median > 0 ? row->pipelined_median / row->sequential_median : 0;
}

void report_row(std::FILE* progress, const PipelineRow& row) {
  if (progress == nullptr) return;
  if (!row.error.empty()) {
    std::fprintf(progress, "bench: %-22s %-22s error: %s\n", row.workload.c_str(),
                 row.column.c_str(), row.error.c_str());
  } else {
    std::fprintf(progress,
                 "bench: %-22s %-22s sequential %.0f runs/s, pipelined %.0f runs/s, x%.2f\n",
                 row.workload.c_str(), row.column.c_str(), row.sequential_median,
                 row.pipelined_median, row.ratio);
  }
  std::fflush(progress);
}

}  // namespace

PipelineResult run_pipeline_comparison(const PipelineOptions& requested, std::FILE* progress) {
  PipelineResult result;
  result.options = requested;
  result.hardware_threads = begin_session(&result.options.threads, &result.host_load);
  const PipelineOptions& options = result.options;
  Worker worker;
  worker.init(bench_worker_options(options.threads));

  for (const char* name : kExampleRows) {
    const examples::Example* example = examples::find_example(name);
    const examples::ExampleCase* example_case =
        example != nullptr ? example->find_case(kExampleCase) : nullptr;
    for (RuntimeVariant variant : kColumns) {
      PipelineRow row;
      row.workload = std::string(name) + "/" + kExampleCase;
      row.column = std::string(runtime_variant_name(variant));
      try {
        if (example_case == nullptr) {
          throw Error(StatusCode::InternalError, std::string("no example case ") + name + "/" +
                                                     kExampleCase + " for the pipeline bench");
        }
        CallConfig config;
        config.runtime = variant;
        // The example uploads its inputs, the executor times the streams over them, the example
        // checks the outputs of the last run.
        const examples::Outcome outcome = example->run(
            worker, *example_case, config,
            [&](Worker& w, int32_t callable_id, const TaskArgs& args, const CallConfig& c) {
              measure_example(w, options, callable_id, args, c, &row);
              return w.run(callable_id, args, c);
            });
        if (!outcome.passed) throw Error(StatusCode::InternalError, outcome.message);
        finish_row(&row);
      } catch (const std::exception& e) {
        row.error = e.what();
      }
      report_row(progress, row);
      result.rows.push_back(std::move(row));
    }
  }

  PipelineRow heavy;
  heavy.workload = "host_heavy";
  heavy.column = std::string(runtime_variant_name(RuntimeVariant::HostBuildGraph));
  try {
    register_host_heavy(worker, kHostHeavyCallable);
    const TaskArgs args = host_heavy_args(options.host_heavy_us);
    CallConfig config;
    config.runtime = RuntimeVariant::HostBuildGraph;
    measure(worker, options, kHostHeavyCallable, args, config, &heavy);
    worker.unregister_callable(kHostHeavyCallable);
    finish_row(&heavy);
  } catch (const std::exception& e) {
    heavy.error = e.what();
  }
  report_row(progress, heavy);
  result.rows.push_back(std::move(heavy));
  result.host_load.end = read_load_average();
  return result;
}

bool all_pipeline_rows_measured(const PipelineResult& result) {
  for (const PipelineRow& row : result.rows) {
    if (!row.error.empty()) return false;
  }
  return true;
}

std::string format_pipeline_table(const PipelineResult& result) {
  const PipelineOptions& o = result.options;
  std::string out = "chiprt bench --pipeline: a stream of " + std::to_string(o.runs) +
                    " runs executed one after the other (Worker::run) against the same stream "
                    "submitted two in flight (Worker::submit), interleaved; median of " +
                    std::to_string(o.repetitions) + " stream(s) per side after a warm-up; " +
                    std::to_string(o.threads) + " worker threads (host has " +
                    std::to_string(result.hardware_threads) + " hardware threads)\n";
  out += "host_heavy: each run's orchestration busy " + std::to_string(o.host_heavy_us) +
         " us on the host, its one kernel busy " + std::to_string(o.host_heavy_us) +
         " us on a core (host_build_graph only: tensormap_ringbuffer orchestrates on the chip)\n";
  out += result.host_load.describe();
  out += "ratio = pipelined / sequential runs per second (above 1: pipelining is faster)\n\n";
  std::vector<std::vector<std::string>> grid = {
      {"workload", "column", "runs", "sequential runs/s", "pipelined runs/s", "ratio"}};
  char buffer[64];
  for (const PipelineRow& row : result.rows) {
    if (!row.error.empty()) {
      grid.push_back({row.workload, row.column, std::to_string(o.runs), "error", row.error, ""});
      continue;
    }
    std::vector<std::string> line = {row.workload, row.column, std::to_string(o.runs)};
    std::snprintf(buffer, sizeof(buffer), "%.0f", row.sequential_median);
    line.emplace_back(buffer);
    std::snprintf(buffer, sizeof(buffer), "%.0f", row.pipelined_median);
    line.emplace_back(buffer);
    std::snprintf(buffer, sizeof(buffer), "%.2f", row.ratio);
    line.emplace_back(buffer);
    grid.push_back(std::move(line));
  }
  out += layout_table(grid, 2);
  return out;
}

nlohmann::json pipeline_to_json(const PipelineResult& result) {
  nlohmann::json rows = nlohmann::json::array();
  for (const PipelineRow& row : result.rows) {
    nlohmann::json r = {{"workload", row.workload}, {"column", row.column}};
    if (!row.error.empty()) {
      r["error"] = row.error;
    } else {
      r["sequential_runs_per_s"] = row.sequential;
      r["pipelined_runs_per_s"] = row.pipelined;
      r["sequential_median"] = row.sequential_median;
      r["pipelined_median"] = row.pipelined_median;
      r["ratio"] = row.ratio;
    }
    rows.push_back(std::move(r));
  }
  nlohmann::json out =
      session_json(result.options.threads, result.hardware_threads, result.host_load);
  out["mode"] = "pipeline";
  out["runs"] = result.options.runs;
  out["repetitions"] = result.options.repetitions;
  out["host_heavy_us"] = result.options.host_heavy_us;
  out["rows"] = std::move(rows);
  return out;
}

}  // namespace chiprt::perf
