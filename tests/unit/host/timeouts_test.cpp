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
        InvalidCase{kSchedulerTimeoutEnv, "-5"}, InvalidCase{kSchedulerTimeoutEnv, "12ms"},
        InvalidCase{kSchedulerTimeoutEnv, " 100"},
        InvalidCase{kSchedulerTimeoutEnv, "4294967296"},  // uint32 max + 1
        InvalidCase{kSchedulerTimeoutEnv, "0"}, InvalidCase{kOpExecuteTimeoutEnv, "-1"},
        InvalidCase{kOpExecuteTimeoutEnv, "1e6"},
        InvalidCase{kOpExecuteTimeoutEnv, "18446744073709551616"},  // u64 max + 1
        InvalidCase{kOpExecuteTimeoutEnv, "0"}, InvalidCase{kStreamSyncTimeoutEnv, "-30000"},
        InvalidCase{kStreamSyncTimeoutEnv, "0x10"},
        InvalidCase{kStreamSyncTimeoutEnv, "99999999999"},
        InvalidCase{kStreamSyncTimeoutEnv, "0"}));

// An empty variable counts as unset (as CHIPRT_RING_* do): no warning, and the other overrides
// still apply.
TEST_F(TimeoutsTest, EmptyValueCountsAsUnset) {
  for (const char* name : {kSchedulerTimeoutEnv, kOpExecuteTimeoutEnv, kStreamSyncTimeoutEnv}) {
    TimeoutResolution r = resolve_timeouts(fake_env({{name, ""}}));
    EXPECT_TRUE(r.warnings.empty()) << name;
    EXPECT_EQ(r.config.scheduler_ms, TimeoutConfig{}.scheduler_ms) << name;
    EXPECT_EQ(r.config.op_execute_us, TimeoutConfig{}.op_execute_us) << name;
    EXPECT_EQ(r.config.stream_sync_ms, TimeoutConfig{}.stream_sync_ms) << name;
  }
  TimeoutResolution r = resolve_timeouts(fake_env({{kSchedulerTimeoutEnv, ""},
                                                   {kOpExecuteTimeoutEnv, "15000000"},
                                                   {kStreamSyncTimeoutEnv, "40000"}}));
  EXPECT_TRUE(r.warnings.empty());
  EXPECT_EQ(r.config.scheduler_ms, TimeoutConfig{}.scheduler_ms);
  EXPECT_EQ(r.config.op_execute_us, 15000000u);
  EXPECT_EQ(r.config.stream_sync_ms, 40000u);
}

// Some values set, the others unset: an unset value keeps its default when that is ordered
// against the set values, else it is derived (see resolve_timeouts) so that the triple is
// ordered; no warning either way, one note per derived value.
struct DerivedCase {
  const char* name;
  std::map<std::string, std::string> set;
  TimeoutConfig expected;
  std::size_t derived;  // how many values were derived (not default, not set)
};

void PrintTo(const DerivedCase& c, std::ostream* os) {
  *os << c.name;
}

class DerivedTimeouts : public TimeoutsTest, public ::testing::WithParamInterface<DerivedCase> {};

TEST_P(DerivedTimeouts, GiveAnOrderedTriple) {
  const DerivedCase& c = GetParam();
  TimeoutResolution r = resolve_timeouts(fake_env(c.set));
  EXPECT_TRUE(r.warnings.empty()) << (r.warnings.empty() ? "" : r.warnings[0]);
  EXPECT_EQ(check_timeout_order(r.config), "");
  EXPECT_EQ(r.config.scheduler_ms, c.expected.scheduler_ms);
  EXPECT_EQ(r.config.op_execute_us, c.expected.op_execute_us);
  EXPECT_EQ(r.config.stream_sync_ms, c.expected.stream_sync_ms);
  ASSERT_EQ(r.notes.size(), c.derived);
  for (const std::string& note : r.notes) EXPECT_THAT(note, HasSubstr("derived"));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, DerivedTimeouts,
    ::testing::Values(
        // The case: the 20 s op default is above a 2 s stream sync; it goes midway.
        DerivedCase{"SchedulerAndStream",
                    {{kSchedulerTimeoutEnv, "200"}, {kStreamSyncTimeoutEnv, "2000"}},
                    {200, 1100000, 2000},
                    1},
        DerivedCase{"SchedulerAndStreamKeepFittingDefault",
                    {{kSchedulerTimeoutEnv, "5000"}, {kStreamSyncTimeoutEnv, "40000"}},
                    {5000, 20000000, 40000},
                    0},
        // Stream sync = max(1.5 x op execute, scheduler + 1501 ms).
        DerivedCase{"SchedulerAndOp",
                    {{kSchedulerTimeoutEnv, "25000"}, {kOpExecuteTimeoutEnv, "30000000"}},
                    {25000, 30000000, 45000},
                    1},
        DerivedCase{"SchedulerAndOpNearTheStreamDefault",
                    {{kSchedulerTimeoutEnv, "29000"}, {kOpExecuteTimeoutEnv, "29500000"}},
                    {29000, 29500000, 44250},
                    1},
        DerivedCase{"SchedulerAndOpKeepFittingDefault",
                    {{kSchedulerTimeoutEnv, "100"}, {kOpExecuteTimeoutEnv, "300000"}},
                    {100, 300000, 30000},
                    0},
        // Scheduler = min(op execute / 2, stream sync - 1501 ms).
        DerivedCase{"OpAndStream",
                    {{kOpExecuteTimeoutEnv, "2000000"}, {kStreamSyncTimeoutEnv, "3000"}},
                    {1000, 2000000, 3000},
                    1},
        DerivedCase{"OpAndStreamBoundByTheMargin",
                    {{kOpExecuteTimeoutEnv, "1900000"}, {kStreamSyncTimeoutEnv, "2000"}},
                    {499, 1900000, 2000},
                    1},
        DerivedCase{"OpAndStreamKeepFittingDefault",
                    {{kOpExecuteTimeoutEnv, "50000000"}, {kStreamSyncTimeoutEnv, "60000"}},
                    {10000, 50000000, 60000},
                    0},
        // One value set.
        DerivedCase{"SchedulerAboveTheOpDefault",
                    {{kSchedulerTimeoutEnv, "25000"}},
                    {25000, 27500000, 30000},
                    1},
        DerivedCase{"SchedulerAboveBothDefaults",
                    {{kSchedulerTimeoutEnv, "29000"}},
                    {29000, 58000000, 87000},
                    2},
        DerivedCase{"OpBelowTheSchedulerDefault",
                    {{kOpExecuteTimeoutEnv, "100000"}},
                    {50, 100000, 30000},
                    1},
        DerivedCase{"OpAboveTheStreamDefault",
                    {{kOpExecuteTimeoutEnv, "50000000"}},
                    {10000, 50000000, 75000},
                    1},
        // Scheduler = min(stream sync / 3, stream sync - 1501 ms), op execute midway.
        DerivedCase{
            "StreamBelowBothDefaults", {{kStreamSyncTimeoutEnv, "6000"}}, {2000, 4000000, 6000}, 2},
        DerivedCase{"ShortStream", {{kStreamSyncTimeoutEnv, "1600"}}, {99, 849500, 1600}, 2},
        DerivedCase{"EmptyCountsAsUnsetInDerivation",
                    {{kSchedulerTimeoutEnv, "200"},
                     {kOpExecuteTimeoutEnv, ""},
                     {kStreamSyncTimeoutEnv, "2000"}},
                    {200, 1100000, 2000},
                    1}),
    [](const ::testing::TestParamInfo<DerivedCase>& info) { return std::string(info.param.name); });

