// DeviceRunner: the lifecycle of one device context (attach, lazy init, memory, arenas,
// callables, runs, finalize / abandon).
//
// One runner per device context; it owns its Platform. Lifetime: construct with a platform,
// attach(device_id), then use; initialisation of the chip side happens lazily on the first call
// that needs it. finalize() releases everything while the device is alive and allows attach
// again; after a device fault (scheduler watchdog, stream sync timeout, a crashed or killed
// device process) the runner abandons its device resources without touching them and refuses
// work with DeviceFaulted until reset_device() (Worker::reset) replaces the device.
// A run is a plan (host/run_plan.h) and four steps over one PreparedLaunch
// (host/prepared_launch.h): prepare, launch, poll / wait, collect.
//
// Threading: the methods are not thread-safe; one thread at a time. Through the Worker that always
// holds: it serialises calls from host threads with a mutex (a call during a run waits for it) and
// refuses calls from inside a run (orchestration functions, kernels) with ReentrantCall before
// taking the mutex. For direct users of a runner, run() and export_graph() additionally hold a
// single active-run owner guard: run() or export_graph() entered while one is in flight (from the
// orchestration function or a kernel through a runner reference, or from another thread) is
// refused with InvalidArgument rather than corrupting the first.
// Every method reports failure by throwing chiprt::Error.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "chiprt/call_config.h"
#include "chiprt/graph_export.h"
#include "chiprt/run_report.h"
#include "chiprt/task_args.h"
#include "chiprt/types.h"
#include "host/arena.h"
#include "host/callable_registry.h"
#include "host/device_memory.h"
#include "host/diag_write_queue.h"
#include "host/facade_text.h"
#include "host/prepared_launch.h"
#include "host/ring_sizing.h"
#include "host/run_plan.h"
#include "host/timeouts.h"
#include "orchestrator/host_graph_builder.h"
#include "platform/platform.h"

namespace chiprt::host {

struct RunnerOptions {
  // Where the timeout variables are read from at the first attach (tests inject values).
  EnvLookup env = process_env();
  // The variant a run with RuntimeVariant::Default and register_callable(..., Default) use.
  RuntimeVariant default_runtime = RuntimeVariant::HostBuildGraph;
  // The public object's calls that the error texts name (a Worker's by default).
  FacadeText facade;
};

class DeviceRunner {
 public:
  static constexpr uint32_t kPipelineDepth = host::kPipelineDepth;

  explicit DeviceRunner(std::unique_ptr<platform::Platform> platform, RunnerOptions options = {});
  // Finalizes (or, after a fault, only forgets); never throws.
  ~DeviceRunner();
  DeviceRunner(const DeviceRunner&) = delete;
  DeviceRunner& operator=(const DeviceRunner&) = delete;

  // --- attach / init -------------------------------------------------------------------------
  // InvalidArgument for a negative id; DeviceMismatch when attached to another id.
  // The first attach resolves the timeouts.
  void attach(int device_id);
  bool attached() const noexcept { return device_id_ >= 0; }
  int device_id() const noexcept { return device_id_; }
  // Starts streams, queries the geometry, has the platform load the chip-side runtime and runs
  // the chip-side init once. NotInitialized before attach; DeviceFaulted after a fault.
  void ensure_initialized();
  bool initialized() const noexcept { return initialized_; }
  bool faulted() const noexcept { return faulted_; }
  const TimeoutConfig& timeouts() const noexcept { return timeouts_; }
  const std::vector<std::string>& timeout_warnings() const noexcept { return timeout_warnings_; }
  // Valid after ensure_initialized.
  const platform::Geometry& geometry() const noexcept { return geometry_; }
  PlatformLimits limits() const noexcept;
  // The launch shape `config` resolves to (validates it first; InvalidConfig on failure).
  LaunchShape resolve_launch_shape(const CallConfig& config);
  RuntimeVariant default_runtime() const noexcept { return options_.default_runtime; }

