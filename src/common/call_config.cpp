#include "chiprt/call_config.h"

#include <utility>

#include "chiprt/status.h"

namespace chiprt {
namespace {

constexpr uint64_t kMinOutputHeapBytes = 4096;
constexpr uint64_t kHeapGranule = 64;

std::string range(uint64_t lo, uint64_t hi) {
  return "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
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
  if (user_data.size() > kMaxUserDataBytes) {
    errors.push_back(
        "user_data: " + std::to_string(user_data.size()) + " bytes exceed the limit of " +
        std::to_string(kMaxUserDataBytes) +
        " (CallConfig::kMaxUserDataBytes); pass larger inputs in a device tensor (a run "
        "argument), and for replay_graph name their version in replay_key");
  } else if (!user_data.empty() && user_data.data() == nullptr) {
    errors.push_back("user_data: " + std::to_string(user_data.size()) +
                     " bytes at a null pointer; pass an empty span for no user data");
  }
  for (std::string& ring_error : rings.validate()) errors.push_back(std::move(ring_error));
  for (std::string& diag_error : diagnostics.validate()) errors.push_back(std::move(diag_error));
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