// When no value can be derived, every override is ignored with one warning that says which
// variable to set or change.
TEST_F(TimeoutsTest, UnderivableValueIgnoresTheOverridesNamingWhatToSet) {
  {
    // No scheduler timeout of at least 1 ms is below 800 us.
    TimeoutResolution r = resolve_timeouts(fake_env({{kOpExecuteTimeoutEnv, "800"}}));
    ASSERT_EQ(r.warnings.size(), 1u);
    EXPECT_THAT(r.warnings[0], HasSubstr("ignoring all timeout overrides"));
    EXPECT_THAT(r.warnings[0], HasSubstr(std::string("cannot derive ") + kSchedulerTimeoutEnv));
    EXPECT_THAT(r.warnings[0], HasSubstr(std::string(kOpExecuteTimeoutEnv) + "=800"));
    EXPECT_EQ(r.config.op_execute_us, TimeoutConfig{}.op_execute_us);
  }
  {
    // The stream sync must exceed the scheduler timeout (>= 1 ms) by more than 1500 ms.
    TimeoutResolution r = resolve_timeouts(fake_env({{kStreamSyncTimeoutEnv, "1500"}}));
    ASSERT_EQ(r.warnings.size(), 1u);
    EXPECT_THAT(r.warnings[0], HasSubstr(std::string("cannot derive ") + kSchedulerTimeoutEnv));
    EXPECT_THAT(r.warnings[0], HasSubstr(std::string(kStreamSyncTimeoutEnv) + "=1500"));
    EXPECT_EQ(r.config.stream_sync_ms, TimeoutConfig{}.stream_sync_ms);
  }
  {
    // No stream sync timeout fits in 32 bits above this scheduler timeout + 1500 ms.
    TimeoutResolution r = resolve_timeouts(fake_env({{kSchedulerTimeoutEnv, "4294967000"}}));
    ASSERT_EQ(r.warnings.size(), 1u);
    EXPECT_THAT(r.warnings[0], HasSubstr(std::string("cannot derive ") + kStreamSyncTimeoutEnv));
    EXPECT_EQ(r.config.scheduler_ms, TimeoutConfig{}.scheduler_ms);
  }
}

// Two values that are themselves out of order cannot be fixed by deriving the third.
TEST_F(TimeoutsTest, DisorderedSetValuesIgnoreTheOverridesNamingTheRule) {
  TimeoutResolution r =
      resolve_timeouts(fake_env({{kSchedulerTimeoutEnv, "3000"}, {kStreamSyncTimeoutEnv, "4000"}}));
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_THAT(r.warnings[0], HasSubstr("stream_sync_timeout > scheduler_timeout + 1500 ms"));
  EXPECT_THAT(r.warnings[0], HasSubstr("ignoring all timeout overrides"));
  EXPECT_EQ(r.config.scheduler_ms, TimeoutConfig{}.scheduler_ms);
  EXPECT_EQ(r.config.op_execute_us, TimeoutConfig{}.op_execute_us);
  EXPECT_EQ(r.config.stream_sync_ms, TimeoutConfig{}.stream_sync_ms);
}

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
  EXPECT_THAT(r.warnings[0], HasSubstr(std::string(kSchedulerTimeoutEnv) + "=100"));
  EXPECT_THAT(r.warnings[0], HasSubstr(std::string(kOpExecuteTimeoutEnv) + "=100000"));
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
  EXPECT_THAT(r.warnings[0], HasSubstr(std::string(kStreamSyncTimeoutEnv) + "=2400"));
  EXPECT_EQ(r.config.scheduler_ms, TimeoutConfig{}.scheduler_ms);
  EXPECT_EQ(r.config.op_execute_us, TimeoutConfig{}.op_execute_us);
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
