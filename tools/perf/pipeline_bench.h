// `chiprt bench --pipeline`: a stream of runs executed one after the other (Worker::run) against
// the same stream submitted two in flight (Worker::submit, run N+1 prepared while run N executes),
// in one session and interleaved, so both see the same host load. Rows:
//   - bgemm and paged_attention, case `small` (the examples' kernels, checked against their
//     references after every stream), on host_build_graph and tensormap_ringbuffer;
//   - host_heavy: one task per run whose orchestration keeps the host busy for a fixed time and
//     whose kernel keeps its core busy for the same time (host prepare about equal to device
//     time: what pipelining can at most halve), on host_build_graph (on tensormap_ringbuffer the
//     orchestration runs on the chip, so there is no host prepare to overlap).
// Each repetition times one stream of each kind, alternating which goes first, after an untimed
// warm-up stream of each; a row reports runs per second of both (medians) and their ratio
// (pipelined / sequential: above 1, pipelining is faster).
//
// run_pipeline_comparison() is synchronous from the caller's view; it holds one simulated chip
// (its own Worker) for its duration. The result is a plain value.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chiprt/call_config.h"
#include "chiprt/task_args.h"
#include "host_load.h"

namespace chiprt {
class Worker;
}

namespace chiprt::perf {

struct PipelineOptions {
  unsigned threads = 0;          // 0 = host hardware threads
  int runs = 200;                // runs per stream
  int repetitions = 3;           // timed streams per row and kind
  uint64_t host_heavy_us = 500;  // host_heavy: host busy time per run, and kernel busy time
};

struct PipelineRow {
  std::string workload;            // "bgemm/small", "paged_attention/small", "host_heavy"
  std::string column;              // "host_build_graph", "tensormap_ringbuffer"
  std::string error;               // set when a run failed (then no medians)
  std::vector<double> sequential;  // runs per second, one per timed stream
  std::vector<double> pipelined;
  double sequential_median = 0;
  double pipelined_median = 0;
  double ratio = 0;  // pipelined_median / sequential_median
};

struct PipelineResult {
  PipelineOptions options;
  unsigned hardware_threads = 0;
  HostLoad host_load;
  std::vector<PipelineRow> rows;
};

// Runs the comparison; `progress` (may be null) gets one line per row as it completes.
PipelineResult run_pipeline_comparison(const PipelineOptions& options, std::FILE* progress);
// True when every row was measured.
bool all_pipeline_rows_measured(const PipelineResult& result);

std::string format_pipeline_table(const PipelineResult& result);

// The pieces, for chiprt_bench (bench/pipeline_bench.cpp) too:
// registers the host_heavy callable (host_build_graph) under `callable_id`;
void register_host_heavy(Worker& worker, int32_t callable_id);
// its arguments: host busy time and kernel busy time `busy_us` each;
TaskArgs host_heavy_args(uint64_t busy_us);
// times one stream of `runs` runs of one call, one after the other or two in flight (a run that
// fails throws its Error): runs per second.
double time_pipeline_stream(Worker& worker, int runs, bool pipelined, int32_t callable_id,
                            const TaskArgs& args, const CallConfig& config);
nlohmann::json pipeline_to_json(const PipelineResult& result);

}  // namespace chiprt::perf
