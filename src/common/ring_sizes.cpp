// The rules and the text form of ring sizes (include/chiprt/ring_sizes.h): the one place they are
// written, used by CallConfig::validate, the host's ring sizing and the chiprt CLI.
#include "chiprt/ring_sizes.h"

#include <bit>
#include <charconv>
#include <numeric>

namespace chiprt {
namespace {

// Digits only (from_chars takes no sign or space for an unsigned type), not zero, in uint64_t.
bool parse_positive(std::string_view text, uint64_t* out) noexcept {
  uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value == 0) return false;
  *out = value;
  return true;
}

}  // namespace

std::string_view ring_field_config_name(RingField field) noexcept {
  switch (field) {
    case RingField::TaskWindow:
      return "rings.task_window";
    case RingField::HeapBytes:
      return "rings.heap_bytes";
    case RingField::DepPool:
      return "rings.dep_pool";
  }
  return "rings.invalid";
}

std::string_view ring_field_env_name(RingField field) noexcept {
  switch (field) {
    case RingField::TaskWindow:
      return kRingTaskWindowEnv;
    case RingField::HeapBytes:
      return kRingHeapBytesEnv;
    case RingField::DepPool:
      return kRingDepPoolEnv;
  }
  return "CHIPRT_RING_INVALID";
}

std::string_view ring_field_rule(RingField field) noexcept {
  switch (field) {
    case RingField::TaskWindow:
      return "a power of two in [16, 1048576]";
    case RingField::HeapBytes:
      return "a multiple of 64 in [4096, 1099511627776]";
    case RingField::DepPool:
      return "in [64, 67108864]";
  }
  return "invalid field";
}

bool ring_value_valid(RingField field, uint64_t value) noexcept {
  switch (field) {
    case RingField::TaskWindow:
      return value >= kMinRingTaskWindow && value <= kMaxRingTaskWindow &&
             std::has_single_bit(value);
    case RingField::HeapBytes:
      return value >= kMinRingHeapBytes && value <= kMaxRingHeapBytes &&
             value % kRingHeapGranule == 0;
    case RingField::DepPool:
      return value >= kMinRingDepPool && value <= kMaxRingDepPool;
  }
  return false;
}

Status parse_ring_sizes(RingField field, std::string_view source, std::string_view text,
                        std::vector<uint64_t>* out) {
  out->clear();
  const std::string prefix = std::string(source) + "=\"" + std::string(text) + "\": ";
  std::string_view rest = text;
  for (;;) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    if (out->size() == kRingScopeDepths) {
      return Status(StatusCode::InvalidConfig,
                    prefix + "more than " + std::to_string(kRingScopeDepths) +
                        " values (one per scope depth 0..3; deeper depths share the last)");
    }
    uint64_t value = 0;
    if (!item.empty() && item.find_first_not_of("0123456789") == std::string_view::npos &&
        item.find_first_not_of('0') != std::string_view::npos && !parse_positive(item, &value)) {
      return Status(StatusCode::InvalidConfig, prefix + "\"" + std::string(item) +
                                                   "\" is too large (entry " +
                                                   std::to_string(out->size()) + " must be " +
                                                   std::string(ring_field_rule(field)) + ")");
    }
    if (!parse_positive(item, &value)) {
      return Status(StatusCode::InvalidConfig,
                    prefix + "\"" + std::string(item) +
                        "\" is not a positive decimal; use one value or a comma-separated list "
                        "of up to 4 (for example 256 or 1024,256,64)");
    }
    if (!ring_value_valid(field, value)) {
      return Status(StatusCode::InvalidConfig, prefix + "value " + std::to_string(value) +
                                                   " (entry " + std::to_string(out->size()) +
                                                   ") must be " +
                                                   std::string(ring_field_rule(field)));
    }
    out->push_back(value);
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return Status::ok();
}

std::vector<uint64_t>& RingSizing::list(RingField field) noexcept {
  switch (field) {
    case RingField::HeapBytes:
      return heap_bytes;
    case RingField::DepPool:
      return dep_pool;
    case RingField::TaskWindow:
      break;
  }
  return task_window;
}

const std::vector<uint64_t>& RingSizing::list(RingField field) const noexcept {
  return const_cast<RingSizing*>(this)->list(field);
}

std::vector<std::string> RingSizing::validate() const {
  std::vector<std::string> errors;
  for (RingField field : {RingField::TaskWindow, RingField::HeapBytes, RingField::DepPool}) {
    const std::string name(ring_field_config_name(field));
    const std::vector<uint64_t>& values = list(field);
    if (values.size() > kRingScopeDepths) {
      errors.push_back(name + " has " + std::to_string(values.size()) + " entries: at most " +
                       std::to_string(kRingScopeDepths) +
                       " (scope depths 0..3; deeper depths share the last entry)");
    }
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (!ring_value_valid(field, values[i])) {
        errors.push_back(name + "[" + std::to_string(i) + "]=" + std::to_string(values[i]) +
                         ": must be " + std::string(ring_field_rule(field)));
      }
    }
  }
  return errors;
}

uint64_t ResolvedRingSizes::total_slots() const noexcept {
  return std::accumulate(task_window.begin(), task_window.end(), uint64_t{0});
}

uint64_t ResolvedRingSizes::total_heap_bytes() const noexcept {
  return std::accumulate(heap_bytes.begin(), heap_bytes.end(), uint64_t{0});
}

}  // namespace chiprt
