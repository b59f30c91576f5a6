// The chiprt columns: the suite's graphs submitted by an in-process orchestration function with an
// empty in-process kernel, on one simulated chip sized for the suite's thread count
// (bench_worker_options).
// Dependencies come from tensor regions only (views of one device buffer).
#include <algorithm>
#include <memory>
#include <utility>

#include "chiprt/call_config.h"
#include "chiprt/callable.h"
#include "chiprt/graph_export.h"
#include "chiprt/orchestration.h"
#include "chiprt/run_report.h"
#include "chiprt/task_args.h"
#include "chiprt/tensor.h"
#include "chiprt/worker.h"
#include "chiprt_options.h"
#include "chiprt_runner.h"
#include "runners.h"

namespace chiprt::perf {

namespace {

constexpr int32_t kSuiteCallable = 1;
constexpr int32_t kEmptyFunc = 1;
constexpr uint64_t kTile = 2;  // wavefront tile edge in elements

void empty_kernel(int64_t*) {}

uint64_t buffer_elements(uint64_t max_tasks) {
  // wavefront: (rows * kTile) x (columns * kTile); random DAG: one element per task; fan: X, Y.
  return std::max({max_tasks * kTile * kTile + kWavefrontColumns * kTile * kTile, max_tasks,
                   2 * kFanWidth}) +
         64;
}

// Scalars: [0] address of the Workload (the orchestration runs in this process), [1] shape,
// [2] tasks. Tensor 0: the whole buffer, 1-D f32.
void suite_orchestration(Orchestration& orch, const TaskArgs& args) {
  const auto& w = *reinterpret_cast<const Workload*>(static_cast<uintptr_t>(args.scalar_bits(0)));
  const Tensor& buffer = args.tensor(0);
  TaskArgs task;
  switch (w.shape) {
    case Shape::Independent: {
      const Tensor shared = buffer.view({64}, {0});
      for (uint64_t i = 0; i < w.tasks; ++i) {
        task.clear();
        task.in(shared);
        orch.submit(kEmptyFunc, CoreType::AIV, task);
      }
      break;
    }
    case Shape::Chain: {
      const Tensor carried = buffer.view({64}, {0});
      for (uint64_t i = 0; i < w.tasks; ++i) {
        task.clear();
        task.inout(carried);
        orch.submit(kEmptyFunc, CoreType::AIV, task);
      }
      break;
    }
    case Shape::Fan: {
      const Tensor x = buffer.view({kFanWidth}, {0});
      const Tensor y = buffer.view({kFanWidth}, {kFanWidth});
      for (uint64_t stage = 0; stage < w.fan_stages; ++stage) {
        task.clear();
        task.inout(x);
        orch.submit(kEmptyFunc, CoreType::AIV, task);
        for (uint64_t i = 0; i < kFanWidth; ++i) {
          task.clear();
          task.in(x.view({1}, {i})).output_existing(y.view({1}, {i}));
          orch.submit(kEmptyFunc, CoreType::AIV, task);
        }
        task.clear();
        task.in(y).inout(x);
        orch.submit(kEmptyFunc, CoreType::AIV, task);
      }
      break;
    }
    case Shape::Wavefront: {
      const Tensor grid = buffer.view({w.rows * kTile * w.columns * kTile}, {0})
                              .reshape({w.rows * kTile, w.columns * kTile});
      for (uint64_t r = 0; r < w.rows; ++r) {
        for (uint64_t c = 0; c < w.columns; ++c) {
          task.clear();
          task.inout(grid.view({kTile, kTile}, {r * kTile, c * kTile}));
          if (c > 0) task.in(grid.view({kTile, kTile}, {r * kTile, (c - 1) * kTile}));
          if (r > 0) task.in(grid.view({kTile, kTile}, {(r - 1) * kTile, c * kTile}));
          orch.submit(kEmptyFunc, CoreType::AIV, task);
        }
      }
      break;
    }
    case Shape::RandomDag: {
      // Task i writes element i and reads the elements of its predecessors.
      const Tensor cells = buffer.view({w.tasks}, {0});
      for (uint64_t i = 0; i < w.tasks; ++i) {
        task.clear();
        task.output_existing(cells.view({1}, {i}));
        for (const uint64_t pred : w.predecessors(i)) task.in(cells.view({1}, {pred}));
        orch.submit(kEmptyFunc, CoreType::AIV, task);
      }
      break;
    }
  }
}

}  // namespace

ChiprtDevice::ChiprtDevice(unsigned threads, uint64_t max_tasks, SimIsolation isolation)
    : max_tasks_(max_tasks), elements_(buffer_elements(max_tasks)) {
  worker_.init(bench_worker_options(threads, isolation));
  worker_.register_callable(
      kSuiteCallable, CallableBuilder()
                          .orchestration_function(suite_orchestration, ArgSignature{})
                          .kernel_function(kEmptyFunc, CoreType::AIV, empty_kernel, ArgSignature{})
                          .build());
  buffer_ = worker_.malloc(elements_ * sizeof(float));
  worker_.memset(buffer_, 0, elements_ * sizeof(float));
}

TaskArgs ChiprtDevice::arguments(const Workload& workload) const {
  TaskArgs args;
  args.in(Tensor::make(buffer_, {elements_}, DataType::F32));
  // Shape and task count make the arguments differ between workloads, so a replay never reuses
  // another workload's graph recorded at the same Workload address.
  args.scalar(static_cast<uint64_t>(reinterpret_cast<uintptr_t>(&workload)))
      .scalar(static_cast<uint64_t>(workload.shape))
      .scalar(workload.tasks);
  return args;
}

RunReport ChiprtDevice::run(const Workload& workload, const CallConfig& config) {
  last_report_ = worker_.run(kSuiteCallable, arguments(workload), config);
  return last_report_;
}

uint64_t ChiprtDevice::dependency_edges(const Workload& workload) {
  CallConfig config;
  config.max_tasks = std::max<uint64_t>(max_tasks_, CallConfig::kDefaultMaxTasks);
  return worker_.export_graph(kSuiteCallable, arguments(workload), config).consumers.size();
}

ChiprtDeviceMemory ChiprtDevice::memory() {
  ChiprtDeviceMemory m;
  m.bytes_in_use = worker_.device_bytes_in_use();
  m.output_heap_bytes = last_report_.output_heap_committed_bytes;
  m.ring_slots = last_report_.rings.total_slots();
  return m;
}

CallConfig chiprt_mode_config(ChiprtMode mode) {
  CallConfig config;
  const bool ring = mode == ChiprtMode::Ringbuffer || mode == ChiprtMode::RingbufferSerial;
  config.runtime = ring ? RuntimeVariant::TensormapRingbuffer : RuntimeVariant::HostBuildGraph;
  config.serial = mode == ChiprtMode::HostBuildGraphSerial || mode == ChiprtMode::RingbufferSerial;
  config.replay_graph = mode == ChiprtMode::HostBuildGraphReplay;
  return config;
}

ChiprtRunner::ChiprtRunner(std::shared_ptr<ChiprtDevice> device, const CallConfig& config)
    : device_(std::move(device)), config_(config) {
  if (config_.max_tasks == 0 && device_->max_tasks() > CallConfig::kDefaultMaxTasks) {
    config_.max_tasks = device_->max_tasks();
  }
}

RunResult ChiprtRunner::run(const Workload& workload) {
  last_report_ = device_->run(workload, config_);
  return {last_report_.task_count, last_report_.host_total_ns};
}

std::shared_ptr<ChiprtDevice> make_chiprt_device(unsigned threads, uint64_t max_tasks,
                                                 SimIsolation isolation) {
  return std::make_shared<ChiprtDevice>(threads, max_tasks, isolation);
}

std::unique_ptr<Runner> make_chiprt_runner(std::shared_ptr<ChiprtDevice> device, ChiprtMode mode) {
  return std::make_unique<ChiprtRunner>(std::move(device), chiprt_mode_config(mode));
}

}  // namespace chiprt::perf
