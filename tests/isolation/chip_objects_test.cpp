// Chip objects (shared objects) on the isolated platform: kernels and the tensormap_ringbuffer
// orchestration load into the device process, the host_build_graph orchestration into the host,
// which calls it. A callable registered once keeps working across a reset (the Worker loads its
// objects again, the host's too), and the examples pass on both variants.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "chiprt/call_config.h"
#include "chiprt/callable.h"
#include "chiprt/tensor.h"
#include "chiprt/worker.h"
#include "example.h"
#include "isolation_support.h"
#include "support.h"

namespace chiprt::isolation_test {
namespace {

constexpr int32_t kObjectCallable = 2;

// y = x + 3 through the orchestration object, on `variant`.
void expect_object_orchestration_runs(Worker& worker, RuntimeVariant variant) {
  SCOPED_TRACE(std::string(runtime_variant_name(variant)));
  const DeviceBuffer x = worker.malloc(kBytes);
  const DeviceBuffer y = worker.malloc(kBytes);
  const std::vector<float> xs = x_values();
  worker.copy_to(x, xs.data(), kBytes);
  TaskArgs args;
  args.in(Tensor::make(x, {kN}, DataType::F32))
      .output_existing(Tensor::make(y, {kN}, DataType::F32));
  worker.run(kObjectCallable, args, run_config(variant, false));
  std::vector<float> got(kN);
  worker.copy_from(got.data(), y, kBytes);
  for (uint64_t i = 0; i < kN; ++i) EXPECT_EQ(got[i], xs[i] + 3) << "y[" << i << "]";
  worker.free(x);
  worker.free(y);
}

TEST(IsolatedChipObjects, OrchestrationObjectRunsOnBothVariantsAcrossAReset) {
  Worker worker;
  worker.init(isolated_options());
  worker.register_callable(
      kObjectCallable,
      CallableBuilder()
          .orchestration_object(examples::read_chip_object(kOrchestrationObjectTarget), {})
          .kernel_function(kAdd, CoreType::AIV, &add_kernel, {})
          .build());
  for (const RuntimeVariant variant :
       {RuntimeVariant::HostBuildGraph, RuntimeVariant::TensormapRingbuffer}) {
    expect_object_orchestration_runs(worker, variant);
  }
  worker.reset();
  for (const RuntimeVariant variant :
       {RuntimeVariant::TensormapRingbuffer, RuntimeVariant::HostBuildGraph}) {
    expect_object_orchestration_runs(worker, variant);
  }
}

TEST(IsolatedChipObjects, ExamplesPassOnBothVariants) {
  Worker worker;
  worker.init(isolated_options());
  for (const char* name : {"vector_example", "wavefront"}) {
    const examples::Example* example = examples::find_example(name);
    ASSERT_NE(example, nullptr) << name;
    for (const RuntimeVariant variant :
         {RuntimeVariant::HostBuildGraph, RuntimeVariant::TensormapRingbuffer}) {
      CallConfig config;
      config.runtime = variant;
      const examples::Outcome outcome = example->run(worker, example->cases.front(), config, {});
      EXPECT_TRUE(outcome.passed) << name << " on " << runtime_variant_name(variant) << ": "
                                  << outcome.message;
    }
  }
}

}  // namespace
}  // namespace chiprt::isolation_test
