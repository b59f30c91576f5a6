// Task Bench's dependence patterns (tools/perf/task_bench_patterns.h) against hand-computed
// dependency sets, the predecessor lists peers run, and METG(50%) (tools/perf/task_bench.h).
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <vector>

#include "task_bench.h"
#include "task_bench_patterns.h"

namespace chiprt::perf {
namespace {

using Points = std::vector<uint64_t>;

TbGraph graph(TbPattern pattern, uint64_t width, uint64_t height = 16) {
  return TbGraph{pattern, width, height};
}

TEST(TaskBenchPatterns, NamesRoundTrip) {
  for (const TbPattern p : kAllTbPatterns) {
    TbPattern parsed = TbPattern::Trivial;
    ASSERT_TRUE(parse_tb_pattern(tb_pattern_name(p), &parsed)) << tb_pattern_name(p);
    EXPECT_EQ(parsed, p);
  }
  TbPattern parsed;
  EXPECT_FALSE(parse_tb_pattern("stencil", &parsed));
  EXPECT_EQ(tb_pattern_names().substr(0, 27), "trivial, no_comm, stencil_1");
}

TEST(TaskBenchPatterns, FirstTimestepHasNoDependencies) {
  for (const TbPattern p : kAllTbPatterns) {
    EXPECT_TRUE(graph(p, 8).dependencies(0, 0).empty()) << tb_pattern_name(p);
  }
}

TEST(TaskBenchPatterns, SimplePatterns) {
  EXPECT_EQ(graph(TbPattern::Trivial, 5).dependencies(3, 2), Points{});
  EXPECT_EQ(graph(TbPattern::NoComm, 5).dependencies(2, 3), (Points{3}));
  EXPECT_EQ(graph(TbPattern::Stencil1d, 5).dependencies(1, 0), (Points{0, 1}));
  EXPECT_EQ(graph(TbPattern::Stencil1d, 5).dependencies(1, 2), (Points{1, 2, 3}));
  EXPECT_EQ(graph(TbPattern::Stencil1d, 5).dependencies(1, 4), (Points{3, 4}));
  EXPECT_EQ(graph(TbPattern::AllToAll, 4).dependencies(1, 2), (Points{0, 1, 2, 3}));
  // Radix 3: the point and one neighbour on each side.
  EXPECT_EQ(graph(TbPattern::Nearest, 5).dependencies(1, 2), (Points{1, 2, 3}));
  EXPECT_EQ(graph(TbPattern::Nearest, 5).dependencies(1, 0), (Points{0, 1}));
}

TEST(TaskBenchPatterns, StencilPeriodicWrapsAround) {
  EXPECT_EQ(graph(TbPattern::Stencil1dPeriodic, 5).dependencies(1, 0), (Points{0, 1, 4}));
  EXPECT_EQ(graph(TbPattern::Stencil1dPeriodic, 5).dependencies(1, 4), (Points{0, 3, 4}));
  EXPECT_EQ(graph(TbPattern::Stencil1dPeriodic, 5).dependencies(1, 2), (Points{1, 2, 3}));
  // Narrow rows: each point once.
  EXPECT_EQ(graph(TbPattern::Stencil1dPeriodic, 2).dependencies(1, 0), (Points{0, 1}));
  EXPECT_EQ(graph(TbPattern::Stencil1dPeriodic, 1).dependencies(1, 0), (Points{0}));
}

TEST(TaskBenchPatterns, FftAtWidth8CyclesThroughStrides124) {
  const TbGraph g = graph(TbPattern::Fft, 8);
  // t = 1: stride 1.
  EXPECT_EQ(g.dependencies(1, 0), (Points{0, 1}));
  EXPECT_EQ(g.dependencies(1, 3), (Points{2, 3, 4}));
  EXPECT_EQ(g.dependencies(1, 7), (Points{6, 7}));
  // t = 2: stride 2.
  EXPECT_EQ(g.dependencies(2, 0), (Points{0, 2}));
  EXPECT_EQ(g.dependencies(2, 5), (Points{3, 5, 7}));
  EXPECT_EQ(g.dependencies(2, 7), (Points{5, 7}));
  // t = 3: stride 4; t = 4: stride 1 again.
  EXPECT_EQ(g.dependencies(3, 0), (Points{0, 4}));
  EXPECT_EQ(g.dependencies(3, 5), (Points{1, 5}));
  EXPECT_EQ(g.dependencies(4, 4), (Points{3, 4, 5}));
}

TEST(TaskBenchPatterns, TreeDoublesItsWidthAndReadsTheParent) {
  const TbGraph g = graph(TbPattern::Tree, 8, 5);
  EXPECT_EQ(g.width_at(0), 1u);
  EXPECT_EQ(g.width_at(1), 2u);
  EXPECT_EQ(g.width_at(2), 4u);
  EXPECT_EQ(g.width_at(3), 8u);
  EXPECT_EQ(g.width_at(4), 8u);
  EXPECT_EQ(g.tasks(), 23u);
  EXPECT_FALSE(g.holds(1, 2));
  EXPECT_TRUE(g.holds(2, 3));
  EXPECT_EQ(g.dependencies(1, 1), (Points{0}));
  EXPECT_EQ(g.dependencies(3, 5), (Points{2}));
  EXPECT_EQ(g.dependencies(3, 7), (Points{3}));
  EXPECT_EQ(g.dependencies(4, 6), (Points{3}));
}

TEST(TaskBenchPatterns, DomIsADiagonalBand) {
  // Width 4, height 6: rows {0}, {0,1}, {0,1,2}, {1,2,3}, {2,3}, {3}.
  const TbGraph g = graph(TbPattern::Dom, 4, 6);
  const uint64_t offsets[] = {0, 0, 0, 1, 2, 3};
  const uint64_t widths[] = {1, 2, 3, 3, 2, 1};
  for (uint64_t t = 0; t < 6; ++t) {
    EXPECT_EQ(g.offset_at(t), offsets[t]) << t;
    EXPECT_EQ(g.width_at(t), widths[t]) << t;
  }
  EXPECT_EQ(g.tasks(), 12u);
  EXPECT_EQ(g.dependencies(1, 1), (Points{0}));  // x-1 .. x, only 0 in row 0
  EXPECT_EQ(g.dependencies(2, 2), (Points{1}));  // row 1 holds 0, 1
  EXPECT_EQ(g.dependencies(3, 1), (Points{0, 1}));
  EXPECT_EQ(g.dependencies(3, 3), (Points{2}));
  EXPECT_EQ(g.dependencies(5, 3), (Points{2, 3}));
}

TEST(TaskBenchPatterns, SpreadReachesAcrossTheRowShiftedByTheTimestep) {
  // Width 9, radix 3, period 3: x, x + 3 + t%3, x + 6 + t%3 (mod 9).
  const TbGraph g = graph(TbPattern::Spread, 9);
  EXPECT_EQ(g.period(), 3u);
  EXPECT_EQ(g.dependencies(1, 0), (Points{0, 4, 7}));
  EXPECT_EQ(g.dependencies(2, 7), (Points{3, 6, 7}));
  EXPECT_EQ(g.dependencies(3, 8), (Points{2, 5, 8}));
  // Width 2: the period is clamped to ceil(2 / 3) = 1 and repeated points merge.
  const TbGraph narrow = graph(TbPattern::Spread, 2);
  EXPECT_EQ(narrow.period(), 1u);
  EXPECT_EQ(narrow.dependencies(1, 0), (Points{0, 1}));
}

TEST(TaskBenchPatterns, RandomNearestIsDeterministicPeriodicAndSparse) {
  const TbGraph g = graph(TbPattern::RandomNearest, 1000, 8);
  uint64_t neighbours = 0;
  for (uint64_t x = 0; x < 1000; ++x) {
    const Points deps = g.dependencies(1, x);
    EXPECT_EQ(deps, g.dependencies(1, x));
    EXPECT_EQ(deps, g.dependencies(4, x)) << "period 3";
    const std::set<uint64_t> set(deps.begin(), deps.end());
    EXPECT_EQ(set.count(x), 1u);
    for (const uint64_t d : deps) EXPECT_LE(d > x ? d - x : x - d, 1u);
    neighbours += deps.size() - 1;
  }
  // 1998 candidate neighbours, each kept with probability 1/4.
  EXPECT_GT(neighbours, 350u);
  EXPECT_LT(neighbours, 650u);
}

TEST(TaskBenchPatterns, TaskListsIndexTasksRowByRow) {
  const TbTaskLists stencil = tb_task_lists(graph(TbPattern::Stencil1d, 3, 2));
  ASSERT_EQ(stencil.offsets.size(), 7u);
  EXPECT_EQ(Points(stencil.preds.begin() + stencil.offsets[3],
                   stencil.preds.begin() + stencil.offsets[4]),
            (Points{0, 1}));
  EXPECT_EQ(Points(stencil.preds.begin() + stencil.offsets[4],
                   stencil.preds.begin() + stencil.offsets[5]),
            (Points{0, 1, 2}));
  // Dom, width 4 height 6: task (3, 1) is task 6 and reads (2, 0) and (2, 1): tasks 3 and 4.
  const TbTaskLists dom = tb_task_lists(graph(TbPattern::Dom, 4, 6));
  EXPECT_EQ(dom.row_start, (Points{0, 1, 3, 6, 9, 11, 12}));
  EXPECT_EQ(Points(dom.preds.begin() + dom.offsets[6], dom.preds.begin() + dom.offsets[7]),
            (Points{3, 4}));
}

TbPoint point(double us, double efficiency) {
  TbPoint p;
  p.granularity_us = us;
  p.task_ns = us * 1e3;
  p.measured = true;
  p.efficiency = efficiency;
  return p;
}

TEST(TaskBenchMetg, InterpolatesBetweenTheGranularitiesAroundHalf) {
  const TbMetg m = compute_metg({point(100, 0.9), point(10, 0.6), point(1, 0.3)});
  ASSERT_TRUE(m.reached);
  EXPECT_TRUE(m.interpolated);
  EXPECT_NEAR(m.us, 10 * std::pow(0.1, 1.0 / 3), 1e-6);
}

TEST(TaskBenchMetg, AllAboveIsTheSmallestAsABoundAndNoneIsNotReached) {
  const TbMetg all = compute_metg({point(100, 0.9), point(10, 0.8)});
  EXPECT_TRUE(all.reached);
  EXPECT_FALSE(all.interpolated);
  EXPECT_DOUBLE_EQ(all.us, 10);
  TbPoint skipped = point(1, 0);
  skipped.measured = false;
  skipped.skipped = true;
  const TbMetg none = compute_metg({point(100, 0.4), point(10, 0.2), skipped});
  EXPECT_FALSE(none.reached);
}

}  // namespace
}  // namespace chiprt::perf
