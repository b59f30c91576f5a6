#include "task_bench_patterns.h"

#include <algorithm>

namespace chiprt::perf {

namespace {

constexpr const char* kNames[] = {"trivial", "no_comm", "stencil_1d",    "stencil_1d_periodic",
                                  "dom",     "tree",    "fft",           "all_to_all",
                                  "nearest", "spread",  "random_nearest"};
static_assert(std::size(kNames) == std::size(kAllTbPatterns));

uint64_t mix(uint64_t z) noexcept {  // splitmix64's finaliser
  z = (z ^ (z >> 30)) * 0xbf58'476d'1ce4'e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d0'49bb'1331'11ebull;
  return z ^ (z >> 31);
}

// A uniform value in [0, 1) fixed by the seed and the three values.
double hash_uniform(uint64_t a, uint64_t b, uint64_t c) noexcept {
  uint64_t h = mix(kTbSeed + a);
  h = mix(h ^ (b + 0x9e37'79b9'7f4a'7c15ull));
  h = mix(h ^ (c + 0x9e37'79b9'7f4a'7c15ull));
  return static_cast<double>(h >> 11) * (1.0 / 9007199254740992.0);
}

// ceil(log2(width)), at least 1.
uint64_t fft_stages(uint64_t width) noexcept {
  uint64_t stages = 0;
  while ((uint64_t{1} << stages) < width) ++stages;
  return std::max<uint64_t>(stages, 1);
}

// Collects candidate ranges, then clips them to the row t - 1 holds, sorts and merges them.
class RangeSet {
 public:
  void add(uint64_t first, uint64_t last) noexcept {
    if (count_ < kCapacity) ranges_[count_++] = {first, last};
  }
  void add(uint64_t point) noexcept { add(point, point); }
  int finish(uint64_t lo, uint64_t hi_exclusive, TbRange (&out)[kTbMaxRanges]) noexcept {
    int kept = 0;
    for (int i = 0; i < count_; ++i) {
      const uint64_t first = std::max(ranges_[i].first, lo);
      if (hi_exclusive == 0) continue;
      const uint64_t last = std::min(ranges_[i].last, hi_exclusive - 1);
      if (first <= last) ranges_[kept++] = {first, last};
    }
    std::sort(ranges_, ranges_ + kept,
              [](const TbRange& a, const TbRange& b) { return a.first < b.first; });
    int n = 0;
    for (int i = 0; i < kept; ++i) {
      if (n > 0 && ranges_[i].first <= out[n - 1].last + 1) {
        out[n - 1].last = std::max(out[n - 1].last, ranges_[i].last);
      } else {
        out[n++] = ranges_[i];
      }
    }
    return n;
  }

 private:
  static constexpr int kCapacity = 8;
  TbRange ranges_[kCapacity];
  int count_ = 0;
};

}  // namespace

std::string_view tb_pattern_name(TbPattern pattern) noexcept {
  const auto i = static_cast<std::size_t>(pattern);
  return i < std::size(kNames) ? kNames[i] : "invalid";
}

bool parse_tb_pattern(std::string_view name, TbPattern* out) noexcept {
  for (const TbPattern p : kAllTbPatterns) {
    if (tb_pattern_name(p) == name) {
      *out = p;
      return true;
    }
  }
  return false;
}

std::string tb_pattern_names() {
  std::string text;
  for (const TbPattern p : kAllTbPatterns)
    text += std::string(text.empty() ? "" : ", ") + std::string(tb_pattern_name(p));
  return text;
}

uint64_t TbGraph::offset_at(uint64_t t) const noexcept {
  if (t >= height || pattern != TbPattern::Dom) return 0;
  return t + width > height ? t + width - height : 0;
}

uint64_t TbGraph::width_at(uint64_t t) const noexcept {
  if (t >= height) return 0;
  switch (pattern) {
    case TbPattern::Dom:
      return std::min({width, t + 1, height - t});
    case TbPattern::Tree:
      return t >= 63 ? width : std::min(width, uint64_t{1} << t);
    default:
      return width;
  }
}

uint64_t TbGraph::period() const noexcept {
  if (pattern == TbPattern::Spread) {
    return std::clamp<uint64_t>(kTbPeriod, 1, (width + kTbRadix - 1) / kTbRadix);
  }
  return pattern == TbPattern::RandomNearest ? kTbPeriod : 0;
}

int TbGraph::dependency_ranges(uint64_t t, uint64_t x,
                               TbRange (&out)[kTbMaxRanges]) const noexcept {
  if (t == 0 || t >= height) return 0;
  const uint64_t w = width;
  RangeSet set;
  switch (pattern) {
    case TbPattern::Trivial:
      break;
    case TbPattern::NoComm:
      set.add(x);
      break;
    case TbPattern::Stencil1d:
      set.add(x > 0 ? x - 1 : 0, x + 1);
      break;
    case TbPattern::Stencil1dPeriodic:
      set.add(x > 0 ? x - 1 : 0, x + 1);
      if (x == 0) set.add(w - 1);
      if (x + 1 >= w) set.add(0);
      break;
    case TbPattern::Dom:
      set.add(x > 0 ? x - 1 : 0, x);
      break;
    case TbPattern::Tree:
      set.add(x / 2);
      break;
    case TbPattern::Fft: {
      const uint64_t stages = fft_stages(w);
      const uint64_t stride = uint64_t{1} << ((t + stages - 1) % stages);
      if (x >= stride) set.add(x - stride);
      set.add(x);
      set.add(x + stride);  // clipped when beyond the row
      break;
    }
    case TbPattern::AllToAll:
      set.add(0, w - 1);
      break;
    case TbPattern::Nearest:
      set.add(x > kTbRadix / 2 ? x - kTbRadix / 2 : 0, x + (kTbRadix - 1) / 2);
      break;
    case TbPattern::Spread: {
      const uint64_t dset = t % period();
      for (uint64_t i = 0; i < kTbRadix; ++i)
        set.add((x + i * w / kTbRadix + (i > 0 ? dset : 0)) % w);
      break;
    }
    case TbPattern::RandomNearest: {
      const uint64_t dset = t % period();
      const uint64_t first = x > kTbRadix / 2 ? x - kTbRadix / 2 : 0;
      const uint64_t last = std::min(x + (kTbRadix - 1) / 2, w - 1);
      for (uint64_t i = first; i <= last; ++i) {
        if (i == x || hash_uniform(dset, i, x) < kTbFractionConnected) set.add(i);
      }
      break;
    }
  }
  const uint64_t lo = offset_at(t - 1);
  return set.finish(lo, lo + width_at(t - 1), out);
}

std::vector<uint64_t> TbGraph::dependencies(uint64_t t, uint64_t x) const {
  TbRange ranges[kTbMaxRanges];
  const int n = dependency_ranges(t, x, ranges);
  std::vector<uint64_t> points;
  for (int i = 0; i < n; ++i) {
    for (uint64_t p = ranges[i].first; p <= ranges[i].last; ++p) points.push_back(p);
  }
  return points;
}

uint64_t TbGraph::tasks() const noexcept {
  uint64_t n = 0;
  for (uint64_t t = 0; t < height; ++t) n += width_at(t);
  return n;
}

TbTaskLists tb_task_lists(const TbGraph& graph) {
  TbTaskLists lists;
  lists.row_start.reserve(graph.height + 1);
  uint64_t next = 0;
  for (uint64_t t = 0; t < graph.height; ++t) {
    lists.row_start.push_back(next);
    next += graph.width_at(t);
  }
  lists.row_start.push_back(next);
  lists.offsets.reserve(next + 1);
  lists.offsets.push_back(0);
  TbRange ranges[kTbMaxRanges];
  for (uint64_t t = 0; t < graph.height; ++t) {
    const uint64_t lo = graph.offset_at(t);
    for (uint64_t x = lo; x < lo + graph.width_at(t); ++x) {
      const int n = graph.dependency_ranges(t, x, ranges);
      for (int i = 0; i < n; ++i) {
        for (uint64_t p = ranges[i].first; p <= ranges[i].last; ++p) {
          lists.preds.push_back(lists.row_start[t - 1] + (p - graph.offset_at(t - 1)));
        }
      }
      lists.offsets.push_back(lists.preds.size());
    }
  }
  return lists;
}

}  // namespace chiprt::perf
