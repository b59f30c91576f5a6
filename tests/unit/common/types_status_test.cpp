#include <gtest/gtest.h>

#include <set>
#include <string>

#include "chiprt/status.h"
#include "chiprt/types.h"

namespace chiprt {
namespace {

TEST(DataTypeTest, SizesMatchTheElementWidth) {
  EXPECT_EQ(element_size(DataType::F32), 4u);
  EXPECT_EQ(element_size(DataType::F16), 2u);
  EXPECT_EQ(element_size(DataType::BF16), 2u);
  EXPECT_EQ(element_size(DataType::F64), 8u);
  EXPECT_EQ(element_size(DataType::I8), 1u);
  EXPECT_EQ(element_size(DataType::I16), 2u);
  EXPECT_EQ(element_size(DataType::I32), 4u);
  EXPECT_EQ(element_size(DataType::I64), 8u);
  EXPECT_EQ(element_size(DataType::U8), 1u);
  EXPECT_EQ(element_size(DataType::U16), 2u);
  EXPECT_EQ(element_size(DataType::U32), 4u);
  EXPECT_EQ(element_size(DataType::U64), 8u);
  EXPECT_EQ(element_size(DataType::Bool), 1u);
  EXPECT_EQ(element_size(static_cast<DataType>(kDataTypeCount)), 0u);
}

TEST(DataTypeTest, NamesAreUniqueAndRoundTripThroughParse) {
  std::set<std::string_view> names;
  for (int i = 0; i < kDataTypeCount; ++i) {
    const auto dtype = static_cast<DataType>(i);
    const std::string_view name = dtype_name(dtype);
    EXPECT_NE(name, "invalid") << i;
    EXPECT_TRUE(names.insert(name).second) << "duplicate name " << name;
    DataType parsed = DataType::Bool;
    ASSERT_TRUE(parse_dtype(name, &parsed)) << name;
    EXPECT_EQ(parsed, dtype);
  }
  EXPECT_EQ(dtype_name(DataType::BF16), "bf16");
  EXPECT_EQ(dtype_name(static_cast<DataType>(200)), "invalid");
  DataType untouched = DataType::I8;
  EXPECT_FALSE(parse_dtype("float32", &untouched));
  EXPECT_FALSE(parse_dtype("", &untouched));
  EXPECT_EQ(untouched, DataType::I8);
}

TEST(CoreTypeTest, Names) {
  EXPECT_EQ(core_type_name(CoreType::AIC), "aic");
  EXPECT_EQ(core_type_name(CoreType::AIV), "aiv");
  EXPECT_EQ(core_type_name(CoreType::MIX), "mix");
  EXPECT_EQ(core_type_name(static_cast<CoreType>(kCoreTypeCount)), "invalid");
}

TEST(StatusTest, EveryCodeHasAUniqueNameADetailAndAHint) {
  std::size_t count = 0;
  const StatusCode* codes = all_status_codes(&count);
  ASSERT_GT(count, 30u);
  std::set<std::string_view> names;
  std::set<int32_t> values;
  for (std::size_t i = 0; i < count; ++i) {
    const StatusInfo& info = status_info(codes[i]);
    EXPECT_FALSE(info.name.empty()) << i;
    EXPECT_FALSE(info.detail.empty()) << info.name;
    EXPECT_FALSE(info.hint.empty()) << info.name;
    EXPECT_TRUE(names.insert(info.name).second) << "duplicate name " << info.name;
    EXPECT_TRUE(values.insert(static_cast<int32_t>(codes[i])).second) << info.name;
    EXPECT_EQ(status_name(codes[i]), info.name);
  }
  EXPECT_EQ(status_name(StatusCode::ViewOutOfBounds), "ViewOutOfBounds");
  EXPECT_EQ(status_name(static_cast<StatusCode>(9999)), "InternalError");
}

// A failure that knows a more precise hint than its code's carries it through Status, its
// context and the Error thrown from it.
TEST(StatusTest, AFailureMayCarryItsOwnHint) {
  const Status plain(StatusCode::LoadFailed, "bad ELF");
  EXPECT_EQ(plain.hint(), status_info(StatusCode::LoadFailed).hint);
  const Status precise =
      Status(StatusCode::LoadFailed, "symbol 'kernel_entry' not found", "export it")
          .with_context("callable id 3: ");
  EXPECT_EQ(precise.message(), "callable id 3: symbol 'kernel_entry' not found");
  EXPECT_EQ(precise.hint(), "export it");
  EXPECT_EQ(precise.to_string(),
            "[LoadFailed] callable id 3: symbol 'kernel_entry' not found (hint: export it)");
  const Error error(precise);
  EXPECT_EQ(error.hint(), "export it");
  EXPECT_EQ(std::string(error.what()), precise.to_string());
  const Error by_code(StatusCode::LoadFailed, "x");
  EXPECT_EQ(by_code.hint(), status_info(StatusCode::LoadFailed).hint);
  EXPECT_EQ(static_cast<int32_t>(StatusCode::BuildFailed), 40);
  EXPECT_EQ(status_name(StatusCode::BuildFailed), "BuildFailed");
}

TEST(StatusTest, RingRuntimeCodesHaveStableValuesNamesAndHints) {
  EXPECT_EQ(static_cast<int32_t>(StatusCode::RingDeadlock), 31);
  EXPECT_EQ(static_cast<int32_t>(StatusCode::WaitTimeout), 32);
  EXPECT_EQ(static_cast<int32_t>(StatusCode::InvalidScope), 33);
  EXPECT_EQ(status_name(StatusCode::RingDeadlock), "RingDeadlock");
  EXPECT_EQ(status_name(StatusCode::WaitTimeout), "WaitTimeout");
  EXPECT_EQ(status_name(StatusCode::InvalidScope), "InvalidScope");
  // The hints name the knob that fixes the problem.
  EXPECT_NE(status_info(StatusCode::RingDeadlock).hint.find("CHIPRT_RING_"), std::string::npos);
  EXPECT_NE(status_info(StatusCode::RingDeadlock).hint.find("CallConfig::rings"),
            std::string::npos);
  EXPECT_NE(status_info(StatusCode::WaitTimeout).hint.find("CHIPRT_SCHEDULER_TIMEOUT_MS"),
            std::string::npos);
  EXPECT_NE(status_info(StatusCode::InvalidScope).hint.find("manual"), std::string::npos);
  std::size_t count = 0;
  const StatusCode* codes = all_status_codes(&count);
  int found = 0;
  for (std::size_t i = 0; i < count; ++i) {
    found += codes[i] == StatusCode::RingDeadlock || codes[i] == StatusCode::WaitTimeout ||
             codes[i] == StatusCode::InvalidScope;
  }
  EXPECT_EQ(found, 3) << "every ring code is listed by all_status_codes";
  const Error e(StatusCode::RingDeadlock, "task window of depth 0 (16 slots) is full");
  EXPECT_NE(std::string(e.what()).find("[RingDeadlock] task window of depth 0"), std::string::npos)
      << e.what();
}

TEST(StatusTest, ErrorWhatCarriesNameMessageAndHint) {
  const Error e(StatusCode::TooManyArgs, "task has 17 tensors");
  const std::string what = e.what();
  EXPECT_NE(what.find("TooManyArgs"), std::string::npos) << what;
  EXPECT_NE(what.find("task has 17 tensors"), std::string::npos) << what;
  EXPECT_NE(what.find(std::string(status_info(StatusCode::TooManyArgs).hint)), std::string::npos)
      << what;
  EXPECT_EQ(e.code(), StatusCode::TooManyArgs);
  EXPECT_EQ(e.message(), "task has 17 tensors");
}

TEST(StatusTest, StatusOkAndErrorConversion) {
  EXPECT_TRUE(Status::ok().is_ok());
  EXPECT_TRUE(static_cast<bool>(Status()));
  const Status bad(StatusCode::InvalidConfig, "cluster_count=99");
  EXPECT_FALSE(bad.is_ok());
  EXPECT_NE(bad.to_string().find("[InvalidConfig] cluster_count=99"), std::string::npos);
  EXPECT_NO_THROW(throw_if_error(Status::ok()));
  try {
    throw_if_error(bad);
    FAIL() << "throw_if_error did not throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::InvalidConfig);
    EXPECT_EQ(e.message(), "cluster_count=99");
  }
}

}  // namespace
}  // namespace chiprt
