// Stress for the tensormap_ringbuffer runtime on the simulated chip without the host runner:
// random task graphs with random scope nesting (depth >= 3, so the shared deepest ring set is
// used) over tiny rings, orchestrated on AICPU thread 0 while the others schedule, compared
// element for element with a serial-mode ring run and with a host execution of the same plan in
// submission order.
//
// The generator only emits graphs that must finish: a scope whose outputs would pin a ring set
// beyond its window / heap / dependency pool is ended first (otherwise RingDeadlock would be the
// correct answer). Write-after-read hazards are left to the runtime (no TaskArgs::after names
// them); the generator counts them as dependency-pool entries.
//
// Environment: CHIPRT_STRESS_SEEDS=N seeds (default 40), CHIPRT_STRESS_ONLY_SEED=S one seed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "chiprt/orchestration.h"
#include "common/ring_state.h"
#include "platform/registry.h"
#include "stress/stress_seeds.h"
#include "unit/scheduler/ring_launch.h"

namespace chiprt::ring_stress {
namespace {

using scheduler::test::RingKernel;
using scheduler::test::RingLaunch;
using scheduler::test::RingLaunchOptions;

constexpr uint64_t kDefaultSeeds = 40;
constexpr int kMaxArgs = 4;
constexpr uint32_t kBuffers = 5;
constexpr uint64_t kBufferElems = 96;
constexpr uint64_t kMaxOutElems = 16;
constexpr uint32_t kMaxDepth = 6;
// Tiny rings: the generator keeps each set's pinned span within half of these.
constexpr uint64_t kWindow = 16;
constexpr uint64_t kHeapBytes = 4096;
constexpr uint64_t kDepPool = 512;
// AIC kernels 1..4, AIV kernels 11..14 (by tensor count).
constexpr int32_t kAicBase = 0;
constexpr int32_t kAivBase = 10;

enum Mode : int64_t { kRead = 0, kUpdate = 1, kOverwrite = 2 };

// The kernel of every task: reads fold into an accumulator, then updates and overwrites use it.
// Scalars after the N tensors: k, then (length, mode) per tensor.
template <int N>
void generic_kernel(int64_t* args) {
  uint64_t acc = static_cast<uint64_t>(args[N]);
  for (int i = 0; i < N; ++i) {
    const auto* x = reinterpret_cast<const uint64_t*>(static_cast<uintptr_t>(args[i]));
    const int64_t length = args[N + 1 + 2 * i];
    if (args[N + 2 + 2 * i] == kOverwrite) continue;
    for (int64_t j = 0; j < length; ++j) acc = acc * 31 + x[j];
  }
  for (int i = 0; i < N; ++i) {
    auto* x = reinterpret_cast<uint64_t*>(static_cast<uintptr_t>(args[i]));
    const int64_t length = args[N + 1 + 2 * i];
    const int64_t mode = args[N + 2 + 2 * i];
    for (int64_t j = 0; j < length; ++j) {
      if (mode == kUpdate) x[j] = x[j] * 7 + acc + static_cast<uint64_t>(j);
      if (mode == kOverwrite) x[j] = acc + 13 * static_cast<uint64_t>(j);
    }
  }
}
KernelEntry kernel_for(int n) {
  switch (n) {
    case 1:
      return &generic_kernel<1>;
    case 2:
      return &generic_kernel<2>;
    case 3:
      return &generic_kernel<3>;
    default:
      return &generic_kernel<4>;
  }
}

std::vector<RingKernel> stress_kernels() {
  std::vector<RingKernel> kernels;
  for (int n = 1; n <= kMaxArgs; ++n) {
    kernels.push_back({kAicBase + n, CoreType::AIC, kernel_for(n)});
    kernels.push_back({kAivBase + n, CoreType::AIV, kernel_for(n)});
  }
  return kernels;
}

// ---- plan ---------------------------------------------------------------------------------------

struct Arg {
  Mode mode = kRead;
  bool output = false;  // Overwrite of a new runtime output (Out) / a read of one (In)
  int32_t source = 0;   // buffer index, or output id when `output`
  uint64_t offset = 0;
  uint64_t length = 1;
};

enum class StepKind : uint8_t { Task, Dummy, ScopeBegin, ScopeEnd };

struct Step {
  StepKind kind = StepKind::Task;
  CoreType core = CoreType::AIV;
  int64_t k = 0;
  std::vector<Arg> args;
  std::vector<uint32_t> after;  // task indices
};

struct Plan {
  uint64_t seed = 0;
  std::vector<Step> steps;
  std::vector<uint64_t> out_lengths;  // per output id
  uint32_t tasks = 0;
  uint32_t max_depth = 0;
  std::vector<std::vector<int64_t>> initial;
};

uint32_t set_of(uint32_t depth) {
  return std::min(depth, common::kRingDepths - 1);
}

class Generator {
 public:
  explicit Generator(uint64_t seed) : rng_(seed) {
    plan_.seed = seed;
    for (uint32_t b = 0; b < kBuffers; ++b) {
      std::vector<int64_t> data(kBufferElems);
      for (auto& x : data) x = static_cast<int64_t>(rng_());
      plan_.initial.push_back(std::move(data));
      writer_.emplace_back(kBufferElems, -1);
      readers_.emplace_back(kBufferElems);
    }
    frames_.push_back(Frame{});  // the root scope (never holds outputs: see add_task)
  }

