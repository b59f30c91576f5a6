// Worker::reset on the in-process sim: a fresh device with every callable registered again (both
// variants run after it), old buffers lost with an error naming the reset, reset_count, the
// reset refused from inside a run, and the usual state errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "chiprt/callable.h"
#include "chiprt/kernel.h"
#include "chiprt/orchestration.h"
#include "chiprt/worker.h"
#include "fault_platform.h"
#include "host/device_memory.h"
#include "host/run_steps.h"
#include "host/worker_access.h"
#include "host_test_support.h"

namespace chiprt {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr uint64_t kN = 32;

void add_one(int64_t* args) {
  float* data = kernel::tensor_arg<float>(args, 0);
  for (uint64_t i = 0; i < kN; ++i) data[i] += 1.0f;
}
void add_one_task(Orchestration& orch, const TaskArgs& args) {
  TaskArgs task;
  task.inout(args.tensor(0));
  orch.submit(0, CoreType::AIV, task);
}

Worker* g_worker = nullptr;
StatusCode g_reset_code = StatusCode::Ok;
void resetting_orchestration(Orchestration& orch, const TaskArgs& args) {
  try {
    g_worker->reset();
  } catch (const Error& e) {
    g_reset_code = e.code();
  }
  add_one_task(orch, args);
}

std::vector<uint8_t> add_one_callable(OrchestrationEntry orchestration = &add_one_task) {
  return CallableBuilder()
      .orchestration_function(orchestration, ArgSignature::of({ArgTag::InOut}))
      .kernel_function(0, CoreType::AIV, &add_one, ArgSignature::of({ArgTag::InOut}))
      .build();
}

CallConfig config_for(RuntimeVariant variant) {
  CallConfig config = host::test::small_call_config(64);
  config.runtime = variant;
  return config;
}

std::vector<float> run_add_one(Worker& worker, int32_t id, DeviceBuffer buffer,
                               RuntimeVariant variant) {
  TaskArgs args;
  args.inout(Tensor::make(buffer, {kN}, DataType::F32));
  worker.run(id, args, config_for(variant));
  std::vector<float> out(kN);
  worker.copy_from(out.data(), buffer, buffer.size);
  return out;
}

using host::test::error_of;

class WorkerReset : public ::testing::TestWithParam<RuntimeVariant> {};

TEST_P(WorkerReset, ReplacesTheDeviceKeepsCallablesAndLosesBuffers) {
  Worker worker;
  worker.init(host::test::small_worker_options());
  worker.register_callable(3, add_one_callable());
  const uint64_t registered_bytes = worker.device_bytes_in_use();  // status block and the upload
  const DeviceBuffer old_buffer = worker.malloc(kN * sizeof(float));
  worker.memset(old_buffer, 0, old_buffer.size);
  EXPECT_EQ(run_add_one(worker, 3, old_buffer, GetParam()), std::vector<float>(kN, 1.0f));
  EXPECT_EQ(worker.reset_count(), 0u);

  worker.reset();
  EXPECT_EQ(worker.reset_count(), 1u);
  EXPECT_TRUE(worker.has_callable(3));
  // A fresh device: only the status block and the callable again (no arenas, no buffers); the
  // old buffer's every use says it was lost.
  EXPECT_EQ(worker.device_bytes_in_use(), registered_bytes);
  const std::string lost = "device buffer " + host::hex(old_buffer.addr) + " (" +
                           std::to_string(old_buffer.size) +
                           " bytes) was lost when the device was reset (reset 1); allocate a "
                           "new one";
  float host_data[kN] = {};
  for (const std::function<void()>& use : std::vector<std::function<void()>>{
           [&] { worker.copy_to(old_buffer, host_data, sizeof(host_data)); },
           [&] { worker.copy_from(host_data, old_buffer, sizeof(host_data)); },
           [&] { worker.memset(old_buffer, 0, sizeof(host_data)); },
           [&] { run_add_one(worker, 3, old_buffer, GetParam()); },
           [&] { worker.free(old_buffer); }}) {
    const Error e = error_of(use);
    EXPECT_EQ(e.code(), StatusCode::InvalidDevicePointer) << e.what();
    EXPECT_THAT(e.message(), HasSubstr(lost));
  }

  // The callable runs on the new device, on either variant.
  const DeviceBuffer fresh = worker.malloc(kN * sizeof(float));
  worker.memset(fresh, 0, fresh.size);
  EXPECT_EQ(run_add_one(worker, 3, fresh, RuntimeVariant::HostBuildGraph),
            std::vector<float>(kN, 1.0f));
  EXPECT_EQ(run_add_one(worker, 3, fresh, RuntimeVariant::TensormapRingbuffer),
            std::vector<float>(kN, 2.0f));

  // A second reset counts; the buffer lost now names reset 2.
  worker.reset();
  EXPECT_EQ(worker.reset_count(), 2u);
  const Error e = error_of([&] { worker.free(fresh); });
  EXPECT_EQ(e.code(), StatusCode::InvalidDevicePointer);
  EXPECT_THAT(e.message(), HasSubstr("(reset 2)"));
}

INSTANTIATE_TEST_SUITE_P(BothVariants, WorkerReset, ::testing::ValuesIn(host::test::kBothVariants),
                         [](const ::testing::TestParamInfo<RuntimeVariant>& info) {
                           return std::string(runtime_variant_name(info.param));
                         });

// A platform whose next allocation returns a chosen address, as a fresh device may.
class ChosenAddressPlatform : public host::test::FaultPlatform {
 public:
  ChosenAddressPlatform()
      : FaultPlatform(host::test::make_sim(), std::make_shared<host::test::FaultControl>()) {}
  Status alloc(uint64_t bytes, uint64_t align, DeviceBuffer* out) override {
    if (next_addr == 0) return FaultPlatform::alloc(bytes, align, out);
    *out = DeviceBuffer{next_addr, bytes};
    next_addr = 0;
    return Status::ok();
  }
  uint64_t next_addr = 0;
};

// An address the new device hands out again is a live buffer, no longer "lost".
TEST(LostBuffers, AnAddressAllocatedAgainIsNoLongerLost) {
  ChosenAddressPlatform platform;
  host::DeviceMemory memory(&platform);
  DeviceBuffer old_buffer;
  ASSERT_TRUE(memory.allocate(4096, host::kDeviceAlign, host::AllocationOwner::User, &old_buffer));
  DeviceBuffer other;
  ASSERT_TRUE(memory.allocate(4096, host::kDeviceAlign, host::AllocationOwner::User, &other));
  memory.forget_as_lost(1);
  EXPECT_THAT(memory.lost_buffer_text(old_buffer.addr + 100), HasSubstr("(reset 1)"));
  // The new device hands the middle of the old buffer out again.
  platform.next_addr = old_buffer.addr + 1024;
  DeviceBuffer again;
  ASSERT_TRUE(memory.allocate(64, host::kDeviceAlign, host::AllocationOwner::User, &again));
  EXPECT_EQ(memory.lost_buffer_text(old_buffer.addr), "");
  EXPECT_THAT(memory.lost_buffer_text(other.addr), HasSubstr("(reset 1)"));  // not touched
  memory.abandon();
}

TEST(WorkerResetState, RefusedInsideARunBeforeInitAndAfterClose) {
  Worker worker;
  EXPECT_EQ(error_of([&] { worker.reset(); }).code(), StatusCode::NotInitialized);
  worker.init(host::test::small_worker_options());
  worker.register_callable(0, add_one_callable(&resetting_orchestration));
  g_worker = &worker;
  g_reset_code = StatusCode::Ok;
  const DeviceBuffer buffer = worker.malloc(kN * sizeof(float));
  worker.memset(buffer, 0, buffer.size);
  EXPECT_EQ(run_add_one(worker, 0, buffer, RuntimeVariant::HostBuildGraph),
            std::vector<float>(kN, 1.0f));
  EXPECT_EQ(g_reset_code, StatusCode::ReentrantCall);
  EXPECT_EQ(worker.reset_count(), 0u);
  g_worker = nullptr;
  worker.close();
  EXPECT_EQ(error_of([&] { worker.reset(); }).code(), StatusCode::AlreadyClosed);
}

}  // namespace
}  // namespace chiprt
