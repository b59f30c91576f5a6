// Run arguments against live device memory, and the prebuilt-image replay against images other
// runs write to the same arena.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <span>
#include <vector>

#include "chiprt/callable.h"
#include "chiprt/graph_export.h"
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

// c[i] += args[1] over kElements.
void add_scalar_kernel(int64_t* args) {
  float* c = kernel::tensor_arg<float>(args, 0);
  const auto f = kernel::scalar_arg<float>(args, 1);
  for (uint64_t i = 0; i < kElements; ++i) c[i] += f;
}

// State the graph depends on that the caller keys by CallConfig::replay_key instead of copying.
float g_external_addend = 0.0f;

// The user data is a program, one float addend per task (c += addend); a non-zero
// g_external_addend adds one more task.
void program_orchestration(Orchestration& orch, const TaskArgs& args) {
  const std::span<const std::byte> program = orch.user_data();
  std::vector<float> addends(program.size() / sizeof(float));
  if (!addends.empty()) std::memcpy(addends.data(), program.data(), program.size());
  if (g_external_addend != 0.0f) addends.push_back(g_external_addend);
  for (float addend : addends) {
    TaskArgs task;
    task.inout(args.tensor(0)).scalar(addend);
    orch.submit(0, CoreType::AIV, task);
  }
}

class UserDataReplay : public ::testing::Test {
 protected:
  void SetUp() override {
    worker_.init(small_options());
    worker_.register_callable(
        0, CallableBuilder()
               .orchestration_function(&program_orchestration, ArgSignature::of({ArgTag::InOut}, 0))
               .kernel_function(0, CoreType::AIV, &add_scalar_kernel,
                                ArgSignature::of({ArgTag::InOut}, 1))
               .build());
    c_ = worker_.malloc(kElements * sizeof(float));
    worker_.memset(c_, 0, kElements * sizeof(float));
    g_external_addend = 0.0f;
  }
  void TearDown() override { g_external_addend = 0.0f; }

  // Runs the program in `program` (replay_graph, `replay_key`); returns c[0] afterwards (every
  // element of c is the same).
  float run(const std::vector<float>& program, uint64_t replay_key = 0) {
    CallConfig config = small_config();
    config.replay_graph = true;
    config.replay_key = replay_key;
    config.user_data = std::as_bytes(std::span(program));
    TaskArgs args;
    args.inout(Tensor::make(c_, {kElements}, DataType::F32));
    worker_.run(0, args, config);
    std::vector<float> out(kElements);
    worker_.copy_from(out.data(), c_, kElements * sizeof(float));
    for (uint64_t i = 1; i < kElements; ++i) EXPECT_EQ(out[i], out[0]) << "element " << i;
    return out[0];
  }
  uint64_t replayed() { return host::runner_of(worker_).replayed_runs(); }

  Worker worker_;
  DeviceBuffer c_;
};

TEST_F(UserDataReplay, TheSameBytesReplayAndChangedBytesRebuild) {
  std::vector<float> program = {1.0f, 2.0f};
  EXPECT_EQ(run(program), 3.0f);  // built and cached
  EXPECT_EQ(replayed(), 0u);
  // The same bytes from another buffer: the key is the bytes, not where they lie.
  const std::vector<float> same_program = program;
  EXPECT_EQ(run(same_program), 6.0f);
  EXPECT_EQ(replayed(), 1u);
  // The caller's buffer rewritten in place (same address, same size, new program): a replay
  // keyed on anything but the bytes would add 3 again.
  program = {5.0f, 0.5f};
  EXPECT_EQ(run(program), 11.5f);
  EXPECT_EQ(replayed(), 1u);
  EXPECT_EQ(run(program), 17.0f);  // and the new program is cached
  EXPECT_EQ(replayed(), 2u);
  // A program of another length, then none at all: both rebuild.
  EXPECT_EQ(run({1.0f, 1.0f, 1.0f}), 20.0f);
  EXPECT_EQ(run({}), 20.0f);
  EXPECT_EQ(replayed(), 2u);
  EXPECT_EQ(run({}), 20.0f);
  EXPECT_EQ(replayed(), 3u);
}

TEST_F(UserDataReplay, TheReplayKeyRebuildsWhenTheCallerChangesIt) {
  g_external_addend = 1.0f;
  EXPECT_EQ(run({}, 7), 1.0f);
  EXPECT_EQ(run({}, 7), 2.0f);
  EXPECT_EQ(replayed(), 1u);
  // State outside the key changed but the key did not: the documented stale replay.
  g_external_addend = 10.0f;
  EXPECT_EQ(run({}, 7), 3.0f);
  EXPECT_EQ(replayed(), 2u);
  // A new key builds the graph afresh with the new state, and replays from then on.
  EXPECT_EQ(run({}, 8), 13.0f);
  EXPECT_EQ(replayed(), 2u);
  EXPECT_EQ(run({}, 8), 23.0f);
  EXPECT_EQ(replayed(), 3u);
  // The user data and the key are both part of the key.
  EXPECT_EQ(run({0.5f}, 8), 33.5f);
  EXPECT_EQ(replayed(), 3u);
}

TEST_F(UserDataReplay, ExportGraphGivesTheOrchestrationTheUserData) {
  const std::vector<float> program = {1.0f, 2.0f, 3.0f};
  CallConfig config = small_config();
  config.user_data = std::as_bytes(std::span(program));
  TaskArgs args;
  args.inout(Tensor::make(c_, {kElements}, DataType::F32));
  EXPECT_EQ(worker_.export_graph(0, args, config).tasks.size(), 3u);
  config.user_data = {};
  EXPECT_EQ(worker_.export_graph(0, args, config).tasks.size(), 0u);
}

}  // namespace
}  // namespace chiprt
