// Which later runs a failed run cancels, in process, on both runtime variants: the shared streams
// of tests/run_cancellation_cases.h (a failed run cancels exactly the later runs naming memory it
// wrote, a chain through a cancelled run names the original failure, a run refused at its checks
// cancels nothing, whatever the timing), and when the poison of a buffer ends.
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "chiprt/worker.h"
#include "host/log.h"
#include "host_test_support.h"
#include "run_cancellation_cases.h"

namespace chiprt::host {
namespace {

namespace cases = cancellation_cases;

// Streams per case (each keeps the chip busy about 100 ms).
constexpr int kRepeats = 4;

class RunCancellationTest : public ::testing::TestWithParam<RuntimeVariant> {
 protected:
  void SetUp() override {
    saved_level_ = log_level();
    set_log_level(LogLevel::Off);  // the unwaited errors of cancelled runs are expected
    test::SmallChip chip;
    chip.runtime = GetParam();
    worker_.init(test::small_worker_options(chip));
    cases::register_callable(worker_);
  }
  void TearDown() override {
    worker_.close();
    set_log_level(saved_level_);
  }
  CallConfig config() const {
    CallConfig config = test::small_call_config(16);
    config.runtime = GetParam();
    return config;
  }

  Worker worker_;
  LogLevel saved_level_ = LogLevel::Warn;
};

TEST_P(RunCancellationTest, AFailedRunCancelsExactlyTheRunsNamingWhatItWrote) {
  for (const cases::Case& c : cases::cases()) cases::run_case(worker_, c, config(), kRepeats);
}

TEST_P(RunCancellationTest, HostRewritesAndFreeClearThePoison) {
  cases::expect_rewrites_clear_poison(worker_, config());
}

INSTANTIATE_TEST_SUITE_P(BothVariants, RunCancellationTest,
                         ::testing::ValuesIn(test::kBothVariants),
                         [](const ::testing::TestParamInfo<RuntimeVariant>& info) {
                           return std::string(runtime_variant_name(info.param));
                         });

}  // namespace
}  // namespace chiprt::host
