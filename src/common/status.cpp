#include "chiprt/status.h"

#include <array>

namespace chiprt {
namespace {

struct Entry {
  StatusCode code;
  StatusInfo info;
};

constexpr Entry kEntries[] = {
#define CHIPRT_STATUS_ENTRY(name, value, detail, hint) {StatusCode::name, {#name, detail, hint}},
    CHIPRT_STATUS_CODES(CHIPRT_STATUS_ENTRY)
#undef CHIPRT_STATUS_ENTRY
};

constexpr StatusCode kCodes[] = {
#define CHIPRT_STATUS_VALUE(name, value, detail, hint) StatusCode::name,
    CHIPRT_STATUS_CODES(CHIPRT_STATUS_VALUE)
#undef CHIPRT_STATUS_VALUE
};

std::string format(StatusCode code, const std::string& message, std::string_view hint) {
  const StatusInfo& info = status_info(code);
  std::string out;
  out.reserve(message.size() + hint.size() + 32);
  out += '[';
  out += info.name;
  out += "] ";
  out += message.empty() ? std::string(info.detail) : message;
  out += " (hint: ";
  out += hint;
  out += ')';
  return out;
}

}  // namespace

const StatusInfo& status_info(StatusCode code) noexcept {
  for (const Entry& e : kEntries) {
    if (e.code == code) return e.info;
  }
  for (const Entry& e : kEntries) {
    if (e.code == StatusCode::InternalError) return e.info;
  }
  return kEntries[0].info;  // unreachable: InternalError is in the table
}

const StatusCode* all_status_codes(std::size_t* count) noexcept {
  *count = std::size(kCodes);
  return kCodes;
}

std::string Status::to_string() const {
  return format(code_, message_, hint());
}

Error::Error(StatusCode code, std::string message)
    : Error(code, std::move(message), std::string()) {}

Error::Error(StatusCode code, std::string message, std::string hint)
    : code_(code),
      message_(std::move(message)),
      hint_(std::move(hint)),
      what_(format(code_, message_, this->hint())) {}

}  // namespace chiprt
