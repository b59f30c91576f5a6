// Platform: how a chip provides memory, threads, clocks, object loading, its chip-side runtime
// and launches.
//
// The host is written against this interface and never links the chip: the platform loads the
// chip-side programs (load_chip_runtime; `sim/` links the scheduler and aicore rooms, another
// platform loads its own module), and a launch names only device addresses and its shape
// (LaunchRequest). Platforms are created by name (platform/registry.h); several may live in one
// process, one per device. Host-side methods (load, launch, wait) are called by one host thread at
// a time (the DeviceRunner serialises them); the memory methods are thread-safe, because a peer
// copy reaches another device's memory from the thread that drives this one. `ChipServices`
// functions are called from chip-side threads (schedulers, cores) and are thread-safe.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "chiprt/status.h"
#include "chiprt/types.h"
#include "common/chip_services.h"
#include "common/run_context.h"

namespace chiprt::platform {

// What a platform keeps per process to start its devices (the sim: a fork server, which starts
// isolated devices for a process that runs threads of its own), made by start_device_starter
// (registry.h) while the process still runs no other thread, and given to the platforms created
// after it (PlatformOptions::device_starter). Opaque to the host; shared by those platforms and
// ended with the last of them.
class DeviceStarter {
 public:
  virtual ~DeviceStarter() = default;
};

struct Geometry {
  uint32_t clusters = 0;  // each cluster: 1 AIC + 2 AIV
  uint32_t aic_cores() const noexcept { return clusters; }
  uint32_t aiv_cores() const noexcept { return clusters * 2; }
  uint32_t cores() const noexcept { return clusters * 3; }
  uint32_t max_aicpu_threads = 8;
  uint32_t default_aicpu_threads = 4;  // 1 orchestrator + 3 schedulers
  uint64_t clock_hz = 0;               // cycles per second of ChipServices::cycles
  // A kick runs the core's loop on the kicking AICPU thread before returning (sim's
  // SimCoreExecution::Aicpu), so kernels run inside the scheduler's dispatch pass. A property of
  // the chip: the host passes it to the scheduler in ChipLaunchArgs::kicks_run_kernels.
  bool kicks_run_kernels = false;
  // Host threads that run the cores' kernels (sim: its executor pool; 0 on a serial chip, with
  // kicks_run_kernels, and where the cores are the chip's own). Diagnostics report it.
  uint32_t kernel_threads = 0;
};

// Core numbering: cores [0, clusters) are AIC, [clusters, 3*clusters) are AIV; cluster c owns
// AIC c and AIV clusters + 2c, clusters + 2c + 1.
inline CoreType core_type_of(const Geometry& g, uint32_t core) noexcept {
  return core < g.clusters ? CoreType::AIC : CoreType::AIV;
}

// Services the platform offers to chip-side code (kick, clock, park/wake): a protocol struct the
// host copies into device memory (common/chip_services.h).
using ChipServices = common::ChipServices;

// One launch: the launch-arguments block (common::ChipLaunchArgs, in device memory) and the
// shape. The chip-side runtime loaded by load_chip_runtime runs it: its AICPU entry once per
// AICPU thread, its core loop for the cores it kicks.
struct LaunchRequest {
  uint64_t launch_args_addr = 0;
  uint32_t aicpu_threads = 0;
  // Cores [0, cores) may be kicked during this launch (normally all the device has; a run on fewer
  // clusters simply never kicks the others).
  uint32_t cores = 0;
  // Run this launch serially (one host thread, cores run inline on kick) even when the platform
  // was created threaded; requires aicpu_threads == 1. A serial platform runs every launch so.
  bool serial = false;
};

// What ended a device that runs in its own process (an isolated platform), as the platform saw it.
// The host turns it into KernelCrashed / OpExecuteTimeout, adding what only it knows (the kernel's
// symbol, the block from the launch's handshake cells).
struct DeviceFault {
  enum class Kind : uint8_t {
    None = 0,
    Signal,  // the device process died of `signal` (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, ...)
    Exit,    // code on the device called exit(`exit_code`) (or the process exited unasked)
    Killed,  // the host killed it (kill_device: an op-execute timeout, a stuck launch)
  };
  Kind kind = Kind::None;
  int signal = 0;
  int signal_code = 0;  // siginfo si_code
  int exit_code = 0;
  bool has_fault_addr = false;  // SIGSEGV / SIGBUS / SIGILL / SIGFPE: the faulting address
  uint64_t fault_addr = 0;
  // What the faulting thread was running (common::RunContext at the fault), when the device
  // process recorded it before dying (false: it died without a word, e.g. SIGKILL).
  bool context_known = false;
  common::RunRole role = common::RunRole::None;
  int32_t func_id = -1;
  uint64_t task_id = 0;  // role Kernel: the task's public TaskId
  uint32_t unit = 0;     // role Kernel: the core; AicpuThread / ChipOrchestration: the thread
  int pid = 0;           // the device process
  std::string reason;    // Killed: why the host killed it
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
  // Whether [addr, addr + bytes) lies inside one live allocation: Ok, or InvalidDevicePointer
  // naming `operation`, the address and the allocation.
  virtual Status check_device_range(const char* operation, uint64_t addr, uint64_t bytes) const = 0;
  // Device to device: copies `bytes` at `src_addr` on `src` (another platform of this process, or
  // this one) to `dst` on this platform. Both ranges are checked first; on an error nothing is
  // written. Ranges of one device may overlap (it copies as memmove). Like the other memory calls
  // it may run while either device runs a launch, on memory that launch does not touch, but never
  // with reset_device or abandon_memory of either device. The default stages through a bounded
  // host buffer (kPeerCopyChunk at a time); a platform whose memories the host reaches directly
  // copies once (the sim: host view to host view; a dead device's memory stays readable until its
  // reset).
  static constexpr uint64_t kPeerCopyChunk = uint64_t{1} << 20;
  virtual Status copy_from_peer(uint64_t dst, Platform& src, uint64_t src_addr, uint64_t bytes);
  // Reads the 4-byte-aligned 32-bit word at `src` while chip threads may be writing it with
  // atomic operations (a launch's status word): an atomic acquire load, unlike copy_from_device,
  // which may only read memory no chip thread is writing.
  virtual Status load_device_word(uint64_t src, uint32_t* out) = 0;
  // The same for an 8-byte-aligned 64-bit word (a diagnostics stream's head), and its atomic
  // release store (the stream's tail, which a chip thread reads while it runs).
  virtual Status load_device_u64(uint64_t src, uint64_t* out) = 0;
  virtual Status store_device_u64(uint64_t dst, uint64_t value) = 0;
  // The chip clock now (ChipServices::cycles, Geometry::clock_hz per second), read from the host:
  // diagnostics pair it with the host's clock to map chip times onto the host's.
  virtual uint64_t chip_cycles_now() const = 0;
  virtual uint64_t bytes_in_use() const = 0;
  virtual uint64_t capacity() const = 0;
  // Forgets every allocation without touching it (after a device fault).
  virtual void abandon_memory() = 0;

