#include "stress/random_dag.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <exception>
#include <random>
#include <stdexcept>
#include <utility>

#include "chiprt/kernel.h"
#include "chiprt/orchestration.h"
#include "chiprt/status.h"
#include "chiprt/tensor.h"

namespace chiprt::stress {
namespace {

using Rng = std::mt19937_64;

// Own helpers instead of <random> distributions: their output is implementation-defined, and a
// seed must name the same graph everywhere.
uint64_t uniform(Rng& rng, uint64_t lo, uint64_t hi) {
  return lo + rng() % (hi - lo + 1);
}
bool chance(Rng& rng, uint32_t percent) {
  return rng() % 100 < percent;
}
float unit_float(Rng& rng) {  // in [-1, 1), exactly representable
  return static_cast<float>(static_cast<double>(rng() >> 40) / static_cast<double>(1 << 23) - 1.0);
}

// ---------------------------------------------------------------------------------------------
// Kernels. Scalars: [0] the task's value (float), then per tensor two words: shape0 | shape1 << 16
// | mode << 32, and stride0 | stride1 << 32 (elements). Every read tensor contributes its mean,
// every written element gets y = (Update ? y * decay : 0) + acc + k * 1e-3 where k is the element's
// position in the view: any reordering of producers, consumers or overwriters changes a value.
// Magnitudes stay bounded (|y| grows at most by ~1.3 per generation).

struct ArgLayout {
  uint64_t shape0, shape1, stride0, stride1;
  ArgMode mode;
};

inline ArgLayout unpack_layout(const int64_t* args, int tensors, int t) {
  const auto shape = static_cast<uint64_t>(args[tensors + 1 + 2 * t]);
  const auto stride = static_cast<uint64_t>(args[tensors + 2 + 2 * t]);
  return ArgLayout{shape & 0xffff, (shape >> 16) & 0xffff, stride & 0xffffffff, stride >> 32,
                   static_cast<ArgMode>(shape >> 32)};
}

template <int kTensors, int kVariant>
void stress_kernel(int64_t* args) {
  constexpr float kDecay = kVariant == 0 ? 0.5f : 0.25f;
  float acc = kernel::scalar_arg<float>(args, kTensors);
  for (int t = 0; t < kTensors; ++t) {
    const ArgLayout l = unpack_layout(args, kTensors, t);
    if (l.mode == ArgMode::Overwrite) continue;
    const float* p = kernel::tensor_arg<float>(args, t);
    float sum = 0.0f;
    for (uint64_t i = 0; i < l.shape0; ++i)
      for (uint64_t j = 0; j < l.shape1; ++j) sum += p[i * l.stride0 + j * l.stride1];
    acc += sum / static_cast<float>(l.shape0 * l.shape1) * 0.125f;
  }
  for (int t = 0; t < kTensors; ++t) {
    const ArgLayout l = unpack_layout(args, kTensors, t);
    if (l.mode == ArgMode::Read) continue;
    float* p = kernel::tensor_arg<float>(args, t);
    uint32_t k = 0;
    for (uint64_t i = 0; i < l.shape0; ++i) {
      for (uint64_t j = 0; j < l.shape1; ++j, ++k) {
        float& y = p[i * l.stride0 + j * l.stride1];
        const float kept = l.mode == ArgMode::Update ? y * kDecay : 0.0f;
        y = kept + acc + static_cast<float>(k) * 1e-3f;
      }
    }
  }
}

KernelEntry kernel_for(CoreType core, int tensors) {
  static constexpr KernelEntry kAiv[kMaxArgsPerTask] = {stress_kernel<1, 0>, stress_kernel<2, 0>,
                                                        stress_kernel<3, 0>, stress_kernel<4, 0>};
  static constexpr KernelEntry kAic[kMaxArgsPerTask] = {stress_kernel<1, 1>, stress_kernel<2, 1>,
                                                        stress_kernel<3, 1>, stress_kernel<4, 1>};
  return core == CoreType::AIC ? kAic[tensors - 1] : kAiv[tensors - 1];
}

int32_t func_id_for(CoreType core, int tensors) {
  return (core == CoreType::AIC ? kAicFuncBase : kAivFuncBase) + tensors;
}

ArgMode mode_of(ArgTag tag) {
  switch (tag) {
    case ArgTag::InOut:
      return ArgMode::Update;
    case ArgTag::Out:
    case ArgTag::OutputExisting:
      return ArgMode::Overwrite;
    default:
      return ArgMode::Read;
  }
}

// Writes the kernel scalars of `step` into `out`; returns how many.
int pack_scalars(const PlanStep& step, uint64_t* out) {
  uint32_t value_bits = 0;
  std::memcpy(&value_bits, &step.value, sizeof(value_bits));
  out[0] = value_bits;
  for (int a = 0; a < step.arg_count; ++a) {
    const ViewDesc& v = step.args[a].view;
    out[1 + 2 * a] =
        v.shape[0] | (v.shape[1] << 16) | (static_cast<uint64_t>(mode_of(step.args[a].tag)) << 32);
    out[2 + 2 * a] = v.stride[0] | (v.stride[1] << 32);
  }
  return 1 + 2 * step.arg_count;
}

// ---------------------------------------------------------------------------------------------
// Generator.

constexpr uint64_t kMaxViewExtent = 12;  // per 2-D dimension
constexpr uint64_t kMaxFlatLength = 64;

// A random view of a rows x cols base (a 1-D base when `base_is_1d`, with rows == 1).
ViewDesc random_view(Rng& rng, uint64_t rows, uint64_t cols, bool base_is_1d) {
  ViewDesc v;
  const uint64_t numel = rows * cols;
  v.flat = base_is_1d || chance(rng, 25);
  if (v.flat) {
    const uint64_t len = uniform(rng, 1, std::min(kMaxFlatLength, numel));
    v.offset[0] = uniform(rng, 0, numel - len);
    v.extent[0] = len;
    v.start = v.offset[0];
    v.shape[0] = len;
    v.shape[1] = 1;
    v.stride[0] = 1;
    v.stride[1] = 0;
  } else {
    v.extent[0] = uniform(rng, 1, std::min(kMaxViewExtent, rows));
    v.extent[1] = uniform(rng, 1, std::min(kMaxViewExtent, cols));
    v.offset[0] = uniform(rng, 0, rows - v.extent[0]);
    v.offset[1] = uniform(rng, 0, cols - v.extent[1]);
    v.start = v.offset[0] * cols + v.offset[1];
    v.shape[0] = v.extent[0];
    v.shape[1] = v.extent[1];
    v.stride[0] = cols;
    v.stride[1] = 1;
  }
  if (chance(rng, 20)) {
    v.slice_dim = v.flat ? 0 : static_cast<uint32_t>(uniform(rng, 0, 1));
    const uint64_t extent = v.shape[v.slice_dim];
    v.slice_step = uniform(rng, 2, 3);
    v.slice_start = uniform(rng, 0, std::min<uint64_t>(extent - 1, 2));
    v.slice_end = uniform(rng, v.slice_start + 1, extent);
    v.start += v.slice_start * v.stride[v.slice_dim];
    v.shape[v.slice_dim] = (v.slice_end - v.slice_start + v.slice_step - 1) / v.slice_step;
    v.stride[v.slice_dim] *= v.slice_step;
  }
  if (!v.flat && chance(rng, 10)) {
    v.transposed = true;
    std::swap(v.shape[0], v.shape[1]);
    std::swap(v.stride[0], v.stride[1]);
  }
  return v;
}

template <class Fn>
void for_each_element(const ViewDesc& v, Fn&& fn) {
  for (uint64_t i = 0; i < v.shape[0]; ++i)
    for (uint64_t j = 0; j < v.shape[1]; ++j) fn(v.start + i * v.stride[0] + j * v.stride[1]);
}

// Per element of a writable buffer: the tasks that read it since it was last written (the
// write-after-read hazards a writer of it must wait for), and the last task that wrote it.
struct BufferTracker {
  std::vector<std::vector<int32_t>> readers;
  std::vector<int32_t> last_writer;
};

class PlanGenerator {
 public:
  PlanGenerator(uint64_t seed, const PlanOptions& options) : rng_(seed), options_(options) {
    plan_.seed = seed;
    plan_.buffers = stress_buffer_shapes();
    for (const BufferShape& shape : plan_.buffers) {
      std::vector<float> data(shape.numel());
      for (float& x : data) x = unit_float(rng_);
      plan_.initial.push_back(std::move(data));
      trackers_.push_back(BufferTracker{std::vector<std::vector<int32_t>>(shape.numel()),
                                        std::vector<int32_t>(shape.numel(), -1)});
    }
    live_outs_.emplace_back();
  }

