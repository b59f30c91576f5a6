// Host logger: levelled, printf-style messages to stderr.
//
// The level comes from CHIPRT_LOG_LEVEL (debug, info, warn, error, off; default warn), read once
// on first use, and can be changed with set_log_level. Every function is thread-safe; a message
// is written with one fwrite so lines from different threads do not interleave.
#pragma once

#include <string_view>

namespace chiprt::host {

enum class LogLevel : int { Debug = 0, Info = 1, Warn = 2, Error = 3, Off = 4 };

LogLevel log_level() noexcept;
void set_log_level(LogLevel level) noexcept;
// Parses "debug", "info", "warn", "error", "off" (case-insensitive) or "0".."4".
bool parse_log_level(std::string_view text, LogLevel* out) noexcept;
bool log_enabled(LogLevel level) noexcept;

void log_message(LogLevel level, const char* format, ...) __attribute__((format(printf, 2, 3)));

}  // namespace chiprt::host

#define CHIPRT_LOG(level, ...)                                                               \
  do {                                                                                       \
    if (::chiprt::host::log_enabled(level)) ::chiprt::host::log_message(level, __VA_ARGS__); \
  } while (0)
#define CHIPRT_LOG_DEBUG(...) CHIPRT_LOG(::chiprt::host::LogLevel::Debug, __VA_ARGS__)
#define CHIPRT_LOG_INFO(...) CHIPRT_LOG(::chiprt::host::LogLevel::Info, __VA_ARGS__)
#define CHIPRT_LOG_WARN(...) CHIPRT_LOG(::chiprt::host::LogLevel::Warn, __VA_ARGS__)
#define CHIPRT_LOG_ERROR(...) CHIPRT_LOG(::chiprt::host::LogLevel::Error, __VA_ARGS__)
