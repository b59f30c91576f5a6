// Worker: the public host API over one DeviceRunner (see include/chiprt/worker.h).
#include "chiprt/worker.h"

#include <atomic>
#include <mutex>
#include <string>

#include "common/run_context.h"
#include "host/device_runner.h"
#include "host/log.h"
#include "host/worker_access.h"
#include "platform/registry.h"

namespace chiprt {

struct Worker::Impl {
  enum class State { Fresh, Ready, Closed };
  mutable std::mutex mutex;
  // Written under the mutex; atomic so that initialized() needs no lock.
  std::atomic<State> state{State::Fresh};
  std::unique_ptr<host::DeviceRunner> runner;

  // Every entry point starts here: a call made from inside a run (an orchestration function or a
  // kernel, see common/run_context.h) is refused before the lock is taken, since a
  // host_build_graph orchestration function runs on the thread that already holds it, and chip
  // threads would wait for the run they belong to. Then takes the lock.
  std::unique_lock<std::mutex> enter(const char* what) const {
    const common::RunContext& context = common::current_run_context();
    if (context.role != common::RunRole::None) {
      throw Error(StatusCode::ReentrantCall, std::string("Worker::") + what +
                                                 " called from inside a run, from " +
                                                 common::describe(context));
    }
    return std::unique_lock<std::mutex>(mutex);
  }

