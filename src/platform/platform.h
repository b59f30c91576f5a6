// Platform: how a chip provides memory, threads, clocks, object loading and launches.
//
// The runtime (host, scheduler, aicore rooms) is written against this interface; `sim/` provides
// it with host threads. Host-side methods (memory, load, launch, wait) are called by one host
// thread at a time (the DeviceRunner serialises them). `ChipServices` functions are called from
// chip-side threads (schedulers, cores) and are thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "chiprt/status.h"
#include "chiprt/types.h"
#include "common/chip_services.h"

namespace chiprt::platform {

struct Geometry {
  uint32_t clusters = 0;  // each cluster: 1 AIC + 2 AIV
  uint32_t aic_cores() const noexcept { return clusters; }
  uint32_t aiv_cores() const noexcept { return clusters * 2; }
  uint32_t cores() const noexcept { return clusters * 3; }
  uint32_t max_aicpu_threads = 8;
  uint32_t default_aicpu_threads = 4;  // 1 orchestrator + 3 schedulers
  uint64_t clock_hz = 0;               // cycles per second of ChipServices::cycles
  // A kick runs the core's loop on the kicking AICPU thread before returning (sim's
  // SimCoreExecution::Aicpu), so kernels run inside the scheduler's dispatch pass.
  bool kicks_run_kernels = false;
};

// Core numbering: cores [0, clusters) are AIC, [clusters, 3*clusters) are AIV; cluster c owns
// AIC c and AIV clusters + 2c, clusters + 2c + 1.
inline CoreType core_type_of(const Geometry& g, uint32_t core) noexcept {
  return core < g.clusters ? CoreType::AIC : CoreType::AIV;
}

// Services the platform offers to chip-side code (kick, clock, park/wake): a protocol struct the
// host copies into device memory (common/chip_services.h).
using ChipServices = common::ChipServices;

// The chip-side programs of one launch. `aicpu_entry` runs once per AICPU thread; `core_service`
// runs the core loop of core `core` until it has nothing to do (it is called again after a kick).
struct LaunchPrograms {
  void* ctx = nullptr;  // the launch arguments, in device memory
  void (*aicpu_entry)(void* ctx, uint32_t thread_index, uint32_t thread_count) = nullptr;
  void (*core_service)(void* ctx, uint32_t core) = nullptr;
  uint32_t aicpu_threads = 0;
  // Cores [0, cores) may be kicked during this launch (normally all the device has; a run on fewer
  // clusters simply never kicks the others).
  uint32_t cores = 0;
  // Run this launch serially (one host thread, cores run inline on kick) even when the platform
  // was created threaded; requires aicpu_threads == 1. A serial platform runs every launch so.
  bool serial = false;
};

// A loaded chip object (shared object image).
struct LoadedObject {
  uint64_t handle = 0;
};

class Platform {
 public:
  virtual ~Platform() = default;

  virtual std::string name() const = 0;
  virtual Geometry geometry() const = 0;
  virtual bool serial() const = 0;

  // Binds the calling thread to the device; attaching one platform to two ids is an error.
  virtual Status attach(int device_id) = 0;
  // Unbinds the device so that another id may be attached (after finalize / reset). Idempotent.
  virtual void detach() = 0;

  // Device memory. Every allocation is tracked; errors never crash.
  virtual Status alloc(uint64_t bytes, uint64_t align, DeviceBuffer* out) = 0;
  virtual Status free(uint64_t addr) = 0;
  virtual Status copy_to_device(uint64_t dst, const void* src, uint64_t bytes) = 0;
  virtual Status copy_from_device(void* dst, uint64_t src, uint64_t bytes) = 0;
  virtual Status memset(uint64_t dst, int value, uint64_t bytes) = 0;
  // Reads the 4-byte-aligned 32-bit word at `src` while chip threads may be writing it with
  // atomic operations (a launch's status word): an atomic acquire load, unlike copy_from_device,
  // which may only read memory no chip thread is writing.
  virtual Status load_device_word(uint64_t src, uint32_t* out) = 0;
  virtual uint64_t bytes_in_use() const = 0;
  virtual uint64_t capacity() const = 0;
  // Forgets every allocation without touching it (after a device fault).
  virtual void abandon_memory() = 0;

  // Loads a shared object image from memory and resolves a symbol in it.
  virtual Status load_object(std::span<const uint8_t> image, LoadedObject* out) = 0;
  virtual Status resolve_symbol(LoadedObject object, const char* symbol, uint64_t* addr) = 0;
  virtual Status unload_object(LoadedObject object) = 0;

  virtual const ChipServices& services() const = 0;

  // Starts the launch queues (streams). Idempotent.
  virtual Status start_streams() = 0;
  virtual void stop_streams() = 0;
  // Launches cores first, then the AICPU threads; returns at once.
  virtual Status launch(const LaunchPrograms& programs) = 0;
  // Waits for every AICPU thread of the last launch to return, then stops its cores. Returns
  // StreamSyncTimeout (the launch keeps running) if that takes longer than `timeout_ms`.
  virtual Status wait(uint64_t timeout_ms) = 0;
  // Waits only for every AICPU thread of the last launch to return (cores may still run; call
  // wait() afterwards). StreamSyncTimeout if they do not within `timeout_ms`.
  virtual Status wait_aicpu(uint64_t timeout_ms) = 0;
  // The host gave up on the running launch (a device fault: a stuck kernel or orchestration
  // function). Stopping the streams then waits for nothing that is known to be stuck.
  virtual void abandon_launch() = 0;
  // After a fault: if the last launch has drained, forgets it so a new launch is accepted and
  // returns Ok; DeviceFaulted while it is still running (a stuck kernel) or when the streams had
  // to abandon stuck threads.
  virtual Status recover() = 0;
};

// Where the simulated chip runs the cores' kernels (see sim/launch_engine.h).
enum class SimCoreExecution : uint8_t {
  Auto = 0,       // Aicpu when the host's hardware threads do not exceed aicpu_threads
  Aicpu = 1,      // inline on the AICPU (scheduler) thread that owns the core
  Executors = 2,  // on host_threads executor threads, concurrently with the schedulers
};

struct SimConfig {
  uint32_t clusters = 8;
  uint32_t aicpu_threads = 4;
  uint32_t host_threads = 0;  // 0 = std::thread::hardware_concurrency()
  uint64_t memory_bytes = 4ull << 30;
  bool serial = false;
  SimCoreExecution core_execution = SimCoreExecution::Auto;
};

// Auto resolved against this host (never returns Auto). `hardware_threads` 0 = this host's.
SimCoreExecution resolve_sim_core_execution(const SimConfig& config, unsigned hardware_threads = 0);

// Creates the simulated chip. Returns InvalidConfig for out-of-range values.
Status create_sim_platform(const SimConfig& config, std::unique_ptr<Platform>* out);

}  // namespace chiprt::platform