  Plan generate() {
    const uint32_t target = static_cast<uint32_t>(uniform(300, 1200));
    for (uint32_t n = 0; n < target; ++n) {
      // One guaranteed dive to depth 4 halfway through; random nesting otherwise.
      if (n == target / 2) {
        while (depth() < 4) begin_scope();
      } else if (depth() < kMaxDepth && chance(6)) {
        begin_scope();
      } else if (depth() > 0 && chance(5)) {
        end_scope();
      }
      if (chance(6)) {
        add_dummy();
      } else {
        add_task();
      }
    }
    while (depth() > 0) end_scope();
    plan_.tasks = next_task_;
    return std::move(plan_);
  }

 private:
  // Ring usage of one set since its oldest task that holds outputs of a still-open scope: such a
  // task cannot retire before its scope ends, and retirement is in order.
  struct Usage {
    uint64_t tasks = 0;
    uint64_t heap = 0;
    uint64_t deps = 0;
  };
  struct Frame {
    bool holds = false;
    Usage pin;                     // the set's cumulative usage before its first holding task
    std::vector<int32_t> outputs;  // output ids created in this scope
  };

  uint64_t uniform(uint64_t lo, uint64_t hi) {
    return std::uniform_int_distribution<uint64_t>(lo, hi)(rng_);
  }
  bool chance(uint32_t percent) { return uniform(0, 99) < percent; }
  uint32_t depth() const { return static_cast<uint32_t>(frames_.size() - 1); }

  void begin_scope() {
    plan_.steps.push_back(Step{StepKind::ScopeBegin, CoreType::AIV, 0, {}, {}});
    frames_.push_back(Frame{});
    plan_.max_depth = std::max(plan_.max_depth, depth());
  }
  void end_scope() {
    plan_.steps.push_back(Step{StepKind::ScopeEnd, CoreType::AIV, 0, {}, {}});
    for (int32_t id : frames_.back().outputs)
      live_outputs_.erase(std::find(live_outputs_.begin(), live_outputs_.end(), id));
    frames_.pop_back();
  }

