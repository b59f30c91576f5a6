// DeviceRunner lifecycle: attach, init, launch shape, memory, callables, finalize.
#include "host/device_runner.h"

#include <elf.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "chiprt/callable.h"
#include "chiprt/orchestration.h"
#include "common/callable_format.h"
#include "host/log.h"
#include "host_test_support.h"
#include "support.h"

namespace chiprt::host {
namespace {

using test::make_sim;
using test::options_with_env;
using ::testing::HasSubstr;

void noop_orchestration(Orchestration&, const TaskArgs&) {}
void kernel_a(int64_t*) {}
void kernel_b(int64_t*) {}
void kernel_c(int64_t*) {}

std::vector<uint8_t> container_with(std::initializer_list<std::pair<int32_t, KernelEntry>> ks) {
  CallableBuilder builder;
  builder.orchestration_function(&noop_orchestration, ArgSignature{});
  for (const auto& [func_id, fn] : ks) builder.kernel_function(func_id, CoreType::AIV, fn, {});
  return builder.build();
}

template <class Fn>
Error expect_error(Fn&& fn, StatusCode code) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    return e;
  }
  ADD_FAILURE() << "expected Error(" << status_name(code) << ")";
  return Error(StatusCode::Ok, "");
}

class DeviceRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_ = log_level();
    set_log_level(LogLevel::Off);
    runner_ = std::make_unique<DeviceRunner>(make_sim(), options_with_env({}));
    runner_->attach(0);
  }
  void TearDown() override {
    runner_.reset();
    set_log_level(saved_);
  }
  std::vector<uint64_t> read_kernel_table() {
    std::vector<uint64_t> table(kMaxFuncId);
    EXPECT_TRUE(runner_->memory()
                    .copy_from_device(table.data(), runner_->kernel_table_addr(),
                                      table.size() * sizeof(uint64_t))
                    .is_ok());
    return table;
  }
  std::unique_ptr<DeviceRunner> runner_;
  LogLevel saved_ = LogLevel::Warn;
};

TEST_F(DeviceRunnerTest, AttachToAnotherDeviceWithoutFinalizeIsRefused) {
  runner_->attach(0);  // the same id again is fine
  Error e = expect_error([&] { runner_->attach(1); }, StatusCode::DeviceMismatch);
  EXPECT_THAT(e.message(), HasSubstr("attached to device 0"));
  EXPECT_THAT(e.message(), HasSubstr("device 1"));
  e = expect_error([&] { runner_->attach(-3); }, StatusCode::InvalidArgument);
  EXPECT_THAT(e.message(), HasSubstr("-3"));
}

TEST_F(DeviceRunnerTest, AnotherDeviceCanBeAttachedAfterFinalize) {
  runner_->finalize();
  runner_->attach(1);
  EXPECT_EQ(runner_->device_id(), 1);
  runner_->register_callable(0, container_with({{0, &kernel_a}}));
  runner_->finalize();
  runner_->attach(0);
  // Without finalize the platform stays bound to device 0.
  expect_error([&] { runner_->attach(1); }, StatusCode::DeviceMismatch);
  EXPECT_EQ(runner_->platform().attach(1).code(), StatusCode::DeviceMismatch);
}

TEST(DeviceRunnerStandalone, UseBeforeAttachIsNotInitialized) {
  DeviceRunner runner(make_sim(), options_with_env({}));
  Error e = expect_error([&] { runner.allocate(64); }, StatusCode::NotInitialized);
  EXPECT_THAT(e.message(), HasSubstr("attach"));
  expect_error([&] { runner.ensure_initialized(); }, StatusCode::NotInitialized);
  expect_error([&] { runner.run(0, TaskArgs{}); }, StatusCode::NotInitialized);
}

