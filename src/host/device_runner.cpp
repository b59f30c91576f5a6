#include "host/device_runner.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>

#include "common/chip_launch.h"
#include "common/graph_image.h"
#include "common/handshake.h"
#include "common/progress.h"
#include "common/ring_layout.h"
#include "common/shared_layout.h"
#include "common/task_args_wire.h"
#include "host/graph_image_export.h"
#include "host/log.h"
#include "orchestrator/graph_image_validate.h"
#include "orchestrator/host_graph_builder.h"

namespace chiprt::host {
namespace {

using Clock = std::chrono::steady_clock;

uint64_t ns_between(Clock::time_point a, Clock::time_point b) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count());
}

constexpr uint64_t round_up(uint64_t value, uint64_t align) {
  return (value + align - 1) / align * align;
}

constexpr uint64_t kServicesBytes = round_up(sizeof(platform::ChipServices), kDeviceAlign);
constexpr uint64_t kKernelTableBytes = sizeof(uint64_t) * kMaxFuncId;
constexpr uint64_t kLaunchArgsBytes = round_up(sizeof(common::ChipLaunchArgs), kDeviceAlign);
constexpr uint64_t kPhaseBufferBytes = round_up(sizeof(common::PhaseBuffer), kDeviceAlign);
// tensormap_ringbuffer: the orchestrator on the chip validates submissions against a copy of the
// kernel table and calls the orchestration function with the run's arguments, sent in their wire
// format (common/task_args_wire.h).
static_assert(std::is_trivially_copyable_v<common::KernelTable>);
constexpr uint64_t kKernelInfoBytes = round_up(sizeof(common::KernelTable), kDeviceAlign);
constexpr uint64_t kOrchestrationArgsBytes = round_up(sizeof(common::TaskArgsWire), kDeviceAlign);
// Once the chip latched an error, the rest of the launch (the cores, or an AICPU thread inside a
// kernel) gets this long, at most the stream-sync timeout, before it is abandoned: a stuck kernel
// will not return.
constexpr uint64_t kFaultDrainGraceMs = 1000;
// How often the host looks for a latched chip error while it waits for the AICPU threads.
constexpr uint64_t kAicpuWaitSliceMs = 20;

// A number no other run of this process has (0 is skipped when it wraps after 2^32 - 1 runs): a
// run's runtime outputs carry it, so an output kept from an earlier run, of any runner, is refused
// instead of aliasing this run's outputs at the same heap address.
uint32_t next_run_number() {
  static std::atomic<uint32_t> last{0};
  uint32_t run = last.fetch_add(1, std::memory_order_relaxed) + 1;
  while (run == 0) run = last.fetch_add(1, std::memory_order_relaxed) + 1;
  return run;
}

