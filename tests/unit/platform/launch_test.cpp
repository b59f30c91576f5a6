// The simulated chip's launch model with small fake chip programs: AICPU thread indices, kicks
// (every kick followed by a service run, never two concurrent runs for one core), serial mode,
// wait timeouts, refused launches, and stopping (including with a stuck launch).
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "platform/sim/sim_platform.h"

namespace chiprt::platform {
namespace {

using namespace std::chrono_literals;

constexpr uint64_t kGenerousWaitMs = 60'000;  // "did not hang", never a timing assertion

bool contains(const Status& status, const std::string& text) {
  return status.message().find(text) != std::string::npos;
}

// Executor threads unless told otherwise: most tests here kick any core from any thread, which
// only the executor model allows (with kernels on the AICPU threads a core has one kicker).
SimOptions make_config(uint32_t clusters, uint32_t host_threads, bool serial = false,
                       SimCoreExecution cores = SimCoreExecution::Executors) {
  SimOptions config;
  config.clusters = clusters;
  config.host_threads = host_threads;
  config.memory_bytes = 1ull << 20;
  config.serial = serial;
  config.core_execution = cores;
  return config;
}

void noop_entry(void*, uint32_t, uint32_t) {}
void noop_service(void*, uint32_t) {}

// ---- AICPU thread indices ------------------------------------------------------------------

struct IndexProgram {
  std::atomic<uint32_t> seen_mask{0};
  std::atomic<uint32_t> bad_count{0};
  uint32_t expected_count = 0;
};

void record_index(void* ctx, uint32_t index, uint32_t count) {
  auto* program = static_cast<IndexProgram*>(ctx);
  if (count != program->expected_count) program->bad_count.fetch_add(1);
  program->seen_mask.fetch_or(1u << index);
}

TEST(SimLaunchTest, ConcurrentAicpuThreadsRunOncePerIndex) {
  sim::SimPlatform platform(make_config(8, 2));
  ASSERT_TRUE(platform.start_streams().is_ok());
  for (uint32_t n = 1; n <= 8; ++n) {
    IndexProgram program;
    program.expected_count = n;
    sim::LaunchPrograms programs;
    programs.ctx = &program;
    programs.aicpu_entry = &record_index;
    programs.core_service = &noop_service;
    programs.aicpu_threads = n;
    programs.cores = 24;
    ASSERT_TRUE(platform.launch_programs(programs).is_ok()) << n;
    ASSERT_TRUE(platform.wait(kGenerousWaitMs).is_ok()) << n;
    EXPECT_EQ(program.seen_mask.load(), (1u << n) - 1) << n;
    EXPECT_EQ(program.bad_count.load(), 0u) << n;
  }
  // Fewer threads after more: the extra parked threads must not run.
  IndexProgram program;
  program.expected_count = 2;
  sim::LaunchPrograms programs{&program, &record_index, &noop_service, 2, 24, false};
  ASSERT_TRUE(platform.launch_programs(programs).is_ok());
  ASSERT_TRUE(platform.wait(kGenerousWaitMs).is_ok());
  EXPECT_EQ(program.seen_mask.load(), 3u);
}

// ---- kicks: the generation protocol ---------------------------------------------------------

struct KickProgram {
  static constexpr uint32_t kMaxCores = 72;
  const ChipServices* services = nullptr;
  uint32_t cores = 0;
  uint32_t kicks_per_thread = 0;
  std::array<std::atomic<uint64_t>, kMaxCores> kicked_generation{};
  std::array<std::atomic<uint64_t>, kMaxCores> served_generation{};
  std::array<std::atomic<bool>, kMaxCores> in_service{};
  std::atomic<uint64_t> service_runs{0};
  std::atomic<uint64_t> overlaps{0};
  // When set, each kicker kicks only its own cores and waits until each kick was served before
  // the next one (like a scheduler awaiting completion), so a lost kick is never hidden by a later
  // kick of the same core.
  bool confirm_each_kick = false;
  std::atomic<uint64_t> lost_kicks{0};
};

void kick_many(void* ctx, uint32_t index, uint32_t count) {
  auto* program = static_cast<KickProgram*>(ctx);
  uint32_t state = 2654435761u * (index + 1);
  for (uint32_t k = 0; k < program->kicks_per_thread; ++k) {
    state = state * 1664525u + 1013904223u;
    uint32_t core = (state >> 8) % program->cores;
    if (program->confirm_each_kick) {
      // Each kicker owns the cores congruent to its index, so no other kick can rescue a lost one.
      const uint32_t owned = program->cores / count;
      core = index + count * ((state >> 8) % owned);
    }
    // The new generation is written before the kick: the service run the kick guarantees must
    // see it.
    const uint64_t generation =
        program->kicked_generation[core].fetch_add(1, std::memory_order_relaxed) + 1;
    program->services->kick_core(program->services->ctx, core);
    if (!program->confirm_each_kick) continue;
    // Generous bound: only a lost kick ever gets near it.
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (program->served_generation[core].load(std::memory_order_relaxed) < generation) {
      if (std::chrono::steady_clock::now() > deadline) {
        program->lost_kicks.fetch_add(1);
        return;
      }
      std::this_thread::yield();
    }
  }
}

void serve_generation(void* ctx, uint32_t core) {
  auto* program = static_cast<KickProgram*>(ctx);
  if (program->in_service[core].exchange(true)) program->overlaps.fetch_add(1);
  const uint64_t generation = program->kicked_generation[core].load(std::memory_order_relaxed);
  // Give the CPU away before and after publishing, so kicks often land while the core runs.
  std::this_thread::yield();
  program->served_generation[core].store(generation, std::memory_order_relaxed);
  std::this_thread::yield();
  program->service_runs.fetch_add(1, std::memory_order_relaxed);
  program->in_service[core].store(false);
}

void run_kick_protocol(uint32_t clusters, uint32_t host_threads, uint32_t aicpu_threads,
                       uint32_t kicks_per_thread, bool confirm_each_kick = false) {
  sim::SimPlatform platform(make_config(clusters, host_threads));
  ASSERT_TRUE(platform.start_streams().is_ok());
  auto program = std::make_unique<KickProgram>();
  program->services = &platform.services();
  program->cores = platform.geometry().cores();
  program->kicks_per_thread = kicks_per_thread;
  program->confirm_each_kick = confirm_each_kick;
  sim::LaunchPrograms programs{program.get(), &kick_many,     &serve_generation,
                               aicpu_threads, program->cores, false};
  ASSERT_TRUE(platform.launch_programs(programs).is_ok());
  ASSERT_TRUE(platform.wait(kGenerousWaitMs).is_ok());
  uint64_t total_kicks = 0;
  for (uint32_t core = 0; core < program->cores; ++core) {
    const uint64_t kicked = program->kicked_generation[core].load();
    total_kicks += kicked;
    EXPECT_EQ(program->served_generation[core].load(), kicked) << "core " << core;
  }
  EXPECT_EQ(total_kicks, uint64_t{aicpu_threads} * kicks_per_thread);
  EXPECT_GE(program->service_runs.load(), 1u);
  EXPECT_LE(program->service_runs.load(), total_kicks);
  EXPECT_EQ(program->overlaps.load(), 0u);
  EXPECT_EQ(program->lost_kicks.load(), 0u);
  EXPECT_EQ(platform.ignored_kicks(), 0u);
}

TEST(SimLaunchTest, ConcurrentKicksOneHostThreadEveryKickServed) {
  run_kick_protocol(8, 1, 4, 2000);
}

TEST(SimLaunchTest, ConcurrentKicksTwoHostThreadsEveryKickServed) {
  run_kick_protocol(8, 2, 4, 2000);
}

TEST(SimLaunchTest, ConcurrentConfirmedKicksNeverLost) {
  run_kick_protocol(8, 1, 4, 2000, /*confirm_each_kick=*/true);
  run_kick_protocol(8, 2, 8, 2000, /*confirm_each_kick=*/true);
  run_kick_protocol(1, 2, 3, 2000, /*confirm_each_kick=*/true);
}

TEST(SimLaunchTest, StressKicksEightAicpuThreads72CoresFourHostThreads) {
  run_kick_protocol(24, 4, 8, 20000);
}

TEST(SimLaunchTest, StressManyLaunchesOnOnePlatform) {
  sim::SimPlatform platform(make_config(8, 2));
  ASSERT_TRUE(platform.start_streams().is_ok());
  for (int launch = 0; launch < 300; ++launch) {
    auto program = std::make_unique<KickProgram>();
    program->services = &platform.services();
    program->cores = 24;
    program->kicks_per_thread = 50;
    const uint32_t threads = 1 + launch % 8;
    sim::LaunchPrograms programs{program.get(), &kick_many, &serve_generation, threads, 24, false};
    ASSERT_TRUE(platform.launch_programs(programs).is_ok()) << launch;
    ASSERT_TRUE(platform.wait(kGenerousWaitMs).is_ok()) << launch;
    for (uint32_t core = 0; core < 24; ++core) {
      ASSERT_EQ(program->served_generation[core].load(), program->kicked_generation[core].load())
          << "launch " << launch << " core " << core;
    }
    ASSERT_EQ(program->overlaps.load(), 0u);
  }
}

TEST(SimLaunchTest, StressManyShortLaunchesOnTwoHostThreads) {
  for (int launch = 0; launch < 200; ++launch) {
    run_kick_protocol(8, 2, 1 + launch % 4, 100);
  }
}

// A chain of kicks issued by the cores themselves after every AICPU thread returned: wait must
// keep draining until the chain ends.
struct ChainProgram {
  const ChipServices* services = nullptr;
  uint32_t cores = 0;
  std::atomic<int64_t> budget{0};
  std::atomic<uint64_t> service_runs{0};
  std::atomic<uint64_t> kicks{0};
};

void kick_first_core(void* ctx, uint32_t, uint32_t) {
  auto* program = static_cast<ChainProgram*>(ctx);
  program->kicks.fetch_add(1);
  program->services->kick_core(program->services->ctx, 0);
}

void pass_the_kick(void* ctx, uint32_t core) {
  auto* program = static_cast<ChainProgram*>(ctx);
  program->service_runs.fetch_add(1);
  if (program->budget.fetch_sub(1) > 0) {
    program->kicks.fetch_add(1);
    program->services->kick_core(program->services->ctx, (core + 7) % program->cores);
  }
}

TEST(SimLaunchTest, ConcurrentKickChainFromCoresIsDrainedByWait) {
  for (uint32_t host_threads : {1u, 2u}) {
    sim::SimPlatform platform(make_config(8, host_threads));
    ASSERT_TRUE(platform.start_streams().is_ok());
    ChainProgram program;
    program.services = &platform.services();
    program.cores = 24;
    program.budget = 5000;
    sim::LaunchPrograms programs{&program, &kick_first_core, &pass_the_kick, 1, 24, false};
    ASSERT_TRUE(platform.launch_programs(programs).is_ok());
    ASSERT_TRUE(platform.wait(kGenerousWaitMs).is_ok());
    // One kick from the AICPU thread, then one per positive budget value; each kick hits an idle
    // core (the chain is linear), so each runs the service exactly once.
    EXPECT_EQ(program.kicks.load(), 5001u);
    EXPECT_EQ(program.service_runs.load(), 5001u) << host_threads;
  }
}

TEST(SimLaunchTest, KicksOutsideTheLaunchAreIgnoredAndCounted) {
  sim::SimPlatform platform(make_config(8, 1));
  ASSERT_TRUE(platform.start_streams().is_ok());
  auto program = std::make_unique<KickProgram>();
  program->services = &platform.services();
  program->cores = 6;  // this launch uses cores [0, 6)
  program->kicks_per_thread = 10;
  sim::LaunchPrograms programs{program.get(), &kick_many, &serve_generation, 1, 6, false};
  ASSERT_TRUE(platform.launch_programs(programs).is_ok());
  ASSERT_TRUE(platform.wait(kGenerousWaitMs).is_ok());
  EXPECT_EQ(platform.ignored_kicks(), 0u);
  const ChipServices& services = platform.services();
  services.kick_core(services.ctx, 3);   // no launch active any more
  services.kick_core(services.ctx, 99);  // not a core of this chip
  EXPECT_EQ(platform.ignored_kicks(), 2u);
  const uint64_t runs = program->service_runs.load();
  ASSERT_TRUE(platform.launch_programs(programs).is_ok());
  services.kick_core(services.ctx, 6);  // a core of the chip, but outside this launch
  ASSERT_TRUE(platform.wait(kGenerousWaitMs).is_ok());
  EXPECT_EQ(platform.ignored_kicks(), 3u);
  EXPECT_GT(program->service_runs.load(), runs);
}

// ---- serial mode ------------------------------------------------------------------------------

struct SerialProgram {
  const ChipServices* services = nullptr;
  std::thread::id aicpu_thread;
  std::vector<std::thread::id> service_threads;
  std::vector<std::string> trace;
  std::array<int, 3> runs{};
  std::array<int, 3> depth{};
  int max_depth_same_core = 0;
};

void serial_entry(void* ctx, uint32_t, uint32_t) {
  auto* program = static_cast<SerialProgram*>(ctx);
  program->aicpu_thread = std::this_thread::get_id();
  program->services->kick_core(program->services->ctx, 0);
  program->trace.push_back("entry-after-kick");
  program->services->kick_core(program->services->ctx, 2);
}

void serial_service(void* ctx, uint32_t core) {
  auto* program = static_cast<SerialProgram*>(ctx);
  const int run = ++program->runs[core];
  const int depth = ++program->depth[core];
  if (depth > program->max_depth_same_core) program->max_depth_same_core = depth;
  program->service_threads.push_back(std::this_thread::get_id());
  program->trace.push_back(std::to_string(core) + ":" + std::to_string(run));
  if (core == 0 && run == 1) {
    // Reentrant kick of itself: must re-run after this run returns, not recurse.
    program->services->kick_core(program->services->ctx, 0);
    // Kick of another core: runs inline, nested, right now.
    program->services->kick_core(program->services->ctx, 1);
    program->trace.push_back("0:1-end");
  }
  --program->depth[core];
}

void check_serial_run(sim::SimPlatform& platform, bool serial_launch) {
  ASSERT_TRUE(platform.start_streams().is_ok());
  SerialProgram program;
  program.services = &platform.services();
  sim::LaunchPrograms programs{&program, &serial_entry, &serial_service, 1, 3, serial_launch};
  ASSERT_TRUE(platform.launch_programs(programs).is_ok());
  ASSERT_TRUE(platform.wait(kGenerousWaitMs).is_ok());
  const std::vector<std::string> expected = {"0:1", "1:1", "0:1-end", "0:2", "entry-after-kick",
                                             "2:1"};
  EXPECT_EQ(program.trace, expected);
  EXPECT_EQ(program.max_depth_same_core, 1);
  ASSERT_EQ(program.service_threads.size(), 4u);
  for (const std::thread::id& id : program.service_threads) EXPECT_EQ(id, program.aicpu_thread);
  EXPECT_NE(program.aicpu_thread, std::this_thread::get_id());
}

TEST(SimSerialTest, SerialChipRunsEverythingOnOneThreadInOrder) {
  sim::SimPlatform platform(make_config(1, 4, /*serial=*/true));
  check_serial_run(platform, false);
}

TEST(SimSerialTest, SerialLaunchOnThreadedChipRunsInline) {
  sim::SimPlatform platform(make_config(1, 2));
  check_serial_run(platform, true);
  // The next, threaded launch on the same chip uses the executors again.
  auto program = std::make_unique<KickProgram>();
  program->services = &platform.services();
  program->cores = 3;
  program->kicks_per_thread = 100;
  sim::LaunchPrograms programs{program.get(), &kick_many, &serve_generation, 2, 3, false};
  ASSERT_TRUE(platform.launch_programs(programs).is_ok());
  ASSERT_TRUE(platform.wait(kGenerousWaitMs).is_ok());
  for (uint32_t core = 0; core < 3; ++core) {
    EXPECT_EQ(program->served_generation[core].load(), program->kicked_generation[core].load());
  }
}

TEST(SimSerialTest, SerialLaunchNeedsExactlyOneAicpuThread) {
  sim::SimPlatform serial_chip(make_config(1, 1, true));
  ASSERT_TRUE(serial_chip.start_streams().is_ok());
  sim::LaunchPrograms programs{nullptr, &noop_entry, &noop_service, 2, 3, false};
  const Status status = serial_chip.launch_programs(programs);
  EXPECT_EQ(status.code(), StatusCode::InvalidConfig);
  EXPECT_TRUE(contains(status, "aicpu_threads must be 1 (got 2)")) << status.message();

  sim::SimPlatform threaded_chip(make_config(1, 1));
  ASSERT_TRUE(threaded_chip.start_streams().is_ok());
  programs.serial = true;
  EXPECT_EQ(threaded_chip.launch_programs(programs).code(), StatusCode::InvalidConfig);
}

// ---- wait, refusal, validation ----------------------------------------------------------------

struct BlockingProgram {
  std::atomic<bool> release{false};
  std::atomic<uint32_t> entered{0};
};

void block_until_released(void* ctx, uint32_t, uint32_t) {
  auto* program = static_cast<BlockingProgram*>(ctx);
  program->entered.fetch_add(1);
  while (!program->release.load()) std::this_thread::sleep_for(1ms);
}

TEST(SimWaitTest, ConcurrentWaitTimesOutThenSucceedsAfterRelease) {
  sim::SimPlatform platform(make_config(2, 1));
  ASSERT_TRUE(platform.start_streams().is_ok());
  BlockingProgram program;
  sim::LaunchPrograms programs{&program, &block_until_released, &noop_service, 3, 6, false};
  ASSERT_TRUE(platform.launch_programs(programs).is_ok());
  const Status timeout = platform.wait(30);
  EXPECT_EQ(timeout.code(), StatusCode::StreamSyncTimeout);
  EXPECT_TRUE(contains(timeout, "within 30 ms")) << timeout.message();
  EXPECT_TRUE(contains(timeout, "3 of 3 AICPU threads are still running")) << timeout.message();

  // After a timed-out wait the launch is a fault (possibly a stuck kernel), not API misuse.
  const Status refused = platform.launch_programs(programs);
  EXPECT_EQ(refused.code(), StatusCode::DeviceFaulted);
  EXPECT_TRUE(contains(refused, "still running")) << refused.message();
  EXPECT_TRUE(contains(refused, "wait() again")) << refused.message();

  program.release = true;
  ASSERT_TRUE(platform.wait(UINT64_MAX).is_ok());  // "forever" does not overflow into a timeout
  EXPECT_EQ(program.entered.load(), 3u);
  // Waiting again without a launch is a no-op, and a new launch is accepted.
  EXPECT_TRUE(platform.wait(0).is_ok());
  BlockingProgram next;
  next.release = true;
  programs.ctx = &next;
  ASSERT_TRUE(platform.launch_programs(programs).is_ok());
  EXPECT_TRUE(platform.wait(kGenerousWaitMs).is_ok());
}

// wake_wait (from another thread) ends a wait_aicpu_wakeable early, the launch still running;
// wait_aicpu and wait() are not woken; a wake with nobody waiting ends the next wakeable wait at
// once, and only that one; a new launch forgets an unused wake.
TEST(SimWaitTest, ConcurrentWakeEndsOnlyAnAicpuWaitEarly) {
  sim::SimPlatform platform(make_config(2, 1));
  ASSERT_TRUE(platform.start_streams().is_ok());
  BlockingProgram program;
  sim::LaunchPrograms programs{&program, &block_until_released, &noop_service, 2, 6, false};
  ASSERT_TRUE(platform.launch_programs(programs).is_ok());
  std::thread waker([&] {
    while (program.entered.load() < 2) std::this_thread::sleep_for(1ms);
    platform.wake_wait();
  });
  const Status woken = platform.wait_aicpu_wakeable(kGenerousWaitMs);
  waker.join();
  EXPECT_EQ(woken.code(), StatusCode::StreamSyncTimeout);
  EXPECT_TRUE(contains(woken, "woken before the launch's AICPU threads returned"))
      << woken.message();
  // Woken is no timeout: the launch is not taken for a fault, and the next wait really waits.
  platform.wake_wait();
  EXPECT_TRUE(contains(platform.wait_aicpu(20), "did not finish within 20 ms"));  // not woken
  EXPECT_EQ(platform.wait_aicpu_wakeable(kGenerousWaitMs).code(), StatusCode::StreamSyncTimeout);
  EXPECT_TRUE(contains(platform.wait_aicpu_wakeable(20), "did not finish within 20 ms"));
  platform.wake_wait();  // wait() ignores it
  std::thread releaser([&] {
    std::this_thread::sleep_for(20ms);
    program.release = true;
  });
  EXPECT_TRUE(platform.wait(kGenerousWaitMs).is_ok());
  releaser.join();
  EXPECT_EQ(program.entered.load(), 2u);
  // The wake left over from wait() is forgotten by the next launch.
  BlockingProgram next;
  programs.ctx = &next;
  ASSERT_TRUE(platform.launch_programs(programs).is_ok());
  EXPECT_TRUE(contains(platform.wait_aicpu_wakeable(20), "did not finish within 20 ms"));
  next.release = true;
  EXPECT_TRUE(platform.wait(kGenerousWaitMs).is_ok());
}

struct StuckCoreProgram {
  const ChipServices* services = nullptr;
  std::atomic<bool> release{false};
  std::atomic<bool> serviced{false};
};

void kick_core_zero(void* ctx, uint32_t, uint32_t) {
  auto* program = static_cast<StuckCoreProgram*>(ctx);
  program->services->kick_core(program->services->ctx, 0);
}

void block_core(void* ctx, uint32_t) {
  auto* program = static_cast<StuckCoreProgram*>(ctx);
  while (!program->release.load()) std::this_thread::sleep_for(1ms);
  program->serviced = true;
}

// A kernel that blocks until released: wait() times out naming what is late, then succeeds.
void expect_wait_times_out_on_stuck_core(SimCoreExecution cores, const std::string& late) {
  sim::SimPlatform platform(make_config(1, 1, false, cores));
  ASSERT_TRUE(platform.start_streams().is_ok());
  StuckCoreProgram program;
  program.services = &platform.services();
  sim::LaunchPrograms programs{&program, &kick_core_zero, &block_core, 1, 3, false};
  ASSERT_TRUE(platform.launch_programs(programs).is_ok());
  const Status timeout = platform.wait(30);
  EXPECT_EQ(timeout.code(), StatusCode::StreamSyncTimeout);
  EXPECT_TRUE(contains(timeout, late)) << timeout.message();
  program.release = true;
  ASSERT_TRUE(platform.wait(kGenerousWaitMs).is_ok());
  EXPECT_TRUE(program.serviced.load());
}

TEST(SimWaitTest, ConcurrentWaitTimesOutOnStuckCoreAfterAicpuReturned) {
  expect_wait_times_out_on_stuck_core(SimCoreExecution::Executors,
                                      "1 cores were still running or queued");
}

// ---- kernels on the AICPU threads -----------------------------------------------------------

// Each AICPU thread owns cores i with i % threads == thread and kicks only those, as the scheduler
// does; every service run must happen on the owner, inline, once per kick.
struct OwnedKickProgram {
  const ChipServices* services = nullptr;
  uint32_t cores = 0;
  uint32_t kicks_per_core = 0;
  std::array<std::atomic<uint32_t>, 24> kicks_served{};
  std::array<std::thread::id, 24> owner{};  // written by the owner before its first kick
  std::atomic<uint32_t> wrong_thread{0};
  std::atomic<uint32_t> depth_violations{0};
  std::array<int, 24> depth{};
};

void kick_owned(void* ctx, uint32_t thread, uint32_t threads) {
  auto* program = static_cast<OwnedKickProgram*>(ctx);
  for (uint32_t core = thread; core < program->cores; core += threads) {
    program->owner[core] = std::this_thread::get_id();
  }
  for (uint32_t round = 0; round < program->kicks_per_core; ++round) {
    for (uint32_t core = thread; core < program->cores; core += threads) {
      const uint32_t before = program->kicks_served[core].load(std::memory_order_relaxed);
      program->services->kick_core(program->services->ctx, core);
      // Inline: the run has happened by the time the kick returns.
      if (program->kicks_served[core].load(std::memory_order_relaxed) != before + 1) {
        program->wrong_thread.fetch_add(1);
      }
    }
  }
}

void serve_owned(void* ctx, uint32_t core) {
  auto* program = static_cast<OwnedKickProgram*>(ctx);
  if (program->owner[core] != std::this_thread::get_id()) program->wrong_thread.fetch_add(1);
  if (++program->depth[core] != 1) program->depth_violations.fetch_add(1);
  program->kicks_served[core].fetch_add(1, std::memory_order_relaxed);
  --program->depth[core];
}

TEST(SimAicpuCoresTest, ConcurrentKernelsRunInlineOnTheOwningAicpuThread) {
  sim::SimPlatform platform(make_config(8, 2, false, SimCoreExecution::Aicpu));
  EXPECT_EQ(platform.executor_threads(), 0u);
  ASSERT_TRUE(platform.start_streams().is_ok());
  for (uint32_t threads : {1u, 3u, 8u}) {
    auto program = std::make_unique<OwnedKickProgram>();
    program->services = &platform.services();
    program->cores = 24;
    program->kicks_per_core = 200;
    sim::LaunchPrograms programs{program.get(), &kick_owned, &serve_owned, threads, 24, false};
    ASSERT_TRUE(platform.launch_programs(programs).is_ok());
    ASSERT_TRUE(platform.wait(kGenerousWaitMs).is_ok());
    EXPECT_EQ(program->wrong_thread.load(), 0u) << threads << " AICPU threads";
    EXPECT_EQ(program->depth_violations.load(), 0u);
    for (uint32_t core = 0; core < 24; ++core) {
      EXPECT_EQ(program->kicks_served[core].load(), 200u) << "core " << core;
    }
  }
}

TEST(SimAicpuCoresTest, AutoPicksAicpuOnlyWhenTheAicpuThreadsFillTheHost) {
  SimOptions config;
  config.aicpu_threads = 4;
  EXPECT_EQ(sim::resolve_core_execution(config, 2), SimCoreExecution::Aicpu);
  EXPECT_EQ(sim::resolve_core_execution(config, 4), SimCoreExecution::Aicpu);
  EXPECT_EQ(sim::resolve_core_execution(config, 5), SimCoreExecution::Executors);
  EXPECT_EQ(sim::resolve_core_execution(config, 16), SimCoreExecution::Executors);
  config.core_execution = SimCoreExecution::Executors;
  EXPECT_EQ(sim::resolve_core_execution(config, 2), SimCoreExecution::Executors);
  config.core_execution = SimCoreExecution::Aicpu;
  EXPECT_EQ(sim::resolve_core_execution(config, 16), SimCoreExecution::Aicpu);
  sim::SimPlatform executors(make_config(1, 3, false, SimCoreExecution::Executors));
  EXPECT_EQ(executors.executor_threads(), 3u);
  EXPECT_FALSE(executors.geometry().kicks_run_kernels);
  sim::SimPlatform aicpu(make_config(1, 3, false, SimCoreExecution::Aicpu));
  EXPECT_EQ(aicpu.executor_threads(), 0u);
  // The scheduler shares queued work before each kick only when kicks run kernels.
  EXPECT_TRUE(aicpu.geometry().kicks_run_kernels);
}

TEST(SimAicpuCoresTest, ConcurrentWaitTimesOutOnAKernelStuckOnItsAicpuThread) {
  // The kernel blocks the AICPU thread that kicked it, so the launch's AICPU thread is late.
  expect_wait_times_out_on_stuck_core(SimCoreExecution::Aicpu, "AICPU threads are still running");
}

TEST(SimLaunchTest, LaunchBeforeStartStreamsIsNotInitialized) {
  sim::SimPlatform platform(make_config(1, 1));
  sim::LaunchPrograms programs{nullptr, &noop_entry, &noop_service, 1, 3, false};
  const Status status = platform.launch_programs(programs);
  EXPECT_EQ(status.code(), StatusCode::NotInitialized);
  EXPECT_TRUE(contains(status, "start_streams()")) << status.message();
}

TEST(SimLaunchTest, InvalidLaunchProgramsAreRejected) {
  sim::SimPlatform platform(make_config(2, 1));
  ASSERT_TRUE(platform.start_streams().is_ok());
  sim::LaunchPrograms programs{nullptr, &noop_entry, &noop_service, 0, 6, false};
  Status status = platform.launch_programs(programs);
  EXPECT_EQ(status.code(), StatusCode::InvalidConfig);
  EXPECT_TRUE(contains(status, "aicpu_threads must be in [1, 8] (got 0)")) << status.message();
  programs.aicpu_threads = 9;
  EXPECT_TRUE(contains(platform.launch_programs(programs), "(got 9)"));
  programs.aicpu_threads = 1;
  programs.cores = 7;
  status = platform.launch_programs(programs);
  EXPECT_EQ(status.code(), StatusCode::InvalidConfig);
  EXPECT_TRUE(contains(status, "device's 6 cores (got 7)")) << status.message();
  programs.cores = 6;
  programs.aicpu_entry = nullptr;
  EXPECT_EQ(platform.launch_programs(programs).code(), StatusCode::InvalidArgument);
  programs.aicpu_entry = &noop_entry;
  programs.core_service = nullptr;
  EXPECT_EQ(platform.launch_programs(programs).code(), StatusCode::InvalidArgument);
  // Without cores the core program is not needed.
  programs.cores = 0;
  ASSERT_TRUE(platform.launch_programs(programs).is_ok());
  EXPECT_TRUE(platform.wait(kGenerousWaitMs).is_ok());
}

// ---- start / stop -----------------------------------------------------------------------------

TEST(SimStreamsTest, StopWithoutLaunchOrStartDoesNotHang) {
  {
    sim::SimPlatform never_started(make_config(8, 4));
    never_started.stop_streams();
  }
  sim::SimPlatform platform(make_config(8, 4));
  ASSERT_TRUE(platform.start_streams().is_ok());
  ASSERT_TRUE(platform.start_streams().is_ok());  // idempotent
  platform.stop_streams();
  platform.stop_streams();
  EXPECT_FALSE(platform.streams_faulted());
}

TEST(SimStreamsTest, StreamsRestartAfterStop) {
  sim::SimPlatform platform(make_config(2, 2));
  IndexProgram program;
  program.expected_count = 2;
  sim::LaunchPrograms programs{&program, &record_index, &noop_service, 2, 6, false};
  for (int round = 0; round < 3; ++round) {
    ASSERT_TRUE(platform.start_streams().is_ok());
    program.seen_mask = 0;
    ASSERT_TRUE(platform.launch_programs(programs).is_ok());
    ASSERT_TRUE(platform.wait(kGenerousWaitMs).is_ok());
    EXPECT_EQ(program.seen_mask.load(), 3u);
    platform.stop_streams();
    EXPECT_EQ(platform.launch_programs(programs).code(), StatusCode::NotInitialized);
  }
}

TEST(SimStreamsTest, DestructorWaitsForUnwaitedLaunchThatFinishes) {
  IndexProgram program;
  program.expected_count = 4;
  {
    sim::SimPlatform platform(make_config(2, 2));
    ASSERT_TRUE(platform.start_streams().is_ok());
    sim::LaunchPrograms programs{&program, &record_index, &noop_service, 4, 6, false};
    ASSERT_TRUE(platform.launch_programs(programs).is_ok());
  }
  EXPECT_EQ(program.seen_mask.load(), 15u);
}

// Outlives the platform: the stuck AICPU thread is detached and returns only after the test
// released it.
struct DetachedProgram {
  std::atomic<bool> release{false};
  std::atomic<bool> returned{false};
};

void block_then_report(void* ctx, uint32_t, uint32_t) {
  auto* program = static_cast<DetachedProgram*>(ctx);
  while (!program->release.load()) std::this_thread::sleep_for(1ms);
  program->returned = true;
}

TEST(SimStreamsTest, ConcurrentStopWithStuckLaunchDetachesAndRefusesFurtherWork) {
  static DetachedProgram program;  // static: the detached thread may run after this test
  sim::SimTuning tuning;
  tuning.stop_grace_ms = 50;
  {
    sim::SimPlatform platform(make_config(1, 1), tuning);
    ASSERT_TRUE(platform.start_streams().is_ok());
    DeviceBuffer buffer;
    ASSERT_TRUE(platform.alloc(4096, 64, &buffer).is_ok());
    sim::LaunchPrograms programs{&program, &block_then_report, &noop_service, 1, 3, false};
    ASSERT_TRUE(platform.launch_programs(programs).is_ok());
    platform.stop_streams();  // returns after the bounded grace, with the thread detached
    EXPECT_TRUE(platform.streams_faulted());
    EXPECT_EQ(platform.start_streams().code(), StatusCode::DeviceFaulted);
    EXPECT_EQ(platform.launch_programs(programs).code(), StatusCode::DeviceFaulted);
  }  // destructor does not hang either
  program.release = true;
  for (int i = 0; i < 60'000 && !program.returned.load(); ++i) std::this_thread::sleep_for(1ms);
  EXPECT_TRUE(program.returned.load());
}

}  // namespace
}  // namespace chiprt::platform
