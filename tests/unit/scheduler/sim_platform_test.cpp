// The task engine on the real simulated chip (src/platform/sim): its kick_core and executor pool
// instead of the harness's fake chip.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

#include "chip_harness.h"
#include "platform/registry.h"

namespace chiprt::scheduler {
namespace {

using test::ChipRun;
using test::ImageWriter;
using test::RunOptions;

ImageWriter layered_graph(uint32_t layers, uint32_t width) {
  ImageWriter w;
  std::vector<uint32_t> previous;
  for (uint32_t l = 0; l < layers; ++l) {
    std::vector<uint32_t> current;
    for (uint32_t i = 0; i < width; ++i) {
      std::vector<uint32_t> deps;
      if (!previous.empty()) {
        deps.push_back(previous[i]);
        deps.push_back(previous[(i + 1) % width]);
      }
      current.push_back(
          l % 3 == 2 && i == 0
              ? w.add_dummy(deps)
              : w.add(test::kRecordFunc, (i + l) % 3 == 0 ? CoreType::AIC : CoreType::AIV, deps));
    }
    previous = current;
  }
  return w;
}

ImageWriter independent_graph(uint32_t n) {
  ImageWriter w;
  for (uint32_t i = 0; i < n; ++i)
    w.add(test::kRecordFunc, i % 3 == 0 ? CoreType::AIC : CoreType::AIV);
  return w;
}

ImageWriter chain_graph(uint32_t n) {
  ImageWriter w;
  for (uint32_t i = 0; i < n; ++i) {
    w.add(test::kRecordFunc, i % 2 == 0 ? CoreType::AIC : CoreType::AIV,
          i == 0 ? std::vector<uint32_t>{} : std::vector<uint32_t>{i - 1});
  }
  return w;
}

void run_on_sim(bool serial, uint32_t threads, uint32_t clusters,
                const ImageWriter& writer = layered_graph(20, 30)) {
  platform::PlatformOptions config;
  config.sim.clusters = 8;
  config.sim.aicpu_threads = 4;
  config.sim.host_threads = 2;
  std::unique_ptr<platform::Platform> chip;
  ASSERT_TRUE(platform::create_platform("sim", config, &chip).is_ok());
  ASSERT_TRUE(chip->load_chip_runtime().is_ok());
  ASSERT_TRUE(chip->start_streams().is_ok());
  RunOptions options;
  options.threads = threads;
  options.clusters = clusters;
  options.device_clusters = config.sim.clusters;
  options.serial = serial;
  options.service_threads = 0;
  options.cores_known = false;
  ChipRun run(writer, options);
  run.args().services_addr = reinterpret_cast<uintptr_t>(&chip->services());
  run.args().clock_hz = chip->geometry().clock_hz;
  // The platform's loaded chip runtime (the scheduler and aicore rooms) runs the launch.
  platform::LaunchRequest programs;
  programs.launch_args_addr = reinterpret_cast<uintptr_t>(&run.args());
  programs.aicpu_threads = threads;
  programs.cores = config.sim.clusters * 3;
  programs.serial = serial;
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(chip->launch(programs).is_ok());
  const Status waited = chip->wait(120000);
  const double ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
  // Informational only (never asserted): launch-to-return time per task.
  std::printf("[ info     ] %zu tasks, %u schedulers, %u clusters%s: %.0f ns per task\n",
              writer.tasks().size(), threads, clusters, serial ? ", serial" : "",
              ns / static_cast<double>(writer.tasks().size()));
  ASSERT_TRUE(waited.is_ok()) << waited.to_string();
  EXPECT_EQ(run.code(), StatusCode::Ok) << run.detail();
  EXPECT_EQ(run.args().result.tasks_completed, writer.tasks().size());
  EXPECT_EQ(test::check_execution(writer, run.recorder(), options), "");
  chip->stop_streams();
}

TEST(SimPlatformRun, ConcurrentFourSchedulersTwentyFourCores) {
  run_on_sim(false, 4, 8);
}
TEST(SimPlatformRun, ConcurrentTwoSchedulersOneCluster) {
  run_on_sim(false, 2, 1);
}
TEST(SimPlatformRun, SerialLaunch) {
  run_on_sim(true, 1, 8);
}
TEST(SimPlatformRun, ConcurrentManyIndependentTasks) {
  run_on_sim(false, 4, 8, independent_graph(6000));
}
TEST(SimPlatformRun, ConcurrentLongChain) {
  run_on_sim(false, 4, 8, chain_graph(2000));
}
TEST(SimPlatformRun, SerialManyIndependentTasks) {
  run_on_sim(true, 1, 8, independent_graph(6000));
}

}  // namespace
}  // namespace chiprt::scheduler
