#include "host/timeouts.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <limits>
#include <utility>

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

namespace {

constexpr uint64_t kUint32Max = std::numeric_limits<uint32_t>::max();

// The three values in microseconds while they are resolved; `set` marks the user's overrides,
// `known` the values fixed so far (set, default kept, or derived).
struct Triple {
  std::array<uint64_t, 3> us{};
  std::array<bool, 3> set{};
  std::array<bool, 3> known{};
};
enum Which : std::size_t { kScheduler = 0, kOpExecute = 1, kStreamSync = 2 };
constexpr std::array<const char*, 3> kNames = {kSchedulerTimeoutEnv, kOpExecuteTimeoutEnv,
                                               kStreamSyncTimeoutEnv};
constexpr uint64_t kMarginUs = kStreamSyncMarginMs * 1000;

std::string text_of(Which which, uint64_t us) {
  return which == kOpExecute ? std::to_string(us) + " us" : std::to_string(us / 1000) + " ms";
}

// The ordering rule for one pair (lo below hi), in microseconds.
bool ordered(Which lo, uint64_t lo_us, Which hi, uint64_t hi_us) {
  return lo == kScheduler && hi == kStreamSync ? lo_us + kMarginUs < hi_us : lo_us < hi_us;
}

struct PairRule {
  Which lo;
  Which hi;
  const char* text;
};
constexpr std::array<PairRule, 3> kPairRules = {{
    {kScheduler, kOpExecute, "scheduler_timeout < op_execute_timeout"},
    {kOpExecute, kStreamSync, "op_execute_timeout < stream_sync_timeout"},
    {kScheduler, kStreamSync, "stream_sync_timeout > scheduler_timeout + 1500 ms"},
}};

// Whether `default_us` for the unset value `which` is ordered against every value that is set.
bool default_fits(const Triple& t, Which which, uint64_t default_us) {
  for (const PairRule& rule : kPairRules) {
    if (rule.lo != which && rule.hi != which) continue;
    const Which other = rule.lo == which ? rule.hi : rule.lo;
    if (!t.set[other]) continue;
    const uint64_t lo_us = rule.lo == which ? default_us : t.us[rule.lo];
    const uint64_t hi_us = rule.hi == which ? default_us : t.us[rule.hi];
    if (!ordered(rule.lo, lo_us, rule.hi, hi_us)) return false;
  }
  return true;
}

// The set values, "NAME=value, ...", for messages.
std::string set_values(const Triple& t, const std::array<std::string, 3>& texts) {
  std::string out;
  for (std::size_t i = 0; i < 3; ++i) {
    if (!t.set[i]) continue;
    if (!out.empty()) out += ", ";
    out += std::string(kNames[i]) + "=" + texts[i];
  }
  return out;
}

// The first ordering rule two values that are both set break, or an empty string.
std::string set_values_disorder(const Triple& t, const std::array<std::string, 3>& texts) {
  for (const PairRule& rule : kPairRules) {
    if (!t.set[rule.lo] || !t.set[rule.hi]) continue;
    if (ordered(rule.lo, t.us[rule.lo], rule.hi, t.us[rule.hi])) continue;
    return std::string("rule ") + rule.text + " violated by the values set (" + kNames[rule.lo] +
           "=" + texts[rule.lo] + ", " + kNames[rule.hi] + "=" + texts[rule.hi] + ")";
  }
  return {};
}

// Derives the unknown values (see resolve_timeouts): the scheduler and stream sync timeouts from
// the known values in the defaults' proportions (1 : 2 : 3), then the op execute timeout midway
// between them. Returns false, with `*failed` and why in `*reason`, when a value cannot be
// derived within its range.
bool derive(Triple* t, std::vector<std::pair<Which, std::string>>* derived, Which* failed,
            std::string* reason) {
  uint64_t& s = t->us[kScheduler];
  uint64_t& o = t->us[kOpExecute];
  uint64_t& y = t->us[kStreamSync];
  if (!t->known[kScheduler]) {
    // Whole milliseconds: op / 2 (or stream sync / 3), at most stream sync - margin - 1 ms.
    uint64_t ms = std::max<uint64_t>(1, t->known[kOpExecute] ? o / 2000 : y / 3000);
    if (t->known[kStreamSync]) {
      const uint64_t room = y / 1000 > kStreamSyncMarginMs ? y / 1000 - kStreamSyncMarginMs - 1 : 0;
      ms = std::min(ms, room);
    }
    if (ms == 0 || (t->known[kOpExecute] && ms * 1000 >= o)) {
      *failed = kScheduler;
      *reason = "no scheduler timeout of at least 1 ms is";
      if (t->known[kOpExecute])
        *reason += " below the op execute timeout (" + text_of(kOpExecute, o) + ")";
      if (t->known[kOpExecute] && t->known[kStreamSync]) *reason += " and";
      if (t->known[kStreamSync]) {
        *reason += " more than " + std::to_string(kStreamSyncMarginMs) +
                   " ms below the stream sync timeout (" + text_of(kStreamSync, y) + ")";
      }
      *reason += "; raise the values set";
      return false;
    }
    s = ms * 1000;
    t->known[kScheduler] = true;
    derived->emplace_back(kScheduler, t->known[kOpExecute]
                                          ? "half the op execute timeout, at most the stream "
                                            "sync timeout - 1501 ms"
                                          : "a third of the stream sync timeout, at most the "
                                            "stream sync timeout - 1501 ms");
  }
  if (!t->known[kStreamSync]) {
    // Whole milliseconds: 1.5 x op rounded up (or 3 x scheduler), at least scheduler + margin + 1.
    const uint64_t op_ms = o / 1000 + (o % 1000 != 0);  // rounded up without overflow
    uint64_t ms = t->known[kOpExecute] ? op_ms + (op_ms + 1) / 2 : s / 1000 * 3;
    ms = std::max(ms, s / 1000 + kStreamSyncMarginMs + 1);
    if (ms > kUint32Max) {
      *failed = kStreamSync;
      *reason = "no stream sync timeout up to " + std::to_string(kUint32Max) + " ms is";
      if (t->known[kOpExecute])
        *reason += " above the op execute timeout (" + text_of(kOpExecute, o) + ") and";
      *reason += " more than " + std::to_string(kStreamSyncMarginMs) +
                 " ms above the scheduler timeout (" + text_of(kScheduler, s) +
                 "); lower the values set";
      return false;
    }
    y = ms * 1000;
    t->known[kStreamSync] = true;
    derived->emplace_back(kStreamSync, t->known[kOpExecute]
                                           ? "1.5 x the op execute timeout, at least the "
                                             "scheduler timeout + 1501 ms"
                                           : "3 x the scheduler timeout");
  }
  if (!t->known[kOpExecute]) {
    o = s + (y - s) / 2;
    t->known[kOpExecute] = true;
    derived->emplace_back(kOpExecute, "midway between the scheduler and stream sync timeouts");
  }
  return true;
}

}  // namespace

