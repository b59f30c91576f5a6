// CallConfig: how one run is executed (runtime variant, launch shape, capacities, ring sizes).
//
// A plain value passed to Worker::run (and Worker::export_graph); the run copies what it needs, so
// the config may change or go away once the call returns. validate() checks every field against
// the platform limits and reports one message per bad field; Worker::run calls it and throws
// InvalidConfig with all messages. Like any value: safe to read from several threads, not to
// mutate while another thread reads it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "chiprt/ring_sizes.h"

namespace chiprt {

enum class RuntimeVariant : uint8_t {
  Default = 0,              // the variant the Worker was initialised with
  HostBuildGraph = 1,       // orchestration on the host, graph image copied to the chip
  TensormapRingbuffer = 2,  // orchestration on a scheduler processor, bounded rings
};
std::string_view runtime_variant_name(RuntimeVariant v) noexcept;  // "host_build_graph", ...
bool parse_runtime_variant(std::string_view name, RuntimeVariant* out) noexcept;

// Limits of the platform a config is validated against (from the device geometry).
struct PlatformLimits {
  uint32_t max_clusters = 24;
  uint32_t max_aicpu_threads = 8;
  uint32_t pipeline_depth = 2;  // pipeline slots and arena banks
};

struct CallConfig {
  RuntimeVariant runtime = RuntimeVariant::Default;
  // 0 = auto (platform default: 1 orchestrator + 3 schedulers); otherwise >= 2 (at least one
  // orchestrator and one scheduler) and <= the platform maximum.
  int aicpu_thread_num = 0;
  // Clusters the run may use: 0 = all the device has, otherwise 1..device clusters.
  int cluster_count = 0;
  // Run the chip side on one host thread in a deterministic order (debugging).
  bool serial = false;
  // Runtime-allocated outputs come from this heap; 0 = default (kDefaultOutputHeapBytes).
  uint64_t output_heap_bytes = 0;
  // host_build_graph graph capacity in tasks; 0 = default (kDefaultMaxTasks).
  uint64_t max_tasks = 0;
  // host_build_graph: replay the graph image of the previous run when the callable, the
  // arguments and the sizing are identical, skipping orchestration (for recorded graphs). A graph
  // whose orchestration called get/set_tensor_data is never cached (a replay would skip them).
  bool replay_graph = false;
  // Sum each kernel's execution time into RunReport::kernel_ns; costs two clock reads per task.
  // The time is the executing thread's CPU time (CLOCK_THREAD_CPUTIME_ID), not wall time: on a
  // host with fewer cores than chip threads a preempted kernel would otherwise count the time it
  // spent descheduled.
  bool measure_kernel_time = false;
  // Reserved for pipelined runs (issue 16), which will choose slot and bank themselves: validated
  // (< PlatformLimits::pipeline_depth) and they do pick the staging slot and the arena bank the
  // run uses, but runs still execute one at a time, so another slot or bank overlaps nothing; it
  // only costs device memory and a bank of its own (replay_graph caches bank 0 only).
  uint32_t pipeline_slot = 0;
  uint32_t arena_bank = 0;
  // tensormap_ringbuffer ring sizes (see ring_sizes.h); empty lists leave the field to its
  // CHIPRT_RING_* variable or its default. host_build_graph ignores them.
  RingSizing rings;

  static constexpr uint64_t kDefaultOutputHeapBytes = 64ull << 20;
  static constexpr uint64_t kDefaultMaxTasks = 1ull << 20;
  static constexpr uint64_t kMaxOutputHeapBytes = 1ull << 40;
  static constexpr uint64_t kMaxTasksLimit = 1ull << 26;

  // One message per invalid field ("aicpu_thread_num=1: must be 0 (auto) or in [2, 8] ...").
  std::vector<std::string> validate(const PlatformLimits& limits) const;
  // Throws Error(InvalidConfig) joining all messages.
  void validate_or_throw(const PlatformLimits& limits) const;
};

}  // namespace chiprt
