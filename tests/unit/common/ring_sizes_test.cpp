// The public ring-size rules and text form (include/chiprt/ring_sizes.h): the parser the CLI and
// the CHIPRT_RING_* variables share, RingSizing::validate (CallConfig::validate's ring part) and
// the totals of the sizes a run reports.
#include "chiprt/ring_sizes.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace chiprt {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(RingSizesTest, ParseAcceptsOneToFourValues) {
  std::vector<uint64_t> values;
  ASSERT_TRUE(parse_ring_sizes(RingField::TaskWindow, "--ring-window", "16", &values).is_ok());
  EXPECT_EQ(values, (std::vector<uint64_t>{16}));
  ASSERT_TRUE(
      parse_ring_sizes(RingField::DepPool, "--ring-dep-pool", "64,128,256,512", &values).is_ok());
  EXPECT_EQ(values, (std::vector<uint64_t>{64, 128, 256, 512}));
  // Leading zeros are still decimals.
  ASSERT_TRUE(parse_ring_sizes(RingField::HeapBytes, "--ring-heap", "04096", &values).is_ok());
  EXPECT_EQ(values, (std::vector<uint64_t>{4096}));
}

TEST(RingSizesTest, ParseRefusesWithTheSourceTheTextAndTheRule) {
  struct Case {
    RingField field;
    const char* text;
    const char* expected;
  };
  const Case cases[] = {
      {RingField::HeapBytes, "", "--opt=\"\": \"\" is not a positive decimal"},
      {RingField::TaskWindow, "+64", "\"+64\" is not a positive decimal"},
      {RingField::TaskWindow, "-64", "\"-64\" is not a positive decimal"},
      {RingField::TaskWindow, "64 ", "\"64 \" is not a positive decimal"},
      {RingField::TaskWindow, "0x40", "\"0x40\" is not a positive decimal"},
      {RingField::TaskWindow, "18446744073709551616",
       "\"18446744073709551616\" is too large (entry 0 must be"},  // 2^64
      {RingField::TaskWindow, "0", "\"0\" is not a positive decimal"},
      {RingField::TaskWindow, "64,,64", "\"\" is not a positive decimal"},
      {RingField::TaskWindow, "16,16,16,16,16", "more than 4 values"},
      {RingField::TaskWindow, "48", "value 48 (entry 0) must be a power of two in [16, 1048576]"},
      {RingField::HeapBytes, "4096,4100",
       "value 4100 (entry 1) must be a multiple of 64 in [4096, 1099511627776]"},
      {RingField::DepPool, "63", "value 63 (entry 0) must be in [64, 67108864]"},
  };
  for (const Case& c : cases) {
    std::vector<uint64_t> values;
    const Status status = parse_ring_sizes(c.field, "--opt", c.text, &values);
    EXPECT_EQ(status.code(), StatusCode::InvalidConfig) << c.text;
    EXPECT_THAT(status.message(), HasSubstr(c.expected)) << c.text;
    EXPECT_THAT(status.message(), HasSubstr(std::string("--opt=\"") + c.text + "\""));
  }
}

TEST(RingSizesTest, NamesAndRules) {
  EXPECT_EQ(ring_field_config_name(RingField::HeapBytes), "rings.heap_bytes");
  EXPECT_EQ(ring_field_env_name(RingField::TaskWindow), kRingTaskWindowEnv);
  EXPECT_EQ(ring_field_env_name(RingField::DepPool), "CHIPRT_RING_DEP_POOL");
  EXPECT_EQ(ring_field_rule(RingField::DepPool), "in [64, 67108864]");
  EXPECT_TRUE(ring_value_valid(RingField::TaskWindow, 1u << 20));
  EXPECT_FALSE(ring_value_valid(RingField::TaskWindow, 0));
  EXPECT_FALSE(ring_value_valid(RingField::TaskWindow, (1u << 20) * 2));
  EXPECT_TRUE(ring_value_valid(RingField::HeapBytes, 1ull << 40));
  EXPECT_FALSE(ring_value_valid(RingField::HeapBytes, (1ull << 40) + 64));
  EXPECT_TRUE(ring_value_valid(RingField::DepPool, 64));
  EXPECT_FALSE(ring_value_valid(RingField::DepPool, 63));
}

TEST(RingSizesTest, ValidateReportsEveryProblemOfEveryList) {
  RingSizing sizing;
  EXPECT_TRUE(sizing.validate().empty());
  sizing.task_window = {16, 24};
  sizing.heap_bytes = {4096, 4096, 4096, 4096, 5000};
  sizing.dep_pool = {64};
  EXPECT_THAT(sizing.validate(),
              ElementsAre("rings.task_window[1]=24: must be a power of two in [16, 1048576]",
                          "rings.heap_bytes has 5 entries: at most 4 (scope depths 0..3; deeper "
                          "depths share the last entry)",
                          "rings.heap_bytes[4]=5000: must be a multiple of 64 in [4096, "
                          "1099511627776]"));
  EXPECT_EQ(&sizing.list(RingField::DepPool), &sizing.dep_pool);
}

TEST(RingSizesTest, ResolvedTotalsSumEveryDepth) {
  ResolvedRingSizes sizes;
  EXPECT_EQ(sizes.total_slots(), 0u);
  sizes.task_window = {1024, 256, 64, 16};
  sizes.heap_bytes = {8192, 4096, 4096, 1ull << 40};
  EXPECT_EQ(sizes.total_slots(), 1360u);
  EXPECT_EQ(sizes.total_heap_bytes(), 16384u + (1ull << 40));
}

}  // namespace
}  // namespace chiprt
