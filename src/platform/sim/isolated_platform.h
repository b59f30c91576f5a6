// IsolatedPlatform: the simulated chip in its own device process (SimIsolation::Process), the
// host half. The device half is device_process.h; the control block both read is
// device_channel.h.
//
// Two processes. The host process holds this object, the device memory's bookkeeping and the
// output forwarder; the device process (forked at device init from the host's calling thread, or
// from a fork server the host started earlier, fork_server.h: either way a copy of the host image,
// so its function pointers stay valid there) holds the LaunchEngine (AICPU threads, executors) and
// the ObjectLoader (loaded kernel objects). What crosses between them:
// - the device memory file (memfd, SimOptions::memory_bytes, sparse, the control block first).
//   The host maps it at H; before the fork it reserves the device range R (PROT_NONE, same size);
//   the device process maps the file MAP_FIXED at R and drops H. Device addresses are R-addresses
//   (chip code dereferences them in the device process); the host keeps R reserved PROT_NONE, so
//   a host dereference of a device address faults at once. Host-side memory operations (alloc,
//   free, copies, memset, load_device_word) run in the host on H, translated, tracked and
//   validated by DeviceMemory (region-backed), with no message to the device;
// - commands (streams, launch, wait, recover, objects, shutdown) through the control block's
//   mailbox and shared futexes; object images through a staging allocation in device memory;
// - the device's ChipServices, published at start (services()), whose park/wake uses shared
//   futexes;
// - the fault record the device's signal and exit handlers write before it dies;
// - its stdout/stderr, through pipes, forwarded line by line with the prefix
//   "[chiprt device N] " by a host thread parked in poll; a line longer than kOutputLineBytes is
//   forwarded in pieces of at least that size as it comes, each later piece under
//   "[chiprt device N+] " with no newline added, so the host holds a bounded part of a line.
// Limits of the fork: code loaded into the host after the device process started (after the fork
// server started, with one) is not in the device; only the forking thread exists in the device
// process (host threads and their state are not there); host memory the chip reaches other than
// device memory is a copy taken at the fork, so what the device writes there never reaches the
// host; of the host's file descriptors the device keeps only stdin (stdout and stderr are the
// forwarded pipes).
//
// A dead device (a signal, exit(), kill_device) is reaped at once: device_fault() describes it;
// launch/wait/wait_aicpu/recover (and every command) return KernelCrashed (died) or DeviceFaulted
// (killed) with a one-line summary; memory calls keep working on H until reset_device(), which
// replaces the memory file, the device range and the process (lazily started again). No device
// range overlaps one an earlier device of this process used, so a device address is never handed
// out twice. The host's child is the device's init, which forks the device process
// (device_process.h): pid 1 of a pid namespace of its own where the host may create one, a
// subreaper otherwise; ending the device ends the init last, so every process a kernel forked
// (a daemon too) ends with the device, before the host reaps the init.
//
// Lifetime: the destructor asks the device process to shut down (bounded; then SIGKILL), reaps its
// init, stops the forwarder and releases the mappings and fds: no process, zombie, fd, mapping or
// thread is left.
// Threading: as platform::Platform (host-side methods from one host thread at a time; services()
// are called on the device's chip threads).
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "chiprt/sim_options.h"
#include "platform/platform.h"
#include "platform/sim/device_channel.h"
#include "platform/sim/device_memory.h"
#include "platform/sim/fork_server.h"
#include "platform/sim/launch_engine.h"
#include "platform/sim/object_loader.h"
#include "platform/sim/sim_platform.h"

namespace chiprt::platform::sim {

class OutputForwarder;

// Knobs tests need that the product does not expose.
struct IsolationTuning {
  SimTuning sim;
  // Where the device's stdout / stderr lines are forwarded (the host's own by default).
  int stdout_fd = STDOUT_FILENO;
  int stderr_fd = STDERR_FILENO;
  // How long the destructor waits for the device process to shut down before SIGKILL.
  uint64_t shutdown_grace_ms = 1000;
  // Whether the device's init may get a pid namespace of its own (false: the subreaper, as for
  // an unprivileged process).
  bool pid_namespace = true;
};

class IsolatedPlatform final : public SimPlatformBase {
 public:
  // `options` must have passed validate_sim_options. Throws Error(InternalError) when the device
  // memory file or its mappings cannot be made.
  // `server`: starts the device processes (fork_server.h) instead of a fork of the calling thread;
  // needed where the host runs threads of its own when a device starts (several devices).
  explicit IsolatedPlatform(const SimOptions& options, const IsolationTuning& tuning = {},
                            std::shared_ptr<ForkServer> server = {});
  ~IsolatedPlatform() override;
  IsolatedPlatform(const IsolatedPlatform&) = delete;
  // Starts a fork server for the isolated devices of this process (ForkServer::start with the
  // host views of the devices alive now). Call it while the process runs no other thread.
  static Status start_fork_server(std::shared_ptr<ForkServer>* out);
  IsolatedPlatform& operator=(const IsolatedPlatform&) = delete;

