// Run arguments against live device memory, and the prebuilt-image replay against images other
// runs write to the same arena.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "chiprt/callable.h"
#include "chiprt/kernel.h"
#include "chiprt/orchestration.h"
#include "chiprt/worker.h"
#include "host/device_runner.h"
#include "host/worker_access.h"
#include "host_test_support.h"

namespace chiprt {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kElements = 256;

// c[i] += a[i] over args[2] elements.
void accumulate_kernel(int64_t* args) {
  const float* a = kernel::tensor_arg<float>(args, 0);
  float* c = kernel::tensor_arg<float>(args, 1);
  const uint64_t n = kernel::scalar_arg<uint64_t>(args, 2);
  for (uint64_t i = 0; i < n; ++i) c[i] += a[i];
}

void accumulate_orchestration(Orchestration& orch, const TaskArgs& args) {
  TaskArgs task;
  task.in(args.tensor(0)).inout(args.tensor(1)).scalar(args.tensor(0).numel());
  orch.submit(0, CoreType::AIV, task);
}

std::vector<uint8_t> accumulate_callable() {
  return CallableBuilder()
      .orchestration_function(&accumulate_orchestration,
                              ArgSignature::of({ArgTag::In, ArgTag::InOut}, 0))
      .kernel_function(0, CoreType::AIV, &accumulate_kernel,
                       ArgSignature::of({ArgTag::In, ArgTag::InOut}, 1))
      .build();
}

WorkerOptions small_options() {
  return host::test::small_worker_options({.clusters = 1});
}

CallConfig small_config() {
  return host::test::small_call_config(64);
}

TaskArgs accumulate_args(const DeviceBuffer& a, const DeviceBuffer& c) {
  TaskArgs args;
  args.in(Tensor::make(a, {kElements}, DataType::F32))
      .inout(Tensor::make(c, {kElements}, DataType::F32));
  return args;
}

void expect_invalid_pointer(Worker& worker, const TaskArgs& args, const std::string& text) {
  try {
    worker.run(0, args, small_config());
    ADD_FAILURE() << "expected InvalidDevicePointer";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::InvalidDevicePointer) << e.what();
    EXPECT_THAT(e.message(), HasSubstr(text));
    EXPECT_THAT(e.message(), HasSubstr("not inside a live device allocation"));
  }
}

TEST(RunArguments, BuffersOutsideLiveAllocationsAreRefusedBeforeTheRun) {
  Worker worker;
  worker.init(small_options());
  worker.register_callable(0, accumulate_callable());
  const uint64_t bytes = kElements * sizeof(float);
  DeviceBuffer a = worker.malloc(bytes);
  DeviceBuffer c = worker.malloc(bytes);
  worker.memset(a, 0, bytes);
  worker.memset(c, 0, bytes);

  // An address the device never handed out.
  expect_invalid_pointer(worker, accumulate_args(a, DeviceBuffer{0x1000, 4096}),
                         "argument 1 (inout): buffer 0x1000 of 4096 bytes");
  // A freed buffer.
  DeviceBuffer freed = worker.malloc(bytes);
  worker.free(freed);
  expect_invalid_pointer(worker, accumulate_args(freed, c), "argument 0 (in)");
  // A buffer claiming more bytes than its allocation holds.
  DeviceBuffer small = worker.malloc(64);
  expect_invalid_pointer(worker, accumulate_args(a, DeviceBuffer{small.addr, bytes}),
                         "argument 1 (inout)");

  // Valid buffers still run, and the device was never faulted.
  worker.run(0, accumulate_args(a, c), small_config());
  EXPECT_FALSE(host::runner_of(worker).faulted());
}

TEST(RunArguments, ReplayAfterAnotherImageInTheSameArenaUsesItsOwnImage) {
  Worker worker;
  worker.init(small_options());
  worker.register_callable(0, accumulate_callable());
  const uint64_t bytes = kElements * sizeof(float);
  std::vector<float> ones(kElements, 1.0f);
  std::vector<float> twos(kElements, 2.0f);
  DeviceBuffer a1 = worker.malloc(bytes);
  DeviceBuffer c1 = worker.malloc(bytes);
  DeviceBuffer a2 = worker.malloc(bytes);
  DeviceBuffer c2 = worker.malloc(bytes);
  worker.copy_to(a1, ones.data(), bytes);
  worker.copy_to(a2, twos.data(), bytes);
  worker.memset(c1, 0, bytes);
  worker.memset(c2, 0, bytes);
  const TaskArgs graph_a = accumulate_args(a1, c1);
  const TaskArgs graph_b = accumulate_args(a2, c2);

  CallConfig replay = small_config();
  replay.replay_graph = true;
  worker.run(0, graph_a, replay);  // builds and caches A: c1 = 1
  worker.run(0, graph_a, replay);  // replays A: c1 = 2
  EXPECT_EQ(host::runner_of(worker).replayed_runs(), 1u);
  worker.run(0, graph_b, small_config());  // B, same sizes, written over A's image: c2 = 2
  worker.run(0, graph_a, replay);          // must run A again: c1 = 3
  EXPECT_EQ(host::runner_of(worker).replayed_runs(), 2u);
  worker.run(0, graph_a, replay);  // and once more from the cache: c1 = 4
  EXPECT_EQ(host::runner_of(worker).replayed_runs(), 3u);

  std::vector<float> out(kElements);
  worker.copy_from(out.data(), c1, bytes);
  for (uint64_t i = 0; i < kElements; ++i) ASSERT_EQ(out[i], 4.0f) << "c1 element " << i;
  worker.copy_from(out.data(), c2, bytes);
  for (uint64_t i = 0; i < kElements; ++i) ASSERT_EQ(out[i], 2.0f) << "c2 element " << i;
}

}  // namespace
}  // namespace chiprt
