// Example workloads: named workloads (orchestration + kernels built as chip objects, an input
// generator with a fixed seed, a plain C++ reference and a tolerance) that the `chiprt` CLI and
// the scene tests run on a Worker and check.
//
// An example runs in three steps: it generates its inputs and uploads them to the Worker, hands the
// registered callable and its arguments to an Executor (Worker::run by default; `chiprt bench`
// passes one that runs the exported graph on a peer runtime), then reads the results back and
// checks them against its reference.
//
// The registry is built once on first use (thread-safe static initialisation) and is immutable
// afterwards. Example::run uses only the Worker it is given and leaves it as it found it: every
// device buffer and callable it creates is released before it returns, also when it throws.
// Different Workers may run examples from different threads.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "chiprt/call_config.h"
#include "chiprt/run_report.h"
#include "chiprt/task_args.h"
#include "chiprt/worker.h"

namespace chiprt::examples {

struct CaseParam {
  std::string name;
  int64_t value = 0;
};

// One configuration of an example (sizes, tile counts).
struct ExampleCase {
  std::string name;
  std::vector<CaseParam> params;
  // Takes noticeably longer than the others; test suites run it in one configuration only.
  bool large = false;

  // The value of parameter `key`; throws Error(InvalidArgument) naming the case and the key.
  int64_t param(std::string_view key) const;
  // "tiles_m=4 tiles_n=4 ..." for listings.
  std::string params_text() const;
};

// What one run of an example produced, checked against its reference.
struct Outcome {
  bool passed = false;
  double max_abs_error = 0;  // largest |device - reference| over all checked elements
  double tolerance = 0;      // largest error accepted per element
  uint64_t task_count = 0;   // tasks the orchestration submitted (RunReport::task_count)
  // Kernel tasks the orchestration submits; it may also submit dependency-only tasks
  // (submit_dummy, allocate), so task_count is at least this.
  uint64_t kernel_tasks = 0;
  RunReport report;
  std::string message;  // why it failed (first bad element, task count mismatch) or a summary
};

// Executes the registered callable `callable_id` with `args` under `config` on `worker` (whose
// device buffers hold the inputs) and reports the run; the outputs must be in the buffers when it
// returns. Called once per Example::run, on the caller's thread; throws on failure.
using Executor = std::function<RunReport(Worker& worker, int32_t callable_id, const TaskArgs& args,
                                         const CallConfig& config)>;

// The default Executor: worker.run(callable_id, args, config).
RunReport run_on_worker(Worker& worker, int32_t callable_id, const TaskArgs& args,
                        const CallConfig& config);

// An example's body; `executor` is never empty.
using ExampleRunner = std::function<Outcome(Worker& worker, const ExampleCase& example_case,
                                            const CallConfig&, const Executor& executor)>;

struct Example {
  std::string name;
  std::string description;
  std::vector<ExampleCase> cases;  // the first is the default
  ExampleRunner runner;

  // Runs `example_case` on `worker`: inputs, `executor` (empty: run_on_worker), result check.
  Outcome run(Worker& worker, const ExampleCase& example_case, const CallConfig& config,
              const Executor& executor = {}) const;

  // nullptr when the example has no case of that name.
  const ExampleCase* find_case(std::string_view case_name) const;
  // "default, small" for error messages.
  std::string case_names() const;
};

// Every registered example, in listing order.
std::span<const Example> all_examples();
// nullptr when no example has that name.
const Example* find_example(std::string_view name);
// "vector_example, bgemm, wavefront, paged_attention" for error messages.
std::string example_names();

}  // namespace chiprt::examples
