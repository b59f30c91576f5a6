#include "platform/sim/sim_platform.h"

#include <string>
#include <thread>

#include "aicore/core_executor.h"
#include "platform/sim/isolated_platform.h"
#include "scheduler/chip_entry.h"

namespace chiprt::platform::sim {
namespace {

constexpr uint32_t kMaxClusters = 24;
constexpr uint32_t kMaxAicpuThreads = 8;
constexpr uint32_t kMaxHostThreads = 64;
constexpr uint64_t kMinMemoryBytes = 1ull << 20;

Status out_of_range(const char* field, uint64_t value, const std::string& range) {
  return Status(StatusCode::InvalidConfig, std::string("SimOptions.") + field + " must be " +
                                               range + " (got " + std::to_string(value) + ")");
}

}  // namespace

Status validate_sim_options(const SimOptions& config) {
  if (config.clusters < 1 || config.clusters > kMaxClusters) {
    return out_of_range("clusters", config.clusters,
                        "in [1, " + std::to_string(kMaxClusters) + "]");
  }
  if (config.aicpu_threads < 1 || config.aicpu_threads > kMaxAicpuThreads) {
    return out_of_range("aicpu_threads", config.aicpu_threads,
                        "in [1, " + std::to_string(kMaxAicpuThreads) + "]");
  }
  if (config.host_threads > kMaxHostThreads) {
    return out_of_range(
        "host_threads", config.host_threads,
        "0 (the host's hardware threads) or in [1, " + std::to_string(kMaxHostThreads) + "]");
  }
  if (config.core_execution != SimCoreExecution::Auto &&
      config.core_execution != SimCoreExecution::Aicpu &&
      config.core_execution != SimCoreExecution::Executors) {
    return out_of_range("core_execution", static_cast<uint64_t>(config.core_execution),
                        "0 (auto), 1 (aicpu) or 2 (executors)");
  }
  if (config.isolation != SimIsolation::Default && config.isolation != SimIsolation::None &&
      config.isolation != SimIsolation::Process) {
    return out_of_range("isolation", static_cast<uint64_t>(config.isolation),
                        "0 (default), 1 (none) or 2 (process)");
  }
  if (config.memory_bytes < kMinMemoryBytes) {
    return out_of_range("memory_bytes", config.memory_bytes,
                        "at least " + std::to_string(kMinMemoryBytes) + " (1 MiB)");
  }
  return Status::ok();
}

uint32_t resolve_host_threads(uint32_t host_threads) {
  if (host_threads != 0) return host_threads;
  const unsigned hardware = std::thread::hardware_concurrency();
  if (hardware == 0) return 1;
  return hardware > kMaxHostThreads ? kMaxHostThreads : hardware;
}

}  // namespace chiprt::platform::sim

