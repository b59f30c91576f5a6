#include "host/ring_sizing.h"

#include <algorithm>
#include <string>
#include <vector>

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

// Depth d takes entry d, or the last entry when the list is shorter.
void spread(const std::vector<uint64_t>& values, uint64_t* depths) {
  for (uint32_t d = 0; d < common::kRingDepths; ++d) {
    depths[d] = values[std::min<std::size_t>(d, values.size() - 1)];
  }
}

}  // namespace

ResolvedRingSizes RingSizeResolution::used() const noexcept {
  ResolvedRingSizes used;
  std::copy(std::begin(sizes.task_window), std::end(sizes.task_window), used.task_window.begin());
  std::copy(std::begin(sizes.heap_bytes), std::end(sizes.heap_bytes), used.heap_bytes.begin());
  std::copy(std::begin(sizes.dep_pool), std::end(sizes.dep_pool), used.dep_pool.begin());
  return used;
}

Status resolve_ring_sizes(const RingSizing& config, uint64_t output_heap_bytes,
                          const EnvLookup& env, RingSizeResolution* out) {
  // The first problem of the configured lists (CallConfig::validate reports them all).
  if (const std::vector<std::string> errors = config.validate(); !errors.empty()) {
    return Status(StatusCode::InvalidConfig, errors.front());
  }
  RingSizeResolution resolved;
  // The dependency-pool default depends on the window, so fields resolve in declaration order.
  for (RingField field : {RingField::TaskWindow, RingField::HeapBytes, RingField::DepPool}) {
    uint64_t* depths = field_values(resolved.sizes, field);
    RingSizeSource& source = resolved.source[static_cast<int>(field)];
    const std::vector<uint64_t>& configured = config.list(field);
    if (!configured.empty()) {
      spread(configured, depths);
      source = RingSizeSource::CallConfig;
      continue;
    }
    const std::string env_name(ring_field_env_name(field));
    const char* text = env ? env(env_name.c_str()) : nullptr;
    if (text != nullptr && text[0] != '\0') {
      std::vector<uint64_t> values;
      Status status = parse_ring_sizes(field, env_name, text, &values);
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
