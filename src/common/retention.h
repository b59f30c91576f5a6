// The rule for storage kept between runs for reuse (host_build_graph's builder state and image
// storage, the device arena regions): reuse saves page faults and commits for runs of a similar
// size, but one very large run must not pin its storage until the Worker is closed.
//
// Storage is given back when it holds more than kRetainFloorBytes and the use that just ended
// needed less than 1/kRetainShrinkFactor of what it is sized for; the next use then allocates
// what it needs. Plain constants and a pure function.
#pragma once

#include <cstdint>

namespace chiprt::common {

inline constexpr uint64_t kRetainFloorBytes = 64ull << 20;
inline constexpr uint64_t kRetainShrinkFactor = 4;

// `retained_bytes`: what the storage holds; `used` and `sized_for` in one unit (bytes, tasks).
constexpr bool release_retained(uint64_t retained_bytes, uint64_t used,
                                uint64_t sized_for) noexcept {
  return retained_bytes > kRetainFloorBytes && used < sized_for / kRetainShrinkFactor;
}

}  // namespace chiprt::common
