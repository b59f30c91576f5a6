#include "chiprt/call_config.h"

#include <bit>

#include "chiprt/status.h"

namespace chiprt {
namespace {

// Ring sizing has one entry per scope depth 0..3; deeper scopes share the last entry.
constexpr std::size_t kMaxRingSizingEntries = 4;
constexpr uint64_t kMinOutputHeapBytes = 4096;
constexpr uint64_t kHeapGranule = 64;
// The same rules as the host's ring sizing (src/host/ring_sizing.h), which also checks the
// CHIPRT_RING_* variables; the upper bounds keep slot and dependency indices in 32 bits.
constexpr uint64_t kMinTaskWindow = 16;
constexpr uint64_t kMaxTaskWindow = 1ull << 20;
constexpr uint64_t kMinRingHeapBytes = 4096;
constexpr uint64_t kMaxRingHeapBytes = 1ull << 40;
constexpr uint64_t kMinDepPool = 64;
constexpr uint64_t kMaxDepPool = 1ull << 26;

std::string range(uint64_t lo, uint64_t hi) {
  return "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
}

template <class Rule>
void check_ring_list(const std::vector<uint64_t>& values, const char* field, Rule&& entry_error,
                     std::vector<std::string>* errors) {
  if (values.size() > kMaxRingSizingEntries) {
    errors->push_back(std::string(field) + " has " + std::to_string(values.size()) +
                      " entries: at most " + std::to_string(kMaxRingSizingEntries) +
                      " (scope depths 0..3; deeper depths share the last entry)");
  }
  for (std::size_t i = 0; i < values.size(); ++i) {
    const char* rule = entry_error(values[i]);
    if (rule != nullptr) {
      errors->push_back(std::string(field) + "[" + std::to_string(i) +
                        "]=" + std::to_string(values[i]) + ": " + rule);
    }
  }
}

}  // namespace

std::string_view runtime_variant_name(RuntimeVariant v) noexcept {
  switch (v) {
    case RuntimeVariant::Default:
      return "default";
    case RuntimeVariant::HostBuildGraph:
      return "host_build_graph";
    case RuntimeVariant::TensormapRingbuffer:
      return "tensormap_ringbuffer";
  }
  return "invalid";
}

bool parse_runtime_variant(std::string_view name, RuntimeVariant* out) noexcept {
  for (RuntimeVariant v : {RuntimeVariant::Default, RuntimeVariant::HostBuildGraph,
                           RuntimeVariant::TensormapRingbuffer}) {
    if (runtime_variant_name(v) == name) {
      *out = v;
      return true;
    }
  }
  return false;
}

std::vector<std::string> CallConfig::validate(const PlatformLimits& limits) const {
  std::vector<std::string> errors;
  if (runtime_variant_name(runtime) == "invalid") {
    errors.push_back("runtime=" + std::to_string(static_cast<int>(runtime)) +
                     ": must be one of default, host_build_graph, tensormap_ringbuffer");
  }
  if (aicpu_thread_num != 0 && (aicpu_thread_num < 2 || static_cast<uint64_t>(aicpu_thread_num) >
                                                            limits.max_aicpu_threads)) {
    errors.push_back("aicpu_thread_num=" + std::to_string(aicpu_thread_num) +
                     ": must be 0 (auto) or in " + range(2, limits.max_aicpu_threads) +
                     " (at least one orchestrator + one scheduler, at most the platform maximum)");
  }
  if (cluster_count != 0 &&
      (cluster_count < 1 || static_cast<uint64_t>(cluster_count) > limits.max_clusters)) {
    errors.push_back("cluster_count=" + std::to_string(cluster_count) +
                     ": must be 0 (all clusters) or in " + range(1, limits.max_clusters) +
                     " (the device's clusters)");
  }
  if (output_heap_bytes != 0 &&
      (output_heap_bytes < kMinOutputHeapBytes || output_heap_bytes > kMaxOutputHeapBytes ||
       output_heap_bytes % kHeapGranule != 0)) {
    errors.push_back("output_heap_bytes=" + std::to_string(output_heap_bytes) +
                     ": must be 0 (default) or a multiple of 64 in " +
                     range(kMinOutputHeapBytes, kMaxOutputHeapBytes));
  }
  if (max_tasks > kMaxTasksLimit) {
    errors.push_back("max_tasks=" + std::to_string(max_tasks) + ": must be 0 (default) or in " +
                     range(1, kMaxTasksLimit));
  }
  if (pipeline_slot >= limits.pipeline_depth) {
    errors.push_back("pipeline_slot=" + std::to_string(pipeline_slot) + ": must be < " +
                     std::to_string(limits.pipeline_depth) + " (the platform's pipeline depth)");
  }
  if (arena_bank >= limits.pipeline_depth) {
    errors.push_back("arena_bank=" + std::to_string(arena_bank) + ": must be < " +
                     std::to_string(limits.pipeline_depth) + " (the platform's pipeline depth)");
  }
  if (diagnostics.any() && diagnostics.output_dir.empty()) {
    errors.push_back(
        "diagnostics.output_dir=\"\": must name a directory when any diagnostics switch is on");
  }
  check_ring_list(
      rings.task_window, "rings.task_window",
      [](uint64_t v) -> const char* {
        return v >= kMinTaskWindow && v <= kMaxTaskWindow && std::has_single_bit(v)
                   ? nullptr
                   : "must be a power of two in [16, 1048576]";
      },
      &errors);
  check_ring_list(
      rings.heap_bytes, "rings.heap_bytes",
      [](uint64_t v) -> const char* {
        return v >= kMinRingHeapBytes && v <= kMaxRingHeapBytes && v % kHeapGranule == 0
                   ? nullptr
                   : "must be a multiple of 64 in [4096, 1099511627776]";
      },
      &errors);
  check_ring_list(
      rings.dep_pool, "rings.dep_pool",
      [](uint64_t v) -> const char* {
        return v >= kMinDepPool && v <= kMaxDepPool ? nullptr : "must be in [64, 67108864]";
      },
      &errors);
  return errors;
}

void CallConfig::validate_or_throw(const PlatformLimits& limits) const {
  const std::vector<std::string> errors = validate(limits);
  if (errors.empty()) return;
  std::string joined;
  for (const std::string& e : errors) {
    if (!joined.empty()) joined += "; ";
    joined += e;
  }
  throw Error(StatusCode::InvalidConfig, joined);
}

}  // namespace chiprt
