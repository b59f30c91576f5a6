// The state machine of one task slot, shared by every side that reads or writes task states: the
// schedulers (dispatch, completion), the ring orchestrator (formats slots, waits on writers) and
// diagnostics. Pending -> Ready -> Running -> Completed; dependency-only tasks skip Running.
// Stored as one byte per task in the shared-state region (common/chip_launch.h).
#pragma once

#include <cstdint>

namespace chiprt::common {

enum class TaskState : uint8_t { Pending = 0, Ready = 1, Running = 2, Completed = 3 };

inline constexpr uint8_t kTaskStateCount = 4;

// "pending", "ready", "running", "completed"; "unknown" for a byte outside the machine.
constexpr const char* task_state_name(uint8_t state) noexcept {
  constexpr const char* kNames[kTaskStateCount] = {"pending", "ready", "running", "completed"};
  return state < kTaskStateCount ? kNames[state] : "unknown";
}

}  // namespace chiprt::common
