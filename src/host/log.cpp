#include "host/log.h"

#include <atomic>
#include <cctype>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace chiprt::host {
namespace {

constexpr const char* kLevelNames[] = {"debug", "info", "warn", "error", "off"};

LogLevel level_from_env() noexcept {
  LogLevel level = LogLevel::Warn;
  const char* text = std::getenv("CHIPRT_LOG_LEVEL");
  if (text != nullptr && *text != '\0' && !parse_log_level(text, &level)) {
    std::fprintf(stderr,
                 "[chiprt warn] CHIPRT_LOG_LEVEL=%s is not one of debug, info, warn, error, off; "
                 "using warn\n",
                 text);
    level = LogLevel::Warn;
  }
  return level;
}

std::atomic<int>& level_cell() noexcept {
  static std::atomic<int> cell{static_cast<int>(level_from_env())};
  return cell;
}

}  // namespace

LogLevel log_level() noexcept {
  return static_cast<LogLevel>(level_cell().load(std::memory_order_relaxed));
}

void set_log_level(LogLevel level) noexcept {
  level_cell().store(static_cast<int>(level), std::memory_order_relaxed);
}

bool parse_log_level(std::string_view text, LogLevel* out) noexcept {
  if (text.size() == 1 && text[0] >= '0' && text[0] <= '4') {
    *out = static_cast<LogLevel>(text[0] - '0');
    return true;
  }
  for (int i = 0; i < 5; ++i) {
    std::string_view name = kLevelNames[i];
    if (name.size() != text.size()) continue;
    bool equal = true;
    for (std::size_t k = 0; k < name.size() && equal; ++k) {
      equal = std::tolower(static_cast<unsigned char>(text[k])) == name[k];
    }
    if (equal) {
      *out = static_cast<LogLevel>(i);
      return true;
    }
  }
  return false;
}

bool log_enabled(LogLevel level) noexcept {
  return level != LogLevel::Off && static_cast<int>(level) >= static_cast<int>(log_level());
}

void log_message(LogLevel level, const char* format, ...) {
  if (!log_enabled(level)) return;
  char body[1024];
  va_list args;
  va_start(args, format);
  std::vsnprintf(body, sizeof(body), format, args);
  va_end(args);
  std::string line = "[chiprt ";
  line += kLevelNames[static_cast<int>(level)];
  line += "] ";
  line += body;
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace chiprt::host
