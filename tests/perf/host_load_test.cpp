// HostLoad: the load-average line and warning of `chiprt bench` reports (tools/perf/host_load.h).
#include <gtest/gtest.h>

#include "host_load.h"

namespace chiprt::perf {
namespace {

TEST(HostLoad, QuietHostIsDescribedWithoutAWarning) {
  const HostLoad load{0.5, 1.25, 2};
  EXPECT_FALSE(load.busy());
  EXPECT_EQ(load.describe(),
            "host load average (1 min): 0.50 at start, 1.25 at end (2 hardware threads)\n");
  EXPECT_EQ(load.to_json(), nlohmann::json({{"start", 0.5}, {"end", 1.25}, {"busy", false}}));
}

TEST(HostLoad, LoadReachingTheHardwareThreadsWarns) {
  for (const HostLoad& load : {HostLoad{2.0, 0.5, 2}, HostLoad{0.5, 3.5, 2}}) {
    EXPECT_TRUE(load.busy());
    EXPECT_NE(load.describe().find("\nwarning: the host's load reached its hardware threads"),
              std::string::npos)
        << load.describe();
    EXPECT_EQ(load.to_json().at("busy"), true);
  }
}

TEST(HostLoad, UnknownLoadIsSaidSoAndNeverBusy) {
  const HostLoad load{std::nullopt, std::nullopt, 2};
  EXPECT_FALSE(load.busy());
  EXPECT_EQ(load.describe(),
            "host load average (1 min): unknown at start, unknown at end (2 hardware threads)\n");
  EXPECT_TRUE(load.to_json().at("start").is_null());
}

TEST(HostLoad, ReadsThisHostsLoadAverage) {
  const std::optional<double> load = read_load_average();
  ASSERT_TRUE(load.has_value()) << "/proc/loadavg is readable on Linux";
  EXPECT_GE(*load, 0.0);
}

}  // namespace
}  // namespace chiprt::perf