  // Throws unless the worker is initialised and open.
  host::DeviceRunner& ready(const char* what) const {
    if (state == State::Closed) {
      throw Error(StatusCode::AlreadyClosed,
                  std::string("Worker::") + what + " called after close(); create a new Worker");
    }
    if (state == State::Fresh) {
      throw Error(StatusCode::NotInitialized,
                  std::string("Worker::") + what + " called before init(); call init() first");
    }
    return *runner;
  }
};

namespace {

std::string range_text(uint64_t offset, uint64_t bytes, uint64_t size) {
  return "offset " + std::to_string(offset) + " + " + std::to_string(bytes) +
         " bytes exceeds the buffer size " + std::to_string(size);
}

// [offset, offset+bytes) must lie inside `buffer`.
void check_buffer_range(const char* what, const DeviceBuffer& buffer, uint64_t offset,
                        uint64_t bytes) {
  if (buffer.empty()) {
    throw Error(StatusCode::InvalidDevicePointer,
                std::string("Worker::") + what + ": the DeviceBuffer is empty (address 0)");
  }
  if (offset > buffer.size || bytes > buffer.size - offset) {
    throw Error(StatusCode::InvalidArgument,
                std::string("Worker::") + what + ": " + range_text(offset, bytes, buffer.size));
  }
}

}  // namespace

Worker::Worker() : impl_(std::make_unique<Impl>()) {}

Worker::~Worker() {
  try {
    close();
  } catch (const std::exception& e) {
    CHIPRT_LOG_WARN("Worker destructor: close failed: %s", e.what());
  } catch (...) {
    CHIPRT_LOG_WARN("Worker destructor: close failed with an unknown exception");
  }
}

void Worker::init(const WorkerOptions& options) {
  const auto lock = impl_->enter("init");
  if (impl_->state == Impl::State::Closed) {
    throw Error(StatusCode::AlreadyClosed,
                "Worker::init called after close(); create a new Worker");
  }
  if (impl_->state == Impl::State::Ready) {
    throw Error(StatusCode::InvalidArgument,
                "Worker::init called twice; a Worker is initialised once (close it and create a "
                "new one to change options)");
  }
  if (options.device_id < 0) {
    throw Error(StatusCode::InvalidConfig,
                "device_id=" + std::to_string(options.device_id) + " is negative; use an id >= 0");
  }
  RuntimeVariant runtime = options.runtime;
  if (runtime == RuntimeVariant::Default) runtime = RuntimeVariant::HostBuildGraph;
  if (runtime != RuntimeVariant::HostBuildGraph && runtime != RuntimeVariant::TensormapRingbuffer) {
    throw Error(StatusCode::InvalidConfig,
                "runtime variant " + std::to_string(static_cast<int>(runtime)) + " is unknown");
  }
  // By name: the host never names a platform's implementation (an unknown name lists the known).
  platform::PlatformOptions platform_options;
  platform_options.sim = options.sim;
  std::unique_ptr<platform::Platform> platform;
  throw_if_error(platform::create_platform(options.platform, platform_options, &platform));
  host::RunnerOptions runner_options;
  runner_options.default_runtime = runtime;
  auto runner = std::make_unique<host::DeviceRunner>(std::move(platform), runner_options);
  runner->attach(options.device_id);
  impl_->runner = std::move(runner);
  impl_->state = Impl::State::Ready;
}

bool Worker::initialized() const noexcept {
  return impl_->state.load() == Impl::State::Ready;
}

void Worker::register_callable(int32_t callable_id, std::span<const uint8_t> container) {
  const auto lock = impl_->enter("register_callable");
  impl_->ready("register_callable").register_callable(callable_id, container);
}

void Worker::unregister_callable(int32_t callable_id) {
  const auto lock = impl_->enter("unregister_callable");
  impl_->ready("unregister_callable").unregister_callable(callable_id);
}

bool Worker::has_callable(int32_t callable_id) const {
  const auto lock = impl_->enter("has_callable");
  return impl_->ready("has_callable").has_callable(callable_id);
}

RunReport Worker::run(int32_t callable_id, const TaskArgs& args, const CallConfig& config) {
  const auto lock = impl_->enter("run");
  return impl_->ready("run").run(callable_id, args, config);
}

GraphExport Worker::export_graph(int32_t callable_id, const TaskArgs& args,
                                 const CallConfig& config) {
  const auto lock = impl_->enter("export_graph");
  return impl_->ready("export_graph").export_graph(callable_id, args, config);
}

DeviceBuffer Worker::malloc(uint64_t bytes) {
  const auto lock = impl_->enter("malloc");
  host::DeviceRunner& runner = impl_->ready("malloc");
  if (bytes == 0) {
    throw Error(StatusCode::InvalidArgument, "Worker::malloc: 0 bytes requested; ask for >= 1");
  }
  return runner.allocate(bytes);
}

void Worker::free(DeviceBuffer buffer) {
  const auto lock = impl_->enter("free");
  host::DeviceRunner& runner = impl_->ready("free");
  if (buffer.empty()) {
    throw Error(StatusCode::InvalidDevicePointer,
                "Worker::free: the DeviceBuffer is empty (address 0)");
  }
  runner.free(buffer.addr);
}

void Worker::copy_to(DeviceBuffer dst, const void* src, uint64_t bytes, uint64_t dst_offset) {
  const auto lock = impl_->enter("copy_to");
  host::DeviceRunner& runner = impl_->ready("copy_to");
  check_buffer_range("copy_to", dst, dst_offset, bytes);
  if (bytes == 0) return;
  if (src == nullptr) throw Error(StatusCode::InvalidArgument, "Worker::copy_to: source is null");
  runner.copy_to_device(dst.addr + dst_offset, src, bytes);
}

void Worker::copy_from(void* dst, DeviceBuffer src, uint64_t bytes, uint64_t src_offset) {
  const auto lock = impl_->enter("copy_from");
  host::DeviceRunner& runner = impl_->ready("copy_from");
  check_buffer_range("copy_from", src, src_offset, bytes);
  if (bytes == 0) return;
  if (dst == nullptr) {
    throw Error(StatusCode::InvalidArgument, "Worker::copy_from: destination is null");
  }
  runner.copy_from_device(dst, src.addr + src_offset, bytes);
}

void Worker::memset(DeviceBuffer dst, int value, uint64_t bytes) {
  const auto lock = impl_->enter("memset");
  host::DeviceRunner& runner = impl_->ready("memset");
  check_buffer_range("memset", dst, 0, bytes);
  runner.memset(dst.addr, value, bytes);
}

uint64_t Worker::device_bytes_in_use() const {
  const auto lock = impl_->enter("device_bytes_in_use");
  return impl_->ready("device_bytes_in_use").bytes_in_use();
}

void Worker::reset() {
  const auto lock = impl_->enter("reset");
  impl_->ready("reset").reset_device();
}

uint64_t Worker::reset_count() const {
  const auto lock = impl_->enter("reset_count");
  return impl_->ready("reset_count").reset_count();
}

void Worker::flush_diagnostics() {
  const auto lock = impl_->enter("flush_diagnostics");
  const std::vector<std::string> failures = impl_->ready("flush_diagnostics").flush_diagnostics();
  if (failures.empty()) return;
  std::string message = "writing the diagnostics of " + std::to_string(failures.size()) +
                        " run(s) in the background failed:";
  for (const std::string& failure : failures) message += " " + failure + ";";
  message.pop_back();
  throw Error(StatusCode::DiagnosticsError, message);
}

void Worker::close() {
  const auto lock = impl_->enter("close");
  if (impl_->state == Impl::State::Closed) return;
  impl_->state = Impl::State::Closed;
  std::unique_ptr<host::DeviceRunner> runner = std::move(impl_->runner);
  if (runner == nullptr) return;
  for (const std::string& failure : runner->flush_diagnostics()) {
    CHIPRT_LOG_WARN("Worker::close: a background diagnostics write failed: %s", failure.c_str());
  }
  runner->finalize();
}

}  // namespace chiprt

namespace chiprt::host {

DeviceRunner& WorkerAccess::runner(Worker& worker) {
  const auto lock = worker.impl_->enter("runner_of");
  return worker.impl_->ready("runner_of");
}

}  // namespace chiprt::host