  // --- memory --------------------------------------------------------------------------------
  DeviceBuffer allocate(uint64_t bytes);
  // Frees a buffer returned by allocate (InvalidDevicePointer otherwise).
  void free(uint64_t addr);
  // Bounds-checked against the tracked allocation containing [addr, addr+bytes).
  void copy_to_device(uint64_t dst, const void* src, uint64_t bytes);
  void copy_from_device(void* dst, uint64_t src, uint64_t bytes);
  void memset(uint64_t dst, int value, uint64_t bytes);
  // Device to device (Platform::copy_from_peer): `bytes` at `src_addr` of `src`'s device (another
  // runner of this process, or this one) to `dst` of this one. Both runners must be usable and
  // both ranges inside live allocations of their devices (errors name which side); the caller
  // holds both runners' locks.
  void copy_from_peer(uint64_t dst, DeviceRunner& src, uint64_t src_addr, uint64_t bytes);
  uint64_t bytes_in_use() const;
  DeviceMemory& memory() noexcept { return memory_; }
  ArenaSet& arenas() noexcept { return arenas_; }
  StagingBuffers& staging() noexcept { return staging_; }
  // Reference semantics of the per-slot graph-definition buffers; returns the aligned address.
  uint64_t acquire_graph_definition_buffer(uint32_t slot, uint64_t key, uint64_t bytes,
                                           uint64_t alignment);
  GraphDefinitionBuffers& graph_definition_buffers() noexcept { return graph_buffers_; }

  // --- callables -----------------------------------------------------------------------------
  // `variant` Default means the runner's default runtime.
  void register_callable(int32_t id, std::span<const uint8_t> container,
                         RuntimeVariant variant = RuntimeVariant::Default);
  void unregister_callable(int32_t id);
  bool has_callable(int32_t id) const noexcept { return callables_.has(id); }
  // Replays the kernel address table with exactly this callable's kernels.
  void bind(int32_t id);
  const CallableRegistry& callables() const noexcept { return callables_; }
  // Device address of pipeline slot `slot`'s kernel address table (uint64_t[kMaxFuncId]; one per
  // slot, so a run prepared while another executes never rewrites the table the chip reads); 0
  // before init. bind() fills slot 0's.
  static constexpr uint64_t kKernelTableBytes = sizeof(uint64_t) * kMaxFuncId;
  uint64_t kernel_table_addr(uint32_t slot = 0) const noexcept {
    return kernel_table_addr_ == 0 ? 0 : kernel_table_addr_ + slot * kKernelTableBytes;
  }