  DagPlan generate() {
    const uint64_t target = uniform(rng_, options_.min_tasks, options_.max_tasks);
    for (uint64_t n = 0; n < target; ++n) {
      if (live_outs_.size() < 3 && chance(rng_, 2)) {
        push_marker(StepKind::ScopeBegin);
        live_outs_.emplace_back();
      }
      if (live_outs_.size() > 1 && chance(rng_, 2)) {
        push_marker(StepKind::ScopeEnd);
        live_outs_.pop_back();
      }
      add_random_task();
    }
    while (live_outs_.size() > 1) {
      push_marker(StepKind::ScopeEnd);
      live_outs_.pop_back();
    }
    plan_.task_count = static_cast<uint64_t>(next_task_);
    return std::move(plan_);
  }

 private:
  void push_marker(StepKind kind) {
    PlanStep step;
    step.kind = kind;
    plan_.steps.push_back(step);
  }

  int32_t random_writable_buffer() {
    return static_cast<int32_t>(uniform(rng_, 1, plan_.buffers.size() - 1));
  }

  PlanArg read_of_live_output() {
    std::vector<int32_t> live;
    for (const auto& level : live_outs_) live.insert(live.end(), level.begin(), level.end());
    const int32_t id = live[uniform(rng_, 0, live.size() - 1)];
    const OutShape& shape = plan_.outs[id];
    PlanArg arg;
    arg.tag = ArgTag::In;
    arg.view = random_view(rng_, shape.rows, shape.cols, shape.ndim == 1);
    arg.view.out_id = id;
    return arg;
  }