  Status load_object(std::span<const uint8_t> image, LoadedObject* out) override;
  Status resolve_symbol(LoadedObject object, const char* symbol, uint64_t* addr) override;
  Status unload_object(LoadedObject object) override;
  // Host objects (host_build_graph orchestration) load into this process with the sim's loader;
  // reset_device unloads them with the device's (the registry loads them again).
  Status load_host_object(std::span<const uint8_t> image, LoadedObject* out) override;
  Status resolve_host_symbol(LoadedObject object, const char* symbol, uint64_t* addr) override;
  Status unload_host_object(LoadedObject object) override;

  // The device process's services (valid once it started: after start_streams,
  // load_chip_runtime or load_object; empty before).
  const ChipServices& services() const override { return services_; }
  // Starts the device process if needed; its chip runtime is the scheduler and aicore rooms,
  // linked into this library and so into the forked process.
  Status load_chip_runtime() override;
  Status start_streams() override;
  void stop_streams() override;
  Status launch(const LaunchRequest& request) override;
  // Tests of the engine: launches `programs` (functions of this image, ctx a device address or a
  // value the programs understand) in the device process.
  Status launch_programs(const LaunchPrograms& programs);
  Status wait(uint64_t timeout_ms) override;
  Status wait_aicpu(uint64_t timeout_ms) override;
  void abandon_launch() override;
  Status recover() override;

  bool isolated() const override { return true; }
  DeviceFault device_fault() const override { return fault_; }
  Status kill_device(const std::string& reason) override;
  Status reset_device() override;

  // A line of device output is held in the host up to this many bytes (plus one read of the
  // pipe), then forwarded in pieces (see above).
  static constexpr std::size_t kOutputLineBytes = 64 * 1024;

  // Introspection for tests: the device process, in this process's pid namespace (-1 while none
  // runs; the device's init until the device answered).
  pid_t device_pid() const noexcept {
    return pid_ <= 0 ? -1 : device_pid_ > 0 ? device_pid_ : pid_;
  }
  // Where this process maps the device byte at `device_addr` (tests: no other device's process
  // may reach it).
  const void* host_view_of(uint64_t device_addr) const noexcept {
    return region_.host_view + (device_addr - reinterpret_cast<uint64_t>(region_.device_view));
  }
  // Whether the device's init is pid 1 of a pid namespace (of the running or last device).
  bool pid_namespace() const noexcept { return pid_namespace_; }
  // The most bytes of one line of device output the host held at once, over this platform's life.
  uint64_t output_line_peak() const noexcept {
    return output_line_peak_.load(std::memory_order_relaxed);
  }

 private:
  // The device memory file with the host's mapping and the device range (see above).
  struct Region {
    int memfd = -1;
    uint8_t* host_view = nullptr;
    uint8_t* device_view = nullptr;  // reserved PROT_NONE in the host
    uint64_t bytes = 0;
  };
  // Reserves the device range in `server` too, when there is one.
  static Status make_region(uint64_t memory_bytes, ForkServer* server, Region* out);
  // Region-backed device memory over `region`, after its control block.
  static std::shared_ptr<DeviceMemory> region_memory(const Region& region, uint64_t memory_bytes);
  static void release_region(Region* region) noexcept;
  DeviceChannel* channel() const noexcept {
    return reinterpret_cast<DeviceChannel*>(region_.host_view);
  }

  // Starts the device process when none runs; the fault's status once it died.
  Status ensure_device(const char* operation);
  // Starts the device's init by a fork of the calling thread (no fork server); sets *pid (-1 on
  // failure) and start->pid_namespace.
  Status fork_device(DeviceProcessStart* start, pid_t* pid);
  // Sends the command written into the mailbox and waits for the reply, at most `budget_ms`
  // (then the device is killed as unresponsive), noticing a dead device within a few ms.
  Status call(DeviceCommand command, const char* operation, uint64_t budget_ms);
  Status send_launch(const LaunchPrograms& programs);
  // Liveness check without blocking: false once the device process was reaped.
  bool device_alive();
  // Reaps the device (waiting for a recorded fault to end it, bounded, then SIGKILL), fills
  // fault_ from the exit status and the record, and drains the forwarder.
  void settle_death(const std::string& kill_reason);
  void reaped(int wait_status, const std::string& kill_reason);
  // Stops the device process at once (SIGKILL) or by a Shutdown command (graceful), reaps it.
  void end_device(bool graceful);
  // Ends the device's processes (every descendant of the device, then the init), while the init
  // is unreaped; the caller reaps it.
  void kill_device_tree();
  Status dead_status(const char* operation) const;

  const IsolationTuning tuning_;
  const std::shared_ptr<ForkServer> server_;
  std::unique_ptr<ObjectLoader> host_objects_;  // host objects, loaded in this process
  Region region_;
  pid_t pid_ = -1;  // the device's init (this process's child)
  pid_t device_pid_ = -1;
  int device_pidfd_ = -1;  // without a pid namespace
  bool pid_namespace_ = false;
  bool dead_ = false;
  bool shutting_down_ = false;
  DeviceFault fault_;
  std::unique_ptr<OutputForwarder> forwarder_;
  std::atomic<uint64_t> output_line_peak_{0};
  ChipServices services_{};
  LaunchPrograms chip_runtime_{};  // entries only; set by load_chip_runtime
  uint32_t seq_ = 0;
};

}  // namespace chiprt::platform::sim
