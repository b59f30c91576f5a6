// Ring sizing of the tensormap_ringbuffer runtime: the sizes a run may ask for
// (CallConfig::rings), the rules they follow, the parser of their text form (the CHIPRT_RING_*
// environment variables and the chiprt CLI's --ring-* options), and the sizes a run used
// (RunReport::rings).
//
// A ring run keeps one set of rings per scope depth 0..3 (kRingScopeDepths; deeper scopes share
// the depth-3 set): a task window (slots of tasks in flight), an output heap and a dependency
// pool. A list holds one value per depth; a shorter list repeats its last value, so one value
// sizes every depth. Text form: one decimal or a comma-separated list of up to four, without signs
// or spaces ("1024" or "1024,256,64"). Each field resolves on its own: CallConfig::rings when its
// list is non-empty, else the field's variable when set to a non-empty value, else the default
// (window 1024, heap = output heap bytes / 4 rounded down to 64 and at least 4096, dependency pool
// 4 x that depth's window).
//
// Lifetime and threading: plain values and pure functions; thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "chiprt/status.h"

namespace chiprt {

inline constexpr uint32_t kRingScopeDepths = 4;

// Rules (the upper bounds keep slot and dependency indices in 32 bits).
inline constexpr uint64_t kMinRingTaskWindow = 16;  // and a power of two
inline constexpr uint64_t kMaxRingTaskWindow = 1ull << 20;
inline constexpr uint64_t kRingHeapGranule = 64;  // heap sizes are multiples of it
inline constexpr uint64_t kMinRingHeapBytes = 4096;
inline constexpr uint64_t kMaxRingHeapBytes = 1ull << 40;
inline constexpr uint64_t kMinRingDepPool = 64;
inline constexpr uint64_t kMaxRingDepPool = 1ull << 26;

inline constexpr char kRingTaskWindowEnv[] = "CHIPRT_RING_TASK_WINDOW";
inline constexpr char kRingHeapBytesEnv[] = "CHIPRT_RING_HEAP_BYTES";
inline constexpr char kRingDepPoolEnv[] = "CHIPRT_RING_DEP_POOL";

enum class RingField : uint8_t { TaskWindow = 0, HeapBytes = 1, DepPool = 2 };
inline constexpr int kRingFieldCount = 3;

// "rings.task_window", "rings.heap_bytes", "rings.dep_pool".
std::string_view ring_field_config_name(RingField field) noexcept;
// "CHIPRT_RING_TASK_WINDOW", ...
std::string_view ring_field_env_name(RingField field) noexcept;
// The rule a value of the field must satisfy ("a power of two in [16, 1048576]").
std::string_view ring_field_rule(RingField field) noexcept;
bool ring_value_valid(RingField field, uint64_t value) noexcept;

// Parses the text form (one decimal or a comma-separated list of 1..4) and checks every value
// against the field's rule. On failure returns InvalidConfig naming `source` (the variable or
// option the text came from), the text and the rule; `out` is then unspecified.
Status parse_ring_sizes(RingField field, std::string_view source, std::string_view text,
                        std::vector<uint64_t>* out);

// The sizes a run asks for; an empty list leaves the field to its variable or default.
struct RingSizing {
  std::vector<uint64_t> task_window;  // power of two, >= 16
  std::vector<uint64_t> heap_bytes;   // multiple of 64, >= 4096
  std::vector<uint64_t> dep_pool;     // >= 64

  std::vector<uint64_t>& list(RingField field) noexcept;
  const std::vector<uint64_t>& list(RingField field) const noexcept;
  // One message per problem ("rings.task_window[1]=20: must be a power of two in [16, 1048576]",
  // "rings.dep_pool has 5 entries: at most 4 ..."); empty when every list is valid.
  std::vector<std::string> validate() const;
};

// The sizes of each scope depth's rings that a run used.
struct ResolvedRingSizes {
  std::array<uint64_t, kRingScopeDepths> task_window{};  // task slots
  std::array<uint64_t, kRingScopeDepths> heap_bytes{};   // output heap bytes
  std::array<uint64_t, kRingScopeDepths> dep_pool{};     // dependency-list entries

  uint64_t total_slots() const noexcept;       // task-window slots of every depth
  uint64_t total_heap_bytes() const noexcept;  // heap bytes of every depth
};

}  // namespace chiprt
