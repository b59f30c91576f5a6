#include "host/timeouts.h"

#include <cstdlib>
#include <limits>
#include <type_traits>

#include "host/log.h"

namespace chiprt::host {

EnvLookup process_env() {
  return [](const char* name) -> const char* { return std::getenv(name); };
}

bool parse_positive_decimal(std::string_view text, uint64_t max, uint64_t* out) noexcept {
  if (text.empty()) return false;
  uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    const uint64_t digit = static_cast<uint64_t>(c - '0');
    if (value > (max - digit) / 10) return false;  // value*10 + digit would exceed max
    value = value * 10 + digit;
  }
  if (value == 0) return false;
  *out = value;
  return true;
}

std::string check_timeout_order(const TimeoutConfig& c) {
  const uint64_t scheduler_us = uint64_t{c.scheduler_ms} * 1000;
  const uint64_t stream_us = uint64_t{c.stream_sync_ms} * 1000;
  std::string values = " (scheduler=" + std::to_string(c.scheduler_ms) +
                       " ms, op_execute=" + std::to_string(c.op_execute_us) +
                       " us, stream_sync=" + std::to_string(c.stream_sync_ms) + " ms)";
  if (scheduler_us >= c.op_execute_us) {
    return "rule scheduler_timeout < op_execute_timeout violated" + values;
  }
  if (c.op_execute_us >= stream_us) {
    return "rule op_execute_timeout < stream_sync_timeout violated" + values;
  }
  if (uint64_t{c.stream_sync_ms} <= uint64_t{c.scheduler_ms} + kStreamSyncMarginMs) {
    return "rule stream_sync_timeout > scheduler_timeout + " + std::to_string(kStreamSyncMarginMs) +
           " ms violated" + values;
  }
  return {};
}

TimeoutResolution resolve_timeouts(const EnvLookup& env, const TimeoutConfig& defaults) {
  TimeoutResolution result;
  result.config = defaults;
  bool any_override = false;
  std::string invalid;  // every variable that breaks the value rule, with its text

  auto apply = [&](const char* name, uint64_t max, auto* field) {
    const char* text = env ? env(name) : nullptr;
    if (text == nullptr) return;
    any_override = true;
    uint64_t value = 0;
    if (!parse_positive_decimal(text, max, &value)) {
      if (!invalid.empty()) invalid += ", ";
      invalid += std::string(name) + "='" + text + "' (at most " + std::to_string(max) + ")";
      return;
    }
    *field = static_cast<std::remove_pointer_t<decltype(field)>>(value);
  };
  apply(kSchedulerTimeoutEnv, std::numeric_limits<uint32_t>::max(), &result.config.scheduler_ms);
  apply(kOpExecuteTimeoutEnv, std::numeric_limits<uint64_t>::max(), &result.config.op_execute_us);
  apply(kStreamSyncTimeoutEnv, std::numeric_limits<uint32_t>::max(), &result.config.stream_sync_ms);
  if (!any_override) return result;

  // The overrides are one setting: a violation of either rule drops all of them, so a partly
  // applied set can never pair a user's value with a default it was not ordered against.
  std::string violation;
  if (!invalid.empty()) {
    violation = "rule 'each value is a positive decimal that fits its type' violated by " + invalid;
  } else {
    violation = check_timeout_order(result.config);
  }
  if (!violation.empty()) {
    result.warnings.push_back(
        "ignoring all timeout overrides (" + std::string(kSchedulerTimeoutEnv) + ", " +
        kOpExecuteTimeoutEnv + ", " + kStreamSyncTimeoutEnv + "): " + violation +
        "; using the defaults (scheduler=" + std::to_string(defaults.scheduler_ms) +
        " ms, op_execute=" + std::to_string(defaults.op_execute_us) +
        " us, stream_sync=" + std::to_string(defaults.stream_sync_ms) + " ms)");
    result.config = defaults;
  }
  for (const std::string& warning : result.warnings) CHIPRT_LOG_WARN("%s", warning.c_str());
  return result;
}

}  // namespace chiprt::host