  // Loads a shared object image from memory and resolves a symbol in it.
  virtual Status load_object(std::span<const uint8_t> image, LoadedObject* out) = 0;
  virtual Status resolve_symbol(LoadedObject object, const char* symbol, uint64_t* addr) = 0;
  virtual Status unload_object(LoadedObject object) = 0;
  // The same for an object whose code runs on the host (host_build_graph's orchestration
  // function): loaded into the host process, whichever process the chip lives in, so the address
  // resolve_host_symbol gives is callable by the host. Handles are not those of load_object. By
  // default the chip shares the host process and these are load_object's.
  virtual Status load_host_object(std::span<const uint8_t> image, LoadedObject* out) {
    return load_object(image, out);
  }
  virtual Status resolve_host_symbol(LoadedObject object, const char* symbol, uint64_t* addr) {
    return resolve_symbol(object, symbol, addr);
  }
  virtual Status unload_host_object(LoadedObject object) { return unload_object(object); }

  virtual const ChipServices& services() const = 0;

  // Makes the chip-side runtime (scheduler and core programs) ready to launch; idempotent. The
  // sim returns the entries it links; LoadFailed when a platform cannot load its module.
  virtual Status load_chip_runtime() = 0;

  // Starts the launch queues (streams). Idempotent.
  virtual Status start_streams() = 0;
  virtual void stop_streams() = 0;
  // Launches the loaded chip runtime on `request`: cores first, then the AICPU threads; returns
  // at once. NotInitialized before load_chip_runtime.
  virtual Status launch(const LaunchRequest& request) = 0;
  // Waits for every AICPU thread of the last launch to return, then stops its cores. Returns
  // StreamSyncTimeout (the launch keeps running) if that takes longer than `timeout_ms`.
  virtual Status wait(uint64_t timeout_ms) = 0;
  // Waits only for every AICPU thread of the last launch to return (cores may still run; call
  // wait() afterwards). StreamSyncTimeout if they do not within `timeout_ms`.
  virtual Status wait_aicpu(uint64_t timeout_ms) = 0;
  // wait_aicpu that wake_wait() may end early: StreamSyncTimeout with the launch still running,
  // so that the waiting thread can do other host work (a pipelined Worker prepares the run just
  // submitted). A platform that cannot interrupt its wait waits as wait_aicpu (the default); its
  // waits still end within the caller's timeout.
  virtual Status wait_aicpu_wakeable(uint64_t timeout_ms) { return wait_aicpu(timeout_ms); }
  // The one host-side method any thread may call, also during a wait: ends the
  // wait_aicpu_wakeable in progress (or else the next one of the same launch) early. No other
  // wait is woken; a launch forgets a wake it did not use.
  virtual void wake_wait() noexcept {}
  // The host gave up on the running launch (a device fault: a stuck kernel or orchestration
  // function). Stopping the streams then waits for nothing that is known to be stuck.
  virtual void abandon_launch() = 0;
  // After a fault: if the last launch has drained, forgets it so a new launch is accepted and
  // returns Ok; DeviceFaulted while it is still running (a stuck kernel) or when the streams had
  // to abandon stuck threads.
  virtual Status recover() = 0;

