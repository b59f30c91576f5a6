// Ring sizing resolution: CallConfig::rings over CHIPRT_RING_* over the defaults, list spreading,
// and every rule with its message as a run reports it (the parser and the rules themselves:
// tests/unit/common/ring_sizes_test.cpp).
#include "host/ring_sizing.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

namespace chiprt::host {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kHeap = 64ull << 20;

EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

RingSizeResolution resolve_ok(const RingSizing& config, const EnvLookup& env,
                              uint64_t heap = kHeap) {
  RingSizeResolution out;
  const Status status = resolve_ring_sizes(config, heap, env, &out);
  EXPECT_TRUE(status.is_ok()) << status.to_string();
  return out;
}

Status resolve_status(const RingSizing& config, const EnvLookup& env) {
  RingSizeResolution out;
  return resolve_ring_sizes(config, kHeap, env, &out);
}

void expect_depths(const uint64_t (&values)[common::kRingDepths], uint64_t d0, uint64_t d1,
                   uint64_t d2, uint64_t d3) {
  EXPECT_EQ(values[0], d0);
  EXPECT_EQ(values[1], d1);
  EXPECT_EQ(values[2], d2);
  EXPECT_EQ(values[3], d3);
}

TEST(RingSizingTest, DefaultsFollowTheOutputHeap) {
  const RingSizeResolution r = resolve_ok({}, env_of({}));
  expect_depths(r.sizes.task_window, 1024, 1024, 1024, 1024);
  expect_depths(r.sizes.heap_bytes, kHeap / 4, kHeap / 4, kHeap / 4, kHeap / 4);
  expect_depths(r.sizes.dep_pool, 4096, 4096, 4096, 4096);
  for (RingSizeSource source : r.source) EXPECT_EQ(source, RingSizeSource::Default);
  EXPECT_EQ(r.total_slots(), 4096u);
  EXPECT_EQ(r.total_heap_bytes(), kHeap);

  // A quarter of a small heap is rounded down to 64 bytes and never below the 4096-byte minimum.
  const RingSizeResolution small = resolve_ok({}, env_of({}), 4096 + 3 * 64);
  expect_depths(small.sizes.heap_bytes, 4096, 4096, 4096, 4096);
  const RingSizeResolution odd = resolve_ok({}, env_of({}), 100 * 1024 + 64);
  EXPECT_EQ(odd.sizes.heap_bytes[0], (100 * 1024 + 64) / 4 / 64 * 64);
  EXPECT_EQ(odd.sizes.heap_bytes[0] % 64, 0u);

  // A null lookup means "no environment".
  const RingSizeResolution no_env = resolve_ok({}, EnvLookup{});
  EXPECT_EQ(no_env.sizes.task_window[2], 1024u);
}

TEST(RingSizingTest, ShortListsRepeatTheirLastValue) {
  RingSizing config;
  config.task_window = {256};
  config.heap_bytes = {1 << 20, 1 << 16};
  config.dep_pool = {1000, 900, 800, 700};
  const RingSizeResolution r = resolve_ok(config, env_of({}));
  expect_depths(r.sizes.task_window, 256, 256, 256, 256);
  expect_depths(r.sizes.heap_bytes, 1 << 20, 1 << 16, 1 << 16, 1 << 16);
  expect_depths(r.sizes.dep_pool, 1000, 900, 800, 700);
  for (RingSizeSource source : r.source) EXPECT_EQ(source, RingSizeSource::CallConfig);
}

TEST(RingSizingTest, DependencyPoolDefaultFollowsEachDepthsWindow) {
  RingSizing config;
  config.task_window = {64, 128, 16};
  const RingSizeResolution r = resolve_ok(config, env_of({}));
  expect_depths(r.sizes.task_window, 64, 128, 16, 16);
  expect_depths(r.sizes.dep_pool, 256, 512, 64, 64);
  EXPECT_EQ(r.source[static_cast<int>(RingField::DepPool)], RingSizeSource::Default);
}

TEST(RingSizingTest, EnvironmentAppliesPerFieldAndCallConfigWins) {
  const EnvLookup env = env_of({{kRingTaskWindowEnv, "64,32"},
                                {kRingHeapBytesEnv, "8192"},
                                {kRingDepPoolEnv, "128,128,256"}});
  RingSizeResolution r = resolve_ok({}, env);
  expect_depths(r.sizes.task_window, 64, 32, 32, 32);
  expect_depths(r.sizes.heap_bytes, 8192, 8192, 8192, 8192);
  expect_depths(r.sizes.dep_pool, 128, 128, 256, 256);
  for (RingSizeSource source : r.source) EXPECT_EQ(source, RingSizeSource::Environment);

  RingSizing config;
  config.task_window = {16};
  r = resolve_ok(config, env);
  expect_depths(r.sizes.task_window, 16, 16, 16, 16);
  EXPECT_EQ(r.source[static_cast<int>(RingField::TaskWindow)], RingSizeSource::CallConfig);
  EXPECT_EQ(r.source[static_cast<int>(RingField::HeapBytes)], RingSizeSource::Environment);
  expect_depths(r.sizes.dep_pool, 128, 128, 256, 256);

  // An empty variable counts as unset.
  r = resolve_ok({}, env_of({{kRingTaskWindowEnv, ""}}));
  EXPECT_EQ(r.source[static_cast<int>(RingField::TaskWindow)], RingSizeSource::Default);
}

TEST(RingSizingTest, InvalidEnvironmentNamesTheVariableTheValueAndTheRule) {
  struct Case {
    const char* variable;
    const char* value;
    const char* expected;
  };
  const Case cases[] = {
      {kRingTaskWindowEnv, "100",
       "CHIPRT_RING_TASK_WINDOW=\"100\": value 100 (entry 0) must be a power of two in [16, "
       "1048576]"},
      {kRingTaskWindowEnv, "8", "must be a power of two in [16, 1048576]"},
      {kRingTaskWindowEnv, "2097152", "value 2097152 (entry 0) must be a power of two"},
      {kRingTaskWindowEnv, "64,48", "value 48 (entry 1)"},
      {kRingTaskWindowEnv, "16,16,16,16,16", "more than 4 values"},
      {kRingTaskWindowEnv, "abc", "\"abc\" is not a positive decimal"},
      {kRingTaskWindowEnv, "64,", "\"\" is not a positive decimal"},
      {kRingTaskWindowEnv, "-64", "\"-64\" is not a positive decimal"},
      {kRingTaskWindowEnv, " 64", "\" 64\" is not a positive decimal"},
      {kRingTaskWindowEnv, "99999999999999999999999",
       "\"99999999999999999999999\" is too large (entry 0 must be a power of two"},
      {kRingHeapBytesEnv, "4100",
       "CHIPRT_RING_HEAP_BYTES=\"4100\": value 4100 (entry 0) must be a multiple of 64 in "
       "[4096, 1099511627776]"},
      {kRingHeapBytesEnv, "2048", "value 2048 (entry 0) must be a multiple of 64"},
      {kRingHeapBytesEnv, "0", "\"0\" is not a positive decimal"},
      {kRingDepPoolEnv, "63",
       "CHIPRT_RING_DEP_POOL=\"63\": value 63 (entry 0) must be in [64, "
       "67108864]"},
      {kRingDepPoolEnv, "64,67108865", "value 67108865 (entry 1) must be in [64, 67108864]"},
  };
  for (const Case& c : cases) {
    const Status status = resolve_status({}, env_of({{c.variable, c.value}}));
    EXPECT_EQ(status.code(), StatusCode::InvalidConfig) << c.variable << "=" << c.value;
    EXPECT_THAT(status.message(), HasSubstr(c.expected)) << c.variable << "=" << c.value;
    EXPECT_THAT(status.message(), HasSubstr(c.variable));
  }
}

TEST(RingSizingTest, InvalidEnvironmentIsIgnoredWhenCallConfigSetsTheField) {
  RingSizing config;
  config.dep_pool = {64};
  const RingSizeResolution r = resolve_ok(config, env_of({{kRingDepPoolEnv, "1"}}));
  EXPECT_EQ(r.sizes.dep_pool[3], 64u);
}

TEST(RingSizingTest, InvalidCallConfigNamesTheFieldEntryAndRule) {
  RingSizing config;
  config.task_window = {64, 24};
  Status status = resolve_status(config, env_of({}));
  EXPECT_EQ(status.code(), StatusCode::InvalidConfig);
  EXPECT_EQ(status.message(), "rings.task_window[1]=24: must be a power of two in [16, 1048576]");

  config = {};
  config.heap_bytes = {4096, 4096, 4096, 4096, 4096};
  status = resolve_status(config, env_of({}));
  EXPECT_THAT(status.message(), HasSubstr("rings.heap_bytes has 5 entries: at most 4"));

  config = {};
  config.heap_bytes = {5000};
  status = resolve_status(config, env_of({}));
  EXPECT_EQ(status.message(),
            "rings.heap_bytes[0]=5000: must be a multiple of 64 in [4096, 1099511627776]");

  config = {};
  config.dep_pool = {10};
  status = resolve_status(config, env_of({}));
  EXPECT_EQ(status.message(), "rings.dep_pool[0]=10: must be in [64, 67108864]");
}

}  // namespace
}  // namespace chiprt::host
