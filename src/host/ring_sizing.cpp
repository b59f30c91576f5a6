#include "host/ring_sizing.h"

#include <algorithm>
#include <bit>

namespace chiprt::host {
namespace {

uint64_t* field_values(common::RingSizes& sizes, RingField field) noexcept {
  switch (field) {
    case RingField::TaskWindow:
      return sizes.task_window;
    case RingField::HeapBytes:
      return sizes.heap_bytes;
    case RingField::DepPool:
      return sizes.dep_pool;
  }
  return sizes.task_window;
}

const std::vector<uint64_t>& config_values(const RingSizing& config, RingField field) noexcept {
  switch (field) {
    case RingField::TaskWindow:
      return config.task_window;
    case RingField::HeapBytes:
      return config.heap_bytes;
    case RingField::DepPool:
      return config.dep_pool;
  }
  return config.task_window;
}

// Depth d takes entry d, or the last entry when the list is shorter.
void spread(const std::vector<uint64_t>& values, uint64_t* depths) {
  for (uint32_t d = 0; d < common::kRingDepths; ++d) {
    depths[d] = values[std::min<std::size_t>(d, values.size() - 1)];
  }
}

Status check_config_list(RingField field, const std::vector<uint64_t>& values) {
  const std::string name(ring_field_config_name(field));
  if (values.size() > common::kRingDepths) {
    return Status(StatusCode::InvalidConfig,
                  name + " has " + std::to_string(values.size()) + " entries: at most " +
                      std::to_string(common::kRingDepths) +
                      " (scope depths 0..3; deeper depths share the last entry)");
  }
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (!ring_value_valid(field, values[i])) {
      return Status(StatusCode::InvalidConfig, name + "[" + std::to_string(i) +
                                                   "]=" + std::to_string(values[i]) + ": must be " +
                                                   std::string(ring_field_rule(field)));
    }
  }
  return Status::ok();
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

Status parse_ring_size_list(RingField field, std::string_view source, std::string_view text,
                            std::vector<uint64_t>* out) {
  out->clear();
  const std::string prefix = std::string(source) + "=\"" + std::string(text) + "\": ";
  std::string_view rest = text;
  for (;;) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    if (out->size() == common::kRingDepths) {
      return Status(StatusCode::InvalidConfig,
                    prefix + "more than " + std::to_string(common::kRingDepths) +
                        " values (one per scope depth 0..3; deeper depths share the last)");
    }
    uint64_t value = 0;
    if (!parse_positive_decimal(item, UINT64_MAX, &value)) {
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

uint64_t RingSizeResolution::total_slots() const noexcept {
  uint64_t total = 0;
  for (uint64_t window : sizes.task_window) total += window;
  return total;
}

uint64_t RingSizeResolution::total_heap_bytes() const noexcept {
  uint64_t total = 0;
  for (uint64_t bytes : sizes.heap_bytes) total += bytes;
  return total;
}

Status resolve_ring_sizes(const RingSizing& config, uint64_t output_heap_bytes,
                          const EnvLookup& env, RingSizeResolution* out) {
  RingSizeResolution resolved;
  // The dependency-pool default depends on the window, so fields resolve in declaration order.
  for (RingField field : {RingField::TaskWindow, RingField::HeapBytes, RingField::DepPool}) {
    uint64_t* depths = field_values(resolved.sizes, field);
    RingSizeSource& source = resolved.source[static_cast<int>(field)];
    const std::vector<uint64_t>& configured = config_values(config, field);
    if (!configured.empty()) {
      Status status = check_config_list(field, configured);
      if (!status.is_ok()) return status;
      spread(configured, depths);
      source = RingSizeSource::CallConfig;
      continue;
    }
    const std::string env_name(ring_field_env_name(field));
    const char* text = env ? env(env_name.c_str()) : nullptr;
    if (text != nullptr && text[0] != '\0') {
      std::vector<uint64_t> values;
      Status status = parse_ring_size_list(field, env_name, text, &values);
      if (!status.is_ok()) return status;
      spread(values, depths);
      source = RingSizeSource::Environment;
      continue;
    }
    source = RingSizeSource::Default;
    for (uint32_t d = 0; d < common::kRingDepths; ++d) {
      switch (field) {
        case RingField::TaskWindow:
          depths[d] = kDefaultRingTaskWindow;
          break;
        case RingField::HeapBytes:
          depths[d] = std::max(kMinRingHeapBytes, output_heap_bytes / common::kRingDepths /
                                                      kRingHeapGranule * kRingHeapGranule);
          break;
        case RingField::DepPool:
          depths[d] =
              std::min(kMaxRingDepPool, kDefaultDepPoolPerSlot * resolved.sizes.task_window[d]);
          break;
      }
    }
  }
  *out = resolved;
  return Status::ok();
}

}  // namespace chiprt::host