  PlanArg buffer_arg(int32_t buffer, ArgTag tag) {
    const BufferShape& shape = plan_.buffers[buffer];
    PlanArg arg;
    arg.tag = tag;
    arg.view = random_view(rng_, shape.rows, shape.cols, false);
    arg.view.buffer = buffer;
    return arg;
  }

  PlanArg new_output() {
    OutShape shape;
    if (chance(rng_, 60)) {
      shape.ndim = 2;
      shape.rows = uniform(rng_, 1, 8);
      shape.cols = uniform(rng_, 1, 16);
    } else {
      shape.ndim = 1;
      shape.cols = uniform(rng_, 1, kMaxFlatLength);
    }
    PlanArg arg;
    arg.tag = ArgTag::Out;
    arg.out_ndim = shape.ndim;
    arg.view.out_id = static_cast<int32_t>(plan_.outs.size());
    arg.view.flat = shape.ndim == 1;
    arg.view.shape[0] = shape.ndim == 2 ? shape.rows : shape.cols;
    arg.view.shape[1] = shape.ndim == 2 ? shape.cols : 1;
    arg.view.stride[0] = shape.ndim == 2 ? shape.cols : 1;
    arg.view.stride[1] = shape.ndim == 2 ? 1 : 0;
    plan_.outs.push_back(shape);
    return arg;
  }

  bool has_live_output() const {
    for (const auto& level : live_outs_)
      if (!level.empty()) return true;
    return false;
  }

