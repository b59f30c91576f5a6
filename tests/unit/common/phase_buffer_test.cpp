#include <gtest/gtest.h>

#include <set>
#include <string>

#include "chiprt/run_report.h"
#include "common/chip_launch.h"

namespace chiprt::common {
namespace {

PhaseStamp& stamp(PhaseBuffer& b, uint32_t thread, Phase p) {
  return b.stamps[thread][static_cast<int>(p)];
}
const PhaseSpan& span(const std::array<PhaseSpan, kPhaseCount>& out, Phase p) {
  return out[static_cast<int>(p)];
}

TEST(PhaseNameTest, AllPhasesNamedUniquely) {
  std::set<std::string_view> names;
  for (int p = 0; p < kPhaseCount; ++p) {
    const std::string_view name = phase_name(static_cast<Phase>(p));
    EXPECT_NE(name, "invalid");
    EXPECT_TRUE(names.insert(name).second) << name;
  }
  EXPECT_EQ(phase_name(Phase::RunWall), "run_wall");
  EXPECT_EQ(phase_name(Phase::PostOrchestration), "post_orchestration");
  EXPECT_EQ(phase_name(static_cast<Phase>(kPhaseCount)), "invalid");
}

TEST(ReducePhaseBufferTest, EmptyBufferHasNoPhases) {
  PhaseBuffer b{};
  std::array<PhaseSpan, kPhaseCount> out;
  out.fill(PhaseSpan{true, 5, 5});
  reduce_phase_buffer(b, 4, 1'000'000'000, &out);
  for (const PhaseSpan& s : out) {
    EXPECT_FALSE(s.present);
    EXPECT_EQ(s.start_ns, 0u);
    EXPECT_EQ(s.span_ns, 0u);
  }
}

TEST(ReducePhaseBufferTest, MergesThreadsAndOffsetsFromEarliestPhase) {
  PhaseBuffer b{};
  stamp(b, 0, Phase::RunWall) = {100, 1000};
  stamp(b, 1, Phase::RunWall) = {90, 1100};
  stamp(b, 0, Phase::Preamble) = {200, 300};
  stamp(b, 1, Phase::Preamble) = {150, 250};
  stamp(b, 2, Phase::Scheduling) = {400, 900};
  stamp(b, 3, Phase::Scheduling) = {350, 950};
  std::array<PhaseSpan, kPhaseCount> out;
  reduce_phase_buffer(b, 4, 2'000'000'000, &out);  // 2 GHz: 1 cycle = 0.5 ns

  EXPECT_TRUE(span(out, Phase::RunWall).present);
  EXPECT_EQ(span(out, Phase::RunWall).start_ns, 0u);
  EXPECT_EQ(span(out, Phase::RunWall).span_ns, 505u);  // (1100 - 90) / 2
  EXPECT_TRUE(span(out, Phase::Preamble).present);
  EXPECT_EQ(span(out, Phase::Preamble).start_ns, 0u);      // the origin
  EXPECT_EQ(span(out, Phase::Preamble).span_ns, 75u);      // (300 - 150) / 2
  EXPECT_EQ(span(out, Phase::Scheduling).start_ns, 100u);  // (350 - 150) / 2
  EXPECT_EQ(span(out, Phase::Scheduling).span_ns, 300u);   // (950 - 350) / 2
  EXPECT_FALSE(span(out, Phase::Load).present);
  EXPECT_FALSE(span(out, Phase::Orchestration).present);
}

TEST(ReducePhaseBufferTest, ThreadsBeyondTheCountAreIgnoredAndClamped) {
  PhaseBuffer b{};
  stamp(b, 0, Phase::Load) = {1000, 2000};
  stamp(b, 2, Phase::Load) = {10, 5000};
  std::array<PhaseSpan, kPhaseCount> out;
  reduce_phase_buffer(b, 2, 1'000'000'000, &out);
  EXPECT_EQ(span(out, Phase::Load).span_ns, 1000u);
  reduce_phase_buffer(b, 1000, 1'000'000'000, &out);  // clamped to kMaxAicpuThreads
  EXPECT_EQ(span(out, Phase::Load).span_ns, 4990u);
  stamp(b, kMaxAicpuThreads - 1, Phase::Load) = {5, 6000};
  reduce_phase_buffer(b, 1000, 1'000'000'000, &out);
  EXPECT_EQ(span(out, Phase::Load).span_ns, 5995u);
}

TEST(ReducePhaseBufferTest, OnlyRunWallUsesItsOwnStartAsOrigin) {
  PhaseBuffer b{};
  stamp(b, 0, Phase::RunWall) = {500, 700};
  std::array<PhaseSpan, kPhaseCount> out;
  reduce_phase_buffer(b, 1, 1'000'000'000, &out);
  EXPECT_TRUE(span(out, Phase::RunWall).present);
  EXPECT_EQ(span(out, Phase::RunWall).start_ns, 0u);
  EXPECT_EQ(span(out, Phase::RunWall).span_ns, 200u);
}

TEST(ReducePhaseBufferTest, HalfStampedPhaseIsNotPresent) {
  PhaseBuffer b{};
  stamp(b, 0, Phase::Preamble) = {100, 200};
  stamp(b, 0, Phase::Scheduling) = {50, 0};  // started, never ended: must not become the origin
  std::array<PhaseSpan, kPhaseCount> out;
  reduce_phase_buffer(b, 1, 1'000'000'000, &out);
  EXPECT_FALSE(span(out, Phase::Scheduling).present);
  EXPECT_EQ(span(out, Phase::Preamble).start_ns, 0u);
  EXPECT_EQ(span(out, Phase::Preamble).span_ns, 100u);
}

TEST(ReducePhaseBufferTest, LargeCycleCountsDoNotOverflow) {
  PhaseBuffer b{};
  const uint64_t big = 1ull << 62;
  stamp(b, 0, Phase::Preamble) = {1, 1 + big};
  stamp(b, 0, Phase::Scheduling) = {1 + big, 1 + 2 * big};
  std::array<PhaseSpan, kPhaseCount> out;
  reduce_phase_buffer(b, 1, 4'000'000'000, &out);  // 4 GHz: ns = cycles / 4
  EXPECT_EQ(span(out, Phase::Preamble).span_ns, big / 4);
  EXPECT_EQ(span(out, Phase::Scheduling).start_ns, big / 4);
  reduce_phase_buffer(b, 1, 1, &out);  // 1 Hz: saturates instead of wrapping
  EXPECT_EQ(span(out, Phase::Preamble).span_ns, ~0ull);
  reduce_phase_buffer(b, 1, 0, &out);  // unknown clock: cycles reported as ns
  EXPECT_EQ(span(out, Phase::Preamble).span_ns, big);
}

}  // namespace
}  // namespace chiprt::common
