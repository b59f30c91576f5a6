#include "host/device_runner.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <utility>

#include "common/chip_launch.h"
#include "host/graph_image_export.h"
#include "host/log.h"
#include "host/run_steps.h"
#include "orchestrator/host_graph_builder.h"

namespace chiprt::host {
namespace {

constexpr uint64_t kServicesBytes = round_up(sizeof(platform::ChipServices), kDeviceAlign);

}  // namespace

std::string hex(uint64_t value) {
  char text[32];
  std::snprintf(text, sizeof(text), "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

DeviceRunner::DeviceRunner(std::unique_ptr<platform::Platform> platform, RunnerOptions options)
    : platform_(std::move(platform)),
      options_(std::move(options)),
      memory_(platform_.get()),
      arenas_(&memory_),
      staging_(&memory_),
      graph_buffers_(&memory_),
      callables_(platform_.get(), &memory_) {
  if (platform_ == nullptr)
    throw Error(StatusCode::InvalidArgument, "DeviceRunner needs a platform");
  if (options_.default_runtime == RuntimeVariant::Default) {
    options_.default_runtime = RuntimeVariant::HostBuildGraph;
  }
}

DeviceRunner::~DeviceRunner() {
  try {
    finalize();
  } catch (const std::exception& e) {
    CHIPRT_LOG_WARN("DeviceRunner teardown: %s", e.what());
  }
}

void DeviceRunner::throw_if(const Status& status) {
  if (status.is_ok()) return;
  if (platform_->isolated() && !faulted_ &&
      (status.code() == StatusCode::KernelCrashed || status.code() == StatusCode::DeviceFaulted)) {
    // The device process died (or was killed) under a call outside a run's wait: nothing of it
    // is usable any more.
    abandon_after_fault(status.message());
    throw Error(status.code(),
                status.message() + "; device memory is lost; call " + options_.facade.reset_call);
  }
  throw Error(status);
}

void DeviceRunner::require_usable(const char* what) const {
  if (faulted_) {
    throw Error(StatusCode::DeviceFaulted,
                std::string(what) + ": device " + std::to_string(device_id_) +
                    " faulted earlier and its resources were abandoned" +
                    (fault_description_.empty() ? "" : " (" + fault_description_ + ")") +
                    "; call " + options_.facade.reset_call);
  }
  if (device_id_ < 0) {
    throw Error(StatusCode::NotInitialized,
                std::string(what) + ": the runner is not attached to a device; call attach first");
  }
}

void DeviceRunner::attach(int device_id) {
  if (faulted_) require_usable("attach");
  if (device_id < 0) {
    throw Error(StatusCode::InvalidArgument,
                "device id " + std::to_string(device_id) + " is negative; use an id >= 0");
  }
  if (device_id_ >= 0 && device_id_ != device_id) {
    throw Error(StatusCode::DeviceMismatch,
                "the runner is attached to device " + std::to_string(device_id_) +
                    "; finalize it before attaching to device " + std::to_string(device_id));
  }
  throw_if(platform_->attach(device_id));
  if (!timeouts_resolved_) {
    TimeoutResolution resolution = resolve_timeouts(options_.env);
    timeouts_ = resolution.config;
    timeout_warnings_ = std::move(resolution.warnings);
    timeouts_resolved_ = true;
  }
  device_id_ = device_id;
}

void DeviceRunner::ensure_initialized() {
  require_usable("ensure_initialized");
  if (initialized_) return;
  if (!streams_started_) {
    throw_if(platform_->start_streams());
    streams_started_ = true;
  }
  geometry_ = platform_->geometry();
  if (geometry_.clusters == 0 || geometry_.cores() > common::kMaxCores) {
    throw Error(StatusCode::InternalError, "platform '" + platform_->name() + "' reports " +
                                               std::to_string(geometry_.clusters) +
                                               " clusters; supported 1.." +
                                               std::to_string(common::kMaxCores / 3));
  }
  // The chip-side programs (scheduler, core loop) are the platform's to provide.
  throw_if(platform_->load_chip_runtime());
  if (!chip_init_done_) {
    DeviceBuffer block;
    // One kernel table per pipeline slot: a run prepared while another executes binds its
    // callable into its own slot's table, never into the one the executing run reads.
    throw_if(memory_.allocate(kServicesBytes + kPipelineDepth * kKernelTableBytes, kDeviceAlign,
                              AllocationOwner::Runtime, &block));
    status_block_addr_ = block.addr;
    services_addr_ = block.addr;
    kernel_table_addr_ = block.addr + kServicesBytes;
    Status status = memory_.copy_to_device(services_addr_, &platform_->services(),
                                           sizeof(platform::ChipServices));
    if (status.is_ok()) {
      status = memory_.memset(kernel_table_addr_, 0, kPipelineDepth * kKernelTableBytes);
    }
    if (!status.is_ok()) {
      (void)memory_.free(block.addr, AllocationOwner::Runtime);
      status_block_addr_ = services_addr_ = kernel_table_addr_ = 0;
      throw Error(status);
    }
    chip_init_done_ = true;
  }
  initialized_ = true;
  CHIPRT_LOG_INFO("device %d initialised on %s: %u clusters, %u AICPU threads (default %u)",
                  device_id_, platform_->name().c_str(), geometry_.clusters,
                  geometry_.max_aicpu_threads, geometry_.default_aicpu_threads);
}

PlatformLimits DeviceRunner::limits() const noexcept {
  return platform_limits(geometry_);
}

LaunchShape DeviceRunner::resolve_launch_shape(const CallConfig& config) {
  ensure_initialized();
  return host::resolve_launch_shape(config, geometry_, platform_->serial());
}

RunPlan DeviceRunner::plan_run(const CallConfig& config, PlanPurpose purpose) {
  ensure_initialized();
  const PlanContext context{geometry_, platform_->serial(), options_.default_runtime, options_.env,
                            timeouts_};
  return resolve_run_plan(config, purpose, context);
}

DeviceBuffer DeviceRunner::allocate(uint64_t bytes) {
  require_usable("malloc");
  DeviceBuffer buffer;
  throw_if(memory_.allocate(bytes, kDeviceAlign, AllocationOwner::User, &buffer));
  return buffer;
}

void DeviceRunner::free(uint64_t addr) {
  require_usable("free");
  throw_if(memory_.free(addr, AllocationOwner::User));
}

void DeviceRunner::check_range(uint64_t addr, uint64_t bytes, const char* what) const {
  if (!memory_.contains(addr, bytes)) {
    if (std::string lost = memory_.lost_buffer_text(addr); !lost.empty()) {
      throw Error(StatusCode::InvalidDevicePointer, std::string(what) + ": " + lost);
    }
    throw Error(StatusCode::InvalidDevicePointer,
                std::string(what) + ": [" + hex(addr) + ", +" + std::to_string(bytes) +
                    ") is not inside a live allocation of device " + std::to_string(device_id_));
  }
}

void DeviceRunner::copy_to_device(uint64_t dst, const void* src, uint64_t bytes) {
  require_usable("copy_to_device");
  if (bytes == 0) return;
  if (src == nullptr) throw Error(StatusCode::InvalidArgument, "copy_to_device: source is null");
  check_range(dst, bytes, "copy_to_device");
  throw_if(memory_.copy_to_device(dst, src, bytes));
}

void DeviceRunner::copy_from_device(void* dst, uint64_t src, uint64_t bytes) {
  require_usable("copy_from_device");
  if (bytes == 0) return;
  if (dst == nullptr) {
    throw Error(StatusCode::InvalidArgument, "copy_from_device: destination is null");
  }
  check_range(src, bytes, "copy_from_device");
  throw_if(memory_.copy_from_device(dst, src, bytes));
}

void DeviceRunner::copy_from_peer(uint64_t dst, DeviceRunner& src, uint64_t src_addr,
                                  uint64_t bytes) {
  require_usable("copy_from_peer (destination)");
  src.require_usable("copy_from_peer (source)");
  if (bytes == 0) return;
  check_range(dst, bytes, "copy_from_peer (destination)");
  src.check_range(src_addr, bytes, "copy_from_peer (source)");
  throw_if(platform_->copy_from_peer(dst, src.platform(), src_addr, bytes));
}

void DeviceRunner::memset(uint64_t dst, int value, uint64_t bytes) {
  require_usable("memset");
  if (bytes == 0) return;
  check_range(dst, bytes, "memset");
  throw_if(memory_.memset(dst, value, bytes));
}

uint64_t DeviceRunner::bytes_in_use() const {
  return platform_->bytes_in_use();
}

uint64_t DeviceRunner::acquire_graph_definition_buffer(uint32_t slot, uint64_t key, uint64_t bytes,
                                                       uint64_t alignment) {
  require_usable("acquire_graph_definition_buffer");
  uint64_t addr = 0;
  throw_if(graph_buffers_.acquire(slot, key, bytes, alignment, &addr));
  return addr;
}

void DeviceRunner::register_callable(int32_t id, std::span<const uint8_t> container,
                                     RuntimeVariant variant) {
  ensure_initialized();
  if (variant == RuntimeVariant::Default) variant = options_.default_runtime;
  throw_if(callables_.register_callable(id, container, variant));
}

void DeviceRunner::unregister_callable(int32_t id) {
  require_usable("unregister_callable");
  throw_if(callables_.unregister_callable(id));
}

void DeviceRunner::bind(int32_t id) {
  ensure_initialized();
  throw_if(callables_.bind(id, kernel_table_addr(0), nullptr));
}

void DeviceRunner::check_signature(const RegisteredCallable& callable, const TaskArgs& args) const {
  const ArgSignature& sig = callable.orchestration_signature;
  // A signature that declares nothing means the orchestration accepts any arguments.
  if (sig.tensor_count == 0 && sig.scalar_count == 0) return;
  const std::string prefix = "callable id " + std::to_string(callable.id) + ": ";
  if (args.tensor_count() != sig.tensor_count) {
    throw Error(StatusCode::SignatureMismatch,
                prefix + "expected " + std::to_string(sig.tensor_count) +
                    " tensor arguments, got " + std::to_string(args.tensor_count()));
  }
  for (int i = 0; i < args.tensor_count(); ++i) {
    if (args.tag(i) != sig.tags[i]) {
      throw Error(StatusCode::SignatureMismatch,
                  prefix + "argument " + std::to_string(i) + ": expected " +
                      std::string(arg_tag_name(sig.tags[i])) + ", got " +
                      std::string(arg_tag_name(args.tag(i))));
    }
  }
  if (args.scalar_count() != sig.scalar_count) {
    throw Error(StatusCode::SignatureMismatch,
                prefix + "expected " + std::to_string(sig.scalar_count) +
                    " scalar arguments, got " + std::to_string(args.scalar_count()));
  }
}

void DeviceRunner::check_argument_buffers(const TaskArgs& args) const {
  // The user's own allocations only: the runtime's (output heap, staging, kernel table) belong
  // to the run itself, and a runtime output kept from an earlier run lies in this run's heap.
  const AllocationOwner user = AllocationOwner::User;
  for (int i = 0; i < args.tensor_count(); ++i) {
    if (args.tag(i) == ArgTag::Out) continue;  // the runtime allocates it
    const DeviceBuffer& buffer = args.tensor(i).buffer;
    if (buffer.size != 0 && memory_.contains(buffer.addr, buffer.size, &user)) continue;
    if (std::string lost = memory_.lost_buffer_text(buffer.addr); !lost.empty()) {
      throw Error(StatusCode::InvalidDevicePointer, "argument " + std::to_string(i) + " (" +
                                                        std::string(arg_tag_name(args.tag(i))) +
                                                        "): " + lost);
    }
    throw Error(StatusCode::InvalidDevicePointer,
                "argument " + std::to_string(i) + " (" + std::string(arg_tag_name(args.tag(i))) +
                    "): buffer " + hex(buffer.addr) + " of " + std::to_string(buffer.size) +
                    " bytes is not inside a live device allocation from " +
                    options_.facade.malloc_call + "; pass buffers from " +
                    options_.facade.malloc_call +
                    " that have not been freed (a runtime output is valid only inside the run "
                    "that produced it)");
  }
}

template <class Body>
auto DeviceRunner::as_active_run(const char* what, Body&& body) -> decltype(body()) {
  bool expected = false;
  if (!run_active_.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) {
    throw Error(StatusCode::InvalidArgument,
                std::string(what) + ": another run is in progress on device " +
                    std::to_string(device_id_) +
                    "; runs execute one at a time (serialise the calls)");
  }
  struct Release {
    std::atomic<bool>& flag;
    ~Release() { flag.store(false, std::memory_order_release); }
  } release{run_active_};
  return body();
}

RunReport DeviceRunner::run(int32_t callable_id, const TaskArgs& args, const CallConfig& config,
                            bool* started) {
  return as_active_run("run", [&] {
    const RunClock::time_point t_entry = RunClock::now();
    require_usable("run");
    const RunPlan plan = plan_run(config);  // initialises and validates
    PreparedLaunch prepared = prepare(plan, callable_id, args, t_entry, started);
    if (prepared.needs_launch) {
      try {
        launch(prepared);
        wait(prepared);
      } catch (const Error& e) {
        fail_diagnostics(prepared, e);
      }
    }
    return collect(prepared);
  });
}

GraphExport DeviceRunner::export_graph(int32_t callable_id, const TaskArgs& args,
                                       const CallConfig& config) {
  return as_active_run("export_graph", [&] {
    require_usable("export_graph");
    const RunPlan plan = plan_run(config, PlanPurpose::ExportGraph);  // initialises and validates
    common::KernelTable kernel_table{};
    const RegisteredCallable& callable =
        prepare_orchestration("export_graph", callable_id, args, RuntimeVariant::HostBuildGraph,
                              plan.slot, &kernel_table);
    HostBuild built = orchestrate_host_graph(plan, callable, args, kernel_table, true);
    std::array<uint64_t, kMaxFuncId> kernel_entries{};
    for (std::size_t f = 0; f < kernel_entries.size(); ++f) {
      if (callable.kernels[f].present) kernel_entries[f] = callable.kernels[f].entry;
    }
    GraphExport graph = decode_graph_image(built.image, kernel_entries, built.edge_kinds);
    graph.accessed_tensor_data = built.accessed_tensor_data;
    builder_scratch_.recycle_image(std::move(built.image));
    return graph;
  });
}

void DeviceRunner::release_device_resources() {
  Status first;
  auto capture = [&first](const Status& status) {
    if (!status.is_ok() && first.is_ok()) first = status;
  };
  // Dependency order: what references device memory first, the tracked leftovers last, the
  // streams after every device call.
  capture(callables_.release_all());
  capture(arenas_.release_all());
  capture(graph_buffers_.release_all());
  capture(staging_.release_all());
  if (status_block_addr_ != 0) {
    capture(memory_.free(status_block_addr_, AllocationOwner::Runtime));
  }
  status_block_addr_ = services_addr_ = kernel_table_addr_ = 0;
  capture(memory_.release_all());
  if (streams_started_) platform_->stop_streams();
  streams_started_ = false;
  if (!first.is_ok()) throw Error(first);
}

void DeviceRunner::finalize() {
  if (run_active_.load(std::memory_order_acquire) && !faulted_) {
    // Only reachable from another thread while a run is in flight (the runner is not
    // thread-safe); refuse rather than free memory the chip is using.
    throw Error(StatusCode::InvalidArgument, "finalize: a run is in progress; wait for it");
  }
  const bool was_faulted = faulted_;
  initialized_ = false;
  chip_init_done_ = false;
  prebuilt_image_resident_.fill(false);
  if (!was_faulted) {
    release_device_resources();
  } else {
    callables_.forget_registrations();
  }
  device_id_ = -1;
  platform_->detach();
}

void DeviceRunner::forget_device_resources() noexcept {
  initialized_ = false;
  chip_init_done_ = false;
  callables_.abandon();
  arenas_.abandon();
  graph_buffers_.abandon();
  staging_.abandon();
  status_block_addr_ = services_addr_ = kernel_table_addr_ = 0;
  prebuilt_image_resident_.fill(false);
}

void DeviceRunner::abandon_after_fault(std::string what_faulted) noexcept {
  faulted_ = true;
  fault_description_ = std::move(what_faulted);
  // The device may still be executing (a stuck kernel): nothing here touches it, and stopping
  // the streams later does not wait for that launch.
  platform_->abandon_launch();
  platform_->abandon_memory();
  forget_device_resources();
  try {
    // The user's buffers are lost by the reset that will replace this device.
    memory_.forget_as_lost(reset_count_ + 1);
  } catch (...) {
    memory_.abandon();  // no history for them (out of memory): they read as unknown addresses
  }
  // Streams are left as they are: stopping them would wait for the stuck launch.
  CHIPRT_LOG_WARN(
      "device %d faulted: resources abandoned without device calls; runs refused until %s",
      device_id_, options_.facade.reset_call.c_str());
}

void DeviceRunner::reset() {
  if (faulted_) {
    // The faulted launch must be over before the streams take another one; a stuck kernel keeps
    // the runner faulted (the caller may reset again once it returns).
    Status recovered = platform_->recover();
    if (!recovered.is_ok()) {
      throw Error(StatusCode::DeviceFaulted, "reset: device " + std::to_string(device_id_) +
                                                 " cannot be reused yet: " + recovered.message());
    }
    // The streams stay started and drained; ensure_initialized finds them running.
    faulted_ = false;
    fault_description_.clear();
    callables_.forget_registrations();
    device_id_ = -1;
    platform_->detach();
    return;
  }
  finalize();
}

void DeviceRunner::reset_device() {
  if (device_id_ < 0) {
    throw Error(StatusCode::NotInitialized,
                "reset: the runner is not attached to a device; call attach first");
  }
  if (run_active_.load(std::memory_order_acquire)) {
    throw Error(StatusCode::InvalidArgument, "reset: a run is in progress; wait for it");
  }
  // The old device's memory goes with it: forget every record of it without device calls (a
  // faulted device may be dead; a healthy one is discarded whole by the platform's reset).
  const uint64_t reset_number = reset_count_ + 1;
  forget_device_resources();
  memory_.forget_as_lost(reset_number);
  streams_started_ = false;  // reset_device stops them
  faulted_ = true;           // until the new device is up and every callable is back
  Status status = platform_->reset_device();
  if (!status.is_ok()) {
    fault_description_ = "the device reset failed: " + status.message();
    throw Error(status.code(), "reset: replacing device " + std::to_string(device_id_) +
                                   " failed: " + status.message());
  }
  reset_count_ = reset_number;
  faulted_ = false;
  fault_description_.clear();
  try {
    ensure_initialized();
    throw_if(callables_.reregister_all());
  } catch (const Error& e) {
    abandon_after_fault("reset " + std::to_string(reset_number) +
                        " did not complete: " + e.message());
    throw Error(e.code(), "reset: " + e.message());
  }
  CHIPRT_LOG_INFO("device %d reset (reset %llu): %zu callables registered again", device_id_,
                  static_cast<unsigned long long>(reset_number), callables_.size());
}

}  // namespace chiprt::host
