// CallConfig: how one run is executed (runtime variant, launch shape, capacities, diagnostics).
//
// A plain value passed to Worker::run. validate() checks every field against the platform limits
// and reports one message per bad field; Worker::run calls it and throws InvalidConfig with all
// messages. Not thread-safe to mutate while shared.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

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

// Diagnostics switches. Reserved for the diagnostics issue: validated, not yet collected.
struct DiagnosticsConfig {
  bool swimlane = false;
  bool task_timing = false;
  bool dep_graph = false;
  bool scope_stats = false;
  bool dump_args = false;
  bool hw_counters = false;
  std::string output_dir;  // required when any switch is on
  bool any() const noexcept {
    return swimlane || task_timing || dep_graph || scope_stats || dump_args || hw_counters;
  }
};

// Ring sizing for tensormap_ringbuffer: one set of rings per scope depth 0..3 (deeper scopes share
// the depth-3 set). Each list holds one value per depth; a shorter list repeats its last value
// (one value = every depth); empty = the CHIPRT_RING_TASK_WINDOW / CHIPRT_RING_HEAP_BYTES /
// CHIPRT_RING_DEP_POOL environment variables (same syntax, comma separated), else the defaults
// (window 1024 slots, heap = output_heap_bytes / 4, dependency pool 4 x window).
struct RingSizing {
  std::vector<uint64_t> task_window;  // power of two, >= 16
  std::vector<uint64_t> heap_bytes;   // multiple of 64, >= 4096
  std::vector<uint64_t> dep_pool;     // >= 64
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
  // Pipelining (single run at a time for now): which prepare slot and arena bank to use.
  uint32_t pipeline_slot = 0;
  uint32_t arena_bank = 0;
  DiagnosticsConfig diagnostics;
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