TimeoutResolution resolve_timeouts(const EnvLookup& env, const TimeoutConfig& defaults) {
  TimeoutResolution result;
  result.config = defaults;
  const std::array<uint64_t, 3> default_us = {uint64_t{defaults.scheduler_ms} * 1000,
                                              defaults.op_execute_us,
                                              uint64_t{defaults.stream_sync_ms} * 1000};
  const std::array<uint64_t, 3> max_value = {kUint32Max, std::numeric_limits<uint64_t>::max(),
                                             kUint32Max};
  Triple t;
  std::array<std::string, 3> texts;
  std::string invalid;  // every variable that breaks the value rule, with its text
  for (std::size_t i = 0; i < 3; ++i) {
    const char* text = env ? env(kNames[i]) : nullptr;
    // An empty variable counts as unset, as CHIPRT_RING_* do.
    if (text == nullptr || *text == '\0') continue;
    texts[i] = text;
    t.set[i] = t.known[i] = true;
    uint64_t value = 0;
    if (!parse_positive_decimal(text, max_value[i], &value)) {
      if (!invalid.empty()) invalid += ", ";
      invalid +=
          std::string(kNames[i]) + "='" + text + "' (at most " + std::to_string(max_value[i]) + ")";
      continue;
    }
    t.us[i] = i == kOpExecute ? value : value * 1000;
  }
  if (!t.set[kScheduler] && !t.set[kOpExecute] && !t.set[kStreamSync]) return result;

  // The overrides are one setting: a violation drops all of them, so a partly applied set can
  // never pair a user's value with one it was not ordered against.
  std::string violation;
  if (!invalid.empty()) {
    violation = "rule 'each value is a positive decimal that fits its type' violated by " + invalid;
  } else {
    violation = set_values_disorder(t, texts);
  }
  if (violation.empty()) {
    for (std::size_t i = 0; i < 3; ++i) {
      if (t.set[i] || !default_fits(t, static_cast<Which>(i), default_us[i])) continue;
      t.us[i] = default_us[i];
      t.known[i] = true;
    }
    std::vector<std::pair<Which, std::string>> derived;
    Which failed = kScheduler;
    std::string reason;
    if (!derive(&t, &derived, &failed, &reason)) {
      violation = "cannot derive " + std::string(kNames[failed]) +
                  " (unset) from the values set (" + set_values(t, texts) + "): " + reason;
    } else {
      result.config.scheduler_ms = static_cast<uint32_t>(t.us[kScheduler] / 1000);
      result.config.op_execute_us = t.us[kOpExecute];
      result.config.stream_sync_ms = static_cast<uint32_t>(t.us[kStreamSync] / 1000);
      // Holds by construction; checked rather than assumed.
      violation = check_timeout_order(result.config);
      if (violation.empty()) {
        for (const auto& [which, how] : derived) {
          result.notes.push_back(std::string(kNames[which]) + " derived as " +
                                 text_of(which, t.us[which]) + " (" + how + "; its default " +
                                 text_of(which, default_us[which]) + " is not ordered against " +
                                 set_values(t, texts) + ")");
        }
      }
    }
  }
  if (!violation.empty()) {
    result.warnings.push_back(
        "ignoring all timeout overrides (" + std::string(kSchedulerTimeoutEnv) + ", " +
        kOpExecuteTimeoutEnv + ", " + kStreamSyncTimeoutEnv + "): " + violation +
        "; using the defaults (scheduler=" + std::to_string(defaults.scheduler_ms) +
        " ms, op_execute=" + std::to_string(defaults.op_execute_us) +
        " us, stream_sync=" + std::to_string(defaults.stream_sync_ms) + " ms)");
    result.config = defaults;
    result.notes.clear();
  }
  for (const std::string& note : result.notes) CHIPRT_LOG_INFO("%s", note.c_str());
  for (const std::string& warning : result.warnings) CHIPRT_LOG_WARN("%s", warning.c_str());
  return result;
}

}  // namespace chiprt::host
