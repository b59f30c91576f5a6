// tensormap_ringbuffer runs on the harness's fake chip: an in-process orchestration function and
// in-process kernels through ring_aicpu_entry (orchestrator on AICPU thread 0, schedulers on the
// others, or serial mode), checked by the values the kernels compute and by how often each ran.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "chip_harness.h"
#include "chiprt/kernel.h"
#include "chiprt/orchestration.h"
#include "common/task_args_wire.h"
#include "ring_launch.h"

namespace chiprt::scheduler {
namespace {

using test::FakeChip;
using test::RingKernel;
using test::RingLaunch;
using test::RingLaunchOptions;

// Kernels. Tags index g_calls so a test can count how often each task's kernel ran.
constexpr int32_t kStepAic = 1;   // x = x * 3 + k                 (InOut x; scalar k)
constexpr int32_t kStepAiv = 2;   // same on AIV
constexpr int32_t kWriteAiv = 3;  // out[0] = k; calls[k]++         (written out; scalar k)
constexpr int32_t kSumAic = 4;  // out[0] = sum in[0..n); calls[tag]++ (In in, written out; n, tag)
constexpr int32_t kAccAiv = 5;  // acc[0] += in[0]               (In in, InOut acc)
constexpr int32_t kBlockAiv = 6;      // out[b] = b + 1 + 1000 * block_num; calls[tag]++ (out; tag)
constexpr int32_t kMixAic = 7;        // out[3b] = 10b + 1; calls[tag]++ (out; tag)
constexpr int32_t kMixAiv0 = 8;       // out[3b + 1] = 10b + 2; calls[tag + 1]++
constexpr int32_t kMixAiv1 = 9;       // out[3b + 2] = 10b + 3; calls[tag + 2]++
constexpr int32_t kSlowStepAiv = 11;  // like kStepAiv after a short sleep (the orchestrator waits)
constexpr int32_t kAddAiv = 10;  // out[0] = in[0] + k             (In in, written out; scalar k)

constexpr size_t kMaxTags = 1 << 16;
std::array<std::atomic<uint32_t>, kMaxTags> g_calls;

void reset_calls() {
  for (auto& c : g_calls) c.store(0);
}

int64_t* tensor(int64_t* args, int i) {
  return kernel::tensor_arg<int64_t>(args, i);
}

void step_kernel(int64_t* args) {
  int64_t* x = tensor(args, 0);
  *x = static_cast<int64_t>(static_cast<uint64_t>(*x) * 3 + static_cast<uint64_t>(args[1]));
}
void slow_step_kernel(int64_t* args) {
  std::this_thread::sleep_for(std::chrono::microseconds(300));
  step_kernel(args);
}
void write_kernel(int64_t* args) {
  tensor(args, 0)[0] = args[1];
  g_calls[static_cast<size_t>(args[1]) % kMaxTags].fetch_add(1);
}
void sum_kernel(int64_t* args) {
  const int64_t* in = tensor(args, 0);
  int64_t sum = 0;
  for (int64_t i = 0; i < args[2]; ++i) sum += in[i];
  tensor(args, 1)[0] = sum;
  g_calls[static_cast<size_t>(args[3]) % kMaxTags].fetch_add(1);
}
void acc_kernel(int64_t* args) {
  tensor(args, 1)[0] += tensor(args, 0)[0];
}
void block_kernel(int64_t* args) {
  const uint32_t b = kernel::block_idx(args);
  const uint32_t n = kernel::block_num(args);
  tensor(args, 0)[b] = b + 1 + 1000 * static_cast<int64_t>(n);
  g_calls[static_cast<size_t>(args[1]) % kMaxTags].fetch_add(1);
}
template <int Part>
void mix_kernel(int64_t* args) {
  const uint32_t b = kernel::block_idx(args);
  tensor(args, 0)[3 * b + Part] = 10 * static_cast<int64_t>(b) + Part + 1;
  g_calls[static_cast<size_t>(args[1] + Part) % kMaxTags].fetch_add(1);
}
void add_kernel(int64_t* args) {
  tensor(args, 1)[0] = tensor(args, 0)[0] + args[2];
}

std::vector<RingKernel> test_kernels() {
  return {
      {kStepAic, CoreType::AIC, &step_kernel},         {kStepAiv, CoreType::AIV, &step_kernel},
      {kWriteAiv, CoreType::AIV, &write_kernel},       {kSumAic, CoreType::AIC, &sum_kernel},
      {kAccAiv, CoreType::AIV, &acc_kernel},           {kBlockAiv, CoreType::AIV, &block_kernel},
      {kMixAic, CoreType::AIC, &mix_kernel<0>},        {kMixAiv0, CoreType::AIV, &mix_kernel<1>},
      {kMixAiv1, CoreType::AIV, &mix_kernel<2>},       {kAddAiv, CoreType::AIV, &add_kernel},
      {kSlowStepAiv, CoreType::AIV, &slow_step_kernel}};
}

Tensor tensor_over(std::vector<int64_t>& data) {
  const DeviceBuffer buffer{reinterpret_cast<uintptr_t>(data.data()), data.size() * 8};
  return Tensor::make(buffer, {data.size()}, DataType::I64);
}
Tensor element(const Tensor& t, uint64_t i) {
  return t.view({1}, {i});
}
Tensor range(const Tensor& t, uint64_t begin, uint64_t count) {
  return t.view({count}, {begin});
}

struct Outcome {
  StatusCode code = StatusCode::Ok;
  std::string detail;
  uint64_t completed = 0;
  std::array<common::PhaseStamp, kPhaseCount> thread0{};
};

RingLaunchOptions threaded(uint32_t threads = 3, uint32_t clusters = 2) {
  RingLaunchOptions o;
  o.threads = threads;
  o.clusters = clusters;
  o.timeout_ms = 30000;
  return o;
}
RingLaunchOptions serial() {
  RingLaunchOptions o;
  o.threads = 1;
  o.serial = true;
  o.timeout_ms = 30000;
  return o;
}

// Runs `fn` with `ctx` (its only scalar) on the fake chip.
// `corrupt` edits the launch arguments before the launch.
template <class Ctx>
Outcome run_ring(void (*fn)(Orchestration&, const TaskArgs&), Ctx* ctx,
                 const RingLaunchOptions& options, uint32_t service_threads = 2,
                 const std::function<void(RingLaunch&)>& corrupt = {}) {
  TaskArgs args;
  args.scalar(static_cast<uint64_t>(reinterpret_cast<uintptr_t>(ctx)));
  RingLaunch launch(fn, args, test_kernels(), options);
  FakeChip chip(service_threads, options.serial);
  chip.set_launch_args(&launch.args());
  launch.set_services(&chip.services(), 1000000000ull);
  if (corrupt) corrupt(launch);
  launch.run_threads();
  chip.stop();
  Outcome out;
  out.code = launch.code();
  out.detail = launch.detail();
  out.completed = launch.tasks_completed();
  for (int p = 0; p < kPhaseCount; ++p) out.thread0[p] = launch.phases().stamps[0][p];
  return out;
}

template <class Ctx>
Ctx& context(const TaskArgs& args) {
  return *reinterpret_cast<Ctx*>(static_cast<uintptr_t>(args.scalar_bits(0)));
}

// ---- chain -------------------------------------------------------------------------------------

struct ChainCtx {
  std::vector<int64_t> x = std::vector<int64_t>(1, 1);
  uint32_t length = 0;
};
void chain_orchestration(Orchestration& orch, const TaskArgs& args) {
  auto& ctx = context<ChainCtx>(args);
  const Tensor x = tensor_over(ctx.x);
  TaskArgs task;
  for (uint32_t i = 0; i < ctx.length; ++i) {
    task.clear();
    task.inout(x).scalar(static_cast<int64_t>(i));
    orch.submit(i % 2 == 0 ? kStepAic : kStepAiv, i % 2 == 0 ? CoreType::AIC : CoreType::AIV, task);
  }
}
int64_t chain_expected(uint32_t length) {
  uint64_t x = 1;
  for (uint32_t i = 0; i < length; ++i) x = x * 3 + i;
  return static_cast<int64_t>(x);
}

TEST(RingRun, ChainThreaded) {
  ChainCtx ctx;
  ctx.length = 600;
  const Outcome out = run_ring(chain_orchestration, &ctx, threaded());
  ASSERT_EQ(out.code, StatusCode::Ok) << out.detail;
  EXPECT_EQ(ctx.x[0], chain_expected(600));
  EXPECT_EQ(out.completed, 600u);
}

TEST(RingRun, ChainSerial) {
  ChainCtx ctx;
  ctx.length = 600;
  const Outcome out = run_ring(chain_orchestration, &ctx, serial());
  ASSERT_EQ(out.code, StatusCode::Ok) << out.detail;
  EXPECT_EQ(ctx.x[0], chain_expected(600));
  EXPECT_EQ(out.completed, 600u);
}

// ---- the orchestrator waits for tasks through the driver ----------------------------------------

struct DataCtx {
  std::vector<int64_t> x = std::vector<int64_t>(1, 1);
  int64_t observed = 0;
};
void tensor_data_orchestration(Orchestration& orch, const TaskArgs& args) {
  auto& ctx = context<DataCtx>(args);
  const Tensor x = tensor_over(ctx.x);
  TaskArgs task;
  for (uint32_t i = 0; i < 20; ++i) {
    task.clear();
    task.inout(x).scalar(static_cast<int64_t>(i));
    orch.submit(kSlowStepAiv, CoreType::AIV, task);
  }
  // Waits (parked, or scheduling in serial mode) for the chain's last writer.
  orch.get_tensor_data(x, &ctx.observed, sizeof(int64_t));
  const int64_t five = 5;
  orch.set_tensor_data(x, &five, sizeof(int64_t));
  task.clear();
  task.inout(x).scalar(int64_t{2});
  orch.submit(kSlowStepAiv, CoreType::AIV, task);
}

TEST(RingRun, TensorDataWaitsForWritersInBothModes) {
  for (bool is_serial : {false, true}) {
    SCOPED_TRACE(is_serial ? "serial" : "threaded");
    DataCtx ctx;
    const Outcome out =
        run_ring(tensor_data_orchestration, &ctx, is_serial ? serial() : threaded());
    ASSERT_EQ(out.code, StatusCode::Ok) << out.detail;
    EXPECT_EQ(ctx.observed, chain_expected(20));
    EXPECT_EQ(ctx.x[0], 5 * 3 + 2);
    EXPECT_EQ(out.completed, 21u);
  }
}

// ---- independent tasks -------------------------------------------------------------------------

struct IndependentCtx {
  std::vector<int64_t> out;
};
void independent_orchestration(Orchestration& orch, const TaskArgs& args) {
  auto& ctx = context<IndependentCtx>(args);
  const Tensor out = tensor_over(ctx.out);
  TaskArgs task;
  for (uint64_t i = 0; i < ctx.out.size(); ++i) {
    task.clear();
    task.output_existing(element(out, i)).scalar(static_cast<int64_t>(i + 1));
    orch.submit(kWriteAiv, CoreType::AIV, task);
  }
}

TEST(RingRun, IndependentTasksEachRunOnce) {
  reset_calls();
  IndependentCtx ctx;
  ctx.out.assign(3000, 0);
  const Outcome out = run_ring(independent_orchestration, &ctx, threaded(4, 3), 3);
  ASSERT_EQ(out.code, StatusCode::Ok) << out.detail;
  EXPECT_EQ(out.completed, 3000u);
  for (uint64_t i = 0; i < ctx.out.size(); ++i) {
    ASSERT_EQ(ctx.out[i], static_cast<int64_t>(i + 1)) << "element " << i;
    ASSERT_EQ(g_calls[i + 1].load(), 1u) << "task " << i;
  }
}

// ---- fan-out / fan-in (spilled producer lists, dummies) ---------------------------------------

constexpr uint32_t kFanWidth = 12;  // > kInlineProducers: the sink's producers spill
struct FanCtx {
  uint32_t rounds = 0;
  std::vector<int64_t> a, b, c, d;
};
void fan_orchestration(Orchestration& orch, const TaskArgs& args) {
  auto& ctx = context<FanCtx>(args);
  const Tensor a = tensor_over(ctx.a);
  const Tensor b = tensor_over(ctx.b);
  const Tensor c = tensor_over(ctx.c);
  const Tensor d = tensor_over(ctx.d);
  TaskArgs task;
  for (uint32_t r = 0; r < ctx.rounds; ++r) {
    task.clear();
    task.output_existing(element(a, r)).scalar(static_cast<int64_t>(r));
    orch.submit(kWriteAiv, CoreType::AIV, task);  // calls[r]: the source
    for (uint32_t i = 0; i < kFanWidth; ++i) {
      task.clear();
      task.in(element(a, r)).output_existing(element(b, r * kFanWidth + i)).scalar(int64_t{i});
      orch.submit(kAddAiv, CoreType::AIV, task);
    }
    // A dependency-only task between the fan-in and a second reader.
    task.clear();
    task.in(range(b, r * kFanWidth, kFanWidth));
    const TaskId gate = orch.submit_dummy(task);
    task.clear();
    task.in(range(b, r * kFanWidth, kFanWidth))
        .output_existing(element(c, r))
        .scalar(int64_t{kFanWidth})
        .scalar(static_cast<int64_t>(10000 + r));
    orch.submit(kSumAic, CoreType::AIC, task);
    task.clear();
    task.in(element(c, r)).output_existing(element(d, r)).scalar(int64_t{1}).after(gate);
    orch.submit(kAddAiv, CoreType::AIV, task);
  }
}

TEST(RingRun, FanOutFanInWithSpilledProducers) {
  reset_calls();
  FanCtx ctx;
  ctx.rounds = 60;
  ctx.a.assign(ctx.rounds, -1);
  ctx.b.assign(ctx.rounds * kFanWidth, -1);
  ctx.c.assign(ctx.rounds, -1);
  ctx.d.assign(ctx.rounds, -1);
  const Outcome out = run_ring(fan_orchestration, &ctx, threaded(3, 2));
  ASSERT_EQ(out.code, StatusCode::Ok) << out.detail;
  EXPECT_EQ(out.completed, ctx.rounds * (kFanWidth + 4));
  const int64_t offsets = kFanWidth * (kFanWidth - 1) / 2;
  for (uint32_t r = 0; r < ctx.rounds; ++r) {
    ASSERT_EQ(ctx.c[r], kFanWidth * r + offsets) << "round " << r;
    ASSERT_EQ(ctx.d[r], kFanWidth * r + offsets + 1) << "round " << r;
    ASSERT_EQ(g_calls[10000 + r].load(), 1u) << "sink of round " << r;
  }
}

// ---- slot reuse with a tiny window --------------------------------------------------------------

struct ReuseCtx {
  uint32_t iterations = 0;
  std::vector<int64_t> acc = std::vector<int64_t>(1, 0);
};
void reuse_orchestration(Orchestration& orch, const TaskArgs& args) {
  auto& ctx = context<ReuseCtx>(args);
  const Tensor acc = tensor_over(ctx.acc);
  TaskArgs task;
  for (uint32_t i = 0; i < ctx.iterations; ++i) {
    Scope scope(orch);
    task.clear();
    task.out({4}, DataType::I64).scalar(static_cast<int64_t>(i % 1000));
    orch.submit(kWriteAiv, CoreType::AIV, task);
    const Tensor produced = task.output(0);
    task.clear();
    task.in(element(produced, 0)).inout(acc);
    orch.submit(kAccAiv, CoreType::AIV, task);
  }
}
int64_t reuse_expected(uint32_t iterations) {
  int64_t sum = 0;
  for (uint32_t i = 0; i < iterations; ++i) sum += i % 1000;
  return sum;
}

RingLaunchOptions tiny_rings(RingLaunchOptions o) {
  o.rings = RingLaunchOptions::uniform_rings(16, 4096, 64);
  return o;
}

TEST(RingRun, TinyWindowReusesSlotsThreaded) {
  ReuseCtx ctx;
  ctx.iterations = 2500;
  const Outcome out = run_ring(reuse_orchestration, &ctx, tiny_rings(threaded()));
  ASSERT_EQ(out.code, StatusCode::Ok) << out.detail;
  EXPECT_EQ(ctx.acc[0], reuse_expected(2500));
  EXPECT_EQ(out.completed, 5000u);
}

TEST(RingRun, TinyWindowReusesSlotsSerial) {
  ReuseCtx ctx;
  ctx.iterations = 2500;
  const Outcome out = run_ring(reuse_orchestration, &ctx, tiny_rings(serial()));
  ASSERT_EQ(out.code, StatusCode::Ok) << out.detail;
  EXPECT_EQ(ctx.acc[0], reuse_expected(2500));
  EXPECT_EQ(out.completed, 5000u);
}

// ---- ready exactly once under racing completions ------------------------------------------------

constexpr uint32_t kRaceProducers = 14;
struct RaceCtx {
  uint32_t rounds = 0;
  std::vector<int64_t> p, s;
};
void race_orchestration(Orchestration& orch, const TaskArgs& args) {
  auto& ctx = context<RaceCtx>(args);
  const Tensor p = tensor_over(ctx.p);
  const Tensor s = tensor_over(ctx.s);
  TaskArgs task;
  for (uint32_t r = 0; r < ctx.rounds; ++r) {
    for (uint32_t i = 0; i < kRaceProducers; ++i) {
      task.clear();
      const uint32_t index = r * kRaceProducers + i;
      task.output_existing(element(p, index)).scalar(static_cast<int64_t>(index + 1));
      orch.submit(kWriteAiv, CoreType::AIV, task);
    }
    task.clear();
    task.in(range(p, r * kRaceProducers, kRaceProducers))
        .output_existing(element(s, r))
        .scalar(int64_t{kRaceProducers})
        .scalar(static_cast<int64_t>(40000 + r));
    orch.submit(kSumAic, CoreType::AIC, task);
  }
}

TEST(RingRun, ConsumerOfRacingProducersIsReadyExactlyOnce) {
  reset_calls();
  RaceCtx ctx;
  ctx.rounds = 300;
  ctx.p.assign(ctx.rounds * kRaceProducers, 0);
  ctx.s.assign(ctx.rounds, 0);
  RingLaunchOptions options = threaded(5, 6);
  options.rings = RingLaunchOptions::uniform_rings(64, 4096, 1024);
  const Outcome out = run_ring(race_orchestration, &ctx, options, 4);
  ASSERT_EQ(out.code, StatusCode::Ok) << out.detail;
  EXPECT_EQ(out.completed, ctx.rounds * (kRaceProducers + 1));
  for (uint32_t r = 0; r < ctx.rounds; ++r) {
    const int64_t first = r * kRaceProducers + 1;
    const int64_t expected = kRaceProducers * first + kRaceProducers * (kRaceProducers - 1) / 2;
    ASSERT_EQ(ctx.s[r], expected) << "round " << r;
    ASSERT_EQ(g_calls[40000 + r].load(), 1u) << "consumer of round " << r;
  }
  for (uint32_t i = 1; i <= ctx.rounds * kRaceProducers; ++i) {
    ASSERT_EQ(g_calls[i].load(), 1u) << "producer " << i;
  }
}

// ---- SPMD and MIX completion counting -----------------------------------------------------------

constexpr uint32_t kSpmdBlocks = 37;  // more blocks than the run's AIV cores
constexpr uint32_t kMixBlocks = 3;
struct SpmdMixCtx {
  uint32_t rounds = 0;
  std::vector<int64_t> spmd, mix, spmd_sum, mix_sum;
};
void spmd_mix_orchestration(Orchestration& orch, const TaskArgs& args) {
  auto& ctx = context<SpmdMixCtx>(args);
  const Tensor spmd = tensor_over(ctx.spmd);
  const Tensor mix = tensor_over(ctx.mix);
  const Tensor spmd_sum = tensor_over(ctx.spmd_sum);
  const Tensor mix_sum = tensor_over(ctx.mix_sum);
  TaskArgs task;
  for (uint32_t r = 0; r < ctx.rounds; ++r) {
    task.clear();
    task.output_existing(range(spmd, r * kSpmdBlocks, kSpmdBlocks))
        .scalar(static_cast<int64_t>(1000 + r));
    orch.submit(TaskSpec::kernel(kBlockAiv, CoreType::AIV, kSpmdBlocks), task);
    task.clear();
    task.in(range(spmd, r * kSpmdBlocks, kSpmdBlocks))
        .output_existing(element(spmd_sum, r))
        .scalar(int64_t{kSpmdBlocks})
        .scalar(static_cast<int64_t>(2000 + r));
    orch.submit(kSumAic, CoreType::AIC, task);

    task.clear();
    task.output_existing(range(mix, r * 3 * kMixBlocks, 3 * kMixBlocks))
        .scalar(static_cast<int64_t>(3000 + 4 * r));
    MixKernels parts;
    parts.aic = kMixAic;
    parts.aiv0 = kMixAiv0;
    parts.aiv1 = r % 2 == 0 ? kMixAiv1 : -1;  // odd rounds leave the second AIV core idle
    orch.submit(TaskSpec::mixed(parts, kMixBlocks), task);
    task.clear();
    task.in(range(mix, r * 3 * kMixBlocks, 3 * kMixBlocks))
        .output_existing(element(mix_sum, r))
        .scalar(static_cast<int64_t>(3 * kMixBlocks))
        .scalar(static_cast<int64_t>(5000 + r));
    orch.submit(kSumAic, CoreType::AIC, task);
  }
}

void check_spmd_mix(const SpmdMixCtx& ctx, const Outcome& out) {
  ASSERT_EQ(out.code, StatusCode::Ok) << out.detail;
  EXPECT_EQ(out.completed, ctx.rounds * 4);
  const int64_t spmd_expected =
      kSpmdBlocks * (kSpmdBlocks + 1) / 2 + 1000 * int64_t{kSpmdBlocks} * kSpmdBlocks;
  for (uint32_t r = 0; r < ctx.rounds; ++r) {
    ASSERT_EQ(g_calls[1000 + r].load(), kSpmdBlocks) << "SPMD blocks of round " << r;
    ASSERT_EQ(ctx.spmd_sum[r], spmd_expected) << "round " << r;
    ASSERT_EQ(g_calls[2000 + r].load(), 1u);
    const bool full = r % 2 == 0;
    int64_t mix_expected = 0;
    for (uint32_t b = 0; b < kMixBlocks; ++b) {
      mix_expected += (10 * b + 1) + (10 * b + 2) + (full ? 10 * b + 3 : 0);
    }
    ASSERT_EQ(ctx.mix_sum[r], mix_expected) << "round " << r;
    ASSERT_EQ(g_calls[3000 + 4 * r].load(), kMixBlocks) << "MIX AIC parts of round " << r;
    ASSERT_EQ(g_calls[3000 + 4 * r + 1].load(), kMixBlocks) << "MIX AIV0 parts of round " << r;
    ASSERT_EQ(g_calls[3000 + 4 * r + 2].load(), full ? kMixBlocks : 0u) << "round " << r;
    ASSERT_EQ(g_calls[5000 + r].load(), 1u);
  }
}

SpmdMixCtx spmd_mix_ctx(uint32_t rounds) {
  SpmdMixCtx ctx;
  ctx.rounds = rounds;
  ctx.spmd.assign(rounds * kSpmdBlocks, 0);
  ctx.mix.assign(rounds * 3 * kMixBlocks, 0);
  ctx.spmd_sum.assign(rounds, 0);
  ctx.mix_sum.assign(rounds, 0);
  return ctx;
}

TEST(RingRun, SpmdAndMixCompleteOnceEveryPartFinishedThreaded) {
  reset_calls();
  SpmdMixCtx ctx = spmd_mix_ctx(40);
  const Outcome out = run_ring(spmd_mix_orchestration, &ctx, threaded(3, 3), 3);
  check_spmd_mix(ctx, out);
}

TEST(RingRun, SpmdAndMixCompleteOnceEveryPartFinishedSerial) {
  reset_calls();
  SpmdMixCtx ctx = spmd_mix_ctx(40);
  RingLaunchOptions options = serial();
  options.clusters = 3;
  const Outcome out = run_ring(spmd_mix_orchestration, &ctx, options);
  check_spmd_mix(ctx, out);
}

// ---- serial and threaded agree; phases ----------------------------------------------------------

TEST(RingRun, SerialAndThreadedComputeTheSameAndStampPhases) {
  FanCtx a;
  a.rounds = 25;
  a.a.assign(a.rounds, -1);
  a.b.assign(a.rounds * kFanWidth, -1);
  a.c.assign(a.rounds, -1);
  a.d.assign(a.rounds, -1);
  FanCtx b = a;
  const Outcome threaded_out = run_ring(fan_orchestration, &a, tiny_rings(threaded()));
  const Outcome serial_out = run_ring(fan_orchestration, &b, tiny_rings(serial()));
  ASSERT_EQ(threaded_out.code, StatusCode::Ok) << threaded_out.detail;
  ASSERT_EQ(serial_out.code, StatusCode::Ok) << serial_out.detail;
  EXPECT_EQ(a.b, b.b);
  EXPECT_EQ(a.c, b.c);
  EXPECT_EQ(a.d, b.d);
  for (const Outcome* out : {&threaded_out, &serial_out}) {
    for (Phase phase :
         {Phase::RunWall, Phase::Preamble, Phase::Orchestration, Phase::PostOrchestration}) {
      const common::PhaseStamp& s = out->thread0[static_cast<int>(phase)];
      EXPECT_NE(s.start, 0u) << phase_name(phase);
      EXPECT_LE(s.start, s.end) << phase_name(phase);
    }
  }
}

void empty_orchestration(Orchestration&, const TaskArgs&) {}

TEST(RingRun, OrchestrationWithoutTasksEndsTheRun) {
  for (bool is_serial : {false, true}) {
    ChainCtx ctx;
    const Outcome out = run_ring(empty_orchestration, &ctx, is_serial ? serial() : threaded(4, 3));
    EXPECT_EQ(out.code, StatusCode::Ok) << out.detail;
    EXPECT_EQ(out.completed, 0u);
  }
}

// ---- failures end the run with the first error -------------------------------------------------

void unknown_func_orchestration(Orchestration& orch, const TaskArgs& args) {
  auto& ctx = context<ChainCtx>(args);
  const Tensor x = tensor_over(ctx.x);
  TaskArgs task;
  task.inout(x).scalar(int64_t{0});
  orch.submit(kStepAic, CoreType::AIC, task);
  task.clear();
  task.inout(x);
  orch.submit(77, CoreType::AIV, task);  // no such kernel: latches, later calls are no-ops
  task.clear();
  task.inout(x).scalar(int64_t{5});
  orch.submit(kStepAiv, CoreType::AIV, task);
}

TEST(RingRun, OrchestrationErrorLatchesAndEndsTheRun) {
  for (bool is_serial : {false, true}) {
    ChainCtx ctx;
    const Outcome out =
        run_ring(unknown_func_orchestration, &ctx, is_serial ? serial() : threaded());
    EXPECT_EQ(out.code, StatusCode::UnknownFuncId) << out.detail;
    EXPECT_NE(out.detail.find("func_id 77"), std::string::npos) << out.detail;
  }
}

void throwing_orchestration(Orchestration& orch, const TaskArgs& args) {
  chain_orchestration(orch, args);
  throw std::runtime_error("orchestration gave up after the chain");
}

TEST(RingRun, ThrowingOrchestrationFailsTheRunAfterItsTasks) {
  for (bool is_serial : {false, true}) {
    ChainCtx ctx;
    ctx.length = 50;
    const Outcome out = run_ring(throwing_orchestration, &ctx, is_serial ? serial() : threaded());
    EXPECT_EQ(out.code, StatusCode::OrchestrationFailed) << out.detail;
    EXPECT_NE(out.detail.find("gave up after the chain"), std::string::npos) << out.detail;
  }
}

void root_outputs_orchestration(Orchestration& orch, const TaskArgs& args) {
  auto& ctx = context<ChainCtx>(args);
  TaskArgs task;
  // Root-scope tasks with outputs keep their slots until the function returns.
  for (uint32_t i = 0; i < ctx.length; ++i) {
    task.clear();
    task.out({2}, DataType::I64).scalar(int64_t{1});
    orch.submit(kWriteAiv, CoreType::AIV, task);
  }
}

TEST(RingRun, RootScopeOutputsBeyondTheWindowAreARingDeadlock) {
  ChainCtx ctx;
  ctx.length = 40;
  const Outcome out = run_ring(root_outputs_orchestration, &ctx, tiny_rings(threaded()));
  EXPECT_EQ(out.code, StatusCode::RingDeadlock) << out.detail;
  EXPECT_NE(out.detail.find("depth 0"), std::string::npos) << out.detail;
}

TEST(RingRun, InvalidRingSizesAreRejectedWithTheRule) {
  ChainCtx ctx;
  ctx.length = 4;
  RingLaunchOptions options = threaded();
  options.rings.task_window[2] = 24;
  const Outcome out = run_ring(chain_orchestration, &ctx, options);
  EXPECT_EQ(out.code, StatusCode::InvalidConfig);
  EXPECT_NE(out.detail.find("task_window of depth 2 is 24"), std::string::npos) << out.detail;
  EXPECT_NE(out.detail.find("power of two"), std::string::npos) << out.detail;
  EXPECT_EQ(ctx.x[0], 1);
}

TEST(RingRun, HeapSmallerThanTheRingsIsRejected) {
  ChainCtx ctx;
  ctx.length = 4;
  RingLaunchOptions options = threaded();
  options.heap_bytes = 8192;  // four depths of 64 KiB do not fit
  const Outcome out = run_ring(chain_orchestration, &ctx, options);
  EXPECT_EQ(out.code, StatusCode::InvalidConfig);
  EXPECT_NE(out.detail.find("8192"), std::string::npos) << out.detail;
}

TEST(RingRun, ThreadedRunNeedsAnOrchestratorAndAScheduler) {
  ChainCtx ctx;
  ctx.length = 4;
  RingLaunchOptions options = threaded(1);
  const Outcome out = run_ring(chain_orchestration, &ctx, options);
  EXPECT_EQ(out.code, StatusCode::InvalidConfig);
  EXPECT_NE(out.detail.find("at least 2"), std::string::npos) << out.detail;
}

TEST(RingRun, CorruptLaunchArgumentsLatchAnErrorAndEveryThreadReturns) {
  struct Corruption {
    const char* name;
    std::function<void(RingLaunch&)> apply;
    StatusCode code;
    const char* detail;
  };
  const Corruption cases[] = {
      {"entry", [](RingLaunch& l) { l.args().orchestration_entry = 0; }, StatusCode::InternalError,
       "orchestration_entry is null"},
      {"orchestration args", [](RingLaunch& l) { l.args().orchestration_args_addr = 0; },
       StatusCode::InternalError, "orchestration_args_addr 0x0"},
      {"orchestration args version",
       [](RingLaunch& l) {
         common::TaskArgsWire& wire = l.orchestration_wire();
         wire.header.version = common::kTaskArgsWireVersion + 1;
         wire.header.checksum = common::task_args_wire_checksum(wire);
       },
       StatusCode::InternalError,
       "orchestration arguments (TaskArgs wire v1): version 2 is not the supported version 1"},
      {"orchestration args bytes", [](RingLaunch& l) { l.orchestration_wire().scalars[0] ^= 1; },
       StatusCode::InternalError, "checksum mismatch"},
      {"user data address",
       [](RingLaunch& l) {
         l.args().user_data_addr = l.args().orchestration_args_addr | 1;
         l.args().user_data_bytes = 4;
       },
       StatusCode::InternalError, "4 bytes is not a 16-byte aligned block of at most 65536"},
      {"user data null", [](RingLaunch& l) { l.args().user_data_bytes = 4; },
       StatusCode::InternalError, "user_data_addr 0x0 with 4 bytes"},
      {"user data size",
       [](RingLaunch& l) {
         l.args().user_data_addr = l.args().orchestration_args_addr;
         l.args().user_data_bytes = CallConfig::kMaxUserDataBytes + 1;
       },
       StatusCode::InternalError, "65537 bytes is not a 16-byte aligned block"},
      {"kernel info", [](RingLaunch& l) { l.args().kernel_info_addr = 0; },
       StatusCode::InternalError, "kernel_info_addr 0x0"},
      {"heap address", [](RingLaunch& l) { l.args().heap_addr += 8; }, StatusCode::InternalError,
       "heap_addr"},
      {"shared size", [](RingLaunch& l) { l.args().shared_size = l.shared_bytes() - 64; },
       StatusCode::InternalError, "ring_shared_state_bytes"},
      {"clusters", [](RingLaunch& l) { l.args().clusters = 0; }, StatusCode::InternalError,
       "clusters 0"},
      {"serial threads", [](RingLaunch& l) { l.args().serial = true; }, StatusCode::InternalError,
       "serial tensormap_ringbuffer launch with 3 AICPU threads"},
      {"dep pool", [](RingLaunch& l) { l.args().rings.dep_pool[1] = 63; },
       StatusCode::InvalidConfig, "dep_pool of depth 1 is 63"},
  };
  for (const Corruption& c : cases) {
    SCOPED_TRACE(c.name);
    ChainCtx ctx;
    ctx.length = 8;
    const Outcome out = run_ring(chain_orchestration, &ctx, threaded(), 2, c.apply);
    EXPECT_EQ(out.code, c.code) << out.detail;
    EXPECT_NE(out.detail.find(c.detail), std::string::npos) << out.detail;
    EXPECT_EQ(ctx.x[0], 1);  // nothing ran
  }
}

TEST(RingRun, SharedStateBytesCoverTheRingSection) {
  const common::RingSizes sizes = RingLaunchOptions::uniform_rings(16, 4096, 64);
  const uint64_t bytes = ring_shared_state_bytes(sizes);
  ASSERT_NE(bytes, UINT64_MAX);
  // 64 slots: at least a RingSlot, a TaskRecord, the argument words and the id per slot.
  EXPECT_GE(bytes, 64u * (64 + 64 + 8 * (kMaxTaskTensors + kMaxTaskScalars) + 8));
  common::RingSizes bad = sizes;
  bad.dep_pool[3] = 10;
  EXPECT_EQ(ring_shared_state_bytes(bad), UINT64_MAX);
}

}  // namespace
}  // namespace chiprt::scheduler
