// The predicate test of a predicated task (TaskArgs::predicate): the first `bytes` (1, 2, 4 or 8)
// at `addr`, read as one unsigned integer, not zero = run the task. Read when the task is
// dispatched, after its producers completed. Shared by the chip's dispatcher
// (scheduler/task_engine.h) and anything that executes an exported graph the way the chip does.
// Stateless; any thread.
#pragma once

#include <cstdint>

namespace chiprt::common {

inline bool predicate_holds(uint64_t addr, uint32_t bytes) {
  const auto* p = reinterpret_cast<const uint8_t*>(static_cast<uintptr_t>(addr));
  switch (bytes) {
    case 1:
      return *p != 0;
    case 2:
      return *reinterpret_cast<const uint16_t*>(p) != 0;
    case 4:
      return *reinterpret_cast<const uint32_t*>(p) != 0;
    default:
      return *reinterpret_cast<const uint64_t*>(p) != 0;
  }
}

}  // namespace chiprt::common