namespace chiprt::platform::sim {

Status create_sim_platform(const SimOptions& options, std::shared_ptr<DeviceStarter> starter,
                           std::unique_ptr<Platform>* out) {
  if (out == nullptr) {
    return Status(StatusCode::InvalidArgument, "create_sim_platform: out must not be null");
  }
  std::shared_ptr<ForkServer> server = std::dynamic_pointer_cast<ForkServer>(starter);
  if (starter != nullptr && server == nullptr) {
    return Status(StatusCode::InvalidConfig,
                  "create_sim_platform: the device starter is not the sim's; make it with "
                  "start_device_starter(\"sim\")");
  }
  SimOptions requested = options;
  if (Status status = apply_core_execution_env(&requested); !status) return status;
  if (Status status = apply_isolation_env(&requested); !status) return status;
  if (Status status = validate_sim_options(requested); !status) return status;
  if (requested.isolation == SimIsolation::Process) {
    try {
      *out = std::make_unique<IsolatedPlatform>(requested, IsolationTuning{}, std::move(server));
    } catch (const Error& error) {
      return Status(error.code(), error.message());
    }
  } else {
    *out = std::make_unique<SimPlatform>(requested);
  }
  return Status::ok();
}

Status start_sim_device_starter(std::shared_ptr<DeviceStarter>* out) {
  if (out == nullptr) {
    return Status(StatusCode::InvalidArgument, "start_sim_device_starter: out must not be null");
  }
  std::shared_ptr<ForkServer> server;
  if (Status status = IsolatedPlatform::start_fork_server(&server); !status) return status;
  *out = std::move(server);
  return Status::ok();
}

SimPlatformBase::SimPlatformBase(const SimOptions& config, const SimTuning& tuning)
    : options_(config) {
  geometry_.clusters = config.clusters;
  geometry_.max_aicpu_threads = kMaxAicpuThreads;
  // A serial chip runs exactly one AICPU thread, so that is its default shape.
  geometry_.default_aicpu_threads = config.serial ? 1 : config.aicpu_threads;
  geometry_.clock_hz = 1'000'000'000;  // cycles are steady_clock nanoseconds

  engine_options_.cores = geometry_.cores();
  engine_options_.max_aicpu_threads = kMaxAicpuThreads;
  engine_options_.executor_threads = resolve_host_threads(config.host_threads);
  engine_options_.serial = config.serial;
  engine_options_.kernels_on_aicpu = resolve_core_execution(config) == SimCoreExecution::Aicpu;
  geometry_.kicks_run_kernels = engine_options_.kernels_on_aicpu;
  geometry_.kernel_threads =
      config.serial || engine_options_.kernels_on_aicpu ? 0 : engine_options_.executor_threads;
  engine_options_.stop_grace_ms = tuning.stop_grace_ms;
}

Status SimPlatformBase::attach(int device_id) {
  if (device_id < 0) {
    return Status(StatusCode::InvalidArgument,
                  "attach: device_id must be >= 0 (got " + std::to_string(device_id) + ")");
  }
  if (attached_device_ && *attached_device_ != device_id) {
    return Status(StatusCode::DeviceMismatch,
                  "attach: already attached to device " + std::to_string(*attached_device_) +
                      "; finalize before attaching to device " + std::to_string(device_id));
  }
  attached_device_ = device_id;
  return Status::ok();
}

Status SimPlatformBase::alloc(uint64_t bytes, uint64_t align, DeviceBuffer* out) {
  return memory_->alloc(bytes, align, out);
}
Status SimPlatformBase::free(uint64_t addr) {
  return memory_->free(addr);
}
Status SimPlatformBase::copy_to_device(uint64_t dst, const void* src, uint64_t bytes) {
  return memory_->copy_to_device(dst, src, bytes);
}
Status SimPlatformBase::copy_from_device(void* dst, uint64_t src, uint64_t bytes) {
  return memory_->copy_from_device(dst, src, bytes);
}
Status SimPlatformBase::load_device_word(uint64_t src, uint32_t* out) {
  return memory_->load_word(src, out);
}
Status SimPlatformBase::load_device_u64(uint64_t src, uint64_t* out) {
  return memory_->load_u64(src, out);
}
Status SimPlatformBase::store_device_u64(uint64_t dst, uint64_t value) {
  return memory_->store_u64(dst, value);
}
uint64_t SimPlatformBase::chip_cycles_now() const {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}
Status SimPlatformBase::memset(uint64_t dst, int value, uint64_t bytes) {
  return memory_->memset(dst, value, bytes);
}

Status SimPlatformBase::check_device_range(const char* operation, uint64_t addr,
                                           uint64_t bytes) const {
  return memory_->check(operation, addr, bytes);
}

Status SimPlatformBase::copy_from_peer(uint64_t dst, Platform& src, uint64_t src_addr,
                                       uint64_t bytes) {
  if (auto* peer = dynamic_cast<SimPlatformBase*>(&src); peer != nullptr) {
    return memory_->copy_from(*peer->memory_, dst, src_addr, bytes);
  }
  return Platform::copy_from_peer(dst, src, src_addr, bytes);
}
uint64_t SimPlatformBase::bytes_in_use() const {
  return memory_->bytes_in_use();
}
uint64_t SimPlatformBase::capacity() const {
  return memory_->capacity();
}
void SimPlatformBase::abandon_memory() {
  memory_->abandon();
}

LaunchPrograms linked_chip_runtime() noexcept {
  LaunchPrograms runtime;
  runtime.aicpu_entry = &scheduler::aicpu_entry;
  runtime.core_service = &aicore::core_service;
  return runtime;
}

Status chip_runtime_launch(const LaunchPrograms& runtime, const LaunchRequest& request,
                           LaunchPrograms* out) {
  if (runtime.aicpu_entry == nullptr) {
    return Status(StatusCode::NotInitialized,
                  "launch: no chip runtime is loaded; call load_chip_runtime() first");
  }
  if (request.launch_args_addr == 0) {
    return Status(StatusCode::InvalidArgument,
                  "launch: LaunchRequest::launch_args_addr must name the launch arguments");
  }
  *out = runtime;
  out->ctx = reinterpret_cast<void*>(static_cast<uintptr_t>(request.launch_args_addr));
  out->aicpu_threads = request.aicpu_threads;
  out->cores = request.cores;
  out->serial = request.serial;
  return Status::ok();
}

SimPlatform::SimPlatform(const SimOptions& config, const SimTuning& tuning)
    : SimPlatformBase(config, tuning) {
  create_device();
}

void SimPlatform::create_device() {
  memory_ = std::make_shared<DeviceMemory>(options_.memory_bytes);
  objects_ = std::make_shared<ObjectLoader>();
  engine_ = std::make_shared<LaunchEngine>(engine_options_);
  engine_->keep_alive(memory_);
  engine_->keep_alive(objects_);
}

Status SimPlatform::reset_device() {
  // Threads stuck in a kernel keep the old engine, memory and objects alive (keep_alive) until
  // they return; the new device starts with the whole capacity.
  engine_->stop();
  create_device();
  return Status::ok();
}

SimPlatform::~SimPlatform() {
  engine_->stop();
}

Status SimPlatform::load_object(std::span<const uint8_t> image, LoadedObject* out) {
  if (out == nullptr) {
    return Status(StatusCode::InvalidArgument, "load_object: out must not be null");
  }
  return objects_->load(image, &out->handle);
}
Status SimPlatform::resolve_symbol(LoadedObject object, const char* symbol, uint64_t* addr) {
  return objects_->resolve(object.handle, symbol, addr);
}
Status SimPlatform::unload_object(LoadedObject object) {
  return objects_->unload(object.handle);
}

Status SimPlatform::start_streams() {
  return engine_->start();
}
void SimPlatform::stop_streams() {
  engine_->stop();
}
void SimPlatform::abandon_launch() {
  engine_->abandon_launch();
}
Status SimPlatform::load_chip_runtime() {
  // The chip shares this process: its runtime is linked in.
  chip_runtime_ = linked_chip_runtime();
  return Status::ok();
}
Status SimPlatform::launch(const LaunchRequest& request) {
  LaunchPrograms programs;
  if (Status status = chip_runtime_launch(chip_runtime_, request, &programs); !status) {
    return status;
  }
  return engine_->launch(programs);
}
Status SimPlatform::launch_programs(const LaunchPrograms& programs) {
  return engine_->launch(programs);
}
Status SimPlatform::wait(uint64_t timeout_ms) {
  return engine_->wait(timeout_ms);
}
Status SimPlatform::wait_aicpu(uint64_t timeout_ms) {
  return engine_->wait_aicpu(timeout_ms);
}
Status SimPlatform::wait_aicpu_wakeable(uint64_t timeout_ms) {
  return engine_->wait_aicpu(timeout_ms, /*wakeable=*/true);
}
void SimPlatform::wake_wait() noexcept {
  engine_->wake_waiter();
}
Status SimPlatform::recover() {
  return engine_->recover();
}

}  // namespace chiprt::platform::sim