  // --- runs ----------------------------------------------------------------------------------
  // plan_run, prepare, launch, wait and collect, holding the active-run guard. `started` (when
  // given) is set once the run passed its checks (see prepare).
  RunReport run(int32_t callable_id, const TaskArgs& args, const CallConfig& config = {},
                bool* started = nullptr);
  // Builds the graph a host_build_graph run of the callable would launch (same checks, kernel
  // table bind, output heap and builder limits as run(), whatever variant the callable was
  // registered for) and returns it decoded instead of launching it. config.runtime and
  // config.replay_graph are ignored: the graph is always built afresh and never cached. Holds the
  // active-run guard like run(). Runtime outputs are carved from bank config.arena_bank's output
  // heap, so they are valid until the next run or export on that bank.
  GraphExport export_graph(int32_t callable_id, const TaskArgs& args,
                           const CallConfig& config = {});
  // Bytes of host storage kept between host_build_graph builds for reuse (the graph builder's
  // working state and image storage; not the replay cache), for tests and statistics.
  uint64_t retained_host_bytes() const noexcept { return builder_scratch_.retained_bytes(); }
  // --- the steps of a run ---------------------------------------------------------------------
  // What run() does, one step at a time (see host/prepared_launch.h), for tests and for pipelined
  // runs. The steps do not take the active-run guard; the caller drives one PreparedLaunch through
  // them in order, serialised with every other call on the runner.
  //
  // Initialises the runner, then resolves the config into the run's plan (InvalidConfig).
  RunPlan plan_run(const CallConfig& config, PlanPurpose purpose = PlanPurpose::Run);
  // The checks and kernel bind every orchestrating call shares, then the variant's preparation:
  // host_build_graph orchestrates on the host (or finds the cached image), commits the bank's
  // regions and uploads the image; tensormap_ringbuffer commits the rings' regions and copies the
  // kernel table and the arguments. Both write the launch arguments to the slot's staging buffer.
  // `t_entry`: when the run started (RunReport::host_prepare_ns counts from it). `started` (when
  // given) is set once the checks passed: from then on the run's own code (a host_build_graph
  // orchestration function) may have written memory, whether or not the rest succeeds.
  PreparedLaunch prepare(const RunPlan& plan, int32_t callable_id, const TaskArgs& args,
                         std::chrono::steady_clock::time_point t_entry, bool* started = nullptr);
  // Launches a prepared launch that needs one (PreparedLaunch::needs_launch).
  void launch(PreparedLaunch& prepared);
  // Advances the wait for a launched run by one slice (at most about 20 ms while its AICPU threads
  // run, then the drain of its cores): true once the wait is over (the launch drained, the chip
  // latched an error, or it made no progress for the stream-sync timeout), false while it runs.
  // On an isolated platform every slice is at most about 20 ms, the device's death ends the wait,
  // a kernel past the op execute timeout gets the device killed (also after the watchdog
  // reported it: the wait goes on to that deadline), and a launch given up with chip threads
  // still stuck gets the device killed. Throws when the platform's wait fails otherwise.
  // `wakeable`: the AICPU-phase wait may be ended early by Platform::wake_wait from another
  // thread (then false: still running); the later phases' waits never are.
  bool poll(PreparedLaunch& prepared, bool wakeable = false);
  // poll until the wait is over.
  void wait(PreparedLaunch& prepared);
  // The run's report once the wait is over (or at once when no launch was needed). Throws the
  // chip's error, or StreamSyncTimeout, naming the callable; after a watchdog or stream timeout
  // the device is abandoned first (abandon_after_fault). Isolated platforms: a dead device throws
  // KernelCrashed, a killed one OpExecuteTimeout (throw_device_fault composes both).
  RunReport collect(PreparedLaunch& prepared);
  // Called in a catch block of a step (run(), the pipeline's driver): writes the run's
  // diagnostics with `error` (when it has any) and throws the error again, naming the directory.
  [[noreturn]] void fail_diagnostics(PreparedLaunch& prepared, const Error& error);
  // A prepared launch that will never launch (the pipeline cancelled it): its diagnostics, if
  // any, give their device region back without writing a directory.
  void drop_diagnostics(PreparedLaunch& prepared) noexcept;
  // Called before a host_build_graph orchestration function's get/set_tensor_data touches the
  // device bytes [lo, hi) (may throw: the orchestration then fails with that error). The Worker's
  // pipeline sets it while it prepares a run under an executing one, and there waits for the
  // executing run when it names that memory. Empty (the default): nothing to wait for.
  using HostDataFence = std::function<void(uint64_t lo, uint64_t hi)>;
  void set_host_data_fence(HostDataFence fence) { host_data_fence_ = std::move(fence); }
  // Records per diagnostics stream (0: the defaults of host/diag_collector.h); tests make them
  // small to exercise full rings.
  void set_diag_stream_records(uint64_t records) noexcept { diag_stream_records_ = records; }

  // How many runs reused the prebuilt image instead of orchestrating (replay_graph).
  uint64_t replayed_runs() const noexcept { return replayed_runs_; }
  // How many replays launched their image prevalidated (ChipLaunchArgs::image_prevalidated):
  // replays of a cached image an earlier launch had the chip check.
  uint64_t prevalidated_launches() const noexcept { return prevalidated_launches_; }
  uint64_t launches() const noexcept { return launches_; }
  // The ring sizes the last tensormap_ringbuffer run resolved (and where each field came from).
  const RingSizeResolution& last_ring_sizes() const noexcept { return last_ring_sizes_; }

  // Waits until every run directory queued for background writing
  // (DiagnosticsConfig::background_write) is written; returns "DIR: reason" per failed write
  // since the last flush.
  std::vector<std::string> flush_diagnostics() { return diag_writes_.flush(); }
  // The background writer itself: tests hold it with a job of their own to order a write.
  DiagWriteQueue& diag_write_queue() noexcept { return diag_writes_; }