TEST(DeviceRunnerStandalone, TimeoutsAreResolvedOnceAtFirstAttach) {
  const LogLevel saved = log_level();
  set_log_level(LogLevel::Off);
  DeviceRunner runner(make_sim(), options_with_env({{kSchedulerTimeoutEnv, "300"},
                                                    {kOpExecuteTimeoutEnv, "600000"},
                                                    {kStreamSyncTimeoutEnv, "2500"},
                                                    {"UNRELATED", "1"}}));
  runner.attach(0);
  EXPECT_EQ(runner.timeouts().scheduler_ms, 300u);
  EXPECT_EQ(runner.timeouts().op_execute_us, 600000u);
  EXPECT_EQ(runner.timeouts().stream_sync_ms, 2500u);
  EXPECT_TRUE(runner.timeout_warnings().empty());

  DeviceRunner disordered(make_sim(), options_with_env({{kSchedulerTimeoutEnv, "3000"},
                                                        {kStreamSyncTimeoutEnv, "4000"}}));
  disordered.attach(0);
  ASSERT_EQ(disordered.timeout_warnings().size(), 1u);
  EXPECT_THAT(disordered.timeout_warnings()[0],
              HasSubstr("stream_sync_timeout > scheduler_timeout + 1500 ms"));
  EXPECT_EQ(disordered.timeouts().scheduler_ms, TimeoutConfig{}.scheduler_ms);
  set_log_level(saved);
}

TEST_F(DeviceRunnerTest, InitLatchesGeometryAndLaunchShape) {
  runner_->ensure_initialized();
  EXPECT_TRUE(runner_->initialized());
  EXPECT_EQ(runner_->geometry().clusters, 2u);
  EXPECT_NE(runner_->kernel_table_addr(), 0u);
  EXPECT_EQ(read_kernel_table(), std::vector<uint64_t>(kMaxFuncId, 0));

  CallConfig config;
  LaunchShape shape = runner_->resolve_launch_shape(config);
  EXPECT_EQ(shape.aicpu_threads, runner_->geometry().default_aicpu_threads);
  EXPECT_EQ(shape.clusters, 2u);
  EXPECT_EQ(shape.cores, 6u);
  EXPECT_FALSE(shape.serial);

  config.aicpu_thread_num = 3;
  config.cluster_count = 1;
  shape = runner_->resolve_launch_shape(config);
  EXPECT_EQ(shape.aicpu_threads, 3u);
  EXPECT_EQ(shape.cores, 3u);

  config.serial = true;
  shape = runner_->resolve_launch_shape(config);
  EXPECT_TRUE(shape.serial);
  EXPECT_EQ(shape.aicpu_threads, 1u);

  CallConfig bad;
  bad.aicpu_thread_num = 1;
  expect_error([&] { runner_->resolve_launch_shape(bad); }, StatusCode::InvalidConfig);
  bad = {};
  bad.cluster_count = 3;
  expect_error([&] { runner_->resolve_launch_shape(bad); }, StatusCode::InvalidConfig);
}

TEST(DeviceRunnerStandalone, SerialPlatformLaunchesOneThread) {
  DeviceRunner runner(make_sim(1, /*serial=*/true), options_with_env({}));
  runner.attach(0);
  LaunchShape shape = runner.resolve_launch_shape(CallConfig{});
  EXPECT_TRUE(shape.serial);
  EXPECT_EQ(shape.aicpu_threads, 1u);
}

TEST_F(DeviceRunnerTest, MemoryIsBoundsCheckedAgainstLiveAllocations) {
  DeviceBuffer buffer = runner_->allocate(256);
  std::vector<uint8_t> data(256, 7);
  runner_->copy_to_device(buffer.addr, data.data(), 256);
  Error e = expect_error([&] { runner_->copy_to_device(buffer.addr + 128, data.data(), 129); },
                         StatusCode::InvalidDevicePointer);
  EXPECT_THAT(e.message(), HasSubstr("+129"));
  runner_->memset(buffer.addr + 16, 0, 16);
  std::vector<uint8_t> back(256);
  runner_->copy_from_device(back.data(), buffer.addr, 256);
  EXPECT_EQ(back[15], 7);
  EXPECT_EQ(back[16], 0);
  EXPECT_EQ(back[32], 7);
  runner_->free(buffer.addr);
  expect_error([&] { runner_->free(buffer.addr); }, StatusCode::InvalidDevicePointer);
  expect_error([&] { runner_->memset(buffer.addr, 0, 1); }, StatusCode::InvalidDevicePointer);
}

TEST_F(DeviceRunnerTest, GraphDefinitionBufferThroughTheRunner) {
  const uint64_t addr = runner_->acquire_graph_definition_buffer(1, 0xfeed, 4096, 128);
  EXPECT_EQ(addr % 128, 0u);
  EXPECT_EQ(runner_->acquire_graph_definition_buffer(1, 0xfeed, 100, 128), addr);
  Error e = expect_error([&] { runner_->acquire_graph_definition_buffer(0, 1, 64, 3); },
                         StatusCode::InvalidArgument);
  EXPECT_THAT(e.message(), HasSubstr("alignment 3"));
}

