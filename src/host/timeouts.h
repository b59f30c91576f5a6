// Runtime timeouts: the scheduler watchdog, the per-op execute limit and the host's stream sync
// limit, with their environment overrides.
//
// resolve_timeouts is a pure function of an environment lookup callback, so tests inject values
// instead of mutating the process environment. A DeviceRunner resolves once, at its first attach,
// and keeps the result for its lifetime. Values are plain data; functions are thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/chip_launch.h"

namespace chiprt::host {

inline constexpr char kSchedulerTimeoutEnv[] = "CHIPRT_SCHEDULER_TIMEOUT_MS";
inline constexpr char kOpExecuteTimeoutEnv[] = "CHIPRT_OP_EXECUTE_TIMEOUT_US";
inline constexpr char kStreamSyncTimeoutEnv[] = "CHIPRT_STREAM_SYNC_TIMEOUT_MS";

// Minimum margin of the stream sync timeout over the scheduler watchdog, so the watchdog always
// reports a stuck task (with its name) before the host gives up on the stream.
inline constexpr uint64_t kStreamSyncMarginMs = 1500;

struct TimeoutConfig {
  uint32_t scheduler_ms = common::kDefaultSchedulerTimeoutMs;  // the chip's default (protocol)
  uint64_t op_execute_us = 20000000;
  uint32_t stream_sync_ms = common::kDefaultStreamSyncTimeoutMs;
};

// Returns the variable's value or nullptr when it is not set (std::getenv's contract).
using EnvLookup = std::function<const char*(const char* name)>;
// Looks variables up in the process environment.
EnvLookup process_env();

struct TimeoutResolution {
  TimeoutConfig config;
  std::vector<std::string> warnings;  // each also logged at warn level
  std::vector<std::string> notes;     // one per derived value, each also logged at info level
};

// Parses a positive decimal (digits only, no sign or spaces) not above `max`. Returns false for
// empty text, zero, any non-digit and overflow.
bool parse_positive_decimal(std::string_view text, uint64_t max, uint64_t* out) noexcept;

// The ordering rule: scheduler_ms*1000 < op_execute_us < stream_sync_ms*1000 and
// stream_sync_ms > scheduler_ms + kStreamSyncMarginMs. Returns an empty string when it holds,
// otherwise the name of the violated part with the values.
std::string check_timeout_order(const TimeoutConfig& config);

// Defaults overridden by the set variables; an empty variable counts as unset. An unset value
// keeps its default when that is ordered against every value that is set; otherwise it is derived
// from the values known (set or kept), in the defaults' proportions 1 : 2 : 3:
//   scheduler   = min(op execute / 2 (or stream sync / 3 when op execute is derived too),
//                     stream sync - 1501 ms), whole ms, at least 1 ms;
//   stream sync = max(1.5 x op execute (or 3 x scheduler), scheduler + 1501 ms), whole ms;
//   op execute  = midway between the scheduler and stream sync timeouts (derived last).
// Each derived value gets a note. Any violation — a value that is not a positive decimal fitting
// its type, a value that cannot be derived within its range, or a set of values that breaks the
// ordering rule — ignores every override (defaults used) with one warning naming the rule or the
// value that cannot be derived, the offending variables or values, and the defaults.
TimeoutResolution resolve_timeouts(const EnvLookup& env, const TimeoutConfig& defaults = {});

}  // namespace chiprt::host
