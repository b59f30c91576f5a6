// RunPlan: one run's configuration resolved once, before anything is prepared: the variant, the
// launch shape, the pipeline slot and arena bank, the output heap, the task capacity, the ring
// sizes and the timeouts that apply. Every later step of the run (prepare, launch, wait, collect)
// reads its values from the plan; none derives them from CallConfig again.
//
// A plain value (trivially copyable; user_data points at the caller's bytes, as CallConfig's
// does). resolve_run_plan is a pure function of the config and the runner's context (geometry,
// default variant, environment, timeouts): any thread; it throws chiprt::Error (InvalidConfig) for
// a config it refuses.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "chiprt/call_config.h"
#include "host/ring_sizing.h"
#include "host/timeouts.h"
#include "platform/platform.h"

namespace chiprt::host {

// The resolved shape of one launch.
struct LaunchShape {
  uint32_t aicpu_threads = 0;
  uint32_t clusters = 0;  // clusters the run uses
  uint32_t cores = 0;     // cores of those clusters (3 per cluster)
  bool serial = false;
  bool measure_kernel_time = false;  // CallConfig::measure_kernel_time
};

// What a plan is for: a run, or an export of the graph a host_build_graph run would launch
// (always host_build_graph, never replayed).
enum class PlanPurpose : uint8_t { Run = 0, ExportGraph = 1 };

// What a runner knows that a plan depends on (valid after its initialisation).
struct PlanContext {
  const platform::Geometry& geometry;
  bool platform_serial = false;
  RuntimeVariant default_runtime = RuntimeVariant::HostBuildGraph;  // never Default
  const EnvLookup& env;  // CHIPRT_RING_* (tensormap_ringbuffer)
  const TimeoutConfig& timeouts;
};

struct RunPlan {
  RuntimeVariant variant = RuntimeVariant::HostBuildGraph;  // never Default
  LaunchShape shape;
  uint32_t slot = 0;  // pipeline slot: the staging buffer of the launch arguments
  uint32_t bank = 0;  // arena bank: output heap, shared state, runtime image
  // The output heap the bank commits and runtime outputs are carved from, exactly: the
  // configured heap (host_build_graph) or the four per-depth ring heaps (tensormap_ringbuffer).
  uint64_t heap_bytes = 0;
  uint64_t max_tasks = 0;     // host_build_graph graph capacity
  bool replay_graph = false;  // host_build_graph only
  uint64_t replay_key = 0;    // CallConfig::replay_key (replay_graph runs)
  // CallConfig::user_data: the caller's bytes (valid during the call that made the plan), which
  // prepare copies into the run.
  std::span<const std::byte> user_data;
  RingSizeResolution rings;  // tensormap_ringbuffer only
  uint32_t scheduler_timeout_ms = 0;
  uint32_t stream_sync_timeout_ms = 0;
  uint64_t op_execute_timeout_us = 0;  // enforced by the host on isolated platforms
  DiagnosticsConfig diagnostics;       // CallConfig::diagnostics (validated)
};

// The limits a config is validated against on a device of this geometry.
PlatformLimits platform_limits(const platform::Geometry& geometry) noexcept;
// Validates `config` against the geometry's limits, then resolves its shape (InvalidConfig when
// the AICPU threads or clusters do not fit).
LaunchShape resolve_launch_shape(const CallConfig& config, const platform::Geometry& geometry,
                                 bool platform_serial);
// The whole plan: the shape first (so an invalid config is refused before anything else), then
// the variant (a replay of a tensormap_ringbuffer run is InvalidConfig), then the sizes (ring
// sizes: InvalidConfig naming the field or variable).
RunPlan resolve_run_plan(const CallConfig& config, PlanPurpose purpose, const PlanContext& context);

}  // namespace chiprt::host