  // --- device isolation (platforms whose device runs in its own process) -----------------------
  // True when the chip runs in another process: a crash there ends in device_fault(), not in the
  // host's death, and kill_device() can stop a stuck kernel.
  virtual bool isolated() const { return false; }
  // Set once the device process died or was killed (Kind None while it lives, and always on an
  // in-process platform). While set, launch and wait calls return KernelCrashed (or
  // OpExecuteTimeout after a kill for that reason); memory calls keep working on the memory the
  // host still maps, until reset_device().
  virtual DeviceFault device_fault() const { return {}; }
  // Kills the device process at once (SIGKILL) with `reason` recorded (DeviceFault::Killed).
  // UnsupportedFeature on an in-process platform.
  virtual Status kill_device(const std::string& reason) {
    (void)reason;
    return Status(StatusCode::UnsupportedFeature, "kill_device: the device runs in this process");
  }
  // Replaces the device by a fresh one, as a hardware reset does: every allocation, loaded object
  // and launch is gone (device addresses of the old device are never valid again), the streams
  // are stopped, the attachment is kept. An isolated platform kills its device process (if it
  // still runs) and starts a new one; the in-process sim replaces memory, objects and threads
  // (threads stuck in a kernel are left behind).
  virtual Status reset_device() = 0;
};

// Inline, so that the interface has no out-of-line member: every room that implements it links
// without the library that creates platforms by name.
inline Status Platform::copy_from_peer(uint64_t dst, Platform& src, uint64_t src_addr,
                                       uint64_t bytes) {
  if (Status status = src.check_device_range("copy_from_peer (source)", src_addr, bytes); !status) {
    return status;
  }
  if (Status status = check_device_range("copy_from_peer (destination)", dst, bytes); !status) {
    return status;
  }
  if (bytes == 0) return Status::ok();
  std::vector<uint8_t> staging(std::min(bytes, kPeerCopyChunk));
  // Within one device a destination above its source is copied from the end, as memmove does.
  const bool backwards = &src == this && dst > src_addr && dst < src_addr + bytes;
  for (uint64_t done = 0; done < bytes;) {
    const uint64_t chunk = std::min<uint64_t>(bytes - done, staging.size());
    const uint64_t offset = backwards ? bytes - done - chunk : done;
    if (Status status = src.copy_from_device(staging.data(), src_addr + offset, chunk); !status) {
      return status;
    }
    if (Status status = copy_to_device(dst + offset, staging.data(), chunk); !status) {
      return status;
    }
    done += chunk;
  }
  return Status::ok();
}

}  // namespace chiprt::platform
