// Ring sizing of a tensormap_ringbuffer run: the per-depth task window, output heap and
// dependency pool, resolved from CallConfig::rings, else the CHIPRT_RING_* environment variables,
// else the defaults, each field on its own. The rules, the text form and the names are public
// (include/chiprt/ring_sizes.h); this adds the resolution and the defaults.
//
// Defaults: window 1024, heap = output heap bytes / 4 rounded down to 64 (at least 4096),
// dependency pool 4 x that depth's window.
//
// Pure functions of their inputs (the environment is read through an EnvLookup); thread-safe.
#pragma once

#include <cstdint>

#include "chiprt/ring_sizes.h"
#include "chiprt/status.h"
#include "common/chip_launch.h"
#include "common/ring_layout.h"
#include "host/timeouts.h"

namespace chiprt::host {

static_assert(kRingScopeDepths == common::kRingDepths,
              "the public ring depths and the launch protocol's must agree");

inline constexpr uint64_t kDefaultRingTaskWindow = 1024;
inline constexpr uint64_t kDefaultDepPoolPerSlot = 4;

// Where one field's sizes came from.
enum class RingSizeSource : uint8_t { CallConfig = 0, Environment = 1, Default = 2 };

struct RingSizeResolution {
  common::RingSizes sizes;
  RingSizeSource source[kRingFieldCount] = {RingSizeSource::Default, RingSizeSource::Default,
                                            RingSizeSource::Default};
  // The sizes as RunReport::rings reports them.
  ResolvedRingSizes used() const noexcept;
  uint64_t total_slots() const noexcept { return used().total_slots(); }
  uint64_t total_heap_bytes() const noexcept { return used().total_heap_bytes(); }
};

// Resolves every field: `config` when its list is non-empty, else the field's variable when set
// to a non-empty value, else the default (`output_heap_bytes` is the run's resolved output heap).
// InvalidConfig naming the field or variable, the value and the rule when anything is invalid.
Status resolve_ring_sizes(const RingSizing& config, uint64_t output_heap_bytes,
                          const EnvLookup& env, RingSizeResolution* out);

}  // namespace chiprt::host
