#include "host/run_plan.h"

#include <algorithm>
#include <string>

#include "chiprt/status.h"
#include "common/chip_launch.h"
#include "host/arena.h"
#include "host/log.h"

namespace chiprt::host {

PlatformLimits platform_limits(const platform::Geometry& geometry) noexcept {
  PlatformLimits limits;
  limits.max_clusters = geometry.clusters;
  limits.max_aicpu_threads = std::min(geometry.max_aicpu_threads, common::kMaxAicpuThreads);
  limits.pipeline_depth = kPipelineDepth;
  return limits;
}

LaunchShape resolve_launch_shape(const CallConfig& config, const platform::Geometry& geometry,
                                 bool platform_serial) {
  config.validate_or_throw(platform_limits(geometry));
  LaunchShape shape;
  shape.serial = platform_serial || config.serial;
  shape.measure_kernel_time = config.measure_kernel_time;
  const uint32_t usable = std::min(geometry.max_aicpu_threads, common::kMaxAicpuThreads);
  const uint32_t desired = config.aicpu_thread_num > 0
                               ? static_cast<uint32_t>(config.aicpu_thread_num)
                               : geometry.default_aicpu_threads;
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
  const uint32_t device_clusters = geometry.clusters;
  const uint32_t clusters =
      config.cluster_count > 0 ? static_cast<uint32_t>(config.cluster_count) : device_clusters;
  if (clusters > device_clusters) {
    throw Error(StatusCode::InvalidConfig, "cluster_count=" + std::to_string(clusters) +
                                               " exceeds the device's " +
                                               std::to_string(device_clusters) + " clusters");
  }
  shape.clusters = clusters;
  shape.cores = clusters * 3;
  return shape;
}

RunPlan resolve_run_plan(const CallConfig& config, PlanPurpose purpose,
                         const PlanContext& context) {
  RunPlan plan;
  plan.shape = resolve_launch_shape(config, context.geometry, context.platform_serial);
  if (purpose == PlanPurpose::ExportGraph) {
    // The graph a host_build_graph run would launch, built afresh: the variant and replay of the
    // config do not apply.
    plan.variant = RuntimeVariant::HostBuildGraph;
    plan.replay_graph = false;
  } else {
    plan.variant =
        config.runtime == RuntimeVariant::Default ? context.default_runtime : config.runtime;
    if (plan.variant == RuntimeVariant::TensormapRingbuffer && config.replay_graph) {
      throw Error(StatusCode::InvalidConfig,
                  "replay_graph=true: graph replay is a host_build_graph feature; a "
                  "tensormap_ringbuffer run orchestrates on the chip every time and has no graph "
                  "image to replay (set replay_graph=false or run host_build_graph)");
    }
    plan.replay_graph = config.replay_graph;
    plan.replay_key = config.replay_key;
  }
  plan.user_data = config.user_data;
  plan.slot = config.pipeline_slot;
  plan.bank = config.arena_bank;
  const uint64_t output_heap_bytes = config.output_heap_bytes != 0
                                         ? config.output_heap_bytes
                                         : CallConfig::kDefaultOutputHeapBytes;
  plan.max_tasks = config.max_tasks != 0 ? config.max_tasks : CallConfig::kDefaultMaxTasks;
  plan.heap_bytes = output_heap_bytes;
  if (plan.variant == RuntimeVariant::TensormapRingbuffer) {
    // The configured heap only sizes the default per-depth heaps; the run's heap is their sum.
    Status status = resolve_ring_sizes(config.rings, output_heap_bytes, context.env, &plan.rings);
    if (!status.is_ok()) throw Error(status);
    plan.heap_bytes = plan.rings.total_heap_bytes();
  }
  plan.scheduler_timeout_ms = context.timeouts.scheduler_ms;
  plan.stream_sync_timeout_ms = context.timeouts.stream_sync_ms;
  plan.op_execute_timeout_us = context.timeouts.op_execute_us;
  plan.diagnostics = config.diagnostics;
  return plan;
}

}  // namespace chiprt::host
