// Ring sizing of a tensormap_ringbuffer run: the per-depth task window, output heap and
// dependency pool, resolved from CallConfig::rings, else the CHIPRT_RING_* environment variables,
// else the defaults, each field on its own.
//
// A list holds one value per scope depth 0..3 (deeper scopes share the depth-3 set); a shorter
// list repeats its last value, so one value sizes every depth. Rules: task window a power of two
// in [16, 2^20]; heap a multiple of 64 in [4096, 2^40]; dependency pool in [64, 2^26]. Defaults:
// window 1024, heap = output heap bytes / 4 rounded down to 64 (at least 4096), dependency pool
// 4 x that depth's window.
//
// Pure functions of their inputs (the environment is read through an EnvLookup); thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "chiprt/call_config.h"
#include "chiprt/status.h"
#include "common/chip_launch.h"
#include "common/ring_layout.h"
#include "host/timeouts.h"

namespace chiprt::host {

inline constexpr char kRingTaskWindowEnv[] = "CHIPRT_RING_TASK_WINDOW";
inline constexpr char kRingHeapBytesEnv[] = "CHIPRT_RING_HEAP_BYTES";
inline constexpr char kRingDepPoolEnv[] = "CHIPRT_RING_DEP_POOL";

// The rules are the chip's (common/ring_layout.h), which re-checks them.
inline constexpr uint64_t kMinRingTaskWindow = common::kRingMinWindow;
inline constexpr uint64_t kMaxRingTaskWindow = common::kRingMaxWindow;
inline constexpr uint64_t kDefaultRingTaskWindow = 1024;
inline constexpr uint64_t kRingHeapGranule = common::kRingHeapAlign;
inline constexpr uint64_t kMinRingHeapBytes = common::kRingMinHeapBytes;
inline constexpr uint64_t kMaxRingHeapBytes = common::kRingMaxHeapBytes;
inline constexpr uint64_t kMinRingDepPool = common::kRingMinDepPool;
inline constexpr uint64_t kMaxRingDepPool = common::kRingMaxDepPool;
inline constexpr uint64_t kDefaultDepPoolPerSlot = 4;

enum class RingField : uint8_t { TaskWindow = 0, HeapBytes = 1, DepPool = 2 };
inline constexpr int kRingFieldCount = 3;

// "rings.task_window", "rings.heap_bytes", "rings.dep_pool".
std::string_view ring_field_config_name(RingField field) noexcept;
// "CHIPRT_RING_TASK_WINDOW", ...
std::string_view ring_field_env_name(RingField field) noexcept;
// The rule a value of the field must satisfy ("a power of two in [16, 1048576]").
std::string_view ring_field_rule(RingField field) noexcept;
bool ring_value_valid(RingField field, uint64_t value) noexcept;

// Parses a single decimal value or a comma-separated list of 1..4 decimals (no signs, no spaces)
// and checks every value against the field's rule. On failure returns InvalidConfig naming
// `source` (the variable or option), the text and the rule; `out` is then unspecified.
Status parse_ring_size_list(RingField field, std::string_view source, std::string_view text,
                            std::vector<uint64_t>* out);

// Where one field's sizes came from.
enum class RingSizeSource : uint8_t { CallConfig = 0, Environment = 1, Default = 2 };

struct RingSizeResolution {
  common::RingSizes sizes;
  RingSizeSource source[kRingFieldCount] = {RingSizeSource::Default, RingSizeSource::Default,
                                            RingSizeSource::Default};
  uint64_t total_slots() const noexcept;
  uint64_t total_heap_bytes() const noexcept;
};

// Resolves every field: `config` when its list is non-empty, else the field's variable when set
// to a non-empty value, else the default (`output_heap_bytes` is the run's resolved output heap).
// InvalidConfig naming the field or variable, the value and the rule when anything is invalid.
Status resolve_ring_sizes(const RingSizing& config, uint64_t output_heap_bytes,
                          const EnvLookup& env, RingSizeResolution* out);

}  // namespace chiprt::host
