// Whole launches of the task engine (aicpu_entry + core_service) on the fake chip.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "chip_harness.h"
#include "common/graph_image_validate.h"
#include "scheduler/chip_entry.h"
#include "scheduler/shared_state.h"

namespace chiprt::scheduler {
namespace {

using test::ChipRun;
using test::ImageWriter;
using test::RunOptions;

// "Did not hang" limit, generous for a loaded 2-core machine under sanitizers.
constexpr double kHangLimitMs = 60000;

CoreType shape(uint32_t i) {
  return i % 2 == 0 ? CoreType::AIC : CoreType::AIV;
}

ImageWriter chain_graph(uint32_t n) {
  ImageWriter w;
  for (uint32_t i = 0; i < n; ++i) {
    w.add(test::kRecordFunc, shape(i), i == 0 ? std::vector<uint32_t>{} : std::vector{i - 1});
  }
  return w;
}

ImageWriter fan_graph(uint32_t width) {
  ImageWriter w;
  const uint32_t root = w.add(test::kRecordFunc, CoreType::AIC);
  std::vector<uint32_t> middle;
  for (uint32_t i = 0; i < width; ++i) middle.push_back(w.add(test::kRecordFunc, shape(i), {root}));
  w.add(test::kRecordFunc, CoreType::AIV, middle);
  return w;
}

ImageWriter diamond_graph(uint32_t stacked) {
  ImageWriter w;
  uint32_t top = w.add(test::kRecordFunc, CoreType::AIC);
  for (uint32_t i = 0; i < stacked; ++i) {
    const uint32_t left = w.add(test::kRecordFunc, CoreType::AIV, {top});
    const uint32_t right = w.add(test::kRecordFunc, CoreType::AIC, {top});
    top = w.add(test::kRecordFunc, CoreType::AIV, {left, right});
  }
  return w;
}

// Initial dummies, a dummy join, a chain of dummies and a dummy sink.
ImageWriter dummy_graph() {
  ImageWriter w;
  const uint32_t start = w.add_dummy();
  const uint32_t lone_start = w.add_dummy();
  const uint32_t a = w.add(test::kRecordFunc, CoreType::AIC, {start});
  const uint32_t b = w.add(test::kRecordFunc, CoreType::AIV, {start, lone_start});
  const uint32_t join = w.add_dummy({a, b});
  uint32_t link = join;
  for (int i = 0; i < 5; ++i) link = w.add_dummy({link});
  const uint32_t c = w.add(test::kRecordFunc, CoreType::AIV, {link});
  const uint32_t d = w.add(test::kRecordFunc, CoreType::AIC, {join});
  w.add_dummy({c, d});
  return w;
}

ImageWriter all_dummy_graph() {
  ImageWriter w;
  const uint32_t a = w.add_dummy();
  const uint32_t b = w.add_dummy({a});
  const uint32_t c = w.add_dummy({a});
  w.add_dummy({b, c});
  return w;
}

ImageWriter random_graph(uint32_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  ImageWriter w;
  for (uint32_t t = 0; t < n; ++t) {
    std::vector<uint32_t> deps;
    if (t > 0) {
      const uint32_t count = rng() % 4;
      for (uint32_t k = 0; k < count; ++k) {
        const uint32_t window = std::min<uint32_t>(t, 24);
        deps.push_back(t - 1 - rng() % window);
      }
    }
    if (rng() % 10 == 0) {
      w.add_dummy(deps);
    } else {
      w.add(test::kRecordFunc, rng() % 2 == 0 ? CoreType::AIC : CoreType::AIV, deps);
    }
  }
  return w;
}

void expect_clean_run(const ImageWriter& writer, const RunOptions& options,
                      ChipRun* out = nullptr) {
  ChipRun local(writer, options);
  ChipRun& run = out != nullptr ? *out : local;
  const double ms = run.run();
  EXPECT_LT(ms, kHangLimitMs);
  EXPECT_EQ(run.code(), StatusCode::Ok) << run.detail();
  EXPECT_EQ(run.args().result.tasks_completed, writer.tasks().size());
  run.chip().stop();
  EXPECT_EQ(test::check_execution(writer, run.recorder(), options), "");
}

class ConcurrentGraphRun : public ::testing::TestWithParam<std::tuple<uint32_t, uint32_t>> {
 protected:
  RunOptions options() const {
    RunOptions o;
    o.threads = std::get<0>(GetParam());
    o.clusters = std::get<1>(GetParam());
    o.device_clusters = 8;
    return o;
  }
};

TEST_P(ConcurrentGraphRun, Chain) {
  expect_clean_run(chain_graph(40), options());
}
TEST_P(ConcurrentGraphRun, FanOutFanIn) {
  expect_clean_run(fan_graph(60), options());
}
TEST_P(ConcurrentGraphRun, Diamonds) {
  expect_clean_run(diamond_graph(10), options());
}
TEST_P(ConcurrentGraphRun, DummyTasks) {
  expect_clean_run(dummy_graph(), options());
}
TEST_P(ConcurrentGraphRun, OnlyDummyTasks) {
  expect_clean_run(all_dummy_graph(), options());
}
TEST_P(ConcurrentGraphRun, RandomDag) {
  expect_clean_run(random_graph(300, 7), options());
}

INSTANTIATE_TEST_SUITE_P(ThreadsByClusters, ConcurrentGraphRun,
                         ::testing::Combine(::testing::Values(1u, 2u, 4u),
                                            ::testing::Values(1u, 2u, 8u)),
                         [](const auto& info) {
                           return "threads" + std::to_string(std::get<0>(info.param)) +
                                  "_clusters" + std::to_string(std::get<1>(info.param));
                         });

// The batched pass (released tasks kept up to a fair share, batch pops sized to the free slots,
// completions counted per pass) with and without the fair-share limit of inline kernels, on
// graphs whose passes release one task (chain), many (fan, random) or none (independent).
TEST(SchedulerRun, ConcurrentBatchedPassesRunEveryGraphWithAndWithoutFairShares) {
  for (const bool inline_kernels : {false, true}) {
    for (const uint32_t threads : {2u, 3u}) {
      RunOptions o;
      o.threads = threads;
      o.clusters = 4;
      o.device_clusters = 8;
      o.kicks_run_kernels = inline_kernels;
      SCOPED_TRACE("threads " + std::to_string(threads) + " inline " +
                   std::to_string(inline_kernels));
      expect_clean_run(chain_graph(200), o);
      expect_clean_run(fan_graph(150), o);
      expect_clean_run(random_graph(500, 3), o);
      expect_clean_run(dummy_graph(), o);
    }
  }
}

TEST(SchedulerRun, ConcurrentRunOnFewerClustersThanTheDeviceUsesDeviceNumbering) {
  RunOptions o;
  o.threads = 3;
  o.clusters = 2;
  o.device_clusters = 5;  // AIV cores of the run: 5..8
  expect_clean_run(fan_graph(30), o);
}

TEST(SchedulerRun, StressRandomDagsManySeeds) {
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    RunOptions o;
    o.threads = 1 + seed % 4;
    o.clusters = 1 + seed % 3;
    o.device_clusters = 4;
    o.service_threads = 1 + seed % 3;
    SCOPED_TRACE("seed " + std::to_string(seed));
    expect_clean_run(random_graph(400, seed), o);
  }
}

TEST(SchedulerRun, SerialModeRunsEveryGraphInOrder) {
  for (uint32_t clusters : {1u, 2u, 8u}) {
    RunOptions o;
    o.threads = 1;
    o.serial = true;
    o.clusters = clusters;
    expect_clean_run(chain_graph(20), o);
    expect_clean_run(fan_graph(20), o);
    expect_clean_run(diamond_graph(5), o);
    expect_clean_run(dummy_graph(), o);
    expect_clean_run(random_graph(200, 3), o);
  }
}

// The three ways a launch runs its cores: one thread running everything (serial), scheduler
// threads running kernels inline on a kick, and scheduler threads with executor threads.
std::vector<std::pair<const char*, RunOptions>> every_launch_mode() {
  RunOptions serial;
  serial.threads = 1;
  serial.serial = true;
  RunOptions inline_kicks;
  inline_kicks.kicks_run_kernels = true;
  RunOptions executors;
  return {{"serial", serial}, {"inline kicks", inline_kicks}, {"executors", executors}};
}

// A completion that makes exactly one task ready dispatches it onto the core it freed (or an idle
// core of the same cluster when the shapes differ) with no ready-queue round trip: every task of
// a chain but the first, whatever the shapes alternate. Threaded, a completion that makes several
// tasks ready shares them with the other schedulers instead: in a fan only the sink, released
// alone by the last middle task, takes the fast path. Serial, every task after the fan's root
// does (nobody to share with).
TEST(SchedulerRun, TheSuccessorFastPathTakesWhatOneCompletionAloneMadeReady) {
  struct Case {
    const char* graph;
    ImageWriter writer;
    uint64_t serial_fast;
    uint64_t threaded_fast;
  };
  const Case cases[] = {{"chain", chain_graph(200), 199, 199}, {"fan", fan_graph(8), 9, 1}};
  for (const Case& c : cases) {
    for (auto [mode, options] : every_launch_mode()) {
      SCOPED_TRACE(std::string(c.graph) + ", " + mode);
      options.clusters = 2;
      ChipRun run(c.writer, options);
      expect_clean_run(c.writer, options, &run);
      EXPECT_EQ(run.args().result.successor_dispatches,
                options.serial ? c.serial_fast : c.threaded_fast);
    }
  }
}

TEST(SchedulerRun, SerialModeOrderIsDeterministic) {
  const ImageWriter writer = random_graph(300, 11);
  RunOptions o;
  o.threads = 1;
  o.serial = true;
  o.clusters = 2;
  std::vector<uint32_t> first;
  for (int round = 0; round < 3; ++round) {
    ChipRun run(writer, o);
    run.run();
    ASSERT_EQ(run.code(), StatusCode::Ok) << run.detail();
    if (round == 0) {
      first = run.recorder().order;
    } else {
      EXPECT_EQ(run.recorder().order, first) << "round " << round;
    }
  }
}

TEST(SchedulerRun, PhaseStampsArePresent) {
  RunOptions o;
  o.threads = 2;
  ChipRun run(chain_graph(10), o);
  run.run();
  ASSERT_EQ(run.code(), StatusCode::Ok) << run.detail();
  const auto& stamps = run.phases().stamps;
  for (Phase p : {Phase::RunWall, Phase::Preamble, Phase::Load}) {
    const auto& s = stamps[0][static_cast<int>(p)];
    EXPECT_NE(s.start, 0u) << phase_name(p);
    EXPECT_LE(s.start, s.end) << phase_name(p);
  }
  EXPECT_NE(stamps[1][static_cast<int>(Phase::RunWall)].start, 0u);
  // Scheduling is stamped by every thread that dispatched (which threads do depends on timing).
  int scheduling = 0;
  for (int t = 0; t < 2; ++t) {
    const auto& s = stamps[t][static_cast<int>(Phase::Scheduling)];
    if (s.start == 0) continue;
    ++scheduling;
    EXPECT_LE(s.start, s.end);
  }
  EXPECT_GE(scheduling, 1);
  EXPECT_EQ(stamps[1][static_cast<int>(Phase::Preamble)].start, 0u) << "only thread 0 loads";
}

TEST(SchedulerRun, ConcurrentWatchdogNamesTheStuckTaskAndReturns) {
  ImageWriter w;
  const uint32_t a = w.add(test::kRecordFunc, CoreType::AIC);
  const uint32_t stuck = w.add(test::kBlockingFunc, CoreType::AIV, {a});
  w.add(test::kRecordFunc, CoreType::AIC, {stuck});
  RunOptions o;
  o.threads = 2;
  o.clusters = 2;
  o.timeout_ms = 200;
  test::close_blocking_gate();
  ChipRun run(w, o);
  const double ms = run.run();
  EXPECT_LT(ms, 10000) << "the run must return although a core is stuck in its kernel";
  test::release_blocking_kernels();
  run.chip().stop();
  test::close_blocking_gate();
  const int core = run.recorder().core_of[stuck];  // read after the kernel's thread was joined
  ASSERT_EQ(run.code(), StatusCode::SchedulerTimeout) << run.detail();
  EXPECT_EQ(run.args().result.stuck_task, stuck);
  EXPECT_EQ(run.args().result.stuck_func_id, test::kBlockingFunc);
  EXPECT_EQ(run.args().result.stuck_core, core);
  const std::string expected = "no progress for 200 ms: task 1 (func_id 3) running on core " +
                               std::to_string(core) + " (aiv)";
  EXPECT_NE(run.detail().find(expected), std::string::npos) << run.detail();
  EXPECT_EQ(run.recorder().runs[2].load(), 0u);
}

// host_build_graph's scope fences take a record but no TaskId: the watchdog names the stuck task
// by the id the orchestration got for it (record 3 is task 2 behind two fences).
TEST(SchedulerRun, ConcurrentWatchdogNamesThePublicIdBehindScopeFences) {
  ImageWriter w;
  const uint32_t a = w.add(test::kRecordFunc, CoreType::AIC);
  const uint32_t fence = w.add_fence({a});
  const uint32_t b = w.add(test::kRecordFunc, CoreType::AIC, {fence});
  const uint32_t second_fence = w.add_fence({b});
  const uint32_t stuck = w.add(test::kBlockingFunc, CoreType::AIV, {second_fence});
  ASSERT_EQ(stuck, 4u);
  RunOptions o;
  o.threads = 2;
  o.clusters = 2;
  o.timeout_ms = 200;
  test::close_blocking_gate();
  ChipRun run(w, o);
  EXPECT_LT(run.run(), 10000);
  test::release_blocking_kernels();
  run.chip().stop();
  test::close_blocking_gate();
  const int core = run.recorder().core_of[stuck];
  ASSERT_EQ(run.code(), StatusCode::SchedulerTimeout) << run.detail();
  EXPECT_EQ(run.args().result.stuck_task, 2);
  const std::string expected = "no progress for 200 ms: task 2 (func_id 3) running on core " +
                               std::to_string(core) + " (aiv)";
  EXPECT_NE(run.detail().find(expected), std::string::npos) << run.detail();
}

// Tasks 1 and 2 wait for each other; with `fence`, task 1 is a scope fence (no public id).
ImageWriter cyclic_graph(bool fence = false) {
  ImageWriter w;
  w.add(test::kRecordFunc, CoreType::AIC);
  if (fence) {
    w.add_fence({2});
  } else {
    w.add(test::kRecordFunc, CoreType::AIV, {2});
  }
  w.add(test::kRecordFunc, CoreType::AIC, {1});
  return w;
}

TEST(SchedulerRun, ConcurrentWatchdogNamesATaskThatNeverBecomesReady) {
  // A scope fence is named as one, not by a made-up id.
  for (const bool fence : {false, true}) {
    SCOPED_TRACE(fence ? "fence" : "task");
    const ImageWriter w = cyclic_graph(fence);
    RunOptions o;
    o.threads = 2;
    o.timeout_ms = 200;
    // The full image check refuses a cycle (ConcurrentImagesBreakingFormerHostOnlyRulesAreRefused);
    // a trusted replay skips it, and the watchdog still has to name the task.
    o.image_prevalidated = true;
    ChipRun run(w, o);
    EXPECT_LT(run.run(), 10000);
    ASSERT_EQ(run.code(), StatusCode::SchedulerTimeout) << run.detail();
    EXPECT_EQ(run.args().result.stuck_task, fence ? -1 : 1);
    EXPECT_EQ(run.args().result.stuck_core, -1);
    const char* named = fence ? "a scope fence (dependency-only, internal) is not ready"
                              : "task 1 (func_id 1) is not ready";
    EXPECT_NE(run.detail().find(named), std::string::npos) << run.detail();
    EXPECT_EQ(run.args().result.tasks_completed, 1u);
  }
}

TEST(SchedulerRun, ConcurrentUnknownFuncIdIsLatched) {
  ImageWriter w;
  const uint32_t a = w.add(test::kRecordFunc, CoreType::AIC);
  const uint32_t unknown = w.add(7, CoreType::AIV, {a});
  w.add(test::kRecordFunc, CoreType::AIC, {unknown});
  for (bool serial : {false, true}) {
    RunOptions o;
    o.threads = serial ? 1 : 2;
    o.serial = serial;
    ChipRun run(w, o);
    EXPECT_LT(run.run(), kHangLimitMs);
    ASSERT_EQ(run.code(), StatusCode::UnknownFuncId) << run.detail();
    EXPECT_NE(run.detail().find("task 1 names func_id 7"), std::string::npos) << run.detail();
    run.chip().stop();
    EXPECT_EQ(run.recorder().runs[2].load(), 0u);
  }
}

TEST(SchedulerRun, ConcurrentThrowingKernelIsAKernelFault) {
  ImageWriter w;
  w.add(test::kThrowingFunc, CoreType::AIC);
  RunOptions o;
  ChipRun run(w, o);
  EXPECT_LT(run.run(), kHangLimitMs);
  ASSERT_EQ(run.code(), StatusCode::KernelFault) << run.detail();
  EXPECT_NE(run.detail().find("func_id 4 of task 0"), std::string::npos) << run.detail();
}

// Corruptions of the launch or the image: each must latch an error naming the field, and every
// thread must return.
struct Corruption {
  const char* name;
  std::function<void(ChipRun&)> apply;
  StatusCode code;
  const char* detail;
  // The image itself breaks a rule of common/graph_image_validate.h (not only the launch), so the
  // host's validator must refuse it with the very message the chip latched.
  bool image_rule = true;
};

common::GraphImageHeader* header_of(ChipRun& run) {
  return reinterpret_cast<common::GraphImageHeader*>(run.image().data());
}
common::TaskRecord* records_of(ChipRun& run) {
  return reinterpret_cast<common::TaskRecord*>(reinterpret_cast<uint8_t*>(run.image().data()) +
                                               header_of(run)->tasks_offset);
}
uint32_t* fanout_of(ChipRun& run) {
  return reinterpret_cast<uint32_t*>(reinterpret_cast<uint8_t*>(run.image().data()) +
                                     header_of(run)->fanout_offset);
}
uint32_t* initial_ready_of(ChipRun& run) {
  return reinterpret_cast<uint32_t*>(reinterpret_cast<uint8_t*>(run.image().data()) +
                                     header_of(run)->initial_ready_offset);
}

// Runs the corrupted launch: it must latch `c.code` naming the field, start no task and let every
// thread return; an image corruption gets the same message from the host's validator.
void expect_refused(ChipRun& run, const Corruption& c) {
  SCOPED_TRACE(c.name);
  c.apply(run);
  EXPECT_LT(run.run(), kHangLimitMs);
  EXPECT_EQ(run.code(), c.code) << run.detail();
  EXPECT_NE(run.detail().find(c.detail), std::string::npos) << run.detail();
  EXPECT_EQ(run.recorder().started(), 0u);
  const Status host = common::validate_graph_image(
      reinterpret_cast<const uint8_t*>(run.image().data()), run.image().size() * 8);
  if (c.image_rule) {
    EXPECT_EQ(host.code(), StatusCode::InternalError);
    EXPECT_EQ(host.message(), run.detail());
  } else {
    EXPECT_TRUE(host.is_ok()) << host.to_string();
  }
}

TEST(SchedulerRun, ConcurrentInvalidLaunchesLatchAnErrorAndReturn) {
  const Corruption cases[] = {
      {"image magic", [](ChipRun& r) { header_of(r)->magic = 0x12345678; },
       StatusCode::InternalError, "graph image magic 0x12345678"},
      {"image version", [](ChipRun& r) { header_of(r)->version = 9; }, StatusCode::InternalError,
       "graph image version 9"},
      {"total size", [](ChipRun& r) { header_of(r)->total_size = r.image().size() * 8 + 8; },
       StatusCode::InternalError, "total_size"},
      {"tasks section", [](ChipRun& r) { header_of(r)->tasks_offset = 1ull << 40; },
       StatusCode::InternalError, "tasks section"},
      {"fanin count", [](ChipRun& r) { records_of(r)[1].fanin_count = 2; },
       StatusCode::InternalError, "task 1: fanin_count 2, but 1 fanout entries name it"},
      {"fanout range", [](ChipRun& r) { records_of(r)[0].fanout_count = 1000; },
       StatusCode::InternalError, "task 0: fanout"},
      {"func id", [](ChipRun& r) { records_of(r)[2].func_id = 4096; }, StatusCode::InternalError,
       "task 2: func_id 4096"},
      {"core type", [](ChipRun& r) { records_of(r)[2].core_type = 7; }, StatusCode::InternalError,
       "task 2: core_type 7 is not AIC (0), AIV (1) or MIX (2)"},
      {"block num", [](ChipRun& r) { records_of(r)[1].block_num = 0; }, StatusCode::InternalError,
       "task 1: block_num 0 is outside [1, 65535]"},
      {"mix parts",
       [](ChipRun& r) {
         records_of(r)[2].core_type = static_cast<uint8_t>(CoreType::MIX);
         records_of(r)[2].func_id = -1;
       },
       StatusCode::InternalError, "task 2: MIX task with every part -1"},
      {"predicate",
       [](ChipRun& r) {
         records_of(r)[3].flags |= common::kTaskFlagPredicated;
         records_of(r)[3].predicate_addr = 64;
         records_of(r)[3].predicate_bytes = 3;
       },
       StatusCode::InternalError, "task 3: predicate at 0x40 with 3 bytes"},
      {"arg range", [](ChipRun& r) { records_of(r)[1].args_begin = 1ull << 50; },
       StatusCode::InternalError, "task 1: args"},
      {"arg count", [](ChipRun& r) { records_of(r)[1].arg_count = 33; }, StatusCode::InternalError,
       "task 1: arg_count 33 exceeds the kernel argument limit 32"},
      {"task count", [](ChipRun& r) { header_of(r)->task_count = common::kMaxRunTasks; },
       StatusCode::InternalError, "task_count 4294967294 exceeds the limit 4294967293"},
      {"shared size", [](ChipRun& r) { r.args().shared_size = r.shared_bytes() - 64; },
       StatusCode::InternalError, "shared-state region has", false},
      {"clusters", [](ChipRun& r) { r.args().clusters = 9; }, StatusCode::InternalError,
       "clusters 9", false},
      {"variant", [](ChipRun& r) { r.args().variant = static_cast<RuntimeVariant>(7); },
       StatusCode::UnsupportedFeature, "runtime variant 7", false},
      {"serial threads", [](ChipRun& r) { r.args().serial = true; }, StatusCode::InternalError,
       "serial launch with 3 AICPU threads", false},
  };
  for (const Corruption& c : cases) {
    RunOptions o;
    o.threads = 3;
    ChipRun run(chain_graph(4), o);
    expect_refused(run, c);
  }
}

// Rules only the host's validator applied before the two were made one: the chip refuses such
// images too (before, it ran them or failed on a later symptom).
TEST(SchedulerRun, ConcurrentImagesBreakingFormerHostOnlyRulesAreRefused) {
  const Corruption chain_cases[] = {
      {"unknown flags", [](ChipRun& r) { records_of(r)[1].flags = 0x80; },
       StatusCode::InternalError, "task 1: unknown flags 128"},
      {"kernel on a dummy", [](ChipRun& r) { records_of(r)[3].flags = common::kTaskFlagDummy; },
       StatusCode::InternalError, "task 3: func_id 1, mix_aiv -1/-1 on a dummy task"},
      {"mix_aiv on a non-MIX task", [](ChipRun& r) { records_of(r)[2].mix_aiv[1] = 1; },
       StatusCode::InternalError, "task 2: mix_aiv -1/1 on a non-MIX task (must be -1)"},
      {"fanout names no later task", [](ChipRun& r) { fanout_of(r)[2] = 2; },
       StatusCode::InternalError, "task 2: fanout entry 0 names task 2, which is not a later task"},
      {"sections out of order",
       [](ChipRun& r) { header_of(r)->initial_ready_offset = header_of(r)->fanout_offset; },
       StatusCode::InternalError, "initial_ready section"},
  };
  for (const Corruption& c : chain_cases) {
    RunOptions o;
    o.threads = 3;
    ChipRun run(chain_graph(4), o);
    expect_refused(run, c);
  }
  ImageWriter two_sources;
  const uint32_t a = two_sources.add(test::kRecordFunc, CoreType::AIC);
  const uint32_t b = two_sources.add(test::kRecordFunc, CoreType::AIV);
  two_sources.add(test::kRecordFunc, CoreType::AIC, {a, b});
  const Corruption ready_cases[] = {
      {"initial_ready out of order",
       [](ChipRun& r) { std::swap(initial_ready_of(r)[0], initial_ready_of(r)[1]); },
       StatusCode::InternalError, "initial_ready[1] = 0 does not follow 1 in increasing order"},
      {"initial_ready lists a task twice", [](ChipRun& r) { initial_ready_of(r)[1] = 0; },
       StatusCode::InternalError, "initial_ready[1] = 0 does not follow 0"},
  };
  for (const Corruption& c : ready_cases) {
    RunOptions o;
    o.threads = 2;
    ChipRun run(two_sources, o);
    expect_refused(run, c);
  }
  RunOptions o;
  o.threads = 2;
  ChipRun cycle(cyclic_graph(), o);
  expect_refused(cycle, {"cycle", [](ChipRun&) {}, StatusCode::InternalError,
                         "task 1: fanin_count 1, but 0 fanout entries name it"});
}

// A replay of an image the chip checked before skips the per-task checks but must leave the same
// state behind: fan-in counts, Pending states (over the harness's 0xA5 garbage) and queue sizes.
TEST(SchedulerRun, ConcurrentPrevalidatedImagesRunEveryGraph) {
  for (const bool serial : {true, false}) {
    RunOptions o;
    o.threads = serial ? 1 : 3;
    o.serial = serial;
    o.clusters = 4;
    o.image_prevalidated = true;
    SCOPED_TRACE(serial ? "serial" : "threaded");
    expect_clean_run(chain_graph(100), o);
    expect_clean_run(fan_graph(60), o);
    expect_clean_run(diamond_graph(20), o);
    expect_clean_run(dummy_graph(), o);
    expect_clean_run(all_dummy_graph(), o);
    expect_clean_run(random_graph(400, 11), o);
  }
}

TEST(SchedulerRun, PrevalidatedImagesStillHaveTheirHeaderChecked) {
  RunOptions o;
  o.threads = 2;
  o.image_prevalidated = true;
  ChipRun run(chain_graph(4), o);
  header_of(run)->magic = 0x12345678;
  EXPECT_LT(run.run(), kHangLimitMs);
  EXPECT_EQ(run.code(), StatusCode::InternalError) << run.detail();
  EXPECT_NE(run.detail().find("graph image magic 0x12345678"), std::string::npos) << run.detail();
  EXPECT_EQ(run.recorder().started(), 0u);
}

TEST(SchedulerRun, BadLaunchMagicTouchesNothing) {
  RunOptions o;
  o.threads = 2;
  ChipRun run(chain_graph(4), o);
  run.args().magic = 0;
  EXPECT_LT(run.run(), kHangLimitMs);
  EXPECT_EQ(run.recorder().started(), 0u);
}

TEST(SchedulerRun, SharedStateBytesCoversEverySection) {
  const SharedLayout small = shared_layout(1);
  EXPECT_GE(small.total_bytes, sizeof(common::SharedPrefix));
  EXPECT_EQ(small.total_bytes % 64, 0u);
  const SharedLayout big = shared_layout(1000);
  EXPECT_EQ(big.queue_capacity, 1024u);
  EXPECT_GE(big.total_bytes, big.state_offset + 1000);
  EXPECT_EQ(common::shared_state_bytes(1000), big.total_bytes);
  EXPECT_EQ(shared_layout(common::kMaxRunTasks).total_bytes, UINT64_MAX);
  // The host zeroes the prefix and the globals only: exactly what precedes the first queue.
  EXPECT_EQ(common::kSharedClearedBytes, small.queue_offset[0]);
  EXPECT_EQ(common::kSharedClearedBytes, big.queue_offset[0]);
}

// Each ready queue is formatted for the tasks of its own shape (inside the slot laid out for all
// tasks), and serial and threaded runs of such a graph complete on a region the harness filled
// with garbage beyond the zeroed head.
TEST(SchedulerRun, QueuesAreFormattedForTheTasksOfTheirShape) {
  ImageWriter w;
  for (uint32_t i = 0; i < 40; ++i) w.add(test::kRecordFunc, CoreType::AIV);
  for (uint32_t i = 0; i < 5; ++i) w.add(test::kRecordFunc, CoreType::AIC, {i});
  w.add_dummy({0, 40});
  for (const auto& [serial, prevalidated] :
       {std::pair{true, false}, {false, false}, {true, true}, {false, true}}) {
    RunOptions o;
    o.threads = serial ? 1 : 2;
    o.serial = serial;
    o.image_prevalidated = prevalidated;
    ChipRun run(w, o);
    expect_clean_run(w, o, &run);
    const SharedLayout layout = shared_layout(46);
    auto capacity = [&](int q) {
      return ReadyQueue::at(run.shared() + layout.queue_offset[q])->capacity();
    };
    EXPECT_EQ(capacity(kQueueAiv), 64u);
    EXPECT_EQ(capacity(kQueueAic), 8u);
    EXPECT_EQ(capacity(kQueueMix), 2u);
    EXPECT_EQ(capacity(kQueueDummy), 2u);
    EXPECT_EQ(layout.queue_capacity, 64u);
  }
}

}  // namespace
}  // namespace chiprt::scheduler
