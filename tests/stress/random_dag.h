// Random task graphs for the stress suite.
//
// generate_plan(seed) draws a task list over a few 2-D float device buffers: kernel tasks with
// 1..4 tensor arguments (random 1-D/2-D views, slices with steps, transposes, runtime outputs read
// by later tasks, scopes that end outputs' lifetimes), dependency-only tasks and a few explicit
// dependencies. Write-after-read hazards (a task overwriting elements earlier tasks read) are
// left to the runtime to derive, as are the other hazards: no after() names them. The same
// plan runs on the chip through stress_orchestration and on the host through run_reference, which
// executes the same kernels serially in submission order; results must match bit for bit because
// every element sees the same float operations in the same order.
//
// A DagPlan is an immutable value once generated. The orchestration reads it through a pointer
// passed as its only scalar, so a plan must outlive every run that uses it. Nothing here has
// shared mutable state; StressDevice (one Worker) is used by one thread.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "chiprt/call_config.h"
#include "chiprt/callable.h"
#include "chiprt/run_report.h"
#include "chiprt/task_args.h"
#include "chiprt/worker.h"

namespace chiprt::stress {

inline constexpr int kMaxArgsPerTask = 4;
// func_id of the kernel for `tensor_count` arguments: AIV kernels 1..4, AIC kernels 11..14.
inline constexpr int32_t kAivFuncBase = 0;
inline constexpr int32_t kAicFuncBase = 10;
inline constexpr int32_t kStressCallableId = 7;

// How a kernel uses one tensor argument.
enum class ArgMode : uint32_t {
  Read = 0,       // In, NoDep
  Update = 1,     // InOut: y = y * decay + ...
  Overwrite = 2,  // OutputExisting, Out: y = ...
};

// The elements one tensor argument covers. `buffer` >= 0 names a device buffer; otherwise `out_id`
// names a runtime output. The view is built on the device exactly as recorded here (view, then
// slice, then transpose) and the resolved layout (start, shape, stride in elements relative to the
// base's element 0) is what the kernel walks, so a runtime that derives a different layout from
// the same view calls produces a different result.
struct ViewDesc {
  int32_t buffer = -1;
  int32_t out_id = -1;
  bool flat = false;  // a 1-D view of the flattened base
  uint64_t offset[2]{};
  uint64_t extent[2]{1, 1};
  uint32_t slice_dim = 0;
  uint64_t slice_start = 0;
  uint64_t slice_end = 0;
  uint64_t slice_step = 0;  // 0: no slice
  bool transposed = false;
  uint64_t start = 0;
  uint64_t shape[2]{1, 1};
  uint64_t stride[2]{0, 0};
};

struct PlanArg {
  ArgTag tag = ArgTag::In;
  ViewDesc view;          // for Out: out_id is the new output, shape/stride its contiguous layout
  uint32_t out_ndim = 0;  // Out only: 1 or 2
};

enum class StepKind : uint8_t { Kernel, Dummy, ScopeBegin, ScopeEnd };

struct PlanStep {
  StepKind kind = StepKind::Kernel;
  CoreType core = CoreType::AIV;
  float value = 0.0f;
  int32_t task_index = -1;  // position among submitted tasks (Kernel and Dummy steps)
  int arg_count = 0;
  PlanArg args[kMaxArgsPerTask];
  int dep_count = 0;
  int32_t deps[kMaxExplicitDeps]{};  // task indices of earlier tasks (TaskArgs::after)
  // The latest earlier task that read an element this step writes since its last write (a
  // write-after-read hazard the runtime must order without after()), -1 when none.
  int32_t war_reader = -1;
};

struct BufferShape {
  uint64_t rows = 0;
  uint64_t cols = 0;
  uint64_t numel() const { return rows * cols; }
};

struct OutShape {
  uint32_t ndim = 1;
  uint64_t rows = 1;  // 1 for ndim 1
  uint64_t cols = 1;
  uint64_t numel() const { return rows * cols; }
};

struct PlanOptions {
  uint32_t min_tasks = 50;
  uint32_t max_tasks = 2000;
};

struct DagPlan {
  uint64_t seed = 0;
  std::vector<BufferShape> buffers;  // buffer 0 is never written (In / NoDep only)
  std::vector<std::vector<float>> initial;
  std::vector<PlanStep> steps;
  std::vector<OutShape> outs;
  uint64_t task_count = 0;         // kernel + dummy tasks (what the runtime counts)
  uint64_t kernel_task_count = 0;  // tasks that run a kernel
  uint64_t explicit_dep_count = 0;
  uint64_t war_hazard_count = 0;  // steps with a war_reader
};

DagPlan generate_plan(uint64_t seed, const PlanOptions& options = {});

// Final contents of every buffer after executing the plan serially on the host.
std::vector<std::vector<float>> run_reference(const DagPlan& plan);

// The chip callable: stress_orchestration plus the eight kernels.
std::vector<uint8_t> build_stress_callable();

// One Worker with the stress callable registered and one device buffer per plan buffer shape
// (all plans share the same shapes). Frees its buffers and closes the worker on destruction.
class StressDevice {
 public:
  explicit StressDevice(const WorkerOptions& options);
  ~StressDevice();
  StressDevice(const StressDevice&) = delete;
  StressDevice& operator=(const StressDevice&) = delete;

  // Uploads the plan's initial data, runs it, downloads the buffers and compares them with
  // `expected` bit for bit. Returns "" on success, otherwise a message naming the seed, the
  // buffer, the first differing element and how many differ. Errors thrown by the run are
  // returned as messages too.
  std::string run_and_compare(const DagPlan& plan, const std::vector<std::vector<float>>& expected,
                              const CallConfig& config, RunReport* report = nullptr);

  Worker& worker() { return worker_; }

 private:
  Worker worker_;
  std::vector<DeviceBuffer> buffers_;
};

// The buffer shapes every plan uses.
const std::vector<BufferShape>& stress_buffer_shapes();

}  // namespace chiprt::stress
