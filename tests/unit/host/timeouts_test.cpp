#include "host/timeouts.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "host/log.h"

namespace chiprt::host {
namespace {

using ::testing::HasSubstr;

// An injectable environment: only the variables in the map are set.
EnvLookup fake_env(std::map<std::string, std::string> vars) {
  auto shared = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
  return [shared](const char* name) -> const char* {
    auto it = shared->find(name);
    return it == shared->end() ? nullptr : it->second.c_str();
  };
}

class TimeoutsTest : public ::testing::Test {
 protected:
  // Keep the expected warnings off the test output.
  void SetUp() override {
    saved_ = log_level();
    set_log_level(LogLevel::Off);
  }
  void TearDown() override { set_log_level(saved_); }
  LogLevel saved_ = LogLevel::Warn;
};

TEST_F(TimeoutsTest, DefaultsSatisfyTheOrderingRule) {
  EXPECT_EQ(check_timeout_order(TimeoutConfig{}), "");
  TimeoutResolution r = resolve_timeouts(fake_env({}));
  EXPECT_TRUE(r.warnings.empty());
  EXPECT_EQ(r.config.scheduler_ms, TimeoutConfig{}.scheduler_ms);
  EXPECT_EQ(r.config.op_execute_us, TimeoutConfig{}.op_execute_us);
  EXPECT_EQ(r.config.stream_sync_ms, TimeoutConfig{}.stream_sync_ms);
}

TEST_F(TimeoutsTest, ValidOverridesAreApplied) {
  TimeoutResolution r = resolve_timeouts(fake_env({{kSchedulerTimeoutEnv, "200"},
                                                   {kOpExecuteTimeoutEnv, "500000"},
                                                   {kStreamSyncTimeoutEnv, "2000"}}));
  EXPECT_TRUE(r.warnings.empty());
  EXPECT_EQ(r.config.scheduler_ms, 200u);
  EXPECT_EQ(r.config.op_execute_us, 500000u);
  EXPECT_EQ(r.config.stream_sync_ms, 2000u);
}

TEST_F(TimeoutsTest, SingleValidOverrideKeepsTheOtherDefaults) {
  TimeoutResolution r = resolve_timeouts(fake_env({{kSchedulerTimeoutEnv, "5000"}}));
  EXPECT_TRUE(r.warnings.empty());
  EXPECT_EQ(r.config.scheduler_ms, 5000u);
  EXPECT_EQ(r.config.stream_sync_ms, TimeoutConfig{}.stream_sync_ms);
}

struct InvalidCase {
  const char* variable;
  const char* value;
};

class InvalidTimeoutValue : public TimeoutsTest,
                            public ::testing::WithParamInterface<InvalidCase> {};

TEST_P(InvalidTimeoutValue, IsIgnoredWithOneWarningNamingTheRuleAndVariable) {
  const InvalidCase c = GetParam();
  TimeoutResolution r = resolve_timeouts(fake_env({{c.variable, c.value}}));
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_THAT(r.warnings[0], HasSubstr(c.variable));
  EXPECT_THAT(r.warnings[0], HasSubstr(std::string("'") + c.value + "'"));
  EXPECT_THAT(r.warnings[0], HasSubstr("positive decimal that fits its type"));
  EXPECT_THAT(r.warnings[0], HasSubstr("using the defaults"));
  const TimeoutConfig defaults;
  EXPECT_EQ(r.config.scheduler_ms, defaults.scheduler_ms);
  EXPECT_EQ(r.config.op_execute_us, defaults.op_execute_us);
  EXPECT_EQ(r.config.stream_sync_ms, defaults.stream_sync_ms);
}

INSTANTIATE_TEST_SUITE_P(
    Values, InvalidTimeoutValue,
    ::testing::Values(
        InvalidCase{kSchedulerTimeoutEnv, ""}, InvalidCase{kSchedulerTimeoutEnv, "-5"},
        InvalidCase{kSchedulerTimeoutEnv, "12ms"}, InvalidCase{kSchedulerTimeoutEnv, " 100"},
        InvalidCase{kSchedulerTimeoutEnv, "4294967296"},  // uint32 max + 1
        InvalidCase{kSchedulerTimeoutEnv, "0"}, InvalidCase{kOpExecuteTimeoutEnv, ""},
        InvalidCase{kOpExecuteTimeoutEnv, "-1"}, InvalidCase{kOpExecuteTimeoutEnv, "1e6"},
        InvalidCase{kOpExecuteTimeoutEnv, "18446744073709551616"},  // u64 max + 1
        InvalidCase{kOpExecuteTimeoutEnv, "0"}, InvalidCase{kStreamSyncTimeoutEnv, ""},
        InvalidCase{kStreamSyncTimeoutEnv, "-30000"}, InvalidCase{kStreamSyncTimeoutEnv, "0x10"},
        InvalidCase{kStreamSyncTimeoutEnv, "99999999999"},
        InvalidCase{kStreamSyncTimeoutEnv, "0"}));

TEST_F(TimeoutsTest, InvalidValueIgnoresTheValidOverridesToo) {
  TimeoutResolution r =
      resolve_timeouts(fake_env({{kSchedulerTimeoutEnv, "abc"}, {kStreamSyncTimeoutEnv, "40000"}}));
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_THAT(r.warnings[0], HasSubstr(kSchedulerTimeoutEnv));
  EXPECT_THAT(r.warnings[0], HasSubstr("ignoring all timeout overrides"));
  EXPECT_EQ(r.config.scheduler_ms, TimeoutConfig{}.scheduler_ms);
  EXPECT_EQ(r.config.stream_sync_ms, TimeoutConfig{}.stream_sync_ms);
}

TEST_F(TimeoutsTest, SeveralInvalidValuesGiveOneWarningNamingEach) {
  TimeoutResolution r = resolve_timeouts(fake_env(
      {{kSchedulerTimeoutEnv, "-1"}, {kOpExecuteTimeoutEnv, "x"}, {kStreamSyncTimeoutEnv, "0"}}));
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_THAT(r.warnings[0], HasSubstr(std::string(kSchedulerTimeoutEnv) + "='-1'"));
  EXPECT_THAT(r.warnings[0], HasSubstr(std::string(kOpExecuteTimeoutEnv) + "='x'"));
  EXPECT_THAT(r.warnings[0], HasSubstr(std::string(kStreamSyncTimeoutEnv) + "='0'"));
}

TEST_F(TimeoutsTest, SchedulerNotBelowOpExecuteIgnoresAllOverridesWithOneWarning) {
  TimeoutResolution r = resolve_timeouts(fake_env({{kSchedulerTimeoutEnv, "100"},
                                                   {kOpExecuteTimeoutEnv, "100000"},
                                                   {kStreamSyncTimeoutEnv, "5000"}}));
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_THAT(r.warnings[0], HasSubstr("scheduler_timeout < op_execute_timeout"));
  EXPECT_THAT(r.warnings[0], HasSubstr("scheduler=100 ms"));
  EXPECT_THAT(r.warnings[0], HasSubstr("op_execute=100000 us"));
  EXPECT_THAT(r.warnings[0], HasSubstr("ignoring all timeout overrides"));
  EXPECT_EQ(r.config.scheduler_ms, TimeoutConfig{}.scheduler_ms);
  EXPECT_EQ(r.config.op_execute_us, TimeoutConfig{}.op_execute_us);
  EXPECT_EQ(r.config.stream_sync_ms, TimeoutConfig{}.stream_sync_ms);
}

TEST_F(TimeoutsTest, OpExecuteNotBelowStreamSyncIgnoresAllOverrides) {
  TimeoutResolution r = resolve_timeouts(fake_env({{kSchedulerTimeoutEnv, "100"},
                                                   {kOpExecuteTimeoutEnv, "5000000"},
                                                   {kStreamSyncTimeoutEnv, "5000"}}));
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_THAT(r.warnings[0], HasSubstr("op_execute_timeout < stream_sync_timeout"));
  EXPECT_EQ(r.config.scheduler_ms, TimeoutConfig{}.scheduler_ms);
  EXPECT_EQ(r.config.stream_sync_ms, TimeoutConfig{}.stream_sync_ms);
}

TEST_F(TimeoutsTest, StreamSyncWithoutMarginIgnoresAllOverrides) {
  // 1000*1000 < 1200000 < 2400*1000 holds, but 2400 <= 1000 + 1500.
  TimeoutResolution r = resolve_timeouts(fake_env({{kSchedulerTimeoutEnv, "1000"},
                                                   {kOpExecuteTimeoutEnv, "1200000"},
                                                   {kStreamSyncTimeoutEnv, "2400"}}));
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_THAT(r.warnings[0], HasSubstr("stream_sync_timeout > scheduler_timeout + 1500 ms"));
  EXPECT_THAT(r.warnings[0], HasSubstr("stream_sync=2400 ms"));
  EXPECT_EQ(r.config.scheduler_ms, TimeoutConfig{}.scheduler_ms);
  EXPECT_EQ(r.config.op_execute_us, TimeoutConfig{}.op_execute_us);
}

TEST_F(TimeoutsTest, SingleOverrideBreakingTheOrderAgainstDefaultsIsIgnored) {
  // The scheduler watchdog above the default op execute timeout.
  TimeoutResolution r = resolve_timeouts(fake_env({{kSchedulerTimeoutEnv, "25000"}}));
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_THAT(r.warnings[0], HasSubstr("scheduler_timeout < op_execute_timeout"));
  EXPECT_EQ(r.config.scheduler_ms, TimeoutConfig{}.scheduler_ms);
}

TEST_F(TimeoutsTest, ParsePositiveDecimalBounds) {
  uint64_t v = 0;
  EXPECT_TRUE(parse_positive_decimal("4294967295", 4294967295ull, &v));
  EXPECT_EQ(v, 4294967295ull);
  EXPECT_FALSE(parse_positive_decimal("4294967296", 4294967295ull, &v));
  EXPECT_TRUE(parse_positive_decimal("18446744073709551615", UINT64_MAX, &v));
  EXPECT_EQ(v, UINT64_MAX);
  EXPECT_FALSE(parse_positive_decimal("18446744073709551616", UINT64_MAX, &v));
  EXPECT_FALSE(parse_positive_decimal("+5", UINT64_MAX, &v));
  EXPECT_FALSE(parse_positive_decimal("000", UINT64_MAX, &v));
  EXPECT_TRUE(parse_positive_decimal("007", UINT64_MAX, &v));
  EXPECT_EQ(v, 7u);
}

TEST(HostLog, ParsesLevels) {
  LogLevel level = LogLevel::Warn;
  EXPECT_TRUE(parse_log_level("DEBUG", &level));
  EXPECT_EQ(level, LogLevel::Debug);
  EXPECT_TRUE(parse_log_level("off", &level));
  EXPECT_EQ(level, LogLevel::Off);
  EXPECT_TRUE(parse_log_level("3", &level));
  EXPECT_EQ(level, LogLevel::Error);
  EXPECT_FALSE(parse_log_level("verbose", &level));
  EXPECT_FALSE(parse_log_level("", &level));
}

TEST(HostLog, LevelGatesMessages) {
  const LogLevel saved = log_level();
  set_log_level(LogLevel::Error);
  EXPECT_FALSE(log_enabled(LogLevel::Warn));
  EXPECT_TRUE(log_enabled(LogLevel::Error));
  set_log_level(LogLevel::Off);
  EXPECT_FALSE(log_enabled(LogLevel::Error));
  set_log_level(saved);
}

}  // namespace
}  // namespace chiprt::host
