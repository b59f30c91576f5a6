// CallConfig: how one run is executed (runtime variant, launch shape, capacities, ring sizes).
//
// A plain value passed to Worker::run (and Worker::export_graph); the run copies what it needs, so
// the config may change or go away once the call returns (user_data only points at the caller's
// bytes: they must stay valid until the call returns, and are copied during it). validate() checks
// every field against the platform limits and reports one message per bad field; Worker::run calls
// it and throws InvalidConfig with all messages. Like any value: safe to read from several threads,
// not to mutate while another thread reads it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "chiprt/diagnostics.h"
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
  // Bytes for the orchestration function of this run (Orchestration::user_data()), at most
  // kMaxUserDataBytes: the run copies them (into device memory where the orchestration runs on
  // the chip), so the function reads the run's own copy, aligned to kUserDataAlign, on every
  // variant. Not owned: the bytes must stay valid until Worker::run returns. Empty: none.
  // What a graph depends on beyond its arguments belongs here rather than behind a pointer
  // passed as a scalar, so that replay_graph keys on it (below).
  std::span<const std::byte> user_data;
  // host_build_graph: replay the graph image of the previous run when the callable, the
  // arguments (tensors field by field, scalars by value, explicit dependencies), user_data (byte
  // for byte), replay_key and the sizing (output heap, max_tasks, clusters) are identical,
  // skipping orchestration (for recorded graphs). The key covers nothing else: a scalar that is a
  // pointer keys on its value, not on what it points at, and the contents of tensors are not part
  // of it, so a graph that depends on such data must pass it as user_data (or change replay_key
  // when it changes). A graph whose orchestration called get/set_tensor_data is never cached (a
  // replay would skip them).
  bool replay_graph = false;
  // host_build_graph replay: a value of the caller's that is part of the replay key (ignored
  // without replay_graph), for a graph that depends on state too large to pass as user_data:
  // change it whenever that state changes (a version or a content hash) and the graph is built
  // afresh; the same value with the same arguments replays.
  uint64_t replay_key = 0;
  // Sum each kernel's execution time into RunReport::kernel_ns; costs two clock reads per task.
  // The time is the executing thread's CPU time (CLOCK_THREAD_CPUTIME_ID), not wall time: on a
  // host with fewer cores than chip threads a preempted kernel would otherwise count the time it
  // spent descheduled.
  bool measure_kernel_time = false;
  // The staging slot and arena bank of a run() (validated: < PlatformLimits::pipeline_depth).
  // Worker::submit ignores them: the pipeline alternates slot and bank itself so that a run is
  // prepared while another executes. For run() another slot or bank overlaps nothing; it only
  // costs device memory and a bank of its own (each bank caches its own replay_graph image).
  uint32_t pipeline_slot = 0;
  uint32_t arena_bank = 0;
  // tensormap_ringbuffer ring sizes (see ring_sizes.h); empty lists leave the field to its
  // CHIPRT_RING_* variable or its default. host_build_graph ignores them.
  RingSizing rings;
  // Collectors of this run and where their files go (chiprt/diagnostics.h); all off by default,
  // and off they cost nothing.
  DiagnosticsConfig diagnostics;

  static constexpr uint64_t kDefaultOutputHeapBytes = 64ull << 20;
  static constexpr uint64_t kDefaultMaxTasks = 1ull << 20;
  static constexpr uint64_t kMaxOutputHeapBytes = 1ull << 40;
  static constexpr uint64_t kMaxTasksLimit = 1ull << 26;
  // The most user_data bytes a run takes (larger inputs travel as a tensor argument), and the
  // alignment of the run's copy the orchestration function reads.
  static constexpr uint64_t kMaxUserDataBytes = 64ull << 10;
  static constexpr uint64_t kUserDataAlign = 16;

  // One message per invalid field ("aicpu_thread_num=1: must be 0 (auto) or in [2, 8] ...").
  std::vector<std::string> validate(const PlatformLimits& limits) const;
  // Throws Error(InvalidConfig) joining all messages.
  void validate_or_throw(const PlatformLimits& limits) const;
};

}  // namespace chiprt
