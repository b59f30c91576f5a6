// Chip objects (shared objects) on the isolated platform: kernels and the tensormap_ringbuffer
// orchestration load into the device process, the host_build_graph orchestration into the host,
// which calls it. A callable registered once keeps working across a reset (the Worker loads its
// objects again, the host's too), and the examples pass on both variants (paged_attention's
// kernels: several symbols of one object).
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

std::vector<uint8_t> object_callable() {
  return CallableBuilder()
      .orchestration_object(examples::read_chip_object(kOrchestrationObjectTarget), {})
      .kernel_function(kAdd, CoreType::AIV, &add_kernel, {})
      .build();
}

TEST(IsolatedChipObjects, OrchestrationObjectRunsOnBothVariantsAcrossAReset) {
  Worker worker;
  worker.init(isolated_options());
  worker.register_callable(kObjectCallable, object_callable());
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
  // paged_attention: five kernels of one object, each resolved in the device process.
  for (const char* name : {"vector_example", "wavefront", "paged_attention"}) {
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

// Objects loaded in process before a device process is forked stay in the device's inherited
// link map under their names; the device's own objects, whose memory files get fd numbers of their
// own there (the device closed the host's), must not be answered with them by the dynamic loader,
// which finds objects by name first.
TEST(IsolatedChipObjects, ObjectsLoadedInProcessBeforeTheForkDoNotShadowTheDevicesOwn) {
#if defined(__SANITIZE_THREAD__)
  // The in-process Worker's chip threads are alive at the fork: ThreadSanitizer's runtime cannot
  // start threads in such a child (a documented limit of the isolated device under TSan).
  GTEST_SKIP() << "needs host threads alive at a fork, which ThreadSanitizer does not support";
#endif
  // An in-process Worker, then an isolated one running the same examples in one process: each
  // device object must be its own, not a host object that had the same fd number. Whether fd
  // numbers meet depends on the process's descriptors; the CLI test
  // ChiprtBenchCli.IsolationBothMeasuresEveryWorkload is the sequence that met them.
  WorkerOptions in_process = isolated_options();
  in_process.sim.isolation = SimIsolation::None;
  Worker host_side;
  host_side.init(in_process);
  Worker worker;
  for (Worker* current : {&host_side, &worker}) {
    if (current == &worker) worker.init(isolated_options());
    for (const char* name : {"vector_example", "bgemm", "wavefront", "paged_attention"}) {
      const examples::Example* example = examples::find_example(name);
      ASSERT_NE(example, nullptr) << name;
      CallConfig config;
      config.runtime = RuntimeVariant::HostBuildGraph;
      const examples::Outcome outcome = example->run(*current, example->cases.front(), config, {});
      EXPECT_TRUE(outcome.passed) << name << (current == &worker ? " isolated" : " in process")
                                  << ": " << outcome.message;
    }
  }
}

}  // namespace
}  // namespace chiprt::isolation_test