TEST_F(DeviceRunnerTest, IdenticalContainersAreUploadedOnce) {
  const std::vector<uint8_t> bytes = container_with({{0, &kernel_a}});
  ParsedCallable parsed;
  ASSERT_TRUE(parse_callable(bytes, &parsed).is_ok());
  runner_->register_callable(1, bytes);
  const uint64_t after_first = runner_->bytes_in_use();
  runner_->register_callable(2, bytes);
  EXPECT_EQ(runner_->bytes_in_use(), after_first);  // no second device copy
  EXPECT_EQ(runner_->callables().upload_total(), 1u);
  EXPECT_EQ(runner_->callables().uploaded_container_count(), 1u);
  EXPECT_EQ(runner_->callables().upload_refcount(parsed.content_hash), 2u);

  runner_->unregister_callable(1);
  EXPECT_FALSE(runner_->has_callable(1));
  EXPECT_TRUE(runner_->has_callable(2));
  EXPECT_EQ(runner_->callables().upload_refcount(parsed.content_hash), 1u);
  EXPECT_EQ(runner_->callables().uploaded_container_count(), 1u);
  runner_->bind(2);  // the survivor still works
  EXPECT_EQ(read_kernel_table()[0], reinterpret_cast<uint64_t>(&kernel_a));

  runner_->unregister_callable(2);
  EXPECT_EQ(runner_->callables().uploaded_container_count(), 0u);
  EXPECT_LT(runner_->bytes_in_use(), after_first);

  // Different content is a separate upload.
  runner_->register_callable(3, bytes);
  runner_->register_callable(4, container_with({{0, &kernel_b}}));
  EXPECT_EQ(runner_->callables().uploaded_container_count(), 2u);
  EXPECT_EQ(runner_->callables().upload_total(), 3u);
}

TEST_F(DeviceRunnerTest, CallableIdRangeDuplicateEmptyAndMalformed) {
  const std::vector<uint8_t> bytes = container_with({{0, &kernel_a}});
  Error e = expect_error([&] { runner_->register_callable(-1, bytes); },
                         StatusCode::CallableIdOutOfRange);
  EXPECT_THAT(e.message(), HasSubstr("callable id -1 is outside [0, 64)"));
  expect_error([&] { runner_->register_callable(kMaxCallableIds, bytes); },
               StatusCode::CallableIdOutOfRange);

  runner_->register_callable(kMaxCallableIds - 1, bytes);
  e = expect_error([&] { runner_->register_callable(kMaxCallableIds - 1, bytes); },
                   StatusCode::DuplicateCallable);
  EXPECT_THAT(e.message(), HasSubstr("already registered"));

  e = expect_error([&] { runner_->register_callable(5, std::span<const uint8_t>()); },
                   StatusCode::EmptyCallable);
  EXPECT_THAT(e.message(), HasSubstr("callable id 5"));

  const std::vector<uint8_t> truncated(bytes.begin(), bytes.begin() + bytes.size() / 2);
  e = expect_error([&] { runner_->register_callable(6, truncated); },
                   StatusCode::MalformedCallable);
  EXPECT_THAT(e.message(), HasSubstr("callable id 6"));
  EXPECT_FALSE(runner_->has_callable(6));

  std::vector<uint8_t> corrupted = bytes;
  corrupted[0] ^= 0xFF;  // magic
  expect_error([&] { runner_->register_callable(7, corrupted); }, StatusCode::MalformedCallable);

  expect_error([&] { runner_->unregister_callable(9); }, StatusCode::UnknownCallable);
  EXPECT_EQ(runner_->callables().uploaded_container_count(), 1u);
}