  void add_random_task() {
    PlanStep step;
    const bool dummy = chance(rng_, 3);
    step.kind = dummy ? StepKind::Dummy : StepKind::Kernel;
    step.core = chance(rng_, 30) ? CoreType::AIC : CoreType::AIV;
    step.value = unit_float(rng_);
    step.arg_count = static_cast<int>(uniform(rng_, 1, dummy ? 2 : kMaxArgsPerTask));
    for (int a = 0; a < step.arg_count; ++a) {
      const uint64_t r = uniform(rng_, 0, 99);
      if (r < 12 && has_live_output()) {
        step.args[a] = read_of_live_output();
      } else if (dummy) {
        step.args[a] = buffer_arg(random_writable_buffer(), r < 55 ? ArgTag::In : ArgTag::InOut);
      } else if (r < 22) {
        step.args[a] = buffer_arg(0, chance(rng_, 15) ? ArgTag::NoDep : ArgTag::In);
      } else if (r < 34) {
        step.args[a] = new_output();
      } else {
        const uint64_t t = uniform(rng_, 0, 99);
        const ArgTag tag = t < 40 ? ArgTag::In : (t < 75 ? ArgTag::InOut : ArgTag::OutputExisting);
        step.args[a] = buffer_arg(random_writable_buffer(), tag);
      }
    }

    // Write-after-read: every task that read an element this task writes, since that element's
    // last write, must finish first. The runtime derives that from the regions (no after()); the
    // plan only notes the hazard. Later writers are ordered after this one through the
    // write-after-write edge, so the readers are forgotten once this task writes.
    std::vector<int32_t> readers;
    for (int a = 0; a < step.arg_count; ++a) {
      const PlanArg& arg = step.args[a];
      if (arg.view.buffer < 0 || !arg_tag_writes(arg.tag)) continue;
      const BufferTracker& tracker = trackers_[arg.view.buffer];
      for_each_element(arg.view, [&](uint64_t e) {
        readers.insert(readers.end(), tracker.readers[e].begin(), tracker.readers[e].end());
      });
    }
    if (!readers.empty()) {
      step.war_reader = *std::max_element(readers.begin(), readers.end());
      ++plan_.war_hazard_count;
    }
    // Explicit dependencies for what they are still for (ordering beyond regions): now and then
    // a few random earlier tasks, sometimes joined through a dependency-only task first.
    if (next_task_ > 0 && chance(rng_, 5)) {
      const int count = static_cast<int>(uniform(rng_, 1, kMaxExplicitDeps));
      PlanStep join;
      const bool joined = chance(rng_, 30);
      PlanStep& target = joined ? join : step;
      for (int k = 0; k < count; ++k) {
        target.deps[target.dep_count++] =
            static_cast<int32_t>(uniform(rng_, 0, static_cast<uint64_t>(next_task_) - 1));
      }
      plan_.explicit_dep_count += target.dep_count;
      if (joined) {
        join.kind = StepKind::Dummy;
        join.task_index = next_task_++;
        plan_.steps.push_back(join);
        step.deps[step.dep_count++] = join.task_index;
        ++plan_.explicit_dep_count;
      }
    }

    const int32_t task = next_task_++;
    step.task_index = task;
    if (!dummy) ++plan_.kernel_task_count;
    for (int a = 0; a < step.arg_count; ++a) {
      const PlanArg& arg = step.args[a];
      if (arg.view.buffer < 0 || !arg_tag_writes(arg.tag)) continue;
      BufferTracker& tracker = trackers_[arg.view.buffer];
      for_each_element(arg.view, [&](uint64_t e) {
        tracker.readers[e].clear();
        tracker.last_writer[e] = task;
      });
    }
    for (int a = 0; a < step.arg_count; ++a) {
      const PlanArg& arg = step.args[a];
      // Buffer 0 is never written and outputs are written once, by their producer.
      if (arg.view.buffer <= 0 || !arg_tag_reads(arg.tag)) continue;
      BufferTracker& tracker = trackers_[arg.view.buffer];
      for_each_element(arg.view, [&](uint64_t e) {
        if (tracker.last_writer[e] == task) return;  // ordered by write-after-write instead
        std::vector<int32_t>& list = tracker.readers[e];
        if (list.empty() || list.back() != task) list.push_back(task);
      });
    }
    for (int a = 0; a < step.arg_count; ++a)
      if (step.args[a].tag == ArgTag::Out) live_outs_.back().push_back(step.args[a].view.out_id);
    plan_.steps.push_back(step);
  }

