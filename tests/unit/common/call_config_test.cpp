#include <gtest/gtest.h>

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "chiprt/call_config.h"
#include "chiprt/status.h"

namespace chiprt {
namespace {

const PlatformLimits kLimits{24, 8, 2};

// Validates `config` and expects exactly one message, starting with `prefix`.
void expect_one_error(const CallConfig& config, const std::string& prefix) {
  const std::vector<std::string> errors = config.validate(kLimits);
  ASSERT_EQ(errors.size(), 1u) << (errors.empty() ? "no error" : errors[0]);
  EXPECT_EQ(errors[0].rfind(prefix, 0), 0u) << errors[0];
}

TEST(RuntimeVariantTest, NamesRoundTrip) {
  for (RuntimeVariant v : {RuntimeVariant::Default, RuntimeVariant::HostBuildGraph,
                           RuntimeVariant::TensormapRingbuffer}) {
    RuntimeVariant parsed = RuntimeVariant::Default;
    ASSERT_TRUE(parse_runtime_variant(runtime_variant_name(v), &parsed));
    EXPECT_EQ(parsed, v);
  }
  EXPECT_EQ(runtime_variant_name(RuntimeVariant::HostBuildGraph), "host_build_graph");
  EXPECT_EQ(runtime_variant_name(RuntimeVariant::TensormapRingbuffer), "tensormap_ringbuffer");
  EXPECT_EQ(runtime_variant_name(RuntimeVariant::Default), "default");
  RuntimeVariant untouched = RuntimeVariant::HostBuildGraph;
  EXPECT_FALSE(parse_runtime_variant("ringbuffer", &untouched));
  EXPECT_FALSE(parse_runtime_variant("invalid", &untouched));
  EXPECT_EQ(untouched, RuntimeVariant::HostBuildGraph);
}

TEST(CallConfigTest, DefaultsAreValid) {
  EXPECT_TRUE(CallConfig{}.validate(kLimits).empty());
  EXPECT_NO_THROW(CallConfig{}.validate_or_throw(kLimits));
}

TEST(CallConfigTest, Runtime) {
  CallConfig c;
  c.runtime = static_cast<RuntimeVariant>(3);
  expect_one_error(c, "runtime=3: must be one of");
}

TEST(CallConfigTest, AicpuThreads) {
  CallConfig c;
  for (int ok : {0, 2, 8}) {
    c.aicpu_thread_num = ok;
    EXPECT_TRUE(c.validate(kLimits).empty()) << ok;
  }
  for (int bad : {1, -1, 9}) {
    c.aicpu_thread_num = bad;
    expect_one_error(c,
                     "aicpu_thread_num=" + std::to_string(bad) + ": must be 0 (auto) or in [2, 8]");
  }
  c.aicpu_thread_num = 1;
  EXPECT_NE(c.validate(kLimits)[0].find("at least one orchestrator + one scheduler"),
            std::string::npos);
}

TEST(CallConfigTest, ClusterCount) {
  CallConfig c;
  for (int ok : {0, 1, 24}) {
    c.cluster_count = ok;
    EXPECT_TRUE(c.validate(kLimits).empty()) << ok;
  }
  for (int bad : {-3, 25}) {
    c.cluster_count = bad;
    expect_one_error(
        c, "cluster_count=" + std::to_string(bad) + ": must be 0 (all clusters) or in [1, 24]");
  }
}

TEST(CallConfigTest, OutputHeapBytes) {
  CallConfig c;
  for (uint64_t ok :
       {uint64_t{0}, uint64_t{4096}, uint64_t{4160}, CallConfig::kMaxOutputHeapBytes}) {
    c.output_heap_bytes = ok;
    EXPECT_TRUE(c.validate(kLimits).empty()) << ok;
  }
  for (uint64_t bad : {uint64_t{64}, uint64_t{4097}, CallConfig::kMaxOutputHeapBytes + 64}) {
    c.output_heap_bytes = bad;
    expect_one_error(c, "output_heap_bytes=" + std::to_string(bad) +
                            ": must be 0 (default) or a multiple of 64");
  }
}

TEST(CallConfigTest, MaxTasks) {
  CallConfig c;
  c.max_tasks = CallConfig::kMaxTasksLimit;
  EXPECT_TRUE(c.validate(kLimits).empty());
  c.max_tasks = CallConfig::kMaxTasksLimit + 1;
  expect_one_error(c, "max_tasks=" + std::to_string(CallConfig::kMaxTasksLimit + 1));
}

TEST(CallConfigTest, PipelineSlotAndArenaBank) {
  CallConfig c;
  c.pipeline_slot = 1;
  c.arena_bank = 1;
  EXPECT_TRUE(c.validate(kLimits).empty());
  c.pipeline_slot = 2;
  expect_one_error(c, "pipeline_slot=2: must be < 2");
  c.pipeline_slot = 0;
  c.arena_bank = 5;
  expect_one_error(c, "arena_bank=5: must be < 2");
}

TEST(CallConfigTest, UserData) {
  CallConfig c;
  std::vector<std::byte> bytes(CallConfig::kMaxUserDataBytes + 1);
  c.user_data = std::span<const std::byte>(bytes).first(CallConfig::kMaxUserDataBytes);
  EXPECT_TRUE(c.validate(kLimits).empty());
  c.user_data = bytes;
  expect_one_error(c,
                   "user_data: 65537 bytes exceed the limit of 65536 "
                   "(CallConfig::kMaxUserDataBytes); pass larger inputs in a device tensor");
  c.user_data = std::span<const std::byte>(static_cast<const std::byte*>(nullptr), 0);
  EXPECT_TRUE(c.validate(kLimits).empty());
  c.user_data = std::span<const std::byte>(static_cast<const std::byte*>(nullptr), 8);
  expect_one_error(c, "user_data: 8 bytes at a null pointer; pass an empty span");
}

TEST(CallConfigTest, RingSizing) {
  CallConfig c;
  c.rings.task_window = {16, 1024, 64, 16};
  c.rings.heap_bytes = {4096, 1 << 20};
  c.rings.dep_pool = {64};
  EXPECT_TRUE(c.validate(kLimits).empty());

  c.rings.task_window = {16, 24};
  expect_one_error(c, "rings.task_window[1]=24: must be a power of two in [16, 1048576]");
  c.rings.task_window = {8};
  expect_one_error(c, "rings.task_window[0]=8");
  c.rings.task_window = {16, 16, 16, 16, 16};
  expect_one_error(c, "rings.task_window has 5 entries: at most 4");
  c.rings.task_window = {1u << 21};
  expect_one_error(c, "rings.task_window[0]=2097152: must be a power of two in [16, 1048576]");
  c.rings.task_window = {1u << 20};
  EXPECT_TRUE(c.validate(kLimits).empty());
  c.rings.task_window.clear();

  c.rings.heap_bytes = {4100};
  expect_one_error(c,
                   "rings.heap_bytes[0]=4100: must be a multiple of 64 in [4096, 1099511627776]");
  c.rings.heap_bytes = {2048};
  expect_one_error(c, "rings.heap_bytes[0]=2048");
  c.rings.heap_bytes = {(1ull << 40) + 64};
  expect_one_error(c, "rings.heap_bytes[0]=1099511627840");
  c.rings.heap_bytes.clear();

  c.rings.dep_pool = {64, 63};
  expect_one_error(c, "rings.dep_pool[1]=63: must be in [64, 67108864]");
  c.rings.dep_pool = {(1u << 26) + 1};
  expect_one_error(c, "rings.dep_pool[0]=67108865");
}

TEST(CallConfigTest, ReportsEveryBadFieldAndThrowsThemJoined) {
  CallConfig c;
  c.aicpu_thread_num = 1;
  c.cluster_count = 99;
  c.arena_bank = 7;
  const std::vector<std::string> errors = c.validate(kLimits);
  ASSERT_EQ(errors.size(), 3u);
  try {
    c.validate_or_throw(kLimits);
    FAIL() << "validate_or_throw did not throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::InvalidConfig);
    EXPECT_EQ(e.message(), errors[0] + "; " + errors[1] + "; " + errors[2]);
  }
}

TEST(CallConfigTest, LimitsComeFromThePlatform) {
  CallConfig c;
  c.cluster_count = 3;
  c.aicpu_thread_num = 4;
  EXPECT_TRUE(c.validate(kLimits).empty());
  const PlatformLimits small{2, 3, 1};
  const std::vector<std::string> errors = c.validate(small);
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_NE(errors[0].find("[2, 3]"), std::string::npos) << errors[0];
  EXPECT_NE(errors[1].find("[1, 2]"), std::string::npos) << errors[1];
}

}  // namespace
}  // namespace chiprt