  // Whether a task adding `add` to the current depth's set keeps every pinned span within half
  // of the set's rings (a quarter of the window: tasks of deeper depths >= 3 share the set).
  bool fits(const Usage& add, bool holds) const {
    const uint32_t set = set_of(depth());
    const Usage& used = usage_[set];
    const Usage* pin = nullptr;
    for (uint32_t d = 1; d < frames_.size(); ++d) {
      if (set_of(d) == set && frames_[d].holds) {
        pin = &frames_[d].pin;
        break;
      }
    }
    if (pin == nullptr && !holds) return true;
    const Usage base = pin != nullptr ? *pin : used;
    return used.tasks + add.tasks - base.tasks <= kWindow / 2 &&
           used.heap + add.heap - base.heap <= kHeapBytes / 2 &&
           used.deps + add.deps - base.deps <= kDepPool / 2;
  }

  Arg random_region(Mode mode) {
    Arg arg;
    arg.mode = mode;
    if (mode == kRead && !live_outputs_.empty() && chance(40)) {
      arg.output = true;
      arg.source = live_outputs_[uniform(0, live_outputs_.size() - 1)];
      const uint64_t n = plan_.out_lengths[arg.source];
      arg.length = uniform(1, n);
      arg.offset = uniform(0, n - arg.length);
      return arg;
    }
    arg.source = static_cast<int32_t>(uniform(0, kBuffers - 1));
    arg.length = chance(20) ? uniform(1, kBufferElems) : uniform(1, 12);
    arg.offset = uniform(0, kBufferElems - arg.length);
    return arg;
  }

  static bool overlaps(const Arg& a, const Arg& b) {
    return a.output == b.output && a.source == b.source && a.offset < b.offset + b.length &&
           b.offset < a.offset + a.length;
  }

  void add_task() {
    Step step;
    step.kind = StepKind::Task;
    step.core = chance(50) ? CoreType::AIC : CoreType::AIV;
    step.k = static_cast<int64_t>(rng_());
    const int wanted = static_cast<int>(uniform(1, kMaxArgs));
    std::vector<uint32_t> war;  // write-after-read hazards (the runtime orders them)
    std::vector<int32_t> producers;
    uint64_t out_bytes = 0;
    int outputs = 0;
    for (int a = 0; a < wanted; ++a) {
      const uint64_t roll = uniform(0, 99);
      const bool wants_output = depth() > 0 && roll < 20;
      const Mode mode = wants_output ? kOverwrite
                        : roll < 55  ? kRead
                        : roll < 80  ? kUpdate
                                     : kOverwrite;
      Arg arg;
      if (wants_output) {
        arg.mode = kOverwrite;
        arg.output = true;
        arg.length = uniform(1, kMaxOutElems);
        arg.source = -1;  // assigned once the task is accepted
      } else {
        arg = random_region(mode);
      }
      bool clash = false;
      for (const Arg& other : step.args) clash |= !arg.output && overlaps(arg, other);
      if (clash) continue;
      if (!arg.output) {
        std::vector<uint32_t> hazards = war;
        for (uint64_t e = arg.offset; e < arg.offset + arg.length && arg.mode != kRead; ++e) {
          for (uint32_t r : readers_[arg.source][e]) {
            if (std::find(hazards.begin(), hazards.end(), r) == hazards.end()) hazards.push_back(r);
          }
        }
        if (hazards.size() > static_cast<size_t>(kMaxExplicitDeps)) continue;
        war = std::move(hazards);
      }
      if (arg.output) {
        out_bytes += (arg.length * 8 + 63) / 64 * 64;
        ++outputs;
      }
      step.args.push_back(arg);
    }
    if (step.args.empty()) {
      step.args.push_back(random_region(kRead));
    }
    // Producers (upper bound): last writers of every element touched, creators of outputs read.
    for (const Arg& arg : step.args) {
      if (arg.output && arg.mode == kRead) producers.push_back(creator_[arg.source]);
      if (arg.output) continue;
      for (uint64_t e = arg.offset; e < arg.offset + arg.length; ++e) {
        if (writer_[arg.source][e] >= 0) producers.push_back(writer_[arg.source][e]);
      }
    }
    std::sort(producers.begin(), producers.end());
    producers.erase(std::unique(producers.begin(), producers.end()), producers.end());
    Usage add{1, out_bytes, producers.size() + war.size()};
    if (!fits(add, outputs > 0)) {
      // Drop the new outputs, and if the set is still pinned too far, end scopes first.
      std::erase_if(step.args, [](const Arg& arg) { return arg.output && arg.mode != kRead; });
      if (step.args.empty()) step.args.push_back(random_region(kRead));
      add.heap = 0;
      outputs = 0;
      while (!fits(add, false)) end_scope();
      // Outputs of the scopes just ended are gone.
      std::erase_if(step.args, [this](const Arg& arg) {
        return arg.output && std::find(live_outputs_.begin(), live_outputs_.end(), arg.source) ==
                                 live_outputs_.end();
      });
      if (step.args.empty()) step.args.push_back(random_region(kRead));
    }
    const uint32_t id = next_task_++;
    if (outputs > 0) {
      Frame& frame = frames_.back();
      if (!frame.holds) {
        frame.holds = true;
        frame.pin = usage_[set_of(depth())];
      }
    }
    Usage& used = usage_[set_of(depth())];
    used.tasks += add.tasks;
    used.heap += add.heap;
    used.deps += add.deps;
    for (Arg& arg : step.args) {
      if (arg.output && arg.mode != kRead) {
        arg.source = static_cast<int32_t>(plan_.out_lengths.size());
        plan_.out_lengths.push_back(arg.length);
        creator_.push_back(static_cast<int32_t>(id));
        frames_.back().outputs.push_back(arg.source);
        live_outputs_.push_back(arg.source);
        continue;
      }
      if (arg.output) continue;  // outputs are written once: no hazards to track
      for (uint64_t e = arg.offset; e < arg.offset + arg.length; ++e) {
        if (arg.mode == kRead) {
          readers_[arg.source][e].push_back(id);
        } else {
          writer_[arg.source][e] = static_cast<int32_t>(id);
          readers_[arg.source][e].clear();
        }
      }
    }
    plan_.steps.push_back(std::move(step));
  }

