// Coherence (src/node/coherence.h) and its ByteRanges: where a node buffer's valid bytes live.
// Cases from the node's rules, then random oracles: ByteRanges against a bitmap, and Coherence
// driving real byte copies between simulated locations against the one true content.
#include "node/coherence.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <random>
#include <vector>

#include "node/byte_ranges.h"

namespace chiprt::node {
namespace {

std::vector<ByteRange> ranges_of(const ByteRanges& set) {
  return {set.ranges().begin(), set.ranges().end()};
}

TEST(ByteRanges, AddMergesTouchingRangesAndRemoveSplits) {
  ByteRanges set;
  set.add(10, 20);
  set.add(30, 40);
  set.add(20, 30);  // touches both: one range
  EXPECT_EQ(ranges_of(set), (std::vector<ByteRange>{{10, 40}}));
  set.remove(15, 25);
  EXPECT_EQ(ranges_of(set), (std::vector<ByteRange>{{10, 15}, {25, 40}}));
  set.add(5, 5);  // empty: nothing
  set.remove(0, 0);
  EXPECT_EQ(set.bytes(), 20u);
  std::vector<ByteRange> gaps;
  set.gaps(0, 50, &gaps);
  EXPECT_EQ(gaps, (std::vector<ByteRange>{{0, 10}, {15, 25}, {40, 50}}));
  EXPECT_EQ(set.covered(12, 30), 3u + 5u);
  EXPECT_TRUE(set.contains(25, 40));
  EXPECT_FALSE(set.contains(14, 16));
  EXPECT_TRUE(set.contains(7, 7));
}

// Random operations against a bitmap of the same bytes.
TEST(ByteRanges, RandomOperationsMatchABitmap) {
  constexpr uint64_t kBytes = 96;
  for (uint32_t seed = 0; seed < 300; ++seed) {
    std::mt19937_64 rng(seed);
    ByteRanges set;
    std::array<bool, kBytes> bits{};
    for (int op = 0; op < 60; ++op) {
      uint64_t lo = rng() % (kBytes + 1), hi = rng() % (kBytes + 1);
      if (lo > hi) std::swap(lo, hi);
      const bool add = rng() % 2 == 0;
      add ? set.add(lo, hi) : set.remove(lo, hi);
      for (uint64_t i = lo; i < hi; ++i) bits[i] = add;
      // The set, as ranges, is the bitmap's runs: sorted, disjoint, never adjacent.
      std::vector<ByteRange> runs;
      for (uint64_t i = 0; i < kBytes; ++i) {
        if (!bits[i]) continue;
        if (!runs.empty() && runs.back().hi == i) {
          ++runs.back().hi;
        } else {
          runs.push_back({i, i + 1});
        }
      }
      ASSERT_EQ(ranges_of(set), runs) << "seed " << seed << " op " << op;
      uint64_t qlo = rng() % (kBytes + 1), qhi = rng() % (kBytes + 1);
      if (qlo > qhi) std::swap(qlo, qhi);
      uint64_t covered = 0;
      for (uint64_t i = qlo; i < qhi; ++i) covered += bits[i] ? 1 : 0;
      ASSERT_EQ(set.covered(qlo, qhi), covered) << "seed " << seed;
      std::vector<ByteRange> gaps, overlaps;
      set.gaps(qlo, qhi, &gaps);
      set.overlaps(qlo, qhi, &overlaps);
      uint64_t gap_bytes = 0, overlap_bytes = 0;
      for (const ByteRange& g : gaps) {
        for (uint64_t i = g.lo; i < g.hi; ++i) ASSERT_FALSE(bits[i]) << "seed " << seed;
        gap_bytes += g.bytes();
      }
      for (const ByteRange& o : overlaps) {
        for (uint64_t i = o.lo; i < o.hi; ++i) ASSERT_TRUE(bits[i]) << "seed " << seed;
        overlap_bytes += o.bytes();
      }
      ASSERT_EQ(gap_bytes + overlap_bytes, qhi - qlo) << "seed " << seed;
    }
  }
}

constexpr uint64_t kBuf = 0x1000;

TEST(Coherence, AReadByThreeChipsCopiesOncePerChipAndTheNextWriteInvalidatesThem) {
  Coherence c;
  c.add_buffer(kBuf, 100, 0);
  for (Location chip : {1u, 2u, 3u}) {
    std::vector<Transfer> t;
    ASSERT_TRUE(c.plan(kBuf, 0, 100, chip, Coherence::Access::Read, &t));
    ASSERT_EQ(t, (std::vector<Transfer>{{kBuf, 0, chip, 0, 100}}));
    c.copied(t[0]);
    t.clear();
    ASSERT_TRUE(c.plan(kBuf, 0, 100, chip, Coherence::Access::Read, &t));
    EXPECT_TRUE(t.empty()) << "a second read on chip " << chip << " copies nothing";
    EXPECT_TRUE(c.is_replica(kBuf, chip));
  }
  EXPECT_TRUE(c.is_replica(kBuf, 0)) << "every byte is valid elsewhere too";
  // A write of part of it on chip 2: chip 2 alone holds [20, 40); the rest stays everywhere.
  c.written(kBuf, 20, 40, 2);
  EXPECT_FALSE(c.is_replica(kBuf, 2));
  EXPECT_EQ(c.valid_bytes(kBuf, 0, 100, 1), 80u);
  EXPECT_EQ(c.valid_bytes(kBuf, 0, 100, 2), 100u);
  std::vector<Transfer> t;
  ASSERT_TRUE(c.plan(kBuf, 0, 100, 1, Coherence::Access::Read, &t));
  EXPECT_EQ(t, (std::vector<Transfer>{{kBuf, 2, 1, 20, 40}}));
  // Dropping a replica loses nothing; dropping the only copy is refused.
  c.drop_replica(kBuf, 3);
  EXPECT_FALSE(c.holds(kBuf, 3));
  EXPECT_THROW(c.drop_replica(kBuf, 2), Error);
}

TEST(Coherence, PiecesComeFromTheLowestLocationHoldingThem) {
  Coherence c;
  c.add_buffer(kBuf, 64, kHostLocation);
  c.written(kBuf, 0, 16, 3);
  c.written(kBuf, 32, 48, 1);
  std::vector<Transfer> t;
  ASSERT_TRUE(c.plan(kBuf, 8, 64, 0, Coherence::Access::Read, &t));
  EXPECT_EQ(t, (std::vector<Transfer>{{kBuf, 1, 0, 32, 48},
                                      {kBuf, 3, 0, 8, 16},
                                      {kBuf, kHostLocation, 0, 16, 32},
                                      {kBuf, kHostLocation, 0, 48, 64}}));
}

TEST(Coherence, AResetLosesOnlyTheBytesWhoseOnlyCopyWasThere) {
  Coherence c;
  c.add_buffer(kBuf, 64, 1);
  std::vector<Transfer> t;
  ASSERT_TRUE(c.plan(kBuf, 0, 32, 0, Coherence::Access::Read, &t));
  for (const Transfer& x : t) c.copied(x);
  c.lose(1, "chip 1 was reset (reset 1)");
  EXPECT_EQ(ranges_of(c.lost(kBuf)), (std::vector<ByteRange>{{32, 64}}));
  t.clear();
  EXPECT_TRUE(c.plan(kBuf, 0, 32, 2, Coherence::Access::Read, &t)) << "still on chip 0";
  t.clear();
  const Status read = c.plan(kBuf, 16, 48, 2, Coherence::Access::Read, &t);
  EXPECT_EQ(read.code(), StatusCode::InvalidDevicePointer);
  EXPECT_NE(read.message().find("[32, 48)"), std::string::npos) << read.message();
  EXPECT_NE(read.message().find("chip 1 was reset (reset 1)"), std::string::npos);
  EXPECT_TRUE(t.empty()) << "a refused plan appends nothing";
  // A write needs no copy of the lost bytes, and clears them.
  ASSERT_TRUE(c.plan(kBuf, 16, 48, 2, Coherence::Access::Write, &t));
  EXPECT_EQ(t, (std::vector<Transfer>{{kBuf, 0, 2, 16, 32}}));
  c.written(kBuf, 16, 64, 2);
  EXPECT_TRUE(c.lost(kBuf).empty());
}

TEST(Coherence, BadInputIsNamed) {
  Coherence c;
  c.add_buffer(kBuf, 10, 0);
  EXPECT_THROW(c.add_buffer(kBuf, 10, 0), Error);
  EXPECT_THROW(c.add_buffer(kBuf + 1, 10, kLocations), Error);
  std::vector<Transfer> t;
  EXPECT_EQ(c.plan(kBuf, 0, 11, 1, Coherence::Access::Read, &t).code(),
            StatusCode::InvalidArgument);
  try {
    (void)c.plan(kBuf + 64, 0, 1, 1, Coherence::Access::Read, &t);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::InvalidDevicePointer);
    EXPECT_NE(std::string(e.what()).find("0x1040"), std::string::npos) << e.what();
  }
  c.remove_buffer(kBuf);
  EXPECT_FALSE(c.has_buffer(kBuf));
}

// Real bytes moved by the plans between simulated locations, against the buffer's one true
// content: every read sees exactly the last bytes written, wherever they were written; lost bytes
// are refused exactly when their only copy was lost.
TEST(Coherence, RandomAccessesAgainstTheTrueContent) {
  constexpr uint64_t kSize = 48;
  constexpr Location kUsed[] = {0, 1, 2, 3, kHostLocation};
  for (uint32_t seed = 0; seed < 400; ++seed) {
    std::mt19937_64 rng(seed);
    Coherence c;
    std::array<std::array<uint32_t, kSize>, kLocations> data{};
    std::array<uint32_t, kSize> truth{};
    std::array<bool, kSize> lost{};
    const Location home = kUsed[rng() % 5];
    c.add_buffer(kBuf, kSize, home);
    uint32_t version = 1;
    for (uint64_t i = 0; i < kSize; ++i) truth[i] = data[home][i] = version++;
    for (int op = 0; op < 80; ++op) {
      const Location at = kUsed[rng() % 5];
      uint64_t lo = rng() % (kSize + 1), hi = rng() % (kSize + 1);
      if (lo > hi) std::swap(lo, hi);
      const int kind = static_cast<int>(rng() % 10);
      std::vector<Transfer> t;
      if (kind < 4) {  // read
        bool any_lost = false;
        for (uint64_t i = lo; i < hi; ++i) any_lost |= lost[i];
        const Status s = c.plan(kBuf, lo, hi, at, Coherence::Access::Read, &t);
        ASSERT_EQ(s.code(), any_lost ? StatusCode::InvalidDevicePointer : StatusCode::Ok)
            << "seed " << seed << " op " << op << ": " << s.message();
        for (const Transfer& x : t) {
          for (uint64_t i = x.lo; i < x.hi; ++i) data[x.to][i] = data[x.from][i];
          c.copied(x);
        }
        if (!any_lost) {
          for (uint64_t i = lo; i < hi; ++i) {
            ASSERT_EQ(data[at][i], truth[i]) << "seed " << seed << " op " << op << " byte " << i;
          }
        }
      } else if (kind < 8) {  // write part of what was made valid
        ASSERT_TRUE(c.plan(kBuf, lo, hi, at, Coherence::Access::Write, &t)) << "seed " << seed;
        for (const Transfer& x : t) {
          for (uint64_t i = x.lo; i < x.hi; ++i) data[x.to][i] = data[x.from][i];
          c.copied(x);
        }
        // The writer writes only some of its region (a strided view); the rest it holds valid.
        for (uint64_t i = lo; i < hi; ++i) {
          if (lost[i] || rng() % 3 != 0) truth[i] = data[at][i] = version++;
          if (!lost[i]) {
            ASSERT_EQ(data[at][i], truth[i]) << "seed " << seed << " byte " << i;
          }
          lost[i] = false;
        }
        c.written(kBuf, lo, hi, at);
      } else if (kind == 8 && at != kHostLocation) {  // the chip is reset
        for (uint64_t i = 0; i < kSize; ++i) {
          bool elsewhere = false;
          for (Location l : kUsed) {
            if (l != at) elsewhere |= c.valid_bytes(kBuf, i, i + 1, l) == 1;
          }
          if (c.valid_bytes(kBuf, i, i + 1, at) == 1 && !elsewhere) lost[i] = true;
        }
        c.lose(at, "chip " + std::to_string(at) + " was reset");
        data[at].fill(0xdead);
      } else if (c.is_replica(kBuf, at)) {  // evict a replica
        c.drop_replica(kBuf, at);
        data[at].fill(0xbeef);
      }
      // Every byte is valid somewhere or lost, never both.
      for (uint64_t i = 0; i < kSize; ++i) {
        bool somewhere = false;
        for (Location l : kUsed) somewhere |= c.valid_bytes(kBuf, i, i + 1, l) == 1;
        ASSERT_NE(somewhere, lost[i]) << "seed " << seed << " op " << op << " byte " << i;
        ASSERT_EQ(c.lost(kBuf).contains(i, i + 1), lost[i]) << "seed " << seed << " byte " << i;
      }
    }
  }
}

}  // namespace
}  // namespace chiprt::node
