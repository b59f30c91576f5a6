#include "common/ring_layout.h"

#include <cinttypes>
#include <cstdio>

namespace chiprt::common {

bool ring_sizes_problem(const RingSizes& sizes, char* message, uint64_t message_bytes) {
  uint32_t depth = 0;
  const char* field = nullptr;
  uint64_t value = 0;
  const char* rule = nullptr;
  switch (ring_size_rule_broken(sizes, &depth)) {
    case RingSizeRule::Ok:
      return false;
    case RingSizeRule::TaskWindow:
      field = "task_window";
      value = sizes.task_window[depth];
      rule = "a power of two in [16, 1048576]";
      break;
    case RingSizeRule::HeapBytes:
      field = "heap_bytes";
      value = sizes.heap_bytes[depth];
      rule = "a multiple of 64 in [4096, 1099511627776]";
      break;
    case RingSizeRule::DepPool:
      field = "dep_pool";
      value = sizes.dep_pool[depth];
      rule = "in [64, 67108864]";
      break;
  }
  std::snprintf(message, message_bytes,
                "ring %s of depth %u is %" PRIu64
                ": it must be %s (set CallConfig::rings or CHIPRT_RING_*)",
                field, depth, value, rule);
  return true;
}

}  // namespace chiprt::common