std::string hex(uint64_t value) {
  char text[32];
  std::snprintf(text, sizeof(text), "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

// Appends the raw bytes of a trivially copyable value to a key.
template <class T>
void append(std::vector<uint8_t>* key, const T& value) {
  static_assert(std::is_trivially_copyable_v<T>);
  const auto* bytes = reinterpret_cast<const uint8_t*>(&value);
  key->insert(key->end(), bytes, bytes + sizeof(T));
}

// What a host-built image depends on: the callable's identity and content, every argument field
// (field by field, so padding never makes equal arguments differ) and the sizing.
std::vector<uint8_t> replay_key(const RegisteredCallable& callable, const TaskArgs& args,
                                uint64_t heap_bytes, uint64_t max_tasks, uint32_t clusters) {
  std::vector<uint8_t> key;
  key.reserve(64 + static_cast<std::size_t>(args.tensor_count()) * 128);
  append(&key, callable.id);
  append(&key, callable.content_hash);
  append(&key, heap_bytes);
  append(&key, max_tasks);
  append(&key, clusters);
  append(&key, args.tensor_count());
  for (int i = 0; i < args.tensor_count(); ++i) {
    const Tensor& t = args.tensor(i);
    append(&key, args.tag(i));
    append(&key, t.buffer.addr);
    append(&key, t.buffer.size);
    append(&key, t.start_offset);
    append(&key, t.ndim);
    append(&key, t.dtype);
    for (uint32_t d = 0; d < t.ndim && d < static_cast<uint32_t>(kMaxTensorDims); ++d) {
      append(&key, t.shape[d]);
      append(&key, t.strides[d]);
    }
    append(&key, t.owner_task);
    append(&key, t.version);
  }
  append(&key, args.scalar_count());
  for (int i = 0; i < args.scalar_count(); ++i) append(&key, args.scalar_bits(i));
  append(&key, args.dep_count());
  for (int i = 0; i < args.dep_count(); ++i) append(&key, args.dep(i));
  return key;
}

uint64_t output_heap_bytes_of(const CallConfig& config) {
  return config.output_heap_bytes != 0 ? config.output_heap_bytes
                                       : CallConfig::kDefaultOutputHeapBytes;
}

uint64_t max_tasks_of(const CallConfig& config) {
  return config.max_tasks != 0 ? config.max_tasks : CallConfig::kDefaultMaxTasks;
}

// Validates a freshly built image (orchestrator's structural checks) and reads its task count.
Status check_image(const std::vector<uint8_t>& image, uint64_t* task_count) {
  Status status = orchestrator::validate_graph_image(image.data(), image.size());
  if (!status.is_ok()) return status;
  common::GraphImageHeader header;
  std::memcpy(&header, image.data(), sizeof(header));
  *task_count = header.task_count;
  return Status::ok();
}

}  // namespace

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

void DeviceRunner::throw_if(const Status& status) const {
  if (!status.is_ok()) throw Error(status);
}

void DeviceRunner::require_usable(const char* what) const {
  if (faulted_) {
    throw Error(StatusCode::DeviceFaulted,
                std::string(what) + ": device " + std::to_string(device_id_) +
                    " faulted earlier and its resources were abandoned; reset the runner (close "
                    "the Worker and create a new one)");
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
  max_block_dim_ = geometry_.clusters;
  // The chip-side programs (scheduler, core loop) are the platform's to provide.
  throw_if(platform_->load_chip_runtime());
  if (!chip_init_done_) {
    DeviceBuffer block;
    throw_if(memory_.allocate(kServicesBytes + kKernelTableBytes, kDeviceAlign,
                              AllocationOwner::Runtime, &block));
    status_block_addr_ = block.addr;
    services_addr_ = block.addr;
    kernel_table_addr_ = block.addr + kServicesBytes;
    Status status = memory_.copy_to_device(services_addr_, &platform_->services(),
                                           sizeof(platform::ChipServices));
    if (status.is_ok()) status = memory_.memset(kernel_table_addr_, 0, kKernelTableBytes);
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
  PlatformLimits limits;
  limits.max_clusters = geometry_.clusters;
  limits.max_aicpu_threads = std::min(geometry_.max_aicpu_threads, common::kMaxAicpuThreads);
  limits.pipeline_depth = kPipelineDepth;
  return limits;
}

LaunchShape DeviceRunner::resolve_launch_shape(const CallConfig& config) {
  ensure_initialized();
  config.validate_or_throw(limits());
  LaunchShape shape;
  shape.serial = platform_->serial() || config.serial;
  shape.measure_kernel_time = config.measure_kernel_time;
  const uint32_t usable = std::min(geometry_.max_aicpu_threads, common::kMaxAicpuThreads);
  const uint32_t desired = config.aicpu_thread_num > 0
                               ? static_cast<uint32_t>(config.aicpu_thread_num)
                               : geometry_.default_aicpu_threads;
  shape.aicpu_threads = std::min(desired, usable);
  if (shape.aicpu_threads < desired) {
    CHIPRT_LOG_WARN(
        "AICPU: %u threads requested, %u usable; running %u threads (host_build_graph: every "
        "AICPU thread schedules)",
        desired, usable, shape.aicpu_threads);
  }
  if (shape.serial) {
    shape.aicpu_threads = 1;
  } else if (shape.aicpu_threads < 2) {
    throw Error(StatusCode::InvalidConfig,
                "AICPU threads resolve to " + std::to_string(shape.aicpu_threads) + " (requested " +
                    std::to_string(desired) + ", usable " + std::to_string(usable) +
                    "); a threaded run needs at least 2 AICPU threads; set aicpu_thread_num >= 2 "
                    "or run serial");
  }
  const uint32_t clusters =
      config.cluster_count > 0 ? static_cast<uint32_t>(config.cluster_count) : max_block_dim_;
  if (clusters > max_block_dim_) {
    throw Error(StatusCode::InvalidConfig, "cluster_count=" + std::to_string(clusters) +
                                               " exceeds the device's " +
                                               std::to_string(max_block_dim_) + " clusters");
  }
  shape.clusters = clusters;
  shape.cores = clusters * 3;
  return shape;
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
  throw_if(callables_.bind(id, kernel_table_addr_, nullptr));
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
    throw Error(StatusCode::InvalidDevicePointer,
                "argument " + std::to_string(i) + " (" + std::string(arg_tag_name(args.tag(i))) +
                    "): buffer " + hex(buffer.addr) + " of " + std::to_string(buffer.size) +
                    " bytes is not inside a live device allocation from Worker::malloc; pass "
                    "buffers from Worker::malloc that have not been freed (a runtime output is "
                    "valid only inside the run that produced it)");
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

RunReport DeviceRunner::run(int32_t callable_id, const TaskArgs& args, const CallConfig& config) {
  return as_active_run("run", [&] { return run_locked(callable_id, args, config); });
}

GraphExport DeviceRunner::export_graph(int32_t callable_id, const TaskArgs& args,
                                       const CallConfig& config) {
  return as_active_run("export_graph", [&] {
    require_usable("export_graph");
    const LaunchShape shape = resolve_launch_shape(config);  // initialises and validates
    common::KernelTable kernel_table{};
    const RegisteredCallable& callable = prepare_orchestration(
        "export_graph", callable_id, args, RuntimeVariant::HostBuildGraph, &kernel_table);
    HostBuild built = build_host_graph(callable, args, config, shape, kernel_table);
    std::array<uint64_t, kMaxFuncId> kernel_entries{};
    for (std::size_t f = 0; f < kernel_entries.size(); ++f) {
      if (callable.kernels[f].present) kernel_entries[f] = callable.kernels[f].entry;
    }
    GraphExport graph = decode_graph_image(built.image, kernel_entries);
    graph.accessed_tensor_data = built.accessed_tensor_data;
    builder_scratch_.recycle_image(std::move(built.image));
    return graph;
  });
}

const RegisteredCallable& DeviceRunner::prepare_orchestration(const char* what, int32_t callable_id,
                                                              const TaskArgs& args,
                                                              RuntimeVariant variant,
                                                              common::KernelTable* kernel_table) {
  if (Status status = callables_.check_registered(callable_id); !status.is_ok()) {
    throw Error(status.code(), std::string(what) + ": " + status.message());
  }
  // A registration serves both variants: the orchestration entry this variant needs is loaded on
  // its first use.
  throw_if(callables_.prepare_orchestration(callable_id, variant));
  const RegisteredCallable* callable = callables_.find(callable_id);
  check_signature(*callable, args);
  check_argument_buffers(args);
  throw_if(callables_.bind(callable_id, kernel_table_addr_, kernel_table));
  return *callable;
}

DeviceRunner::HostBuild DeviceRunner::build_host_graph(const RegisteredCallable& callable,
                                                       const TaskArgs& args,
                                                       const CallConfig& config,
                                                       const LaunchShape& shape,
                                                       const common::KernelTable& kernel_table) {
  const uint32_t bank = config.arena_bank;
  const uint64_t heap_bytes = output_heap_bytes_of(config);
  const ArenaSizes committed = arenas_.committed_sizes(bank);
  throw_if(arenas_.setup(bank, {heap_bytes, committed.shared_state, committed.runtime_image}));
  // The region may be larger than this call asked for (it is reused while big enough); the
  // builder sees exactly the configured heap so capacity errors do not depend on history.
  const DeviceBuffer heap{arenas_.region(bank, ArenaRegion::OutputHeap).addr, heap_bytes};
  // get/set_tensor_data of the orchestration copy through the platform.
  struct PlatformTensorMemory final : orchestrator::TensorMemory {
    explicit PlatformTensorMemory(platform::Platform& platform) : platform(platform) {}
    Status read(uint64_t addr, void* dst, uint64_t bytes) override {
      return platform.copy_from_device(dst, addr, bytes);
    }
    Status write(uint64_t addr, const void* src, uint64_t bytes) override {
      return platform.copy_to_device(addr, src, bytes);
    }
    platform::Platform& platform;
  } tensor_memory(*platform_);
  orchestrator::HostGraphBuilder builder(kernel_table, heap, {max_tasks_of(config), shape.clusters},
                                         &builder_scratch_, &tensor_memory);
  HostBuild built;
  const Clock::time_point t_build = Clock::now();
  builder.build(callable.orchestration, args, next_run_number());
  built.build_ns = ns_between(t_build, Clock::now());
  built.image = builder.take_image();
  built.accessed_tensor_data = builder.accessed_tensor_data();
  throw_if(check_image(built.image, &built.task_count));
  return built;
}

RunReport DeviceRunner::run_locked(int32_t callable_id, const TaskArgs& args,
                                   const CallConfig& config) {
  const Clock::time_point t_entry = Clock::now();
  require_usable("run");
  const LaunchShape shape = resolve_launch_shape(config);  // initialises and validates

  const RuntimeVariant variant =
      config.runtime == RuntimeVariant::Default ? options_.default_runtime : config.runtime;
  if (variant == RuntimeVariant::TensormapRingbuffer && config.replay_graph) {
    throw Error(StatusCode::InvalidConfig,
                "replay_graph=true: graph replay is a host_build_graph feature; a "
                "tensormap_ringbuffer run orchestrates on the chip every time and has no graph "
                "image to replay (set replay_graph=false or run host_build_graph)");
  }
  common::KernelTable kernel_table{};
  const RegisteredCallable* callable =
      &prepare_orchestration("run", callable_id, args, variant, &kernel_table);
  if (variant == RuntimeVariant::TensormapRingbuffer) {
    return run_ring(*callable, args, config, shape, kernel_table, t_entry);
  }

  const uint32_t bank = config.arena_bank;
  const uint32_t slot = config.pipeline_slot;
  const uint64_t heap_bytes = output_heap_bytes_of(config);
  const uint64_t max_tasks = max_tasks_of(config);

  RunReport report;
  report.aicpu_threads = shape.aicpu_threads;
  report.cores = shape.cores;
  report.serial = shape.serial;

  std::vector<uint8_t> key;
  // A freshly built image lives in `built_image` (moved out of the builder, then into the replay
  // cache); a replay reads the cached one in place. Either way `image` points at it, so no run
  // copies the image on the host.
  std::vector<uint8_t> built_image;
  const std::vector<uint8_t>* image = &built_image;
  uint64_t task_count = 0;
  uint64_t build_ns = 0;
  bool replayed = false;
  bool prevalidated = false;
  if (config.replay_graph) {
    key = replay_key(*callable, args, heap_bytes, max_tasks, shape.clusters);
    if (const PrebuiltImage* cached = arenas_.lookup_prebuilt(bank, key)) {
      image = &cached->image;
      task_count = cached->task_count;
      replayed = true;
      prevalidated = cached->chip_validated;
    }
  }
  // A graph whose orchestration read or wrote tensor data is not cached: a replay skips the
  // orchestration function, so those accesses would silently not happen.
  bool cacheable = config.replay_graph;
  if (!replayed) {
    HostBuild built = build_host_graph(*callable, args, config, shape, kernel_table);
    built_image = std::move(built.image);
    task_count = built.task_count;
    build_ns = built.build_ns;
    if (built.accessed_tensor_data) cacheable = false;
  }

  const uint64_t shared_bytes = common::shared_state_bytes(task_count);
  // A replayed image keeps the layout it was cached with, so this commits nothing new then.
  const uint64_t image_size = image->size();
  throw_if(arenas_.setup(bank, {heap_bytes, shared_bytes, image_size}));
  const bool stored_prebuilt = cacheable && !replayed && bank == 0;
  if (stored_prebuilt) {
    PrebuiltImage entry;
    entry.key = key;
    entry.image = std::move(built_image);
    entry.task_count = task_count;
    entry.output_heap = arenas_.region(bank, ArenaRegion::OutputHeap);
    entry.shared_state = arenas_.region(bank, ArenaRegion::SharedState);
    entry.runtime_image = arenas_.region(bank, ArenaRegion::RuntimeImage);
    arenas_.store_prebuilt(bank, std::move(entry));
  }
  if (replayed || stored_prebuilt) {
    // The image now lives in the cache; setup above drops the cache only when a region moved,
    // which a replay's unchanged layout never does (checked rather than assumed).
    const PrebuiltImage* cached = arenas_.lookup_prebuilt(bank, key);
    if (cached == nullptr && task_count != 0) {
      throw Error(StatusCode::InternalError,
                  "the cached graph image of callable " + std::to_string(callable_id) +
                      " was dropped while its run was being prepared (arena bank " +
                      std::to_string(bank) + " changed layout)");
    }
    if (cached != nullptr) image = &cached->image;
  }
  if (replayed) ++replayed_runs_;

  report.task_count = task_count;
  report.output_heap_committed_bytes = arenas_.committed_sizes(bank).output_heap;
  PhaseSpan& graph_build = report.phases[static_cast<int>(Phase::GraphBuild)];
  graph_build.present = !replayed;
  graph_build.start_ns = 0;
  graph_build.span_ns = build_ns;

  if (task_count == 0) {
    // Nothing for the chip to do: no launch.
    const Clock::time_point t_end = Clock::now();
    report.host_prepare_ns = ns_between(t_entry, t_end);
    report.host_total_ns = report.host_prepare_ns;
    return report;
  }

  const DeviceBuffer image_region = arenas_.region(bank, ArenaRegion::RuntimeImage);
  const DeviceBuffer shared_region = arenas_.region(bank, ArenaRegion::SharedState);
  // The chip only reads the image, so a replay finds it where the caching run left it unless
  // another image has been written to bank 0 since.
  if (!(replayed && prebuilt_image_resident_)) {
    if (bank == 0) prebuilt_image_resident_ = false;
    throw_if(memory_.copy_to_device(image_region.addr, image->data(), image_size));
    if (bank == 0) prebuilt_image_resident_ = replayed || stored_prebuilt;
  }
  // A built image that was not cached is done with once it is on the device: its storage, pages
  // already faulted in, serves the next build.
  if (image == &built_image) {
    builder_scratch_.recycle_image(std::move(built_image));
    image = nullptr;
  }
  // Only the fixed-size head of the region: the chip formats its per-task arrays and queues
  // itself, so zeroing them here would cost megabytes of writes per run for nothing.
  throw_if(
      memory_.memset(shared_region.addr, 0, std::min(shared_bytes, common::kSharedClearedBytes)));

  DeviceBuffer staging;
  throw_if(staging_.acquire(slot, kLaunchArgsBytes + kPhaseBufferBytes, &staging));
  const uint64_t launch_args_addr = staging.addr;
  const uint64_t phase_buffer_addr = staging.addr + kLaunchArgsBytes;
  {
    auto launch_args = base_launch_args(RuntimeVariant::HostBuildGraph, shape, shared_region,
                                        shared_bytes, phase_buffer_addr);
    launch_args->image_addr = image_region.addr;
    launch_args->image_size = image_size;
    launch_args->image_prevalidated = prevalidated;
    write_launch_args(*launch_args, launch_args_addr, phase_buffer_addr);
  }

  launch_and_collect(callable_id, shape, launch_args_addr, phase_buffer_addr, t_entry, &report);
  // launch_and_collect throws when the chip reports an error, so the image passed its checks.
  if (replayed || stored_prebuilt) arenas_.mark_prebuilt_validated(bank, key);
  if (prevalidated) ++prevalidated_launches_;
  report.host_total_ns = ns_between(t_entry, Clock::now());
  return report;
}

RunReport DeviceRunner::run_ring(const RegisteredCallable& callable, const TaskArgs& args,
                                 const CallConfig& config, const LaunchShape& shape,
                                 const common::KernelTable& kernel_table,
                                 Clock::time_point t_entry) {
  RingSizeResolution rings;
  throw_if(resolve_ring_sizes(config.rings, output_heap_bytes_of(config), options_.env, &rings));
  last_ring_sizes_ = rings;
  const uint64_t heap_bytes = rings.total_heap_bytes();
  const uint64_t shared_bytes = common::ring_shared_state_bytes(rings.sizes);
  if (shared_bytes == UINT64_MAX) {
    // resolve_ring_sizes applies the same rules as the layout, so this is a broken invariant.
    throw Error(StatusCode::InternalError,
                "the ring layout (common/ring_layout.h) rejects ring sizes the host resolved (" +
                    std::to_string(rings.total_slots()) + " slots in all)");
  }

  const uint32_t bank = config.arena_bank;
  const uint32_t slot = config.pipeline_slot;
  // The runtime-image region is left as committed (a later host_build_graph run reuses it).
  const ArenaSizes committed = arenas_.committed_sizes(bank);
  throw_if(arenas_.setup(bank, {heap_bytes, shared_bytes, committed.runtime_image}));
  const DeviceBuffer heap_region = arenas_.region(bank, ArenaRegion::OutputHeap);
  const DeviceBuffer shared_region = arenas_.region(bank, ArenaRegion::SharedState);
  throw_if(memory_.memset(shared_region.addr, 0, shared_bytes));

  // Staging of one slot: launch args | phase buffer | kernel table | orchestration arguments.
  DeviceBuffer staging;
  throw_if(staging_.acquire(
      slot, kLaunchArgsBytes + kPhaseBufferBytes + kKernelInfoBytes + kOrchestrationArgsBytes,
      &staging));
  const uint64_t launch_args_addr = staging.addr;
  const uint64_t phase_buffer_addr = launch_args_addr + kLaunchArgsBytes;
  const uint64_t kernel_info_addr = phase_buffer_addr + kPhaseBufferBytes;
  const uint64_t orchestration_args_addr = kernel_info_addr + kKernelInfoBytes;
  throw_if(
      memory_.copy_to_device(kernel_info_addr, kernel_table.data(), sizeof(common::KernelTable)));
  auto wire = std::make_unique<common::TaskArgsWire>();
  common::encode_task_args(args, wire.get());
  throw_if(memory_.copy_to_device(orchestration_args_addr, wire.get(), sizeof(*wire)));
  {
    auto launch_args = base_launch_args(RuntimeVariant::TensormapRingbuffer, shape, shared_region,
                                        shared_bytes, phase_buffer_addr);
    launch_args->orchestration_entry = callable.device_orchestration;
    launch_args->orchestration_args_addr = orchestration_args_addr;
    launch_args->run = next_run_number();
    launch_args->kernel_info_addr = kernel_info_addr;
    // Exactly the resolved heap, even when the committed region is larger (reused while big
    // enough): the per-depth heaps are carved from it as sized.
    launch_args->heap_addr = heap_region.addr;
    launch_args->heap_size = heap_bytes;
    launch_args->rings = rings.sizes;
    write_launch_args(*launch_args, launch_args_addr, phase_buffer_addr);
  }

  RunReport report;
  report.aicpu_threads = shape.aicpu_threads;
  report.cores = shape.cores;
  report.serial = shape.serial;
  report.rings = rings.used();
  report.output_heap_committed_bytes = arenas_.committed_sizes(bank).output_heap;
  // Every submitted task completes in a successful run, so the chip's completion count is the
  // number of tasks the orchestration submitted.
  report.task_count =
      launch_and_collect(callable.id, shape, launch_args_addr, phase_buffer_addr, t_entry, &report);
  report.host_total_ns = ns_between(t_entry, Clock::now());
  return report;
}

std::unique_ptr<common::ChipLaunchArgs> DeviceRunner::base_launch_args(
    RuntimeVariant variant, const LaunchShape& shape, const DeviceBuffer& shared_region,
    uint64_t shared_bytes, uint64_t phase_buffer_addr) const {
  auto launch_args = std::make_unique<common::ChipLaunchArgs>();
  launch_args->variant = variant;
  launch_args->serial = shape.serial;
  launch_args->measure_kernel_time = shape.measure_kernel_time;
  launch_args->kicks_run_kernels = geometry_.kicks_run_kernels;
  launch_args->aicpu_threads = shape.aicpu_threads;
  launch_args->clusters = shape.clusters;
  launch_args->device_clusters = geometry_.clusters;
  launch_args->shared_addr = shared_region.addr;
  launch_args->shared_size = shared_bytes;
  launch_args->kernel_table_addr = kernel_table_addr_;
  launch_args->phase_buffer_addr = phase_buffer_addr;
  launch_args->services_addr = services_addr_;
  launch_args->scheduler_timeout_ms = timeouts_.scheduler_ms;
  launch_args->clock_hz = geometry_.clock_hz;
  return launch_args;
}

void DeviceRunner::write_launch_args(const common::ChipLaunchArgs& launch_args,
                                     uint64_t launch_args_addr, uint64_t phase_buffer_addr) {
  throw_if(memory_.copy_to_device(launch_args_addr, &launch_args, sizeof(common::ChipLaunchArgs)));
  // Reset every run so stamps of an earlier run never leak into this one's reduction.
  throw_if(memory_.memset(phase_buffer_addr, 0, kPhaseBufferBytes));
}

uint64_t DeviceRunner::launch_and_collect(int32_t callable_id, const LaunchShape& shape,
                                          uint64_t launch_args_addr, uint64_t phase_buffer_addr,
                                          Clock::time_point t_entry, RunReport* report) {
  platform::LaunchRequest request;
  request.launch_args_addr = launch_args_addr;
  request.aicpu_threads = shape.aicpu_threads;
  // Core numbering spans the whole device (AIV cores follow all AIC cores), so every core
  // takes part; the scheduler only dispatches to the run's clusters.
  request.cores = geometry_.cores();
  request.serial = shape.serial;

  // The host's side of the progress rule (common/progress.h): the cores' kernel starts and the
  // orchestrator's beat, read through the platform while the launch runs.
  uint64_t shared_addr = 0;
  throw_if(memory_.copy_from_device(&shared_addr, common::launch_shared_addr_addr(launch_args_addr),
                                    sizeof(shared_addr)));
  auto read_progress = [&]() {
    uint64_t sum = 0;
    uint32_t word = 0;
    if (platform_->load_device_word(common::orchestrator_beat_addr(shared_addr), &word).is_ok()) {
      sum += word;
    }
    for (uint32_t core = 0; core < std::min(request.cores, common::kMaxCores); ++core) {
      const uint64_t addr = common::core_starts_addr(shared_addr, core);
      if (platform_->load_device_word(addr, &word).is_ok()) sum += word;
    }
    return sum;
  };

  const Clock::time_point t_launch = Clock::now();
  report->host_prepare_ns = ns_between(t_entry, t_launch);
  throw_if(platform_->launch(request));
  ++launches_;
  // AICPU threads first, then the cores. Once the chip latched an error (a scheduler gave up on a
  // stuck task) the rest gets only a short grace instead of the whole stream-sync timeout: the
  // cores, and, when kernels run on the AICPU threads, the thread stuck in that kernel. So the
  // AICPU threads are waited for in slices, reading the chip's status between them.
  auto result = std::make_unique<common::ChipLaunchArgs>();
  auto read_chip_code = [&]() {
    Status read =
        memory_.copy_from_device(result.get(), launch_args_addr, sizeof(common::ChipLaunchArgs));
    return read.is_ok()
               ? static_cast<StatusCode>(result->result.code.load(std::memory_order_acquire))
               : StatusCode::Ok;
  };
  // While the AICPU threads run, only the status word may be read (they write the rest).
  const uint64_t code_addr = common::launch_result_code_addr(launch_args_addr);
  auto peek_chip_code = [&]() {
    uint32_t word = 0;
    return platform_->load_device_word(code_addr, &word).is_ok() ? static_cast<StatusCode>(word)
                                                                 : StatusCode::Ok;
  };
  // The stream-sync timeout bounds a launch that stopped progressing, not a long one: the
  // deadline moves with every sample that shows progress.
  auto since_launch_ms = [&]() { return ns_between(t_launch, Clock::now()) / 1'000'000; };
  common::ProgressWatch watch(read_progress(), 0, timeouts_.stream_sync_ms);
  // Time left to the no-progress deadline as of the last sample.
  auto left_ms = [&]() -> uint64_t {
    const uint64_t now = since_launch_ms();
    const uint64_t deadline = watch.since() + timeouts_.stream_sync_ms;
    return now < deadline ? deadline - now : 0;
  };
  uint64_t drain_budget_ms = timeouts_.stream_sync_ms;
  bool chip_failed = false;
  Status waited(StatusCode::StreamSyncTimeout, "the launch made no progress");
  for (;;) {
    // Samples before every verdict: a stall is declared only after a look at the counters.
    if (watch.stalled(since_launch_ms(), read_progress)) break;
    waited = platform_->wait_aicpu(std::min(std::max<uint64_t>(left_ms(), 1), kAicpuWaitSliceMs));
    if (waited.code() != StatusCode::StreamSyncTimeout) break;
    if (peek_chip_code() != StatusCode::Ok) {
      chip_failed = true;
      drain_budget_ms = std::min(left_ms(), kFaultDrainGraceMs);
      waited = platform_->wait_aicpu(drain_budget_ms);
      break;
    }
  }
  if (waited.is_ok()) {
    if (!chip_failed) {
      drain_budget_ms =
          peek_chip_code() != StatusCode::Ok ? std::min(left_ms(), kFaultDrainGraceMs) : left_ms();
    }
    waited = platform_->wait(drain_budget_ms);
  }
  const Clock::time_point t_done = Clock::now();
  report->device_wall_ns = ns_between(t_launch, t_done);
  if (!waited.is_ok() && waited.code() != StatusCode::StreamSyncTimeout) throw Error(waited);

  // Read the chip's verdict even when the stream did not drain: a scheduler that gave up on a
  // stuck task latched its name there, which says more than the stream timeout.
  const StatusCode code = read_chip_code();
  const bool stream_timed_out = !waited.is_ok();
  if (code != StatusCode::Ok || stream_timed_out) {
    // An orchestrator error reads as host_build_graph reports it (no launch prefix).
    const bool orchestration_error = code != StatusCode::Ok && result->result.from_orchestration;
    std::string message =
        orchestration_error ? std::string() : "callable id " + std::to_string(callable_id) + ": ";
    StatusCode thrown = code;
    if (code != StatusCode::Ok) {
      const char* detail = result->result.detail;
      const std::string text(detail, strnlen(detail, common::kResultDetailBytes));
      message += text.empty() ? std::string(status_info(code).detail) : text;
      if (stream_timed_out) {
        message += "; the launch then did not drain within " + std::to_string(drain_budget_ms) +
                   " ms (a chip thread is still inside " +
                   (result->result.stuck_core >= 0 ? "the kernel named above"
                                                   : "a kernel or the orchestration function") +
                   ")";
      }
    } else {
      thrown = StatusCode::StreamSyncTimeout;
      message += "the launch made no progress for " + std::to_string(timeouts_.stream_sync_ms) +
                 " ms (no kernel started, no task submitted) and its chip threads did not "
                 "return; nothing on the chip reported an error (every scheduler thread is "
                 "stuck: in a kernel running on it, or in an orchestration function that never "
                 "returns)";
    }
    if (stream_timed_out || code == StatusCode::SchedulerTimeout) {
      abandon_after_fault();
      message += "; device " + std::to_string(device_id_) +
                 " abandoned, further runs are refused until reset";
    }
    throw Error(thrown, message);
  }

  common::PhaseBuffer phases;
  throw_if(memory_.copy_from_device(&phases, phase_buffer_addr, kPhaseBufferBytes));
  std::array<PhaseSpan, kPhaseCount> device_phases{};
  common::reduce_phase_buffer(phases, shape.aicpu_threads, geometry_.clock_hz, &device_phases);
  for (int p = 0; p < kPhaseCount; ++p) {
    // GraphBuild of host_build_graph is the host's orchestration time, measured before.
    if (p == static_cast<int>(Phase::GraphBuild) && !device_phases[p].present) continue;
    report->phases[p] = device_phases[p];
  }
  if (shape.measure_kernel_time) {
    // The accumulators start at zero: they live in the handshake cells of the SharedPrefix, which
    // the host zeroes before every launch (the core protocol needs it too).
    report->kernel_ns = read_kernel_ns(result->shared_addr, request.cores);
    report->kernel_time_measured = true;
  }
  return result->result.tasks_completed;
}

uint64_t DeviceRunner::read_kernel_ns(uint64_t shared_addr, uint32_t cores) {
  const uint32_t readable = std::min(cores, common::kMaxCores);
  uint64_t sum = 0;
  for (uint32_t core = 0; core < readable; ++core) {
    // Only the accumulator is read, not the whole cell (its atomics are not copyable values).
    uint64_t core_ns = 0;
    throw_if(memory_.copy_from_device(&core_ns, common::core_kernel_ns_addr(shared_addr, core),
                                      sizeof(core_ns)));
    sum += core_ns;
  }
  return sum;
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
  max_block_dim_ = 0;
  prebuilt_image_resident_ = false;
  if (!was_faulted) {
    release_device_resources();
  }
  device_id_ = -1;
  platform_->detach();
}

void DeviceRunner::abandon_after_fault() noexcept {
  faulted_ = true;
  initialized_ = false;
  chip_init_done_ = false;
  // The device may still be executing (a stuck kernel): nothing here touches it, and stopping
  // the streams later does not wait for that launch.
  platform_->abandon_launch();
  platform_->abandon_memory();
  callables_.abandon();
  arenas_.abandon();
  graph_buffers_.abandon();
  staging_.abandon();
  memory_.abandon();
  status_block_addr_ = services_addr_ = kernel_table_addr_ = 0;
  prebuilt_image_resident_ = false;
  // Streams are left as they are: stopping them would wait for the stuck launch.
  CHIPRT_LOG_WARN(
      "device %d faulted: resources abandoned without device calls; runs refused "
      "until reset",
      device_id_);
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
    device_id_ = -1;
    platform_->detach();
    return;
  }
  finalize();
}

}  // namespace chiprt::host
