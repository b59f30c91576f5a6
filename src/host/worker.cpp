// Worker: the public host API (include/chiprt/worker.h), a facade over one RunPipeline: it checks
// the arguments of its own API and forwards everything else.
#include "chiprt/worker.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "host/device_runner.h"
#include "host/open_device.h"
#include "host/run_pipeline.h"
#include "host/worker_access.h"

namespace chiprt {

struct Worker::Impl {
  host::RunPipeline pipeline{host::FacadeText{}};
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
  if (impl_->pipeline.inherited()) {
    // A forked child's copy of the parent's Worker: its threads do not exist here and its device
    // is the parent's. Nothing is joined, closed or freed (freeing would run the device's
    // destructors); the copy's memory goes with this process.
    (void)impl_.release();
  }
  // Otherwise the pipeline's destructor closes the Worker (logging a failure) and stops its
  // pipeline thread.
}

void Worker::init(const WorkerOptions& options) {
  impl_->pipeline.init([&] {
    host::DeviceOpening opening;
    opening.platform = options.platform;
    opening.device_id = options.device_id;
    opening.runtime = options.runtime;
    opening.sim = options.sim;
    opening.facade = impl_->pipeline.facade();
    return host::open_device(opening);
  });
}

bool Worker::initialized() const noexcept {
  return impl_->pipeline.initialized();
}

void Worker::register_callable(int32_t callable_id, std::span<const uint8_t> container) {
  const auto call = impl_->pipeline.enter("register_callable");
  impl_->pipeline.runner(call).register_callable(callable_id, container);
}

void Worker::unregister_callable(int32_t callable_id) {
  auto call = impl_->pipeline.enter("unregister_callable");
  impl_->pipeline.unregister_callable(call, callable_id);
}

bool Worker::has_callable(int32_t callable_id) const {
  const auto call = impl_->pipeline.enter("has_callable");
  return impl_->pipeline.runner(call).has_callable(callable_id);
}

RunReport Worker::run(int32_t callable_id, const TaskArgs& args, const CallConfig& config) {
  return impl_->pipeline.run(impl_->pipeline.enter("run"), callable_id, args, config);
}

RunHandle Worker::run_async(int32_t callable_id, const TaskArgs& args, const CallConfig& config) {
  return impl_->pipeline.submit(callable_id, args, config, /*poisons=*/false);
}

RunHandle Worker::submit(int32_t callable_id, const TaskArgs& args, const CallConfig& config) {
  return impl_->pipeline.submit(callable_id, args, config, /*poisons=*/true);
}

bool Worker::try_submit(int32_t callable_id, const TaskArgs& args, const CallConfig& config,
                        RunHandle* handle) {
  if (handle == nullptr) {
    throw Error(StatusCode::InvalidArgument, "Worker::try_submit: the handle pointer is null");
  }
  std::optional<RunHandle> admitted = impl_->pipeline.try_submit(callable_id, args, config);
  if (!admitted) return false;
  *handle = std::move(*admitted);
  return true;
}

uint32_t Worker::runs_in_flight() const {
  return impl_->pipeline.runs_in_flight();
}

GraphExport Worker::export_graph(int32_t callable_id, const TaskArgs& args,
                                 const CallConfig& config) {
  auto call = impl_->pipeline.enter("export_graph");
  return impl_->pipeline.export_graph(call, callable_id, args, config);
}

DeviceBuffer Worker::malloc(uint64_t bytes) {
  const auto call = impl_->pipeline.enter("malloc");
  if (bytes == 0) {
    throw Error(StatusCode::InvalidArgument, "Worker::malloc: 0 bytes requested; ask for >= 1");
  }
  return impl_->pipeline.runner(call).allocate(bytes);
}

void Worker::free(DeviceBuffer buffer) {
  auto call = impl_->pipeline.enter("free");
  if (buffer.empty()) {
    throw Error(StatusCode::InvalidDevicePointer,
                "Worker::free: the DeviceBuffer is empty (address 0)");
  }
  impl_->pipeline.free(call, buffer);
}

void Worker::copy_to(DeviceBuffer dst, const void* src, uint64_t bytes, uint64_t dst_offset) {
  auto call = impl_->pipeline.enter("copy_to");
  check_buffer_range("copy_to", dst, dst_offset, bytes);
  if (bytes == 0) return;
  if (src == nullptr) throw Error(StatusCode::InvalidArgument, "Worker::copy_to: source is null");
  impl_->pipeline.copy_to(call, dst.addr + dst_offset, src, bytes);
}

void Worker::copy_from(void* dst, DeviceBuffer src, uint64_t bytes, uint64_t src_offset) {
  auto call = impl_->pipeline.enter("copy_from");
  check_buffer_range("copy_from", src, src_offset, bytes);
  if (bytes == 0) return;
  if (dst == nullptr) {
    throw Error(StatusCode::InvalidArgument, "Worker::copy_from: destination is null");
  }
  impl_->pipeline.copy_from(call, dst, src.addr + src_offset, bytes);
}

void Worker::memset(DeviceBuffer dst, int value, uint64_t bytes) {
  auto call = impl_->pipeline.enter("memset");
  check_buffer_range("memset", dst, 0, bytes);
  impl_->pipeline.memset(call, dst.addr, value, bytes);
}

uint64_t Worker::device_bytes_in_use() const {
  const auto call = impl_->pipeline.enter("device_bytes_in_use");
  return impl_->pipeline.runner(call).bytes_in_use();
}

void Worker::reset() {
  auto call = impl_->pipeline.enter("reset");
  impl_->pipeline.reset(call);
}

uint64_t Worker::reset_count() const {
  const auto call = impl_->pipeline.enter("reset_count");
  return impl_->pipeline.runner(call).reset_count();
}

void Worker::flush_diagnostics() {
  const auto call = impl_->pipeline.enter("flush_diagnostics");
  const std::vector<std::string> failures = impl_->pipeline.runner(call).flush_diagnostics();
  if (failures.empty()) return;
  std::string message = "writing the diagnostics of " + std::to_string(failures.size()) +
                        " run(s) in the background failed:";
  for (const std::string& failure : failures) message += " " + failure + ";";
  message.pop_back();
  throw Error(StatusCode::DiagnosticsError, message);
}

void Worker::close() {
  impl_->pipeline.close();
}

}  // namespace chiprt

namespace chiprt::host {

DeviceRunner& WorkerAccess::runner(Worker& worker) {
  const auto call = worker.impl_->pipeline.enter("runner_of");
  return worker.impl_->pipeline.runner(call);
}

}  // namespace chiprt::host