TEST_F(DeviceRunnerTest, DeviceOrchestrationLoadsTheChipSideEntryAndRuns) {
  runner_->register_callable(0, container_with({{0, &kernel_a}}),
                             RuntimeVariant::TensormapRingbuffer);
  ASSERT_TRUE(runner_->has_callable(0));
  const RegisteredCallable* reg = runner_->callables().find(0);
  ASSERT_NE(reg, nullptr);
  EXPECT_EQ(reg->variant, RuntimeVariant::TensormapRingbuffer);
  EXPECT_EQ(reg->orchestration, nullptr) << "device orchestration is not loaded on the host";
  // In-process objects: the chip shares the process, so the entry is the function itself.
  EXPECT_EQ(reg->device_orchestration, reinterpret_cast<uint64_t>(&noop_orchestration));
  EXPECT_FALSE(reg->device_copy.empty());
  EXPECT_EQ(reg->kernel_count, 1);
  EXPECT_EQ(runner_->callables().uploaded_container_count(), 1u);
  // The same container as host orchestration shares the upload.
  runner_->register_callable(1, container_with({{0, &kernel_a}}), RuntimeVariant::HostBuildGraph);
  EXPECT_EQ(runner_->callables().uploaded_container_count(), 1u);
  EXPECT_EQ(runner_->callables().find(1)->device_orchestration, 0u);
  runner_->bind(0);
  EXPECT_EQ(read_kernel_table()[0], reinterpret_cast<uint64_t>(&kernel_a));

  CallConfig config;
  config.runtime = RuntimeVariant::TensormapRingbuffer;
  EXPECT_EQ(runner_->run(0, TaskArgs{}, config).task_count, 0u);
  // A host_build_graph registration runs on the ring too: its chip-side entry loads on first use.
  EXPECT_EQ(runner_->run(1, TaskArgs{}, config).task_count, 0u);
  EXPECT_EQ(runner_->callables().find(1)->device_orchestration,
            reinterpret_cast<uint64_t>(&noop_orchestration));
  // And the other way round.
  config.runtime = RuntimeVariant::HostBuildGraph;
  EXPECT_EQ(runner_->run(0, TaskArgs{}, config).task_count, 0u);
  EXPECT_NE(runner_->callables().find(0)->orchestration, nullptr);
  runner_->unregister_callable(0);
  runner_->unregister_callable(1);
  EXPECT_EQ(runner_->callables().uploaded_container_count(), 0u);
  expect_error([&] { runner_->run(0, TaskArgs{}, config); }, StatusCode::UnknownCallable);
}

TEST_F(DeviceRunnerTest, UnloadableSharedObjectFailsCleanly) {
  const std::vector<uint8_t> not_an_elf(512, 0x5A);
  CallableBuilder builder;
  builder.orchestration_object(not_an_elf, ArgSignature{});
  builder.kernel_function(0, CoreType::AIV, &kernel_a, {});
  runner_->ensure_initialized();
  const uint64_t before = runner_->bytes_in_use();
  Error e =
      expect_error([&] { runner_->register_callable(0, builder.build()); }, StatusCode::LoadFailed);
  EXPECT_THAT(e.message(), HasSubstr("callable id 0 orchestration"));
  EXPECT_FALSE(runner_->has_callable(0));
  EXPECT_EQ(runner_->callables().uploaded_container_count(), 0u);
  EXPECT_EQ(runner_->callables().loaded_object_count(), 0u);
  EXPECT_EQ(runner_->bytes_in_use(), before);
}

// The case: a kernel object cut inside its loadable segments made the loader map pages
// past the end of its memory file (SIGBUS inside register_callable).
TEST_F(DeviceRunnerTest, TruncatedKernelObjectIsLoadFailedNamingTheKernelAndTheField) {
  const std::vector<uint8_t> kernel = examples::read_chip_object("vector_example_add");
  Elf64_Ehdr ehdr;
  std::memcpy(&ehdr, kernel.data(), sizeof(ehdr));
  uint64_t loaded_end = 0;  // the end of the file bytes the PT_LOAD segments map
  for (std::size_t i = 0; i < ehdr.e_phnum; ++i) {
    Elf64_Phdr ph;
    std::memcpy(&ph, kernel.data() + ehdr.e_phoff + i * sizeof(ph), sizeof(ph));
    if (ph.p_type == PT_LOAD) loaded_end = std::max(loaded_end, ph.p_offset + ph.p_filesz);
  }
  ASSERT_GT(loaded_end, 4096u);
  const std::vector<uint8_t> cut(kernel.begin(), kernel.begin() + (loaded_end - 100));
  auto container = [](std::span<const uint8_t> object) {
    return CallableBuilder()
        .orchestration_function(&noop_orchestration, ArgSignature{})
        .kernel_object(3, CoreType::AIV, object, {})
        .build();
  };
  runner_->ensure_initialized();
  const uint64_t before = runner_->bytes_in_use();
  Error e =
      expect_error([&] { runner_->register_callable(0, container(cut)); }, StatusCode::LoadFailed);
  EXPECT_THAT(e.message(), HasSubstr("kernel func_id 3"));
  EXPECT_THAT(e.message(), HasSubstr("(PT_LOAD): p_offset + p_filesz = " +
                                     std::to_string(loaded_end) + " exceeds the object size " +
                                     std::to_string(loaded_end - 100) + " (truncated?)"));
  EXPECT_FALSE(runner_->has_callable(0));
  EXPECT_EQ(runner_->callables().loaded_object_count(), 0u);
  EXPECT_EQ(runner_->bytes_in_use(), before);
  // The runner is unharmed: the whole object registers under the same id.
  runner_->register_callable(0, container(kernel));
  EXPECT_TRUE(runner_->has_callable(0));
}

