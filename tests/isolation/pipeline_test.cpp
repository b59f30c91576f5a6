// Pipelined runs (Worker::submit) on the isolated device, on both variants: a stream of normal
// runs, and a crash in the middle of one: the crashing run reports KernelCrashed, the run admitted
// after it and every later one DeviceFaulted naming the crash (never launched) until reset(),
// after which submitted runs work again.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "chiprt/worker.h"
#include "isolation_support.h"

namespace chiprt::isolation_test {
namespace {

using ::testing::HasSubstr;

class IsolatedPipeline : public ::testing::TestWithParam<RuntimeVariant> {};

std::vector<float> read_y(Worker& worker, const DeviceBuffer& y) {
  std::vector<float> out(kN);
  worker.copy_from(out.data(), y, kBytes);
  return out;
}

TEST_P(IsolatedPipeline, AStreamOfRunsThenACrashCancelsTheNextAndResetRecovers) {
  bus_address();  // mapped before the device process is forked
  Worker worker;
  worker.init(isolated_options());
  register_suite_callables(worker);
  const DeviceBuffer x = worker.malloc(kBytes);
  const DeviceBuffer y = worker.malloc(kBytes);
  const std::vector<float> xs = x_values();
  worker.copy_to(x, xs.data(), kBytes);
  const CallConfig config = run_config(GetParam(), /*serial=*/false);

  std::vector<RunHandle> normal;
  for (int i = 0; i < 6; ++i) {
    normal.push_back(worker.submit(kCallable, scenario_args(x, y, Scenario::Normal), config));
  }
  for (RunHandle& handle : normal) EXPECT_EQ(handle.wait().task_count, 2u);
  std::vector<float> expected(kN);
  for (uint64_t i = 0; i < kN; ++i) expected[i] = xs[i] + 3.0f;
  EXPECT_EQ(read_y(worker, y), expected);

  RunHandle crashing = worker.submit(
      kCallable, scenario_args(x, y, Scenario::KernelFault, TaskKind::Aiv, Fault::Segv), config);
  RunHandle next = worker.submit(kCallable, scenario_args(x, y, Scenario::Normal), config);
  try {
    crashing.wait();
    ADD_FAILURE() << "the crashing run succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::KernelCrashed) << e.what();
  }
  try {
    next.wait();
    ADD_FAILURE() << "the run after the crash succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::DeviceFaulted) << e.what();
    // Whether it was admitted before the crash was collected or after.
    EXPECT_THAT(e.message(), HasSubstr("was not launched: the device faulted earlier")) << e.what();
    EXPECT_THAT(e.message(), HasSubstr("SIGSEGV")) << e.what();
  }
  RunHandle refused = worker.submit(kCallable, scenario_args(x, y, Scenario::Normal), config);
  try {
    refused.wait();
    ADD_FAILURE() << "a run on the faulted device succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::DeviceFaulted) << e.what();
  }

  worker.reset();
  const DeviceBuffer x2 = worker.malloc(kBytes);
  const DeviceBuffer y2 = worker.malloc(kBytes);
  worker.copy_to(x2, xs.data(), kBytes);
  RunHandle first = worker.submit(kCallable, scenario_args(x2, y2, Scenario::Normal), config);
  RunHandle second = worker.submit(kCallable, scenario_args(x2, y2, Scenario::Normal), config);
  first.wait();
  second.wait();
  EXPECT_EQ(read_y(worker, y2), expected);
  worker.close();
  EXPECT_FALSE(has_unreaped_child());
}

INSTANTIATE_TEST_SUITE_P(BothVariants, IsolatedPipeline,
                         ::testing::Values(RuntimeVariant::HostBuildGraph,
                                           RuntimeVariant::TensormapRingbuffer),
                         [](const ::testing::TestParamInfo<RuntimeVariant>& info) {
                           return std::string(runtime_variant_name(info.param));
                         });

}  // namespace
}  // namespace chiprt::isolation_test
