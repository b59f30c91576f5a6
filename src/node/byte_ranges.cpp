#include "node/byte_ranges.h"

#include <algorithm>

namespace chiprt::node {

namespace {

// The first range that ends at or after `at` (a range ending exactly at `at` touches it).
auto first_touching(std::vector<ByteRange>& ranges, uint64_t at) {
  return std::lower_bound(ranges.begin(), ranges.end(), at,
                          [](const ByteRange& r, uint64_t value) { return r.hi < value; });
}
template <class Ranges>  // std::vector<ByteRange>, const or not
auto first_ending_after(Ranges& ranges, uint64_t at) {
  return std::upper_bound(ranges.begin(), ranges.end(), at,
                          [](uint64_t value, const ByteRange& r) { return value < r.hi; });
}

}  // namespace

void ByteRanges::add(uint64_t lo, uint64_t hi) {
  if (lo >= hi) return;
  auto first = first_touching(ranges_, lo);
  auto last = first;
  while (last != ranges_.end() && last->lo <= hi) {
    lo = std::min(lo, last->lo);
    hi = std::max(hi, last->hi);
    ++last;
  }
  if (first == last) {
    ranges_.insert(first, ByteRange{lo, hi});
    return;
  }
  *first = ByteRange{lo, hi};
  ranges_.erase(first + 1, last);
}

void ByteRanges::remove(uint64_t lo, uint64_t hi) {
  if (lo >= hi) return;
  auto it = first_ending_after(ranges_, lo);
  while (it != ranges_.end() && it->lo < hi) {
    if (it->lo < lo && it->hi > hi) {  // splits in two
      const ByteRange tail{hi, it->hi};
      it->hi = lo;
      ranges_.insert(it + 1, tail);
      return;
    }
    if (it->lo < lo) {
      it->hi = lo;
      ++it;
    } else if (it->hi > hi) {
      it->lo = hi;
      return;
    } else {
      it = ranges_.erase(it);
    }
  }
}

void ByteRanges::gaps(uint64_t lo, uint64_t hi, std::vector<ByteRange>* out) const {
  uint64_t at = lo;
  for (auto it = first_ending_after(ranges_, lo); it != ranges_.end() && it->lo < hi && at < hi;
       ++it) {
    if (it->lo > at) out->push_back(ByteRange{at, it->lo});
    at = std::max(at, it->hi);
  }
  if (at < hi) out->push_back(ByteRange{at, hi});
}

void ByteRanges::overlaps(uint64_t lo, uint64_t hi, std::vector<ByteRange>* out) const {
  for (auto it = first_ending_after(ranges_, lo); it != ranges_.end() && it->lo < hi; ++it) {
    out->push_back(ByteRange{std::max(lo, it->lo), std::min(hi, it->hi)});
  }
}

uint64_t ByteRanges::covered(uint64_t lo, uint64_t hi) const noexcept {
  uint64_t bytes = 0;
  if (lo >= hi) return 0;
  for (auto it = first_ending_after(ranges_, lo); it != ranges_.end() && it->lo < hi; ++it) {
    bytes += std::min(hi, it->hi) - std::max(lo, it->lo);
  }
  return bytes;
}

uint64_t ByteRanges::bytes() const noexcept {
  uint64_t total = 0;
  for (const ByteRange& r : ranges_) total += r.bytes();
  return total;
}

}  // namespace chiprt::node