TEST_F(DeviceRunnerTest, BindReplaysExactlyTheActiveCallablesKernels) {
  runner_->register_callable(10, container_with({{0, &kernel_a}, {1, &kernel_b}}));
  runner_->register_callable(11, container_with({{1, &kernel_c}}));
  runner_->bind(10);
  std::vector<uint64_t> table = read_kernel_table();
  EXPECT_EQ(table[0], reinterpret_cast<uint64_t>(&kernel_a));
  EXPECT_EQ(table[1], reinterpret_cast<uint64_t>(&kernel_b));
  runner_->bind(11);
  table = read_kernel_table();
  EXPECT_EQ(table[0], 0u) << "entry of the earlier callable must be cleared";
  EXPECT_EQ(table[1], reinterpret_cast<uint64_t>(&kernel_c));
  for (int f = 2; f < kMaxFuncId; ++f) EXPECT_EQ(table[f], 0u) << "func_id " << f;
  expect_error([&] { runner_->bind(12); }, StatusCode::UnknownCallable);
}

TEST_F(DeviceRunnerTest, FinalizeReleasesEverythingAndIsIdempotent) {
  runner_->allocate(1000);  // a user buffer the caller forgot
  runner_->register_callable(0, container_with({{0, &kernel_a}}));
  runner_->acquire_graph_definition_buffer(0, 1, 4096, 64);
  ASSERT_TRUE(runner_->arenas().setup(0, {4096, 4096, 4096}).is_ok());
  EXPECT_GT(runner_->bytes_in_use(), 0u);
  runner_->finalize();
  EXPECT_EQ(runner_->bytes_in_use(), 0u);
  EXPECT_EQ(runner_->memory().tracked_count(), 0u);
  EXPECT_FALSE(runner_->has_callable(0));
  EXPECT_FALSE(runner_->initialized());
  EXPECT_FALSE(runner_->attached());
  runner_->finalize();
  // The same device can be attached and used again.
  runner_->attach(0);
  runner_->register_callable(0, container_with({{0, &kernel_a}}));
  EXPECT_TRUE(runner_->has_callable(0));
}

TEST_F(DeviceRunnerTest, AbandonForgetsWithoutTouchingAndRefusesWorkUntilReset) {
  runner_->allocate(1000);
  runner_->register_callable(0, container_with({{0, &kernel_a}}));
  runner_->abandon_after_fault();
  EXPECT_TRUE(runner_->faulted());
  EXPECT_EQ(runner_->memory().tracked_count(), 0u);
  Error e = expect_error([&] { runner_->run(0, TaskArgs{}); }, StatusCode::DeviceFaulted);
  EXPECT_THAT(e.message(), HasSubstr("faulted earlier"));
  expect_error([&] { runner_->allocate(10); }, StatusCode::DeviceFaulted);
  expect_error(
      [&] {
        runner_->register_callable(1, container_with({{0, &kernel_a}}));
      },
      StatusCode::DeviceFaulted);
  runner_->finalize();  // only forgets; still faulted
  EXPECT_TRUE(runner_->faulted());
  runner_->reset();
  EXPECT_FALSE(runner_->faulted());
  runner_->attach(0);
  runner_->register_callable(1, container_with({{0, &kernel_a}}));
  EXPECT_TRUE(runner_->has_callable(1));
}

}  // namespace
}  // namespace chiprt::host