  // A dependency-only task over a few reads (no data effect), sometimes named by a later task.
  void add_dummy() {
    if (!fits(Usage{1, 0, kMaxArgs * kBufferElems / 4}, false)) return;
    Step step;
    step.kind = StepKind::Dummy;
    const int n = static_cast<int>(uniform(1, 2));
    for (int a = 0; a < n; ++a) {
      Arg arg = random_region(kRead);
      arg.length = std::min<uint64_t>(arg.length, 8);
      step.args.push_back(arg);
    }
    if (next_task_ > 0 && chance(50)) step.after.push_back(uniform(0, next_task_ - 1));
    Usage& used = usage_[set_of(depth())];
    used.tasks += 1;
    used.deps += kMaxArgs * kBufferElems / 4;
    ++next_task_;
    plan_.steps.push_back(std::move(step));
  }

  std::mt19937_64 rng_;
  Plan plan_;
  std::vector<Frame> frames_;
  Usage usage_[common::kRingDepths];
  std::vector<std::vector<int32_t>> writer_;
  std::vector<std::vector<std::vector<uint32_t>>> readers_;
  std::vector<int32_t> creator_;
  std::vector<int32_t> live_outputs_;
  uint32_t next_task_ = 0;
};

// ---- execution ---------------------------------------------------------------------------------

struct Packed {
  int32_t func_id = 0;
  int64_t scalars[1 + 2 * kMaxArgs] = {};
  int scalar_count = 0;
};
Packed pack(const Step& step) {
  Packed p;
  const int n = static_cast<int>(step.args.size());
  p.func_id = (step.core == CoreType::AIC ? kAicBase : kAivBase) + n;
  p.scalars[p.scalar_count++] = step.k;
  for (const Arg& arg : step.args) {
    p.scalars[p.scalar_count++] = static_cast<int64_t>(arg.length);
    p.scalars[p.scalar_count++] = arg.mode;
  }
  return p;
}

// The plan and the buffers one run works on (the orchestration's only scalar points here).
struct RunState {
  const Plan* plan = nullptr;
  std::vector<std::vector<int64_t>> buffers;
};

Tensor buffer_tensor(std::vector<int64_t>& data) {
  const DeviceBuffer buffer{reinterpret_cast<uintptr_t>(data.data()), data.size() * 8};
  return Tensor::make(buffer, {data.size()}, DataType::I64);
}

void stress_orchestration(Orchestration& orch, const TaskArgs& args) {
  auto& state = *reinterpret_cast<RunState*>(static_cast<uintptr_t>(args.scalar_bits(0)));
  const Plan& plan = *state.plan;
  std::vector<Tensor> buffers;
  for (auto& data : state.buffers) buffers.push_back(buffer_tensor(data));
  std::vector<Tensor> outputs(plan.out_lengths.size());
  std::vector<TaskId> ids(plan.tasks, kNoTask);
  uint32_t next = 0;
  TaskArgs task;
  for (const Step& step : plan.steps) {
    if (step.kind == StepKind::ScopeBegin) {
      orch.scope_begin();
      continue;
    }
    if (step.kind == StepKind::ScopeEnd) {
      orch.scope_end();
      continue;
    }
    task.clear();
    for (const Arg& arg : step.args) {
      if (arg.output && arg.mode != kRead) {
        task.out({arg.length}, DataType::I64);
        continue;
      }
      const Tensor& base = arg.output ? outputs[arg.source] : buffers[arg.source];
      const Tensor view = base.view({arg.length}, {arg.offset});
      task.add(arg.mode == kRead     ? ArgTag::In
               : arg.mode == kUpdate ? ArgTag::InOut
                                     : ArgTag::OutputExisting,
               view);
    }
    for (uint32_t dep : step.after) task.after(ids[dep]);
    if (step.kind == StepKind::Dummy) {
      ids[next++] = orch.submit_dummy(task);
      continue;
    }
    const Packed packed = pack(step);
    for (int s = 0; s < packed.scalar_count; ++s) task.scalar(packed.scalars[s]);
    ids[next++] = orch.submit(packed.func_id, step.core, task);
    int k = 0;
    for (const Arg& arg : step.args) {
      if (arg.output && arg.mode != kRead) outputs[arg.source] = task.output(k++);
    }
  }
}

// The plan executed on the host in submission order (its first `step_limit` steps).
std::vector<std::vector<int64_t>> run_reference(const Plan& plan, size_t step_limit = SIZE_MAX) {
  std::vector<std::vector<int64_t>> buffers = plan.initial;
  std::vector<std::vector<int64_t>> outputs;
  for (uint64_t n : plan.out_lengths) outputs.emplace_back(n, 0);
  int64_t args[kMaxArgs + 1 + 2 * kMaxArgs + 2];
  for (size_t i = 0; i < plan.steps.size() && i < step_limit; ++i) {
    const Step& step = plan.steps[i];
    if (step.kind != StepKind::Task) continue;
    const int n = static_cast<int>(step.args.size());
    for (int a = 0; a < n; ++a) {
      const Arg& arg = step.args[a];
      int64_t* base = arg.output ? outputs[arg.source].data() : buffers[arg.source].data();
      args[a] = static_cast<int64_t>(reinterpret_cast<uintptr_t>(base + arg.offset));
    }
    const Packed packed = pack(step);
    for (int s = 0; s < packed.scalar_count; ++s) args[n + s] = packed.scalars[s];
    args[n + packed.scalar_count] = 0;
    args[n + packed.scalar_count + 1] = 1;
    kernel_for(n)(args);
  }
  return buffers;
}

struct ChipOutcome {
  StatusCode code = StatusCode::Ok;
  std::string detail;
  uint64_t completed = 0;
  std::vector<std::vector<int64_t>> buffers;
};

// One ring launch of `plan` on the sim platform's loaded chip runtime (its AICPU entry forwards
// ring runs).
ChipOutcome run_on_chip(platform::Platform& chip, const Plan& plan, bool serial, uint32_t threads,
                        uint32_t clusters) {
  RunState state;
  state.plan = &plan;
  state.buffers = plan.initial;
  TaskArgs args;
  args.scalar(static_cast<uint64_t>(reinterpret_cast<uintptr_t>(&state)));
  RingLaunchOptions options;
  options.serial = serial;
  options.threads = serial ? 1 : threads;
  options.clusters = clusters;
  options.device_clusters = chip.geometry().clusters;
  options.timeout_ms = 60000;
  options.rings = RingLaunchOptions::uniform_rings(kWindow, kHeapBytes, kDepPool);
  RingLaunch launch(&stress_orchestration, args, stress_kernels(), options);
  launch.set_services(&chip.services(), chip.geometry().clock_hz);
  platform::LaunchRequest programs;
  programs.launch_args_addr = reinterpret_cast<uintptr_t>(&launch.args());
  programs.aicpu_threads = options.threads;
  programs.cores = chip.geometry().cores();
  programs.serial = serial;
  ChipOutcome out;
  const Status launched = chip.launch(programs);
  if (!launched.is_ok()) {
    out.code = launched.code();
    out.detail = launched.to_string();
    return out;
  }
  const Status waited = chip.wait(600000);
  if (!waited.is_ok()) {
    // A hung launch cannot be torn down safely: its threads still use this memory.
    std::fprintf(stderr, "seed %llu: ring launch did not finish: %s\n",
                 static_cast<unsigned long long>(plan.seed), waited.to_string().c_str());
    std::abort();
  }
  out.code = launch.code();
  out.detail = launch.detail();
  out.completed = launch.tasks_completed();
  out.buffers = std::move(state.buffers);
  return out;
}

std::string compare(const char* what, const Plan& plan,
                    const std::vector<std::vector<int64_t>>& got,
                    const std::vector<std::vector<int64_t>>& expected) {
  for (uint32_t b = 0; b < kBuffers; ++b) {
    for (uint64_t e = 0; e < kBufferElems; ++e) {
      if (got[b][e] != expected[b][e]) {
        return "seed " + std::to_string(plan.seed) + ": " + what + " buffer " + std::to_string(b) +
               " element " + std::to_string(e) + " is " + std::to_string(got[b][e]) +
               ", expected " + std::to_string(expected[b][e]);
      }
    }
  }
  return "";
}

std::unique_ptr<platform::Platform> make_chip(SimCoreExecution cores) {
  platform::PlatformOptions config;
  config.sim.clusters = 4;
  config.sim.aicpu_threads = 4;
  config.sim.host_threads = 2;
  config.sim.core_execution = cores;
  std::unique_ptr<platform::Platform> chip;
  Status created = platform::create_platform("sim", config, &chip);
  if (created.is_ok()) created = chip->load_chip_runtime();
  EXPECT_TRUE(created.is_ok()) << created.to_string();
  if (!created.is_ok()) return nullptr;
  const Status started = chip->start_streams();
  EXPECT_TRUE(started.is_ok()) << started.to_string();
  return started.is_ok() ? std::move(chip) : nullptr;
}

TEST(RingStress, PlansNestScopesDeeplyAndNameWriteAfterRead) {
  uint32_t deep = 0;
  for (uint64_t seed : {1, 2, 3, 4}) {
    const Plan a = Generator(seed).generate();
    const Plan b = Generator(seed).generate();
    EXPECT_EQ(a.tasks, b.tasks);
    EXPECT_EQ(run_reference(a), run_reference(b)) << "seed " << seed;
    deep += a.max_depth >= 4;
    // The reference is order-sensitive: swapping a writer with the next task touching its region
    // changes the result, so a runtime that reorders dependent tasks is caught.
    Plan swapped = a;
    bool found = false;
    size_t pair_end = 0;
    for (size_t i = 0; i + 1 < swapped.steps.size() && !found; ++i) {
      const Step& first = swapped.steps[i];
      const Step& second = swapped.steps[i + 1];
      if (first.kind != StepKind::Task || second.kind != StepKind::Task) continue;
      bool second_writes_buffer = false;
      for (const Arg& arg : second.args) second_writes_buffer |= !arg.output && arg.mode != kRead;
      if (!second_writes_buffer) continue;
      for (const Arg& w : first.args) {
        for (const Arg& r : second.args) {
          found |= !w.output && w.mode != kRead && !r.output && w.source == r.source &&
                   w.offset < r.offset + r.length && r.offset < w.offset + w.length;
        }
      }
      if (found) {
        std::swap(swapped.steps[i], swapped.steps[i + 1]);
        pair_end = i + 2;
      }
    }
    ASSERT_TRUE(found) << "seed " << seed;
    // Right after the pair (later overwrites may hide the difference in the final state).
    EXPECT_NE(run_reference(swapped, pair_end), run_reference(a, pair_end)) << "seed " << seed;
  }
  EXPECT_EQ(deep, 4u);
}

class RingStressCores : public ::testing::TestWithParam<SimCoreExecution> {};

// Kernels on executor threads (concurrent with their scheduler) and on the AICPU threads (inline
// in the scheduler's dispatch): the same orchestration must give the same buffers either way.
TEST_P(RingStressCores, RandomScopedDagsOnTinyRingsMatchSerialAndReference) {
  std::unique_ptr<platform::Platform> chip = make_chip(GetParam());
  ASSERT_NE(chip, nullptr);
  int failures = 0;
  for (uint64_t seed : stress::stress_seeds(kDefaultSeeds)) {
    const Plan plan = Generator(seed).generate();
    const auto expected = run_reference(plan);
    const ChipOutcome serial = run_on_chip(*chip, plan, true, 1, 2);
    ASSERT_EQ(serial.code, StatusCode::Ok) << "seed " << seed << " serial: " << serial.detail;
    EXPECT_EQ(serial.completed, plan.tasks) << "seed " << seed;
    const uint32_t threads = 2 + static_cast<uint32_t>(seed % 3);  // 1..3 schedulers
    const uint32_t clusters = 1 + static_cast<uint32_t>(seed % 4);
    const ChipOutcome threaded = run_on_chip(*chip, plan, false, threads, clusters);
    ASSERT_EQ(threaded.code, StatusCode::Ok) << "seed " << seed << " threaded: " << threaded.detail;
    EXPECT_EQ(threaded.completed, plan.tasks) << "seed " << seed;
    const std::string serial_vs_reference = compare("serial", plan, serial.buffers, expected);
    const std::string threaded_vs_serial =
        compare("threaded vs serial", plan, threaded.buffers, serial.buffers);
    EXPECT_EQ(serial_vs_reference, "");
    EXPECT_EQ(threaded_vs_serial, "");
    if (!serial_vs_reference.empty() || !threaded_vs_serial.empty()) {
      if (++failures >= 3) break;
    }
  }
  chip->stop_streams();
}

INSTANTIATE_TEST_SUITE_P(KernelsOn, RingStressCores,
                         ::testing::Values(SimCoreExecution::Executors, SimCoreExecution::Aicpu),
                         [](const ::testing::TestParamInfo<SimCoreExecution>& info) {
                           return info.param == SimCoreExecution::Aicpu
                                      ? std::string("AicpuThreads")
                                      : std::string("ExecutorThreads");
                         });

}  // namespace
}  // namespace chiprt::ring_stress
