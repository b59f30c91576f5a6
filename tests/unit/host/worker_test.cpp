// Worker API misuse: every error the Worker reports, with its message.
#include "chiprt/worker.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "chiprt/callable.h"
#include "chiprt/orchestration.h"
#include "host/device_runner.h"
#include "host/log.h"
#include "host/worker_access.h"
#include "host_test_support.h"

namespace chiprt {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

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

void noop_orchestration(Orchestration&, const TaskArgs&) {}
void noop_kernel(int64_t*) {}

std::vector<uint8_t> callable_with_signature(const ArgSignature& sig) {
  return CallableBuilder()
      .orchestration_function(&noop_orchestration, sig)
      .kernel_function(0, CoreType::AIV, &noop_kernel, ArgSignature{})
      .build();
}

WorkerOptions small_options() {
  return host::test::small_worker_options({.clusters = 1, .host_threads = 1});
}

TEST(WorkerMisuse, EveryCallBeforeInitIsNotInitialized) {
  Worker worker;
  EXPECT_FALSE(worker.initialized());
  std::vector<uint8_t> bytes = callable_with_signature({});
  Error e = expect_error([&] { worker.run(0, TaskArgs{}); }, StatusCode::NotInitialized);
  EXPECT_THAT(e.message(), HasSubstr("Worker::run called before init()"));
  expect_error([&] { worker.register_callable(0, bytes); }, StatusCode::NotInitialized);
  expect_error([&] { worker.unregister_callable(0); }, StatusCode::NotInitialized);
  expect_error([&] { worker.has_callable(0); }, StatusCode::NotInitialized);
  expect_error([&] { worker.malloc(16); }, StatusCode::NotInitialized);
  expect_error([&] { worker.free(DeviceBuffer{64, 64}); }, StatusCode::NotInitialized);
  int x = 0;
  expect_error([&] { worker.copy_to(DeviceBuffer{64, 64}, &x, 4); }, StatusCode::NotInitialized);
  expect_error([&] { worker.copy_from(&x, DeviceBuffer{64, 64}, 4); }, StatusCode::NotInitialized);
  expect_error([&] { worker.memset(DeviceBuffer{64, 64}, 0, 4); }, StatusCode::NotInitialized);
  expect_error([&] { worker.device_bytes_in_use(); }, StatusCode::NotInitialized);
  expect_error([&] { worker.flush_diagnostics(); }, StatusCode::NotInitialized);
  expect_error([&] { host::runner_of(worker); }, StatusCode::NotInitialized);
}

TEST(WorkerMisuse, EveryCallAfterCloseIsAlreadyClosed) {
  Worker worker;
  worker.init(small_options());
  DeviceBuffer buffer = worker.malloc(64);
  worker.close();
  worker.close();  // idempotent
  EXPECT_FALSE(worker.initialized());
  Error e = expect_error([&] { worker.run(0, TaskArgs{}); }, StatusCode::AlreadyClosed);
  EXPECT_THAT(e.message(), HasSubstr("Worker::run called after close()"));
  expect_error([&] { worker.malloc(16); }, StatusCode::AlreadyClosed);
  expect_error([&] { worker.free(buffer); }, StatusCode::AlreadyClosed);
  expect_error([&] { worker.register_callable(0, callable_with_signature({})); },
               StatusCode::AlreadyClosed);
  expect_error([&] { worker.init(small_options()); }, StatusCode::AlreadyClosed);
  expect_error([&] { worker.flush_diagnostics(); }, StatusCode::AlreadyClosed);
  expect_error([&] { host::runner_of(worker); }, StatusCode::AlreadyClosed);
}

TEST(WorkerMisuse, InitTwiceUnknownPlatformAndUnknownRuntime) {
  Worker worker;
  worker.init(small_options());
  Error e = expect_error([&] { worker.init(small_options()); }, StatusCode::InvalidArgument);
  EXPECT_THAT(e.message(), HasSubstr("init called twice"));

  Worker cuda;
  WorkerOptions options = small_options();
  options.platform = "cuda";
  e = expect_error([&] { cuda.init(options); }, StatusCode::InvalidConfig);
  EXPECT_THAT(e.message(), HasSubstr("unknown platform 'cuda'; available: sim"));
  EXPECT_FALSE(cuda.initialized());

  Worker ring;
  options = small_options();
  options.runtime = RuntimeVariant::TensormapRingbuffer;
  ring.init(options);
  EXPECT_TRUE(ring.initialized());
  EXPECT_EQ(host::runner_of(ring).default_runtime(), RuntimeVariant::TensormapRingbuffer);

  Worker unknown_runtime;
  options = small_options();
  options.runtime = static_cast<RuntimeVariant>(7);
  e = expect_error([&] { unknown_runtime.init(options); }, StatusCode::InvalidConfig);
  EXPECT_THAT(e.message(), HasSubstr("runtime variant 7 is unknown"));

  Worker bad_sim;
  options = small_options();
  options.sim.clusters = 0;
  expect_error([&] { bad_sim.init(options); }, StatusCode::InvalidConfig);
  EXPECT_FALSE(bad_sim.initialized());
  bad_sim.init(small_options());  // a failed init leaves the worker usable
  EXPECT_TRUE(bad_sim.initialized());

  Worker negative;
  options = small_options();
  options.device_id = -1;
  e = expect_error([&] { negative.init(options); }, StatusCode::InvalidConfig);
  EXPECT_THAT(e.message(), HasSubstr("device_id=-1"));
}

TEST(WorkerMisuse, MemoryBoundsAndPointers) {
  Worker worker;
  worker.init(small_options());
  const uint64_t before = worker.device_bytes_in_use();
  DeviceBuffer buffer = worker.malloc(64);
  EXPECT_EQ(worker.device_bytes_in_use(), before + 64);
  std::vector<uint8_t> data(128, 1);

  Error e =
      expect_error([&] { worker.copy_to(buffer, data.data(), 65); }, StatusCode::InvalidArgument);
  EXPECT_THAT(e.message(), HasSubstr("offset 0 + 65 bytes exceeds the buffer size 64"));
  e = expect_error([&] { worker.copy_to(buffer, data.data(), 8, 60); },
                   StatusCode::InvalidArgument);
  EXPECT_THAT(e.message(), HasSubstr("offset 60 + 8 bytes"));
  e = expect_error([&] { worker.copy_from(data.data(), buffer, 1, UINT64_MAX); },
                   StatusCode::InvalidArgument);
  EXPECT_THAT(e.message(), HasSubstr("copy_from"));
  expect_error([&] { worker.memset(buffer, 0, 65); }, StatusCode::InvalidArgument);
  expect_error([&] { worker.copy_to(buffer, nullptr, 4); }, StatusCode::InvalidArgument);
  expect_error([&] { worker.copy_from(nullptr, buffer, 4); }, StatusCode::InvalidArgument);
  e = expect_error([&] { worker.copy_to(DeviceBuffer{}, data.data(), 4); },
                   StatusCode::InvalidDevicePointer);
  EXPECT_THAT(e.message(), HasSubstr("empty"));
  // A buffer the worker never allocated.
  e = expect_error(
      [&] {
        worker.copy_to(DeviceBuffer{0x1000, 64}, data.data(), 4);
      },
      StatusCode::InvalidDevicePointer);
  EXPECT_THAT(e.message(), HasSubstr("not inside a live allocation"));
  e = expect_error([&] { worker.malloc(0); }, StatusCode::InvalidArgument);
  EXPECT_THAT(e.message(), HasSubstr("0 bytes"));
  e = expect_error([&] { worker.malloc(1ull << 40); }, StatusCode::OutOfDeviceMemory);
  EXPECT_THAT(e.message(), HasSubstr("available"));

  worker.copy_to(buffer, data.data(), 8, 56);
  worker.copy_from(data.data(), buffer, 8, 56);
  worker.free(buffer);
  e = expect_error([&] { worker.free(buffer); }, StatusCode::InvalidDevicePointer);
  EXPECT_THAT(e.message(), HasSubstr("not a live allocation"));
  expect_error([&] { worker.free(DeviceBuffer{}); }, StatusCode::InvalidDevicePointer);
  expect_error([&] { worker.copy_to(buffer, data.data(), 4); }, StatusCode::InvalidDevicePointer);
  EXPECT_EQ(worker.device_bytes_in_use(), before);
}

TEST(WorkerMisuse, UnknownCallableAndRegistrationErrors) {
  Worker worker;
  worker.init(small_options());
  Error e = expect_error([&] { worker.run(5, TaskArgs{}); }, StatusCode::UnknownCallable);
  EXPECT_THAT(e.message(), HasSubstr("callable id 5 is not registered"));
  expect_error([&] { worker.unregister_callable(5); }, StatusCode::UnknownCallable);
  std::vector<uint8_t> bytes = callable_with_signature({});
  expect_error([&] { worker.register_callable(64, bytes); }, StatusCode::CallableIdOutOfRange);
  worker.register_callable(5, bytes);
  EXPECT_TRUE(worker.has_callable(5));
  expect_error([&] { worker.register_callable(5, bytes); }, StatusCode::DuplicateCallable);
  bytes.resize(bytes.size() - 1);
  expect_error([&] { worker.register_callable(6, bytes); }, StatusCode::MalformedCallable);
  worker.unregister_callable(5);
  EXPECT_FALSE(worker.has_callable(5));
}

class WorkerSignature : public ::testing::Test {
 protected:
  void SetUp() override {
    worker_.init(small_options());
    ArgSignature sig;
    sig.tensor_count = 3;
    sig.scalar_count = 1;
    sig.tags[0] = ArgTag::In;
    sig.tags[1] = ArgTag::InOut;
    sig.tags[2] = ArgTag::OutputExisting;
    worker_.register_callable(1, callable_with_signature(sig));
    buffer_ = worker_.malloc(256);
    tensor_ = Tensor::make(buffer_, {64}, DataType::F32);
  }
  Worker worker_;
  DeviceBuffer buffer_;
  Tensor tensor_;
};

TEST_F(WorkerSignature, WrongTensorCount) {
  TaskArgs args;
  args.in(tensor_).inout(tensor_);
  Error e = expect_error([&] { worker_.run(1, args); }, StatusCode::SignatureMismatch);
  EXPECT_THAT(e.message(), HasSubstr("expected 3 tensor arguments, got 2"));
}

TEST_F(WorkerSignature, WrongDirectionAtIndex) {
  TaskArgs args;
  args.in(tensor_).in(tensor_).output_existing(tensor_).scalar(1);
  Error e = expect_error([&] { worker_.run(1, args); }, StatusCode::SignatureMismatch);
  EXPECT_THAT(e.message(), HasSubstr("argument 1: expected inout, got in"));
}

TEST_F(WorkerSignature, WrongScalarCount) {
  TaskArgs args;
  args.in(tensor_).inout(tensor_).output_existing(tensor_);
  Error e = expect_error([&] { worker_.run(1, args); }, StatusCode::SignatureMismatch);
  EXPECT_THAT(e.message(), HasSubstr("expected 1 scalar arguments, got 0"));
}

TEST_F(WorkerSignature, MatchingArgumentsRun) {
  TaskArgs args;
  args.in(tensor_).inout(tensor_).output_existing(tensor_).scalar(1);
  CallConfig config;
  config.output_heap_bytes = 4096;
  RunReport report = worker_.run(1, args, config);
  EXPECT_EQ(report.task_count, 0u);
}

TEST_F(WorkerSignature, InvalidConfigNamesTheField) {
  TaskArgs args;
  args.in(tensor_).inout(tensor_).output_existing(tensor_).scalar(1);
  CallConfig config;
  config.aicpu_thread_num = 1;
  Error e = expect_error([&] { worker_.run(1, args, config); }, StatusCode::InvalidConfig);
  EXPECT_THAT(e.message(), HasSubstr("aicpu_thread_num"));
  config = {};
  config.cluster_count = 2;  // the device has 1
  e = expect_error([&] { worker_.run(1, args, config); }, StatusCode::InvalidConfig);
  EXPECT_THAT(e.message(), HasSubstr("cluster_count"));
  config = {};
  config.runtime = RuntimeVariant::TensormapRingbuffer;
  config.rings.dep_pool = {63};
  e = expect_error([&] { worker_.run(1, args, config); }, StatusCode::InvalidConfig);
  EXPECT_THAT(e.message(), HasSubstr("rings.dep_pool[0]=63"));
  config.rings.dep_pool.clear();
  config.replay_graph = true;
  e = expect_error([&] { worker_.run(1, args, config); }, StatusCode::InvalidConfig);
  EXPECT_THAT(e.message(), HasSubstr("replay_graph"));
}

TEST(WorkerLifecycle, DestructorClosesAndFreesEverything) {
  uint64_t in_use = 0;
  {
    Worker worker;
    worker.init(small_options());
    worker.malloc(1024);
    worker.register_callable(0, callable_with_signature({}));
    in_use = worker.device_bytes_in_use();
  }
  EXPECT_GT(in_use, 1024u);
}

// Background diagnostics writes (the queue fed directly, so that the outcome of each write is
// chosen; the collect tests write real run directories through it).
TEST(WorkerDiagnostics, FlushReportsEveryFailedBackgroundWriteOnce) {
  Worker worker;
  worker.init(small_options());
  worker.flush_diagnostics();  // nothing pending: a no-op
  host::DiagWriteQueue& queue = host::runner_of(worker).diag_write_queue();
  queue.push("/d/run-0001", [] { return std::string(); });
  queue.push("/d/run-0002", [] { return std::string("disk full"); });
  queue.push("/d/run-0003",
             []() -> std::string { throw Error(StatusCode::DiagnosticsError, "x"); });
  Error e = expect_error([&] { worker.flush_diagnostics(); }, StatusCode::DiagnosticsError);
  EXPECT_THAT(e.message(), HasSubstr("diagnostics of 2 run(s) in the background failed"));
  EXPECT_THAT(e.message(), HasSubstr("/d/run-0002: disk full"));
  EXPECT_THAT(e.message(), HasSubstr("/d/run-0003: x"));
  EXPECT_THAT(e.message(), Not(HasSubstr("run-0001")));
  worker.flush_diagnostics();  // reported once
}

TEST(WorkerDiagnostics, CloseWaitsForPendingWritesAndLogsAFailedOne) {
  const host::LogLevel saved_level = host::log_level();
  host::set_log_level(host::LogLevel::Warn);
  Worker worker;
  worker.init(small_options());
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> written{0};
  host::DiagWriteQueue& queue = host::runner_of(worker).diag_write_queue();
  queue.push("/d/run-0001", [released, &written] {
    released.wait();
    ++written;
    return std::string();
  });
  queue.push("/d/run-0002", [&written] {
    ++written;
    return std::string("lost");  // only logged by close
  });
  ::testing::internal::CaptureStderr();
  std::thread closer([&] { worker.close(); });
  release.set_value();
  closer.join();
  const std::string logged = ::testing::internal::GetCapturedStderr();
  host::set_log_level(saved_level);
  EXPECT_EQ(written.load(), 2);
  EXPECT_THAT(logged, HasSubstr("a background diagnostics write failed: /d/run-0002: lost"));
}

}  // namespace
}  // namespace chiprt