  // --- teardown ------------------------------------------------------------------------------
  // Releases everything in dependency order; idempotent. After a fault it only forgets.
  void finalize();
  // Forgets every device resource without touching the device and refuses further work
  // (DeviceFaulted, naming `what_faulted`) until reset_device() or reset(). User buffers become
  // lost buffers of the next reset (DeviceMemory::forget_as_lost).
  void abandon_after_fault(std::string what_faulted = {}) noexcept;
  // finalize (or the forgetting already done by a fault) and allow attach again. After a fault
  // the platform must first recover the launch: DeviceFaulted (the runner stays faulted) while a
  // stuck kernel still runs; call reset again once it has returned. Registrations are dropped.
  void reset();
  // Worker::reset (include/chiprt/worker.h): replaces the device by a fresh one
  // (Platform::reset_device), forgets every host-side record of the old device's memory (arenas,
  // staging, graph buffers, replay cache, kernel table, status block, uploads and loaded objects),
  // initialises the new device and registers every callable again with the same ids and
  // variants. User buffers of the old device are lost (a later use names the reset). Allowed
  // faulted or not; NotInitialized when not attached. When the platform or a re-registration
  // fails the runner stays faulted with that error (call it again to retry).
  void reset_device();
  // How many times reset_device() replaced the device.
  uint64_t reset_count() const noexcept { return reset_count_; }
  // host_build_graph graphs built on the host (the orchestration function returned, its span
  // recorded). Readable from any thread: a test waits on it to know that a run prepared while
  // another executes has finished its orchestration.
  uint64_t host_graphs_built() const noexcept {
    return host_graphs_built_.load(std::memory_order_acquire);
  }
  // What faulted the device (empty while it is usable).
  const std::string& fault_description() const noexcept { return fault_description_; }

  platform::Platform& platform() noexcept { return *platform_; }

 private:
  void require_usable(const char* what) const;
  // collect without diagnostics: the chip's verdict and the report.
  RunReport collect_chip(PreparedLaunch& prepared);
  // Throws `status` unless Ok; a device lost under the call (isolated platforms: KernelCrashed or
  // DeviceFaulted) is abandoned first.
  void throw_if(const Status& status);
  void check_range(uint64_t addr, uint64_t bytes, const char* what) const;
  void check_signature(const RegisteredCallable& callable, const TaskArgs& args) const;
  // Every tensor argument the caller provides (all but Out) must lie in a live allocation.
  void check_argument_buffers(const TaskArgs& args) const;
  // Holds the single active-run owner guard while `body` runs; `what` names the refused call.
  template <class Body>
  auto as_active_run(const char* what, Body&& body) -> decltype(body());
  // The checks and bind every orchestrating call shares, after the plan resolved: the callable
  // id is in range and registered (CallableIdOutOfRange / UnknownCallable naming `what`), its
  // orchestration for `variant` is loaded, the signature and argument buffers match; then binds
  // its kernels into pipeline slot `slot`'s device kernel table and fills `kernel_table` for the
  // orchestrator.
  const RegisteredCallable& prepare_orchestration(const char* what, int32_t callable_id,
                                                  const TaskArgs& args, RuntimeVariant variant,
                                                  uint32_t slot, common::KernelTable* kernel_table);
  // A host-built, validated graph image and what the build observed.
  struct HostBuild {
    std::vector<uint8_t> image;
    std::vector<DependencyKinds> edge_kinds;          // when asked for: fanout order
    uint64_t task_count = 0;                          // records, scope fences included
    uint64_t user_task_count = 0;                     // the orchestration's tasks
    std::chrono::steady_clock::time_point t_build{};  // the orchestration's start
    uint64_t build_ns = 0;
    bool accessed_tensor_data = false;
  };
  // Commits the output heap of the plan's bank (exactly plan.heap_bytes is seen by the builder;
  // the other regions are left as they are), runs the orchestration on the host (HostGraphBuilder
  // with the plan's task capacity and clusters) and validates the image; `edge_kinds`: the
  // edges' kinds too. Shared by run and export_graph.
  HostBuild orchestrate_host_graph(const RunPlan& plan, const RegisteredCallable& callable,
                                   const TaskArgs& args, const common::KernelTable& kernel_table,
                                   bool edge_kinds);
  // The variants' part of prepare (run_prepare_host_graph.cpp, run_prepare_ring.cpp).
  void prepare_host_graph(PreparedLaunch& prepared, const RegisteredCallable& callable,
                          const TaskArgs& args, const common::KernelTable& kernel_table);
  void prepare_ring(PreparedLaunch& prepared, const RegisteredCallable& callable,
                    const TaskArgs& args, const common::KernelTable& kernel_table);
  // Creates the launch arguments with the fields both variants fill the same way (shape, shared
  // state, kernel table, phase buffer, services, scheduler timeout, clock) and records where they
  // and the phase buffer go; the variant fills the rest, then calls write_launch_args.
  common::ChipLaunchArgs& start_launch_args(PreparedLaunch& prepared,
                                            const DeviceBuffer& shared_region,
                                            uint64_t shared_bytes, uint64_t launch_args_addr,
                                            uint64_t phase_buffer_addr) const;
  // Writes the launch arguments to the device and resets the phase buffer.
  void write_launch_args(const PreparedLaunch& prepared);
  // InternalError naming `step` unless the launch is at `stage`.
  void require_stage(const PreparedLaunch& prepared, LaunchStage stage, const char* step) const;
  // The host's progress signature of a running launch (common/progress.h): the cores' kernel
  // starts and the orchestrator's beat, read through the platform.
  uint64_t read_progress(const PreparedLaunch& prepared);
  // The chip's status word, the only field that may be read while the AICPU threads run.
  StatusCode peek_chip_code(const PreparedLaunch& prepared);
  // Sums the per-core kernel time accumulators (HandshakeCell::kernel_ns) of cores [0, cores) in
  // the shared region at shared_addr, after the launch completed.
  uint64_t read_kernel_ns(uint64_t shared_addr, uint32_t cores);
  void release_device_resources();
  // Forgets every host-side record of device resources (abandon, reset_device).
  void forget_device_resources() noexcept;

