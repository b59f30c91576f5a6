// One text per signal for every fault message (the host's and the isolated device's summary).
#include "common/signal_text.h"

#include <gtest/gtest.h>

#include <csignal>

namespace chiprt::common {
namespace {

TEST(SignalText, NamesTheSignalAndWhatItMeans) {
  EXPECT_EQ(signal_text(SIGSEGV), "SIGSEGV (invalid memory reference)");
  EXPECT_EQ(signal_text(SIGBUS),
            "SIGBUS (bus error: misaligned access or memory past the end of a mapping)");
  EXPECT_EQ(signal_text(SIGFPE), "SIGFPE (arithmetic fault, e.g. integer division by zero)");
  EXPECT_EQ(signal_text(SIGTRAP), "SIGTRAP (trace/breakpoint trap)");
}

TEST(SignalText, OtherSignalsByNameAndNumber) {
  EXPECT_EQ(signal_text(SIGUSR1), "SIGUSR1 (signal " + std::to_string(SIGUSR1) + ")");
  EXPECT_EQ(signal_text(1000), "signal 1000");
}

}  // namespace
}  // namespace chiprt::common
