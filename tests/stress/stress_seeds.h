// Seeds of the stress suites, from the environment: CHIPRT_STRESS_SEEDS (how many, from seed 1;
// scripts/test.sh lowers it under sanitizers) or CHIPRT_STRESS_ONLY_SEED (one seed, to reproduce a
// failure). A malformed value fails the calling test (and uses the default) rather than silently
// running a different workload. Header-only; call from a test body.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <vector>

namespace chiprt::stress {

inline constexpr uint64_t kFirstStressSeed = 1;

// A positive decimal environment variable; unset or empty -> `fallback`.
inline uint64_t env_count(const char* name, uint64_t fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text, &end, 10);
  if (*end != '\0' || value == 0 || text[0] == '-') {
    ADD_FAILURE() << name << "=" << text << ": must be a positive decimal integer";
    return fallback;
  }
  return value;
}

inline std::vector<uint64_t> stress_seeds(uint64_t default_count) {
  if (std::getenv("CHIPRT_STRESS_ONLY_SEED") != nullptr) {
    return {env_count("CHIPRT_STRESS_ONLY_SEED", kFirstStressSeed)};
  }
  std::vector<uint64_t> seeds;
  const uint64_t count = env_count("CHIPRT_STRESS_SEEDS", default_count);
  for (uint64_t i = 0; i < count; ++i) seeds.push_back(kFirstStressSeed + i);
  return seeds;
}

}  // namespace chiprt::stress
