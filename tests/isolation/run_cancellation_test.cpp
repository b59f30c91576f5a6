// Which later runs a failed run cancels, on the isolated device (SimIsolation::Process), on both
// runtime variants: the same streams as in process (tests/run_cancellation_cases.h), with the
// same outcomes, and when the poison of a buffer ends.
#include <gtest/gtest.h>

#include <string>

#include "chiprt/worker.h"
#include "isolation_support.h"
#include "run_cancellation_cases.h"

namespace chiprt::isolation_test {
namespace {

namespace cases = cancellation_cases;

// Streams per case (each keeps the chip busy about 100 ms).
constexpr int kRepeats = 4;

class IsolatedRunCancellation : public ::testing::TestWithParam<RuntimeVariant> {
 protected:
  void SetUp() override {
    worker_.init(isolated_options());
    cases::register_callable(worker_);
  }
  void TearDown() override {
    worker_.close();
    EXPECT_FALSE(has_unreaped_child());
  }
  CallConfig config() const { return run_config(GetParam(), /*serial=*/false); }

  Worker worker_;
};

TEST_P(IsolatedRunCancellation, AFailedRunCancelsExactlyTheRunsNamingWhatItWrote) {
  for (const cases::Case& c : cases::cases()) cases::run_case(worker_, c, config(), kRepeats);
}

TEST_P(IsolatedRunCancellation, HostRewritesAndFreeClearThePoison) {
  cases::expect_rewrites_clear_poison(worker_, config());
}

INSTANTIATE_TEST_SUITE_P(BothVariants, IsolatedRunCancellation,
                         ::testing::Values(RuntimeVariant::HostBuildGraph,
                                           RuntimeVariant::TensormapRingbuffer),
                         [](const ::testing::TestParamInfo<RuntimeVariant>& info) {
                           return std::string(runtime_variant_name(info.param));
                         });

}  // namespace
}  // namespace chiprt::isolation_test