  // --- device faults (run_fault.cpp; isolated platforms) -------------------------------------
  // The op-execute check of one poll slice: samples every core's (executing, starts) from its
  // handshake cell; a core whose task has not changed for longer than the plan's op execute
  // timeout gets the device killed. True when it killed (the wait is over).
  bool enforce_op_execute(PreparedLaunch& prepared, uint64_t now_ms);
  // Whether the last op-execute sample saw a core executing a kernel.
  bool any_core_executing(const LaunchWait& state) const;
  // The wait gave up on a launch whose chip threads are stuck: kill the device process.
  void kill_stuck_device(PreparedLaunch& prepared);
  // "task 5 (kernel func_id 2 'qk', symbol kernel_entry) on core 3 (AIV, cluster 0), block 1 of
  // 2" (the display name when it is not the symbol; "function kernel" for no symbol),
  // from the launch's handshake cell of `core` (the device's memory outlives its process).
  // `task` / `func_id` when the caller knows them (a recorded run context), else the cell's.
  std::string describe_core_task(const PreparedLaunch& prepared, uint32_t core,
                                 const uint64_t* task = nullptr, const int32_t* func_id = nullptr);
  // The run's end after the device died, was killed or ran a kernel past the op execute timeout:
  // composes the message (one place), abandons the device and throws KernelCrashed,
  // OpExecuteTimeout or DeviceFaulted. `chip_detail`: what the chip latched (the watchdog's
  // report), or empty.
  [[noreturn]] void throw_device_fault(PreparedLaunch& prepared, const std::string& chip_detail);

  std::unique_ptr<platform::Platform> platform_;
  RunnerOptions options_;
  DeviceMemory memory_;
  ArenaSet arenas_;
  StagingBuffers staging_;
  GraphDefinitionBuffers graph_buffers_;
  CallableRegistry callables_;

  int device_id_ = -1;
  bool timeouts_resolved_ = false;
  TimeoutConfig timeouts_;
  std::vector<std::string> timeout_warnings_;

  bool streams_started_ = false;
  bool initialized_ = false;
  bool chip_init_done_ = false;
  bool faulted_ = false;
  std::string fault_description_;
  uint64_t reset_count_ = 0;
  platform::Geometry geometry_;
  // Device status block: the ChipServices copy and the kernel address table.
  uint64_t status_block_addr_ = 0;
  uint64_t services_addr_ = 0;
  uint64_t kernel_table_addr_ = 0;

  std::atomic<bool> run_active_{false};
  std::atomic<uint64_t> host_graphs_built_{0};
  uint64_t replayed_runs_ = 0;
  uint64_t diag_stream_records_ = 0;  // set_diag_stream_records
  uint64_t prevalidated_launches_ = 0;
  // Per bank: whether its runtime-image region holds its cached prebuilt image (a replay then skips
  // the copy); cleared when another image is written there.
  std::array<bool, kPipelineDepth> prebuilt_image_resident_{};
  // The graph builder's storage, reused run after run (see orchestrator::BuilderScratch).
  orchestrator::BuilderScratch builder_scratch_;
  uint64_t launches_ = 0;
  RingSizeResolution last_ring_sizes_;
  HostDataFence host_data_fence_;
  // Last member, so it is destroyed first: its jobs hold collectors that name memory_ and
  // platform_ (they no longer use them, but nothing may outlive what it names).
  DiagWriteQueue diag_writes_;
};

}  // namespace chiprt::host
