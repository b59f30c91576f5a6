// ByteRanges: a set of bytes as sorted, disjoint, non-adjacent half-open ranges [lo, hi) — which
// bytes of a node buffer a location holds valid, or which were lost. Small (a buffer's valid set is
// a few ranges); operations are linear in the ranges they touch.
//
// Plain value; not thread-safe (its owner serialises).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace chiprt::node {

struct ByteRange {
  uint64_t lo = 0;
  uint64_t hi = 0;  // exclusive
  uint64_t bytes() const noexcept { return hi - lo; }
  bool operator==(const ByteRange&) const = default;
};

class ByteRanges {
 public:
  // Adds / removes [lo, hi) (nothing when lo >= hi).
  void add(uint64_t lo, uint64_t hi);
  void remove(uint64_t lo, uint64_t hi);
  void clear() noexcept { ranges_.clear(); }

  // Appends to `out` the parts of [lo, hi) outside the set, in order.
  void gaps(uint64_t lo, uint64_t hi, std::vector<ByteRange>* out) const;
  // Appends to `out` the parts of [lo, hi) inside the set, in order.
  void overlaps(uint64_t lo, uint64_t hi, std::vector<ByteRange>* out) const;
  // Bytes of [lo, hi) inside the set.
  uint64_t covered(uint64_t lo, uint64_t hi) const noexcept;
  bool contains(uint64_t lo, uint64_t hi) const noexcept {
    return lo >= hi || covered(lo, hi) == hi - lo;
  }

  bool empty() const noexcept { return ranges_.empty(); }
  uint64_t bytes() const noexcept;
  std::span<const ByteRange> ranges() const noexcept { return ranges_; }

 private:
  std::vector<ByteRange> ranges_;  // sorted by lo; disjoint and never adjacent
};

}  // namespace chiprt::node
