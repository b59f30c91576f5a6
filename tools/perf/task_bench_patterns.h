// The dependence patterns of Task Bench (Slaughter et al., SC'20): a task graph of `height`
// timesteps, each a row of at most `width` points; task (t, x) depends on a set of points of
// timestep t - 1 that the pattern defines. Written from the paper's definitions and the reference
// implementation's defaults (radix 3, period 3, a quarter of random_nearest's candidate edges).
//
// A TbGraph is a small immutable value; every function is pure (no allocation except
// predecessor_lists), so the chiprt orchestration computes dependencies while it submits.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace chiprt::perf {

enum class TbPattern : uint8_t {
  Trivial,            // no dependencies
  NoComm,             // (t-1, x)
  Stencil1d,          // (t-1, x-1 .. x+1), clipped at the edges
  Stencil1dPeriodic,  // (t-1, x-1 .. x+1), wrapping around
  Dom,                // (t-1, x-1 .. x) on a diagonal band: row t holds points
                      // [max(0, t + width - height), +min(width, t + 1, height - t))
  Tree,               // (t-1, x / 2); row t holds min(width, 2^t) points
  Fft,                // butterfly: (t-1, x - 2^s), (t-1, x), (t-1, x + 2^s),
                      // s = (t + S - 1) mod S, S = ceil(log2(width))
  AllToAll,           // every point of t-1
  Nearest,            // (t-1, x - radix/2 .. x + (radix-1)/2), clipped
  Spread,             // radix points (x + i*width/radix + (i > 0 ? t mod period : 0)) mod width
  RandomNearest,      // nearest's candidates, each kept with probability 1/4 (x itself always),
                      // from a fixed-seed hash of (t mod period, candidate, x)
};
inline constexpr TbPattern kAllTbPatterns[] = {
    TbPattern::Trivial, TbPattern::NoComm, TbPattern::Stencil1d,    TbPattern::Stencil1dPeriodic,
    TbPattern::Dom,     TbPattern::Tree,   TbPattern::Fft,          TbPattern::AllToAll,
    TbPattern::Nearest, TbPattern::Spread, TbPattern::RandomNearest};

inline constexpr uint64_t kTbRadix = 3;   // nearest, spread, random_nearest
inline constexpr uint64_t kTbPeriod = 3;  // spread, random_nearest (clamped, see TbGraph::period)
inline constexpr double kTbFractionConnected = 0.25;  // random_nearest
inline constexpr uint64_t kTbSeed = 0x7a5c'be9c'0000'0011ull;
// The most ranges dependency_ranges() writes (spread: radix single points).
inline constexpr int kTbMaxRanges = 4;

std::string_view tb_pattern_name(TbPattern pattern) noexcept;  // "trivial", "stencil_1d", ...
bool parse_tb_pattern(std::string_view name, TbPattern* out) noexcept;
std::string tb_pattern_names();  // "trivial, no_comm, ..."

// Points first .. last (inclusive) of one timestep.
struct TbRange {
  uint64_t first = 0;
  uint64_t last = 0;
};

struct TbGraph {
  TbPattern pattern = TbPattern::Trivial;
  uint64_t width = 1;   // points per timestep (at least 1)
  uint64_t height = 1;  // timesteps (at least 1)

  // The points row t holds: [offset_at(t), offset_at(t) + width_at(t)); empty outside 0..height-1.
  uint64_t offset_at(uint64_t t) const noexcept;
  uint64_t width_at(uint64_t t) const noexcept;
  bool holds(uint64_t t, uint64_t x) const noexcept {
    return t < height && x >= offset_at(t) && x < offset_at(t) + width_at(t);
  }
  // spread and random_nearest: kTbPeriod, at most ceil(width / radix) for spread (so later
  // dependence sets do not wrap onto earlier ones), at least 1. 0 for the other patterns.
  uint64_t period() const noexcept;
  // Task (t, x)'s dependencies: points of timestep t - 1 that row t - 1 holds, as sorted, disjoint,
  // non-adjacent ranges written to `out`; returns their count (0 at t = 0). (t, x) must be held.
  int dependency_ranges(uint64_t t, uint64_t x, TbRange (&out)[kTbMaxRanges]) const noexcept;
  // The same as a sorted list of points (for tests and predecessor lists).
  std::vector<uint64_t> dependencies(uint64_t t, uint64_t x) const;
  uint64_t tasks() const noexcept;  // sum of width_at over the timesteps
};

// The graph's tasks in (t, x) order with each task's predecessors as task indices (all below it):
// what a peer runtime's TaskDag (task_dag.h) points at.
struct TbTaskLists {
  std::vector<uint64_t> row_start;  // task index of (t, offset_at(t)); height + 1 entries
  std::vector<uint64_t> offsets;    // tasks + 1 entries
  std::vector<uint64_t> preds;
};
TbTaskLists tb_task_lists(const TbGraph& graph);

}  // namespace chiprt::perf
