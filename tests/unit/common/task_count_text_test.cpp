// The one way chiprt states a task count (the CLI, report.html and the docs use it).
#include <gtest/gtest.h>

#include "chiprt/run_report.h"

namespace chiprt {
namespace {

TEST(TaskCountText, KernelTasksPlusDependencyOnlyWithThousandsSeparators) {
  EXPECT_EQ(format_task_count(1024, 64), "1,024 kernel tasks + 64 dependency-only");
  EXPECT_EQ(format_task_count(1234567, 1000), "1,234,567 kernel tasks + 1,000 dependency-only");
}

TEST(TaskCountText, TheDependencyOnlyPartOnlyWhenThereAreSome) {
  EXPECT_EQ(format_task_count(20, 0), "20 kernel tasks");
  EXPECT_EQ(format_task_count(1, 0), "1 kernel task");
  EXPECT_EQ(format_task_count(0, 3), "0 kernel tasks + 3 dependency-only");
  EXPECT_EQ(format_task_count(999, 0), "999 kernel tasks");
}

TEST(TaskCountText, CountsSeparateTheirThousands) {
  EXPECT_EQ(format_count(0), "0");
  EXPECT_EQ(format_count(999), "999");
  EXPECT_EQ(format_count(1000), "1,000");
  EXPECT_EQ(format_count(1984), "1,984");
  EXPECT_EQ(format_count(18446744073709551615ull), "18,446,744,073,709,551,615");
}

}  // namespace
}  // namespace chiprt
