// The checking machinery the scene tests rely on: a wrong, NaN or short result must fail, and a
// missing chip object must be reported with its path and the environment variable.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "chiprt/status.h"
#include "scoped_env.h"
#include "support.h"

namespace {

using chiprt::examples::compare_results;
using chiprt::examples::make_outcome;

TEST(CompareResults, ExactMatchHasNoErrorAndNoMismatch) {
  const std::vector<float> got = {1.0f, 2.0f, 3.0f};
  const std::vector<double> want = {1.0, 2.0, 3.0};
  const auto c = compare_results(got, want, 1e-6);
  EXPECT_EQ(c.mismatches, 0u);
  EXPECT_EQ(c.max_abs_error, 0.0);
  EXPECT_TRUE(c.first_mismatch.empty());
}

TEST(CompareResults, ErrorWithinToleranceIsAcceptedAndReported) {
  const std::vector<float> got = {1.0f, 2.5f};
  const std::vector<double> want = {1.0, 2.0};
  const auto c = compare_results(got, want, 0.5);
  EXPECT_EQ(c.mismatches, 0u);
  EXPECT_DOUBLE_EQ(c.max_abs_error, 0.5);
}

TEST(CompareResults, MismatchNamesElementRowAndColumn) {
  std::vector<float> got(12, 0.0f);
  const std::vector<double> want(12, 0.0);
  got[7] = 1.0f;
  got[9] = -2.0f;
  const auto c = compare_results(got, want, 1e-3, 4);
  EXPECT_EQ(c.mismatches, 2u);
  EXPECT_DOUBLE_EQ(c.max_abs_error, 2.0);
  EXPECT_NE(c.first_mismatch.find("element 7 (row 1, col 3)"), std::string::npos)
      << c.first_mismatch;
}

TEST(CompareResults, NanFailsAndCountsAsInfiniteError) {
  const std::vector<float> got = {NAN};
  const std::vector<double> want = {0.0};
  const auto c = compare_results(got, want, 1.0);
  EXPECT_EQ(c.mismatches, 1u);
  EXPECT_TRUE(std::isinf(c.max_abs_error));
}

TEST(CompareResults, SizeMismatchFails) {
  const std::vector<float> got = {1.0f};
  const std::vector<double> want = {1.0, 2.0};
  const auto c = compare_results(got, want, 1.0);
  EXPECT_EQ(c.mismatches, 1u);
  EXPECT_NE(c.first_mismatch.find("1 elements"), std::string::npos) << c.first_mismatch;
}

TEST(MakeOutcome, PassesOnlyWithMatchingResultsAndEveryKernelTask) {
  chiprt::RunReport report;
  report.task_count = 12;
  const chiprt::examples::Comparison clean;
  EXPECT_TRUE(make_outcome(clean, 1e-5, report, 10).passed);
  EXPECT_TRUE(make_outcome(clean, 1e-5, report, 12).passed);

  const auto too_few = make_outcome(clean, 1e-5, report, 13);
  EXPECT_FALSE(too_few.passed);
  EXPECT_NE(too_few.message.find("12 tasks, fewer than the 13"), std::string::npos)
      << too_few.message;

  chiprt::examples::Comparison bad;
  bad.mismatches = 1;
  bad.max_abs_error = 3;
  bad.first_mismatch = "element 0";
  const auto wrong = make_outcome(bad, 1e-5, report, 12);
  EXPECT_FALSE(wrong.passed);
  EXPECT_EQ(wrong.max_abs_error, 3);
  EXPECT_EQ(wrong.task_count, 12u);
  EXPECT_EQ(wrong.kernel_tasks, 12u);
  EXPECT_NE(wrong.message.find("element 0"), std::string::npos) << wrong.message;
}

using chiprt::test::ScopedEnv;

TEST(ChipObjects, EnvironmentOverridesTheDirectory) {
  ScopedEnv env(chiprt::examples::kChipObjectDirEnv, "/tmp/chiprt-elsewhere");
  EXPECT_EQ(chiprt::examples::chip_object_dir(), "/tmp/chiprt-elsewhere");
}

TEST(ChipObjects, BuiltObjectsAreFoundByDefault) {
  ScopedEnv env(chiprt::examples::kChipObjectDirEnv, "");
  EXPECT_FALSE(chiprt::examples::read_chip_object("vector_example_add").empty());
}

TEST(ChipObjects, MissingObjectNamesPathAndEnvironmentVariable) {
  ScopedEnv env(chiprt::examples::kChipObjectDirEnv, "/nonexistent/chip_objects");
  try {
    chiprt::examples::read_chip_object("bgemm_matmul");
    FAIL() << "expected chiprt::Error";
  } catch (const chiprt::Error& e) {
    EXPECT_EQ(e.code(), chiprt::StatusCode::LoadFailed);
    EXPECT_NE(e.message().find("/nonexistent/chip_objects/bgemm_matmul.so"), std::string::npos)
        << e.what();
    EXPECT_NE(e.message().find("CHIPRT_CHIP_OBJECT_DIR"), std::string::npos) << e.what();
  }
}

}  // namespace