  Rng rng_;
  PlanOptions options_;
  DagPlan plan_;
  std::vector<BufferTracker> trackers_;
  std::vector<std::vector<int32_t>> live_outs_;  // per open scope level (0: outside any scope)
  int32_t next_task_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Orchestration: replays the plan through the Orchestration API.

Tensor make_view(const Tensor& base, const ViewDesc& v) {
  Tensor t = v.flat ? base.view({v.extent[0]}, {v.offset[0]})
                    : base.view({v.extent[0], v.extent[1]}, {v.offset[0], v.offset[1]});
  if (v.slice_step != 0) t = t.slice(v.slice_dim, v.slice_start, v.slice_end, v.slice_step);
  if (v.transposed) t = t.transpose(0, 1);
  return t;
}

void stress_orchestration(Orchestration& orch, const TaskArgs& args) {
  if (args.scalar_count() != 1)
    throw Error(StatusCode::InvalidArgument,
                "stress orchestration: expected 1 scalar (the plan address), got " +
                    std::to_string(args.scalar_count()));
  const auto& plan = *reinterpret_cast<const DagPlan*>(static_cast<uintptr_t>(args.scalar_bits(0)));
  if (static_cast<size_t>(args.tensor_count()) != plan.buffers.size())
    throw Error(StatusCode::InvalidArgument,
                "stress orchestration: expected " + std::to_string(plan.buffers.size()) +
                    " buffer tensors, got " + std::to_string(args.tensor_count()));
  std::vector<Tensor> grids;
  std::vector<Tensor> flats;
  for (size_t b = 0; b < plan.buffers.size(); ++b) {
    grids.push_back(args.tensor(static_cast<int>(b)));
    flats.push_back(grids.back().reshape({plan.buffers[b].numel()}));
  }
  std::vector<Tensor> outs(plan.outs.size());
  std::vector<TaskId> ids(plan.task_count, kNoTask);
  TaskArgs task;
  uint64_t scalars[1 + 2 * kMaxArgsPerTask];
  for (const PlanStep& step : plan.steps) {
    if (step.kind == StepKind::ScopeBegin) {
      orch.scope_begin();
      continue;
    }
    if (step.kind == StepKind::ScopeEnd) {
      orch.scope_end();
      continue;
    }
    task.clear();
    for (int a = 0; a < step.arg_count; ++a) {
      const PlanArg& arg = step.args[a];
      const ViewDesc& v = arg.view;
      if (arg.tag == ArgTag::Out) {
        const OutShape& shape = plan.outs[v.out_id];
        if (shape.ndim == 1)
          task.out({shape.cols}, DataType::F32);
        else
          task.out({shape.rows, shape.cols}, DataType::F32);
      } else if (v.buffer >= 0) {
        task.add(arg.tag, make_view(v.flat ? flats[v.buffer] : grids[v.buffer], v));
      } else {
        const Tensor& out = outs[v.out_id];
        task.add(arg.tag, make_view(v.flat ? out.reshape({out.numel()}) : out, v));
      }
    }
    for (int d = 0; d < step.dep_count; ++d) task.after(ids[step.deps[d]]);
    TaskId id;
    if (step.kind == StepKind::Kernel) {
      const int count = pack_scalars(step, scalars);
      for (int s = 0; s < count; ++s) task.add_scalar_bits(scalars[s]);
      id = orch.submit(func_id_for(step.core, step.arg_count), step.core, task);
    } else {
      id = orch.submit_dummy(task);
    }
    ids[step.task_index] = id;
    int k = 0;
    for (int a = 0; a < step.arg_count; ++a)
      if (step.args[a].tag == ArgTag::Out) outs[step.args[a].view.out_id] = task.output(k++);
  }
}

std::string hex_float(float x) {
  uint32_t bits = 0;
  std::memcpy(&bits, &x, sizeof(bits));
  char text[64];
  std::snprintf(text, sizeof(text), "%.9g (bits 0x%08" PRIx32 ")", static_cast<double>(x), bits);
  return text;
}

}  // namespace

const std::vector<BufferShape>& stress_buffer_shapes() {
  static const std::vector<BufferShape> kShapes = {{16, 32}, {32, 32}, {24, 48}, {64, 16}};
  return kShapes;
}

DagPlan generate_plan(uint64_t seed, const PlanOptions& options) {
  return PlanGenerator(seed, options).generate();
}

std::vector<std::vector<float>> run_reference(const DagPlan& plan) {
  std::vector<std::vector<float>> buffers = plan.initial;
  std::vector<std::vector<float>> outs;
  for (const OutShape& shape : plan.outs) outs.emplace_back(shape.numel(), 0.0f);
  // Tensors, scalars, then the block context the runtime appends.
  int64_t args[kMaxArgsPerTask + 1 + 2 * kMaxArgsPerTask + 2];
  uint64_t scalars[1 + 2 * kMaxArgsPerTask];
  for (const PlanStep& step : plan.steps) {
    if (step.kind != StepKind::Kernel) continue;
    for (int a = 0; a < step.arg_count; ++a) {
      const ViewDesc& v = step.args[a].view;
      float* base = v.buffer >= 0 ? buffers[v.buffer].data() : outs[v.out_id].data();
      args[a] = static_cast<int64_t>(reinterpret_cast<uintptr_t>(base + v.start));
    }
    const int count = pack_scalars(step, scalars);
    for (int s = 0; s < count; ++s) args[step.arg_count + s] = static_cast<int64_t>(scalars[s]);
    args[step.arg_count + count] = 0;
    args[step.arg_count + count + 1] = 1;
    kernel_for(step.core, step.arg_count)(args);
  }
  return buffers;
}

std::vector<uint8_t> build_stress_callable() {
  CallableBuilder builder;
  builder.orchestration_function(stress_orchestration, ArgSignature{});
  for (int t = 1; t <= kMaxArgsPerTask; ++t) {
    builder.kernel_function(func_id_for(CoreType::AIV, t), CoreType::AIV,
                            kernel_for(CoreType::AIV, t), ArgSignature{});
    builder.kernel_function(func_id_for(CoreType::AIC, t), CoreType::AIC,
                            kernel_for(CoreType::AIC, t), ArgSignature{});
  }
  return builder.build();
}

StressDevice::StressDevice(const WorkerOptions& options) {
  worker_.init(options);
  worker_.register_callable(kStressCallableId, build_stress_callable());
  for (const BufferShape& shape : stress_buffer_shapes())
    buffers_.push_back(worker_.malloc(shape.numel() * sizeof(float)));
}

StressDevice::~StressDevice() {
  try {
    for (const DeviceBuffer& buffer : buffers_) worker_.free(buffer);
    worker_.close();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "StressDevice teardown failed: %s\n", e.what());
  }
}

std::string StressDevice::run_and_compare(const DagPlan& plan,
                                          const std::vector<std::vector<float>>& expected,
                                          const CallConfig& config, RunReport* report) {
  const std::string where =
      "seed " + std::to_string(plan.seed) + " (" + std::to_string(plan.task_count) + " tasks): ";
  try {
    TaskArgs args;
    for (size_t b = 0; b < buffers_.size(); ++b) {
      const BufferShape& shape = plan.buffers[b];
      worker_.copy_to(buffers_[b], plan.initial[b].data(), shape.numel() * sizeof(float));
      args.inout(Tensor::make(buffers_[b], {shape.rows, shape.cols}, DataType::F32));
    }
    args.scalar(static_cast<uint64_t>(reinterpret_cast<uintptr_t>(&plan)));
    const RunReport result = worker_.run(kStressCallableId, args, config);
    if (report != nullptr) *report = result;
    // task_count is the submitted tasks on both variants; the runtime may add one internal fence
    // task per scope end (releasing the scope's outputs), counted apart.
    uint64_t scope_ends = 0;
    for (const PlanStep& step : plan.steps) scope_ends += step.kind == StepKind::ScopeEnd;
    if (result.task_count != plan.task_count || result.internal_task_count > scope_ends)
      return where + "RunReport.task_count is " + std::to_string(result.task_count) +
             " and internal_task_count " + std::to_string(result.internal_task_count) +
             ", expected the " + std::to_string(plan.task_count) +
             " submitted tasks and at most one fence per scope end (" + std::to_string(scope_ends) +
             ")";
    for (size_t b = 0; b < buffers_.size(); ++b) {
      const BufferShape& shape = plan.buffers[b];
      std::vector<float> got(shape.numel());
      worker_.copy_from(got.data(), buffers_[b], shape.numel() * sizeof(float));
      uint64_t differing = 0;
      uint64_t first = 0;
      for (uint64_t e = 0; e < shape.numel(); ++e) {
        if (std::memcmp(&got[e], &expected[b][e], sizeof(float)) != 0 && differing++ == 0)
          first = e;
      }
      if (differing != 0)
        return where + "buffer " + std::to_string(b) + " (" + std::to_string(shape.rows) + "x" +
               std::to_string(shape.cols) + ") element " + std::to_string(first) + " (row " +
               std::to_string(first / shape.cols) + ", col " + std::to_string(first % shape.cols) +
               "): chip " + hex_float(got[first]) + " != reference " +
               hex_float(expected[b][first]) + "; " + std::to_string(differing) + " of " +
               std::to_string(shape.numel()) + " elements differ";
    }
  } catch (const std::exception& e) {
    return where + "run failed: " + e.what();
  }
  return "";
}

}  // namespace chiprt::stress
