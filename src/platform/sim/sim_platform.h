// SimPlatform: the simulated chip, platform::Platform implemented with host memory and host
// threads (see device_memory.h, object_loader.h and launch_engine.h for the parts). Its chip-side
// runtime is the scheduler and aicore rooms, linked into this library (load_chip_runtime).
// Options: the public chiprt::SimOptions (include/chiprt/sim_options.h), their one definition.
//
// Lifetime: created by create_sim_platform (platform "sim" of the registry, or directly, for
// tests that need SimTuning); the
// destructor stops the streams (bounded: threads stuck in chip code are detached, see
// LaunchEngine::stop) and releases memory and objects that no stuck thread still needs.
// Threading: as platform::Platform: host-side methods from one host thread at a time, services()
// from any chip thread.
#pragma once

#include <memory>
#include <optional>

#include "chiprt/sim_options.h"
#include "platform/platform.h"
#include "platform/sim/device_memory.h"
#include "platform/sim/launch_engine.h"
#include "platform/sim/object_loader.h"

namespace chiprt::platform::sim {

// Knobs tests need that the product does not expose through SimOptions.
struct SimTuning {
  // How long stop_streams / the destructor wait for a running launch before abandoning it.
  uint64_t stop_grace_ms = 2000;
};

// Checks every SimOptions field; InvalidConfig names the field and its range.
Status validate_sim_options(const SimOptions& options);
// host_threads with 0 resolved to the host's hardware threads (at least 1).
uint32_t resolve_host_threads(uint32_t host_threads);
// Applies CHIPRT_SIM_CORES when options->core_execution is Auto (InvalidConfig for a bad value).
Status apply_core_execution_env(SimOptions* options);
// Auto resolved against this host's hardware threads (never returns Auto; the environment is not
// read). `hardware_threads` 0 = this host's.
SimCoreExecution resolve_core_execution(const SimOptions& options, unsigned hardware_threads = 0);

// Applies CHIPRT_SIM_ISOLATION when options->isolation is Default (InvalidConfig for a bad value).
Status apply_isolation_env(SimOptions* options);

// Platform "sim": CHIPRT_SIM_CORES and CHIPRT_SIM_ISOLATION applied (apply_core_execution_env,
// apply_isolation_env), the options validated; an IsolatedPlatform (isolated_platform.h) when the
// isolation resolves to Process, else a SimPlatform. `starter` (from start_sim_device_starter, or
// none) starts an isolated platform's devices; InvalidConfig for another platform's starter.
Status create_sim_platform(const SimOptions& options, std::shared_ptr<DeviceStarter> starter,
                           std::unique_ptr<Platform>* out);
inline Status create_sim_platform(const SimOptions& options, std::unique_ptr<Platform>* out) {
  return create_sim_platform(options, nullptr, out);
}
// Platform "sim"'s DeviceStarter: a fork server (fork_server.h,
// IsolatedPlatform::start_fork_server).
Status start_sim_device_starter(std::shared_ptr<DeviceStarter>* out);

// The programs of a launch of the loaded chip `runtime` (its entries) on `request`: the launch
// arguments are at the device address, which is a pointer where the chip runs. NotInitialized
// before the runtime is loaded, InvalidArgument without launch arguments.
Status chip_runtime_launch(const LaunchPrograms& runtime, const LaunchRequest& request,
                           LaunchPrograms* out);
// The scheduler's AICPU entry and the aicore loop, linked into this library.
LaunchPrograms linked_chip_runtime() noexcept;

// What both sim platforms (SimPlatform, IsolatedPlatform) share: the options and what they derive
// (geometry, the engine's options), the attachment, and device memory, whose every operation runs
// in the host process on the platform's DeviceMemory (heap- or region-backed).
class SimPlatformBase : public Platform {
 public:
  std::string name() const override { return "sim"; }
  Geometry geometry() const override { return geometry_; }
  bool serial() const override { return options_.serial; }
  Status attach(int device_id) override;
  void detach() override { attached_device_.reset(); }

  Status alloc(uint64_t bytes, uint64_t align, DeviceBuffer* out) override;
  Status free(uint64_t addr) override;
  Status copy_to_device(uint64_t dst, const void* src, uint64_t bytes) override;
  Status copy_from_device(void* dst, uint64_t src, uint64_t bytes) override;
  Status load_device_word(uint64_t src, uint32_t* out) override;
  Status load_device_u64(uint64_t src, uint64_t* out) override;
  Status store_device_u64(uint64_t dst, uint64_t value) override;
  // The host's steady clock in ns, which is what the sim chip's cycles count (LaunchEngine).
  uint64_t chip_cycles_now() const override;
  Status memset(uint64_t dst, int value, uint64_t bytes) override;
  Status check_device_range(const char* operation, uint64_t addr, uint64_t bytes) const override;
  // From another sim platform: one copy between the host's views of both memories.
  Status copy_from_peer(uint64_t dst, Platform& src, uint64_t src_addr, uint64_t bytes) override;
  uint64_t bytes_in_use() const override;
  uint64_t capacity() const override;
  void abandon_memory() override;

  std::size_t live_allocations() const { return memory_->live_allocations(); }

 protected:
  // `options` must have passed validate_sim_options.
  SimPlatformBase(const SimOptions& options, const SimTuning& tuning);

  const SimOptions options_;
  Geometry geometry_;
  LaunchEngine::Options engine_options_;
  std::optional<int> attached_device_;
  std::shared_ptr<DeviceMemory> memory_;
};

class SimPlatform final : public SimPlatformBase {
 public:
  // `options` must have passed validate_sim_options.
  explicit SimPlatform(const SimOptions& options, const SimTuning& tuning = {});
  ~SimPlatform() override;
  SimPlatform(const SimPlatform&) = delete;
  SimPlatform& operator=(const SimPlatform&) = delete;

  Status load_object(std::span<const uint8_t> image, LoadedObject* out) override;
  Status resolve_symbol(LoadedObject object, const char* symbol, uint64_t* addr) override;
  Status unload_object(LoadedObject object) override;

  const ChipServices& services() const override { return engine_->services(); }
  // The scheduler's AICPU entry and the aicore loop, linked into this library.
  Status load_chip_runtime() override;
  Status start_streams() override;
  void stop_streams() override;
  Status launch(const LaunchRequest& request) override;
  // Tests of the engine: launches `programs` instead of the loaded chip runtime.
  Status launch_programs(const LaunchPrograms& programs);
  Status wait(uint64_t timeout_ms) override;
  Status wait_aicpu(uint64_t timeout_ms) override;
  Status wait_aicpu_wakeable(uint64_t timeout_ms) override;
  void wake_wait() noexcept override;
  void abandon_launch() override;
  Status recover() override;
  Status reset_device() override;

  // Introspection for tests and diagnostics.
  uint64_t ignored_kicks() const noexcept { return engine_->ignored_kicks(); }
  bool streams_faulted() const { return engine_->faulted(); }
  uint32_t executor_threads() const noexcept { return engine_->executor_threads(); }
  std::size_t loaded_objects() const { return objects_->loaded_count(); }
  uint32_t object_refcount(LoadedObject object) const { return objects_->refcount(object.handle); }

 private:
  // The device's memory, objects and threads, afresh (construction, reset_device).
  void create_device();

  LaunchPrograms chip_runtime_{};  // entries only; set by load_chip_runtime
  std::shared_ptr<ObjectLoader> objects_;
  std::shared_ptr<LaunchEngine> engine_;
};

}  // namespace chiprt::platform::sim
