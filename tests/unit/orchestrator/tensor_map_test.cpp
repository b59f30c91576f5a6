// TensorMap: overlap decisions (exact and conservative), covering writes, entry bookkeeping, and
// the size-grouped hash-grid index checked against brute-force scans.
#include "orchestrator/tensor_map.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <vector>

#include "chiprt/tensor.h"

namespace chiprt::orchestrator {
namespace {

constexpr DeviceBuffer kBuf{0x10000, 1 << 20};

Tensor matrix(uint64_t rows, uint64_t cols, DataType dtype = DataType::F32) {
  return Tensor::make(kBuf, {rows, cols}, dtype);
}

// The same view: start, element size, rank, shape and strides.
bool same_region(const TensorRegion& a, const TensorRegion& b) {
  if (a.start_offset != b.start_offset || a.element_bytes != b.element_bytes || a.ndim != b.ndim ||
      a.bounded != b.bounded) {
    return false;
  }
  for (uint32_t d = 0; d < a.ndim; ++d) {
    if (a.shape[d] != b.shape[d] || a.strides[d] != b.strides[d]) return false;
  }
  return true;
}

bool overlap(const Tensor& a, const Tensor& b) {
  const bool ab = regions_may_overlap(TensorRegion::of(a), TensorRegion::of(b));
  const bool ba = regions_may_overlap(TensorRegion::of(b), TensorRegion::of(a));
  EXPECT_EQ(ab, ba) << "overlap must be symmetric";
  return ab;
}

// Every byte an element of `t` occupies, relative to the buffer start.
std::set<uint64_t> bytes_of(const Tensor& t) {
  std::set<uint64_t> out;
  if (t.numel() == 0) return out;
  std::vector<uint64_t> idx(t.ndim, 0);
  while (true) {
    uint64_t e = t.start_offset;
    for (uint32_t d = 0; d < t.ndim; ++d) e += idx[d] * t.strides[d];
    for (uint64_t b = 0; b < t.element_bytes(); ++b) out.insert(e * t.element_bytes() + b);
    uint32_t d = t.ndim;
    while (d > 0) {
      --d;
      if (++idx[d] < t.shape[d]) break;
      idx[d] = 0;
      if (d == 0) return out;
    }
  }
}

// The tasks a read (or a write) of `t` waits for, each once, ascending.
std::vector<TaskId> tasks_of(const TensorMap& map, const Tensor& t, bool write) {
  std::vector<TaskId> out;
  auto on_task = [&](TaskId id) { out.push_back(id); };
  if (write) {
    map.lookup_write(t, on_task);
  } else {
    map.lookup(t, on_task);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

bool truly_overlap(const Tensor& a, const Tensor& b) {
  const auto sa = bytes_of(a);
  for (uint64_t x : bytes_of(b)) {
    if (sa.count(x)) return true;
  }
  return false;
}

TEST(TensorRegion, ExtentMatchesTensorByteExtent) {
  const Tensor t = matrix(8, 16).view({4, 4}, {2, 8});
  const TensorRegion r = TensorRegion::of(t);
  uint64_t lo = 0, hi = 0;
  t.byte_extent(&lo, &hi);
  EXPECT_EQ(r.lo, lo);
  EXPECT_EQ(r.hi, hi);
  EXPECT_TRUE(r.bounded);
  EXPECT_FALSE(r.empty());
  EXPECT_TRUE(TensorRegion::of(matrix(8, 16).view({0, 4}, {0, 0})).empty());
}

TEST(TensorRegion, OverflowingHandMadeTensorIsUnboundedAndOverlapsEverything) {
  Tensor forged = matrix(8, 16);
  forged.shape[0] = UINT64_MAX;
  forged.strides[0] = UINT64_MAX / 2;
  const TensorRegion r = TensorRegion::of(forged);
  EXPECT_FALSE(r.bounded);
  EXPECT_FALSE(r.empty());
  EXPECT_TRUE(regions_may_overlap(r, TensorRegion::of(matrix(1, 1))));
  EXPECT_FALSE(region_covers(r, TensorRegion::of(matrix(1, 1))));
  Tensor bad_rank = matrix(8, 16);
  bad_rank.ndim = 7;
  EXPECT_FALSE(TensorRegion::of(bad_rank).bounded);
  Tensor bad_dtype = matrix(8, 16);
  bad_dtype.dtype = static_cast<DataType>(200);
  EXPECT_TRUE(regions_may_overlap(TensorRegion::of(bad_dtype), TensorRegion::of(matrix(1, 1))));
}

TEST(Overlap, DisjointRowsOf2D) {
  const Tensor t = matrix(8, 16);
  EXPECT_FALSE(overlap(t.view({4, 16}, {0, 0}), t.view({4, 16}, {4, 0})));
  EXPECT_TRUE(overlap(t.view({4, 16}, {0, 0}), t.view({4, 16}, {3, 0})));
}

TEST(Overlap, DisjointColumnsOf2DAreExactDespiteInterleavedExtents) {
  const Tensor t = matrix(8, 16);
  const Tensor left = t.view({8, 8}, {0, 0});
  const Tensor right = t.view({8, 8}, {0, 8});
  uint64_t llo, lhi, rlo, rhi;
  left.byte_extent(&llo, &lhi);
  right.byte_extent(&rlo, &rhi);
  ASSERT_LT(rlo, lhi) << "extents interleave; only the exact test can separate them";
  EXPECT_FALSE(overlap(left, right));
  EXPECT_TRUE(overlap(left, t.view({8, 1}, {0, 7})));
  EXPECT_FALSE(overlap(left, t.view({8, 1}, {0, 8})));
}

TEST(Overlap, TilesOf2D) {
  const Tensor t = matrix(16, 16);
  const Tensor tile = t.view({4, 4}, {4, 4});
  EXPECT_FALSE(overlap(tile, t.view({4, 4}, {0, 4})));
  EXPECT_FALSE(overlap(tile, t.view({4, 4}, {4, 8})));
  EXPECT_FALSE(overlap(tile, t.view({4, 4}, {8, 0})));
  EXPECT_TRUE(overlap(tile, t.view({4, 4}, {7, 7})));
  EXPECT_TRUE(overlap(tile, t.view({1, 1}, {5, 6})));
  EXPECT_TRUE(overlap(tile, t));
}

TEST(Overlap, IdenticalViewsOverlap) {
  const Tensor t = matrix(8, 16);
  EXPECT_TRUE(overlap(t, t));
  const Tensor v = t.view({2, 3}, {5, 7});
  EXPECT_TRUE(overlap(v, v));
  const Tensor s = t.slice(1, 1, 16, 4);
  EXPECT_TRUE(overlap(s, s));
}

TEST(Overlap, InterleavedStridedViewsAreDisjointExactly) {
  const Tensor t = matrix(8, 16);
  EXPECT_FALSE(overlap(t.slice(1, 0, 16, 2), t.slice(1, 1, 16, 2)));  // even / odd columns
  EXPECT_FALSE(overlap(t.slice(0, 0, 8, 2), t.slice(0, 1, 8, 2)));    // even / odd rows
  EXPECT_TRUE(overlap(t.slice(1, 0, 16, 2), t.slice(1, 2, 16, 4)));
  EXPECT_FALSE(overlap(t.slice(1, 1, 16, 4), t.slice(1, 3, 16, 4)));
  const Tensor flat = Tensor::make(kBuf, {4096}, DataType::F32);
  EXPECT_FALSE(overlap(flat.slice(0, 0, 4096, 3), flat.slice(0, 1, 4096, 3)));
}

TEST(Overlap, ThreeDimensionalInterleavedBlocks) {
  const Tensor t = Tensor::make(kBuf, {4, 6, 8}, DataType::F16);
  const Tensor a = t.slice(2, 0, 8, 2).view({2, 3, 4}, {0, 0, 0});
  const Tensor b = t.slice(2, 1, 8, 2).view({2, 3, 4}, {0, 0, 0});
  const Tensor c = t.slice(2, 0, 8, 2).view({2, 3, 4}, {2, 3, 0});
  EXPECT_FALSE(overlap(a, b));
  EXPECT_FALSE(overlap(a, c));
  EXPECT_TRUE(overlap(a, t.view({1, 1, 1}, {1, 2, 6})));
}

TEST(Overlap, TransposeVersusOriginalOverlaps) {
  const Tensor t = matrix(8, 8);
  EXPECT_TRUE(overlap(t, t.transpose(0, 1)));
  EXPECT_TRUE(overlap(t.view({4, 4}, {0, 0}), t.transpose(0, 1).view({4, 4}, {0, 0})));
  // The transposed upper-right tile is the lower-left tile: same bytes.
  EXPECT_TRUE(overlap(t.view({4, 4}, {4, 0}), t.transpose(0, 1).view({4, 4}, {0, 4})));
}

TEST(Overlap, DifferentElementSizesAreComparedByBytes) {
  const Tensor words = Tensor::make(kBuf, {16}, DataType::F32);
  const Tensor bytes = Tensor::make(kBuf, {64}, DataType::U8);
  EXPECT_TRUE(overlap(words.view({1}, {1}), bytes.view({1}, {7})));
  EXPECT_FALSE(overlap(words.view({1}, {1}), bytes.view({1}, {8})));
  EXPECT_FALSE(overlap(words.view({1}, {2}), bytes.view({4}, {4})));
}

TEST(Overlap, EmptyViewsTouchNothing) {
  const Tensor t = matrix(8, 16);
  EXPECT_FALSE(overlap(t, t.view({0, 16}, {2, 0})));
}

TEST(Overlap, UnprovableCaseIsConservative) {
  // Bytes 0,4,8,... against bytes 1,7,13,...: truly disjoint (even vs odd), but no common stride
  // and a huge search space: the search gives up and reports an overlap.
  const DeviceBuffer buf{0x10000, 1 << 22};
  const Tensor flat = Tensor::make(buf, {1 << 22}, DataType::U8);
  const Tensor every4 = flat.slice(0, 0, 1 << 22, 4);
  const Tensor every6 = flat.slice(0, 1, 1 << 22, 6);
  EXPECT_TRUE(overlap(every4, every6));
  // The same pair in a small buffer is decided exactly.
  const Tensor small = Tensor::make(kBuf, {96}, DataType::U8);
  EXPECT_FALSE(overlap(small.slice(0, 0, 96, 4), small.slice(0, 1, 96, 6)));
}

TEST(Overlap, RandomViewsAreSoundAndExactWhenSmall) {
  std::mt19937_64 rng(12345);
  const Tensor base = Tensor::make(kBuf, {6, 5, 4}, DataType::F32);
  const Tensor bytes = Tensor::make(kBuf, {480}, DataType::U8).reshape({6, 5, 16});
  auto random_view = [&](const Tensor& src) {
    Tensor v = src;
    for (uint32_t d = 0; d < v.ndim; ++d) {
      const uint64_t n = v.shape[d];
      const uint64_t start = rng() % n;
      const uint64_t end = start + 1 + rng() % (n - start);
      const uint64_t step = 1 + rng() % 3;
      v = v.slice(d, start, end, step);
    }
    if (rng() % 4 == 0) v = v.transpose(0, 2);
    return v;
  };
  int exact_disjoint = 0;
  for (int i = 0; i < 3000; ++i) {
    const Tensor a = random_view(base);
    const Tensor b = random_view(rng() % 3 == 0 ? bytes : base);
    const bool truth = truly_overlap(a, b);
    const bool decided = overlap(a, b);
    ASSERT_EQ(decided, truth) << a.to_string() << " vs " << b.to_string();
    exact_disjoint += !truth;
    const bool covers = region_covers(TensorRegion::of(a), TensorRegion::of(b));
    if (covers) {
      const auto sa = bytes_of(a);
      for (uint64_t x : bytes_of(b)) ASSERT_TRUE(sa.count(x)) << "covers is unsound";
    }
  }
  EXPECT_GT(exact_disjoint, 100);
}

TEST(Covers, DenseOuterCoversAnythingInsideItsExtent) {
  const Tensor t = matrix(8, 16);
  const TensorRegion whole = TensorRegion::of(t);
  EXPECT_TRUE(region_covers(whole, TensorRegion::of(t.view({2, 3}, {4, 5}))));
  EXPECT_TRUE(region_covers(whole, TensorRegion::of(t.slice(1, 1, 16, 3))));
  EXPECT_TRUE(region_covers(whole, whole));
  EXPECT_FALSE(region_covers(TensorRegion::of(t.view({4, 16}, {0, 0})), whole));
}

TEST(Covers, SameLayoutStridedBoxContainment) {
  const Tensor t = matrix(16, 16);
  const Tensor cols = t.view({16, 4}, {0, 4});  // not dense
  EXPECT_TRUE(region_covers(TensorRegion::of(cols), TensorRegion::of(t.view({3, 2}, {5, 6}))));
  EXPECT_FALSE(region_covers(TensorRegion::of(cols), TensorRegion::of(t.view({3, 2}, {5, 7}))));
  const Tensor even = t.slice(1, 0, 16, 2);
  EXPECT_TRUE(region_covers(TensorRegion::of(even), TensorRegion::of(even.view({2, 2}, {3, 1}))));
  EXPECT_FALSE(region_covers(TensorRegion::of(even), TensorRegion::of(t.slice(1, 1, 16, 2))));
  // Different layout over the same bytes: not provable by the box test, so not covering.
  EXPECT_FALSE(region_covers(TensorRegion::of(cols),
                             TensorRegion::of(t.transpose(0, 1).view({4, 16}, {4, 0}))));
}

TEST(TensorMap, LookupReportsOverlappingWritersOnly) {
  TensorMap map;
  const Tensor t = matrix(8, 16);
  map.record_write(t.view({4, 16}, {0, 0}), 1);
  map.record_write(t.view({4, 16}, {4, 0}), 2);
  map.record_write(Tensor::make(DeviceBuffer{0x900000, 4096}, {16}, DataType::F32), 3);
  EXPECT_EQ(map.entry_count(), 3u);
  EXPECT_EQ(map.buffer_count(), 2u);
  auto writers_of = [&](const Tensor& q) {
    std::vector<TaskId> w;
    map.lookup(q, [&](TaskId id) { w.push_back(id); });
    std::sort(w.begin(), w.end());
    return w;
  };
  EXPECT_EQ(writers_of(t), (std::vector<TaskId>{1, 2}));
  EXPECT_EQ(writers_of(t.view({1, 16}, {5, 0})), (std::vector<TaskId>{2}));
  EXPECT_EQ(writers_of(t.view({8, 1}, {0, 3})), (std::vector<TaskId>{1, 2}));
  EXPECT_TRUE(writers_of(Tensor::make(DeviceBuffer{0x500000, 64}, {16}, DataType::F32)).empty());
}

TEST(TensorMap, ChainOfInoutWritesKeepsOneEntry) {
  TensorMap map;
  const Tensor t = matrix(64, 64);
  for (TaskId id = 0; id < 10000; ++id) {
    TaskId last = kNoTask;
    int seen = 0;
    map.lookup(t, [&](TaskId w) {
      last = w;
      ++seen;
    });
    ASSERT_EQ(seen, id == 0 ? 0 : 1);
    ASSERT_EQ(last, id - 1 >= 0 ? id - 1 : kNoTask);
    map.record_write(t, id);
    ASSERT_EQ(map.entry_count(), 1u);
  }
}

TEST(TensorMap, RepeatedTileWritesKeepOneEntryPerTile) {
  TensorMap map;
  const Tensor t = matrix(16, 16);
  for (int round = 0; round < 50; ++round) {
    for (uint64_t r = 0; r < 4; ++r) {
      for (uint64_t c = 0; c < 4; ++c) {
        map.record_write(t.view({4, 4}, {4 * r, 4 * c}),
                         round * 16 + static_cast<TaskId>(r * 4 + c));
      }
    }
  }
  EXPECT_EQ(map.entry_count(), 16u);
  map.record_write(t, 9999);  // the whole tensor covers every tile
  EXPECT_EQ(map.entry_count(), 1u);
  EXPECT_EQ(map.entries_of(kBuf.addr), 1u);
}

// A lookup that meets no entry lets the following record_write skip its search for entries to
// drop or reuse, but only while nothing was written in between: a write after the lookup (here
// inside the prepared tile, then of the tile itself) must still be dropped or reused.
TEST(TensorMap, PreparedWriteSeesEntriesRecordedAfterItsLookup) {
  const Tensor t = matrix(8, 8);
  const Tensor tile = t.view({4, 4}, {4, 4});
  for (const bool same_view : {false, true}) {
    TensorMap map;
    map.record_write(t.view({4, 4}, {0, 0}), 1);  // indexes the buffer; far from `tile`
    TensorMap::Prepared prepared;
    std::vector<TaskId> w;
    map.lookup_write(
        tile, [&](TaskId id) { w.push_back(id); }, &prepared);
    EXPECT_TRUE(w.empty());
    const uint32_t between =
        map.record_write(same_view ? tile : t.view({2, 2}, {5, 5}), 2);  // after the lookup
    const uint32_t entry = map.record_write(tile, 3, prepared);
    EXPECT_EQ(map.entry_count(), 2u) << "same_view " << same_view;
    if (same_view) {
      EXPECT_EQ(entry, between);  // the identical view's entry is reused
    }
    w.clear();
    map.lookup(tile, [&](TaskId id) { w.push_back(id); });
    EXPECT_EQ(w, (std::vector<TaskId>{3})) << "same_view " << same_view;
  }
  // With no write in between, the prepared write records the tile next to the far entry.
  TensorMap map;
  map.record_write(t.view({4, 4}, {0, 0}), 1);
  TensorMap::Prepared prepared;
  map.lookup_write(
      tile, [](TaskId) {}, &prepared);
  map.record_write(tile, 2, prepared);
  EXPECT_EQ(map.entry_count(), 2u);
  std::vector<TaskId> w;
  map.lookup(t, [&](TaskId id) { w.push_back(id); });
  std::sort(w.begin(), w.end());
  EXPECT_EQ(w, (std::vector<TaskId>{1, 2}));
}

TEST(TensorMap, PartialWriteDoesNotDropTheWiderEntry) {
  TensorMap map;
  const Tensor t = matrix(8, 16);
  map.record_write(t, 1);
  map.record_write(t.view({2, 2}, {0, 0}), 2);
  std::vector<TaskId> w;
  map.lookup(t.view({1, 1}, {7, 15}), [&](TaskId id) { w.push_back(id); });
  EXPECT_EQ(w, (std::vector<TaskId>{1}));
  EXPECT_EQ(map.entry_count(), 2u);
}

TEST(TensorMap, EmptyWritesAreNotRecorded) {
  TensorMap map;
  map.record_write(matrix(8, 16).view({0, 16}, {0, 0}), 1);
  EXPECT_EQ(map.entry_count(), 0u);
  EXPECT_EQ(map.buffer_count(), 0u);
}

TEST(TensorMap, EraseBufferDropsItsEntriesOnly) {
  TensorMap map;
  const Tensor a = Tensor::make(DeviceBuffer{0x1000, 256}, {64}, DataType::F32);
  const Tensor b = Tensor::make(DeviceBuffer{0x2000, 256}, {64}, DataType::F32);
  map.record_write(a.view({32}, {0}), 1);
  map.record_write(a.view({32}, {32}), 2);
  map.record_write(b, 3);
  map.erase_buffer(a.buffer.addr);
  EXPECT_EQ(map.entry_count(), 1u);
  EXPECT_EQ(map.entries_of(a.buffer.addr), 0u);
  int seen = 0;
  map.lookup(a, [&](TaskId) { ++seen; });
  EXPECT_EQ(seen, 0);
  map.lookup(b, [&](TaskId id) {
    EXPECT_EQ(id, 3);
    ++seen;
  });
  EXPECT_EQ(seen, 1);
  map.erase_buffer(0x777000);  // unknown: no effect
  EXPECT_EQ(map.entry_count(), 1u);
  map.clear();
  EXPECT_EQ(map.entry_count(), 0u);
  EXPECT_EQ(map.buffer_count(), 0u);
}

TEST(TensorMap, ManyBuffersSurviveGrowthAndRandomErasure) {
  TensorMap map;
  std::vector<uint64_t> addrs;
  for (uint64_t i = 0; i < 5000; ++i) addrs.push_back(0x100000 + i * 64);
  for (uint64_t i = 0; i < addrs.size(); ++i) {
    map.record_write(Tensor::make(DeviceBuffer{addrs[i], 64}, {16}, DataType::F32),
                     static_cast<TaskId>(i));
  }
  EXPECT_EQ(map.buffer_count(), addrs.size());
  std::mt19937_64 rng(7);
  std::vector<uint64_t> order(addrs.size());
  for (uint64_t i = 0; i < order.size(); ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<bool> erased(addrs.size(), false);
  for (uint64_t k = 0; k < order.size() / 2; ++k) {
    map.erase_buffer(addrs[order[k]]);
    erased[order[k]] = true;
  }
  EXPECT_EQ(map.buffer_count(), addrs.size() - order.size() / 2);
  for (uint64_t i = 0; i < addrs.size(); ++i) {
    std::vector<TaskId> w;
    map.lookup(Tensor::make(DeviceBuffer{addrs[i], 64}, {16}, DataType::F32),
               [&](TaskId id) { w.push_back(id); });
    if (erased[i]) {
      ASSERT_TRUE(w.empty()) << i;
    } else {
      ASSERT_EQ(w, (std::vector<TaskId>{static_cast<TaskId>(i)})) << i;
    }
  }
}

// The indexed map against a plain list with the same rules (report every entry that may
// overlap; a write drops the entries it covers), over random tiles, rows, columns, strided and
// 1-D views, unbounded tensors and buffer erasure.
TEST(TensorMap, IndexedMapMatchesBruteForceList) {
  std::mt19937_64 rng(2024);
  const DeviceBuffer buffers[2] = {{0x40000, 1 << 16}, {0x80000, 1 << 16}};
  struct Model {
    uint64_t addr;
    TensorRegion region;
    TaskId writer;
  };
  std::vector<Model> model;
  TensorMap map;
  auto random_view = [&](const DeviceBuffer& buf) {
    const Tensor m = Tensor::make(buf, {32, 24}, DataType::F32);
    switch (rng() % 7) {
      case 0: {  // tile
        const uint64_t r = rng() % 32, c = rng() % 24;
        return m.view({1 + rng() % (32 - r), 1 + rng() % (24 - c)}, {r, c});
      }
      case 1:
        return m.view({1 + rng() % 4, 24}, {rng() % 28, 0});  // row band
      case 2:
        return m.view({32, 1 + rng() % 4}, {0, rng() % 20});  // column band
      case 3:
        return m.slice(1, rng() % 3, 24, 1 + rng() % 3).slice(0, rng() % 4, 32, 1 + rng() % 2);
      case 4: {  // 1-D run over the flat buffer
        const Tensor flat = Tensor::make(buf, {768}, DataType::F32);
        const uint64_t s = rng() % 768;
        return flat.slice(0, s, s + 1 + rng() % (768 - s), 1 + rng() % 2);
      }
      case 5:
        return Tensor::make(buf, {3072}, DataType::U8).slice(0, rng() % 100, 3072, 1 + rng() % 5);
      default:
        return m.transpose(0, 1).view({1 + rng() % 6, 1 + rng() % 6}, {rng() % 18, rng() % 26});
    }
  };
  for (int round = 0; round < 40; ++round) {
    for (int op = 0; op < 150; ++op) {
      const DeviceBuffer& buf = buffers[rng() % 2];
      Tensor t = random_view(buf);
      if (rng() % 60 == 0) {  // forged geometry: unbounded, overlaps everything
        t.shape[0] = UINT64_MAX;
        t.strides[0] = UINT64_MAX / 2;
      }
      const TensorRegion region = TensorRegion::of(t);
      std::vector<TaskId> expected, got;
      for (const Model& m : model) {
        if (m.addr == buf.addr && regions_may_overlap(m.region, region)) {
          expected.push_back(m.writer);
        }
      }
      map.lookup(t, [&](TaskId id) { got.push_back(id); });
      std::sort(expected.begin(), expected.end());
      std::sort(got.begin(), got.end());
      got.erase(std::unique(got.begin(), got.end()), got.end());
      ASSERT_EQ(got, expected) << "round " << round << " op " << op << ": " << t.to_string();
      if (rng() % 2 == 0) {
        const TaskId writer = round * 1000 + op;
        if (!region.empty()) {
          std::erase_if(model, [&](const Model& m) {
            return m.addr == buf.addr && region_covers(region, m.region);
          });
          model.push_back(Model{buf.addr, region, writer});
        }
        map.record_write(t, writer);
      }
      ASSERT_EQ(map.entry_count(), model.size());
    }
    if (round % 5 == 4) {
      const uint64_t addr = buffers[rng() % 2].addr;
      std::erase_if(model, [&](const Model& m) { return m.addr == addr; });
      map.erase_buffer(addr);
    }
    for (const DeviceBuffer& buf : buffers) {
      const auto n = static_cast<std::size_t>(std::count_if(
          model.begin(), model.end(), [&](const Model& m) { return m.addr == buf.addr; }));
      ASSERT_EQ(map.entries_of(buf.addr), n);
    }
  }
}

// The map as a ring orchestrator drives it (read and write lookups, reads and writes returning
// entry ids, erase_entry of retired tasks, erase_buffer, lookups that prepare the record that
// follows, also when the map changed in between), against a brute-force list with the same
// rules: a read is told every overlapping writer, a write every overlapping writer and reader; a
// read drops nothing, a write drops the entries of both kinds its region covers; readers of an
// identical view may share an entry (and only they). Views of
// many sizes on several buffers (more size groups than a buffer holds), 1-D runs, strided,
// transposed and forged (unbounded) views.
TEST(TensorMap, RingUseMatchesBruteForceScan) {
  std::mt19937_64 rng(99);
  const DeviceBuffer buffers[3] = {{0x40000, 1 << 16}, {0x80000, 1 << 16}, {0xc0000, 1 << 16}};
  struct Model {
    uint64_t addr;
    TensorRegion region;
    TaskId writer;  // the writer or the reader
    uint32_t entry;
    bool reads;
    Tensor tensor;
  };
  std::vector<Model> model;
  std::vector<std::pair<uint32_t, TaskId>> written;  // (entry, writer), oldest first
  std::vector<std::pair<TaskId, Tensor>> writes;     // every recorded write, oldest first
  TensorMap map;
  auto random_view = [&](const DeviceBuffer& buf) {
    // The third buffer is a 48 x 64 matrix: a power-of-two row pitch (256 bytes) next to the
    // 192-byte pitch of the others, so both ways of finding a view's rows are compared.
    const uint64_t rows = buf.addr == buffers[2].addr ? 48 : 64;
    const uint64_t cols = 3072 / rows;
    const Tensor m = Tensor::make(buf, {rows, cols}, DataType::F32);
    switch (rng() % 8) {
      case 0:
      case 1:
      case 2: {  // any rectangle: many size groups
        const uint64_t r = rng() % rows, c = rng() % cols;
        return m.view({1 + rng() % (rows - r), 1 + rng() % (cols - c)}, {r, c});
      }
      case 3: {  // aligned tiles, rewritten often
        const uint64_t t = 1 + rng() % 3;
        const uint64_t edge = uint64_t{4} << (t - 1);
        return m.view({edge, edge},
                      {edge * (rng() % (rows / edge)), edge * (rng() % (cols / edge))});
      }
      case 4: {  // 1-D run
        const Tensor flat = Tensor::make(buf, {3072}, DataType::F32);
        const uint64_t s = rng() % 3072;
        return flat.view({1 + rng() % std::min<uint64_t>(3072 - s, 300)}, {s});
      }
      case 5:
        return m.slice(1, rng() % 3, cols, 1 + rng() % 3).slice(0, rng() % 4, rows, 1 + rng() % 2);
      case 6:
        return Tensor::make(buf, {12288}, DataType::U8).slice(0, rng() % 100, 12288, 1 + rng() % 5);
      default:
        return m.transpose(0, 1).view({1 + rng() % 8, 1 + rng() % 8},
                                      {rng() % (cols - 8), rng() % (rows - 8)});
    }
  };
  // Entries are the distinct ids of the model; readers its reads.
  auto check_counts = [&](int step) {
    std::set<uint32_t> entries, reader_entries;
    std::size_t readers = 0;
    for (const Model& m : model) {
      entries.insert(m.entry);
      if (m.reads) reader_entries.insert(m.entry);
      readers += m.reads;
    }
    ASSERT_EQ(map.entry_count(), entries.size()) << "step " << step;
    ASSERT_EQ(map.reader_entry_count(), reader_entries.size()) << "step " << step;
    ASSERT_EQ(map.reader_count(), readers) << "step " << step;
  };
  TaskId next_writer = 0;
  std::size_t coalesced = 0;  // reads that joined a live reader entry
  // Records a write in the map (through `prepared` when given) and in the model.
  // Reads (record_read) drop nothing; writes drop every entry of either kind they cover.
  auto record = [&](const Tensor& t, const TensorMap::Prepared* prepared, bool reads, int step) {
    const DeviceBuffer& buf = t.buffer;
    const TensorRegion region = TensorRegion::of(t);
    const TaskId writer = next_writer++;
    const uint32_t entry = reads ? (prepared != nullptr ? map.record_read(t, writer, *prepared)
                                                        : map.record_read(t, writer))
                                 : (prepared != nullptr ? map.record_write(t, writer, *prepared)
                                                        : map.record_write(t, writer));
    if (region.empty()) {
      ASSERT_EQ(entry, TensorMap::kNoEntry);
      return;
    }
    ASSERT_NE(entry, TensorMap::kNoEntry);
    if (!reads) {
      std::erase_if(model, [&](const Model& m) {
        return m.addr == buf.addr && region_covers(region, m.region);
      });
      writes.emplace_back(writer, t);
      // The map may also drop a reader entry that writes made after its last reader, none
      // covering it alone, overwrote byte for byte: find the reader entries it no longer reports
      // and check exactly that of each.
      std::set<uint32_t> dropped;
      for (const Model& m : model) {
        if (!m.reads || m.addr != buf.addr || dropped.contains(m.entry)) continue;
        const std::vector<TaskId> seen = tasks_of(map, m.tensor, true);
        if (std::find(seen.begin(), seen.end(), m.writer) != seen.end()) continue;
        TaskId last_reader = 0;
        std::set<uint64_t> bytes;
        for (const Model& r : model) {
          if (r.entry != m.entry) continue;
          last_reader = std::max(last_reader, r.writer);
          const std::set<uint64_t> own = bytes_of(r.tensor);
          bytes.insert(own.begin(), own.end());
        }
        for (const auto& [w, wt] : writes) {
          if (w <= last_reader || wt.buffer.addr != buf.addr) continue;
          for (const uint64_t b : bytes_of(wt)) bytes.erase(b);
        }
        ASSERT_TRUE(bytes.empty())
            << "step " << step << ": reader entry of " << m.tensor.to_string() << " dropped with "
            << bytes.size() << " bytes not overwritten";
        dropped.insert(m.entry);
      }
      std::erase_if(model, [&](const Model& m) { return dropped.contains(m.entry); });
    }
    bool joined = false;
    for (const Model& m : model) {
      if (m.entry == entry) {
        ASSERT_TRUE(reads && m.reads && m.addr == buf.addr && same_region(m.region, region))
            << "a live entry id was reused, step " << step;
        joined = true;
      }
    }
    coalesced += joined;
    model.push_back(Model{buf.addr, region, writer, entry, reads, t});
    written.emplace_back(entry, writer);
    ASSERT_NO_FATAL_FAILURE(check_counts(step));
  };
  // Retires the oldest writer, as a ring does; a stale id must be refused.
  auto retire_oldest = [&](int step) {
    const auto [entry, writer] = written.front();
    written.erase(written.begin());
    const auto it = std::find_if(model.begin(), model.end(), [&](const Model& m) {
      return m.entry == entry && m.writer == writer;
    });
    ASSERT_EQ(map.erase_entry(entry, writer), it != model.end()) << "step " << step;
    if (it != model.end()) model.erase(it);
  };
  // One Prepared reused by every step, as an orchestrator reuses its scratch: each lookup must
  // overwrite what an earlier tensor left in it.
  TensorMap::Prepared prepared;
  std::vector<Tensor> recent;  // views accessed lately: a region is often read by several tasks
  for (int step = 0; step < 6000; ++step) {
    Tensor t = !recent.empty() && rng() % 3 == 0 ? recent[rng() % recent.size()]
                                                 : random_view(buffers[rng() % 3]);
    const DeviceBuffer buf = t.buffer;
    if (recent.size() < 12) {
      recent.push_back(t);
    } else {
      recent[rng() % recent.size()] = t;
    }
    if (rng() % 300 == 0) {
      t.shape[0] = UINT64_MAX;
      t.strides[0] = UINT64_MAX / 2;
    }
    const TensorRegion region = TensorRegion::of(t);
    // A third of the accesses are reads: they wait for writers only; writes wait for both kinds.
    const bool reads = rng() % 3 == 0;
    std::vector<TaskId> expected, got;
    for (const Model& m : model) {
      if (m.addr != buf.addr || (reads && m.reads) || !regions_may_overlap(m.region, region)) {
        continue;
      }
      // A write is not told of a writer that a later reader it overlaps waited for: a reader
      // whose region covers the writer's.
      const bool ordered_by_reader =
          !reads && !m.reads && std::any_of(model.begin(), model.end(), [&](const Model& r) {
            return r.reads && r.addr == buf.addr && r.writer > m.writer &&
                   regions_may_overlap(r.region, region) && region_covers(r.region, m.region);
          });
      if (!ordered_by_reader) expected.push_back(m.writer);
    }
    // Half of the lookups also describe the tensor for the record that may follow.
    const bool prepare = rng() % 2 == 0;
    auto on_task = [&](TaskId id) { got.push_back(id); };
    if (reads) {
      if (prepare) {
        map.lookup(t, on_task, &prepared);
      } else {
        map.lookup(t, on_task);
      }
    } else if (prepare) {
      map.lookup_write(t, on_task, &prepared);
    } else {
      map.lookup_write(t, on_task);
    }
    std::sort(expected.begin(), expected.end());
    std::sort(got.begin(), got.end());
    got.erase(std::unique(got.begin(), got.end()), got.end());
    ASSERT_EQ(got, expected) << "step " << step << ": " << t.to_string();
    if (rng() % 2 == 0) {
      // Between a lookup and its write a ring may retire writers (possibly releasing the
      // buffer's index) and the same task may write other views (creating or re-pitching an
      // index): the Prepared must then be detected as stale.
      if (prepare && rng() % 3 == 0) {
        while (!written.empty() && rng() % 2 == 0) ASSERT_NO_FATAL_FAILURE(retire_oldest(step));
        if (rng() % 2 == 0) {
          ASSERT_NO_FATAL_FAILURE(
              record(random_view(buffers[rng() % 3]), nullptr, rng() % 2 == 0, step));
        }
        if (rng() % 8 == 0) {
          const uint64_t addr = buffers[rng() % 3].addr;
          std::erase_if(model, [&](const Model& m) { return m.addr == addr; });
          map.erase_buffer(addr);
        }
      }
      ASSERT_NO_FATAL_FAILURE(record(t, prepare ? &prepared : nullptr, reads, step));
    }
    while (written.size() > 40 || (!written.empty() && rng() % 7 == 0)) {
      ASSERT_NO_FATAL_FAILURE(retire_oldest(step));
    }
    if (step % 700 == 699) {
      const uint64_t addr = buffers[rng() % 3].addr;
      std::erase_if(model, [&](const Model& m) { return m.addr == addr; });
      map.erase_buffer(addr);
    }
    ASSERT_NO_FATAL_FAILURE(check_counts(step));
  }
  for (const DeviceBuffer& buf : buffers) {
    std::set<uint32_t> entries;
    for (const Model& m : model) {
      if (m.addr == buf.addr) entries.insert(m.entry);
    }
    EXPECT_EQ(map.entries_of(buf.addr), entries.size());
  }
  EXPECT_GT(coalesced, 50u) << "few identical views were read: coalescing barely tested";
}

// Rewriting the same view reuses its entry for the new writer: the old writer's erase_entry is
// refused (its task retired after being superseded), the new writer's succeeds.
TEST(TensorMap, IdenticalRewriteKeepsTheEntryForTheNewWriter) {
  TensorMap map;
  const Tensor tile = matrix(16, 16).view({4, 4}, {4, 8});
  const uint32_t first = map.record_write(tile, 1);
  const uint32_t second = map.record_write(tile, 2);
  EXPECT_EQ(first, second);
  EXPECT_EQ(map.entry_count(), 1u);
  EXPECT_FALSE(map.erase_entry(first, 1));
  std::vector<TaskId> w;
  map.lookup(tile, [&](TaskId id) { w.push_back(id); });
  EXPECT_EQ(w, (std::vector<TaskId>{2}));
  EXPECT_TRUE(map.erase_entry(second, 2));
  EXPECT_EQ(map.entry_count(), 0u);
  EXPECT_EQ(map.buffer_count(), 0u);
  EXPECT_FALSE(map.erase_entry(second, 2));
  EXPECT_FALSE(map.erase_entry(12345, 2));  // never issued
}

// Thousands of buffers with tiles each share one cell table: growth and backward-shift
// deletions (erase_entry in random order, erase_buffer) keep every other cell reachable.
TEST(TensorMap, ManyBuffersSharingTheCellTable) {
  TensorMap map;
  constexpr uint64_t kBuffers = 1500;
  struct Written {
    uint64_t addr;
    uint64_t tile;
    uint32_t entry;
    TaskId writer;
  };
  std::vector<Written> all;
  auto tile_of = [](uint64_t addr, uint64_t k) {
    const Tensor m = Tensor::make(DeviceBuffer{addr, 16 * 16 * 4}, {16, 16}, DataType::F32);
    return m.view({4, 4}, {4 * (k / 4), 4 * (k % 4)});
  };
  TaskId id = 0;
  for (uint64_t b = 0; b < kBuffers; ++b) {
    const uint64_t addr = 0x1000000 + b * 0x1000;
    for (uint64_t k = 0; k < 16; k += 3) {
      all.push_back({addr, k, map.record_write(tile_of(addr, k), id), id});
      ++id;
    }
  }
  EXPECT_EQ(map.buffer_count(), kBuffers);
  std::mt19937_64 rng(5);
  std::shuffle(all.begin(), all.end(), rng);
  const std::size_t half = all.size() / 2;
  for (std::size_t i = 0; i < half; ++i) ASSERT_TRUE(map.erase_entry(all[i].entry, all[i].writer));
  for (std::size_t i = 0; i < all.size(); ++i) {
    std::vector<TaskId> w;
    map.lookup(tile_of(all[i].addr, all[i].tile), [&](TaskId t) { w.push_back(t); });
    if (i < half) {
      ASSERT_TRUE(w.empty()) << i;
    } else {
      ASSERT_EQ(w, (std::vector<TaskId>{all[i].writer})) << i;
    }
  }
  for (std::size_t i = half; i < all.size(); i += 2) map.erase_buffer(all[i].addr);
  for (std::size_t i = half; i < all.size(); ++i) {
    int seen = 0;
    map.lookup(Tensor::make(DeviceBuffer{all[i].addr, 16 * 16 * 4}, {16, 16}, DataType::F32),
               [&](TaskId) { ++seen; });
    ASSERT_EQ(seen == 0, map.entries_of(all[i].addr) == 0) << i;
  }
  map.clear();
  EXPECT_EQ(map.entry_count(), 0u);
  EXPECT_EQ(map.buffer_count(), 0u);
  EXPECT_EQ(map.record_write(tile_of(0x1000000, 0), 7), 0u);  // storage restarts from scratch
}

// Regions spanning most of a huge buffer next to small ones at its far end: cell coordinates
// and windows near the top of the 64-bit range neither overflow nor miss an overlap, and a
// query covering far more cells than its groups hold entries walks the entries instead.
TEST(TensorMap, HugeRegionsAndFarOffsets) {
  TensorMap map;
  const DeviceBuffer huge{0x1000, uint64_t{1} << 62};
  const Tensor flat = Tensor::make(huge, {uint64_t{1} << 62}, DataType::U8);
  const uint64_t far = (uint64_t{1} << 62) - 64;
  map.record_write(flat.view({16}, {far}), 1);
  map.record_write(flat.view({16}, {far + 32}), 2);
  map.record_write(flat.view({uint64_t{1} << 61}, {0}), 3);
  std::vector<TaskId> w;
  map.lookup(flat.view({64}, {far}), [&](TaskId id) { w.push_back(id); });
  std::sort(w.begin(), w.end());
  EXPECT_EQ(w, (std::vector<TaskId>{1, 2}));
  w.clear();
  map.reset_stats();
  map.lookup(flat, [&](TaskId id) { w.push_back(id); });
  std::sort(w.begin(), w.end());
  EXPECT_EQ(w, (std::vector<TaskId>{1, 2, 3}));
  EXPECT_LE(map.stats().max_candidates, 3u);
  w.clear();
  map.lookup(flat.view({8}, {far + 16}), [&](TaskId id) { w.push_back(id); });
  EXPECT_TRUE(w.empty());
  // A matrix view of the same buffer re-indexes it by rows of the matrix pitch.
  const Tensor rows = flat.view({uint64_t{1} << 40}, {0}).reshape({uint64_t{1} << 20, 1 << 20});
  map.record_write(rows.view({2, 2}, {(uint64_t{1} << 20) - 2, (1 << 20) - 2}), 4);
  w.clear();
  map.lookup(rows.view({1, 1}, {(uint64_t{1} << 20) - 1, (1 << 20) - 1}),
             [&](TaskId id) { w.push_back(id); });
  std::sort(w.begin(), w.end());
  EXPECT_EQ(w, (std::vector<TaskId>{3, 4}));
  EXPECT_EQ(map.entries_of(huge.addr), 4u);
}

// Unbounded (forged) writes are reported by every lookup of their buffer, cover nothing, and go
// through erase_entry and erase_buffer like the others.
TEST(TensorMap, UnboundedEntriesThroughEveryPath) {
  TensorMap map;
  Tensor forged = matrix(8, 16);
  forged.shape[0] = UINT64_MAX;
  forged.strides[0] = UINT64_MAX / 2;
  const uint32_t a = map.record_write(forged, 1);
  const uint32_t b = map.record_write(forged, 2);
  map.record_write(matrix(8, 16), 3);  // covers nothing unbounded
  EXPECT_NE(a, b);
  EXPECT_EQ(map.entry_count(), 3u);
  std::vector<TaskId> w;
  map.lookup(matrix(8, 16).view({1, 1}, {7, 15}), [&](TaskId id) { w.push_back(id); });
  std::sort(w.begin(), w.end());
  EXPECT_EQ(w, (std::vector<TaskId>{1, 2, 3}));
  w.clear();
  map.lookup(forged, [&](TaskId id) { w.push_back(id); });  // an unbounded query meets all
  std::sort(w.begin(), w.end());
  EXPECT_EQ(w, (std::vector<TaskId>{1, 2, 3}));
  EXPECT_TRUE(map.erase_entry(a, 1));
  EXPECT_FALSE(map.erase_entry(a, 1));
  EXPECT_EQ(map.entry_count(), 2u);
  map.erase_buffer(kBuf.addr);
  EXPECT_EQ(map.entry_count(), 0u);
  EXPECT_FALSE(map.erase_entry(b, 2));
}

// Many sizes on one buffer (more than its size groups): each lookup still sees exactly the
// overlapping writers, and a later whole-buffer write covers them all.
TEST(TensorMap, ManyEntrySizesOnOneBuffer) {
  TensorMap map;
  const Tensor m = Tensor::make(kBuf, {256, 256}, DataType::F32);
  struct Box {
    uint64_t r, c, h, w;
    bool meets(const Box& o) const {
      return r < o.r + o.h && o.r < r + h && c < o.c + o.w && o.c < c + w;
    }
  };
  TaskId id = 0;
  std::vector<std::pair<Box, TaskId>> written;
  for (uint64_t h = 1; h <= 128; h *= 2) {
    for (uint64_t w = 1; w <= 64; w *= 4) {
      const uint64_t k = static_cast<uint64_t>(id);
      const Box box{(k * 37) % (256 - h), (k * 53) % (256 - w), h, w};
      map.record_write(m.view({h, w}, {box.r, box.c}), id);
      std::erase_if(written, [&](const auto& old) {  // covered: the new box holds it
        const Box& o = old.first;
        return box.r <= o.r && o.r + o.h <= box.r + box.h && box.c <= o.c &&
               o.c + o.w <= box.c + box.w;
      });
      written.emplace_back(box, id++);
    }
  }
  EXPECT_EQ(map.entry_count(), written.size());
  std::mt19937_64 rng(3);
  for (int q = 0; q < 400; ++q) {
    const uint64_t r = rng() % 256, c = rng() % 256;
    const Box probe{r, c, 1 + rng() % (256 - r), 1 + rng() % (256 - c)};
    std::vector<TaskId> got, expected;
    map.lookup(m.view({probe.h, probe.w}, {probe.r, probe.c}), [&](TaskId t) { got.push_back(t); });
    for (const auto& [box, writer] : written) {
      if (box.meets(probe)) expected.push_back(writer);
    }
    std::sort(got.begin(), got.end());
    ASSERT_EQ(got, expected) << probe.r << "," << probe.c << " " << probe.h << "x" << probe.w;
  }
  map.record_write(m, id);
  EXPECT_EQ(map.entry_count(), 1u);
}

// A 256 x 256 grid of tiles of one buffer, each task InOut on its tile and reading its left and
// upper neighbours (the wavefront pattern): every operation examines a bounded number of index
// entries, independent of the 65536 entries recorded.
// A kTiles x kTiles grid of 4 x 4 f32 tiles of one buffer.
struct TileGrid {
  static constexpr uint64_t kTile = 4;
  explicit TileGrid(uint64_t tiles)
      : x(Tensor::make(DeviceBuffer{0x1000000, tiles * kTile * tiles * kTile * 4},
                       {tiles * kTile, tiles * kTile}, DataType::F32)) {}
  Tensor operator()(uint64_t i, uint64_t j) const {
    return x.view({kTile, kTile}, {i * kTile, j * kTile});
  }
  Tensor x;
};

TEST(TensorMap, TileGridOperationsExamineBoundedCandidates) {
  constexpr uint64_t kTiles = 256;
  const TileGrid tile(kTiles);
  const Tensor& x = tile.x;
  TensorMap map;
  TaskId id = 0;
  std::vector<TaskId> writers;
  for (uint64_t i = 1; i < kTiles; ++i) {
    for (uint64_t j = 1; j < kTiles; ++j) {
      writers.clear();
      for (const Tensor& t : {tile(i, j), tile(i, j - 1), tile(i - 1, j)}) {
        map.lookup(t, [&](TaskId w) { writers.push_back(w); });
      }
      std::sort(writers.begin(), writers.end());
      std::vector<TaskId> expected;
      if (i > 1) expected.push_back(id - static_cast<TaskId>(kTiles - 1));  // upper neighbour
      if (j > 1) expected.push_back(id - 1);                                // left neighbour
      ASSERT_EQ(writers, expected) << i << "," << j;
      map.record_write(tile(i, j), id++);
    }
  }
  EXPECT_EQ(map.entry_count(), (kTiles - 1) * (kTiles - 1));
  const TensorMapStats& stats = map.stats();
  // Every task looks up three tiles and records one; the first three lookups find no buffer yet.
  EXPECT_EQ(stats.operations, 4 * (kTiles - 1) * (kTiles - 1) - 3);
  EXPECT_LE(stats.max_candidates, 4u);
  EXPECT_LE(stats.candidates, 3 * stats.operations);

  // A whole-matrix write covers every tile; afterwards tiles still cost O(1) each.
  map.record_write(x, id++);
  EXPECT_EQ(map.entry_count(), 1u);
  map.reset_stats();
  for (uint64_t j = 0; j < kTiles; ++j) map.record_write(tile(7, j), id++);
  for (uint64_t j = 0; j < kTiles; ++j) {
    int seen = 0;
    map.lookup(tile(7, j), [&](TaskId) { ++seen; });
    EXPECT_EQ(seen, 2);  // the whole-matrix write and the tile's own writer
  }
  EXPECT_LE(map.stats().max_candidates, 4u);
}

// A buffer first used as 1-D and then tiled is re-indexed by rows without losing entries.
TEST(TensorMap, OneDimensionalStartThenTilesKeepsEveryEntry) {
  TensorMap map;
  const Tensor flat = Tensor::make(kBuf, {1024}, DataType::F32);
  map.record_write(flat.view({100}, {0}), 1);
  map.record_write(flat.view({100}, {500}), 2);
  const Tensor m = flat.reshape({32, 32});
  map.record_write(m.view({4, 4}, {8, 8}), 3);
  EXPECT_EQ(map.entries_of(kBuf.addr), 3u);
  std::vector<TaskId> w;
  map.lookup(m, [&](TaskId id) { w.push_back(id); });
  std::sort(w.begin(), w.end());
  EXPECT_EQ(w, (std::vector<TaskId>{1, 2, 3}));
  w.clear();
  map.lookup(m.view({1, 32}, {15, 0}), [&](TaskId id) { w.push_back(id); });  // bytes 1920..
  EXPECT_EQ(w, (std::vector<TaskId>{2}));
}

// Reader entries are what a write waits for, never what a read waits for.
TEST(TensorMap, ReadersAreReportedToWritesOnly) {
  TensorMap map;
  const Tensor t = matrix(8, 16);
  const Tensor top = t.view({4, 16}, {0, 0});
  const Tensor bottom = t.view({4, 16}, {4, 0});
  map.record_write(t, 1);
  EXPECT_NE(map.record_read(top, 2), TensorMap::kNoEntry);
  map.record_read(top, 3);                          // the same view again: shares 2's entry
  map.record_read(bottom.view({1, 4}, {1, 2}), 4);  // row 5
  EXPECT_EQ(map.entry_count(), 3u);
  EXPECT_EQ(map.reader_entry_count(), 2u);
  EXPECT_EQ(map.reader_count(), 3u);
  EXPECT_EQ(tasks_of(map, top, false), (std::vector<TaskId>{1}));
  EXPECT_EQ(tasks_of(map, top, true), (std::vector<TaskId>{1, 2, 3}));
  EXPECT_EQ(tasks_of(map, bottom, true), (std::vector<TaskId>{1, 4}));
  EXPECT_EQ(tasks_of(map, t.view({1, 1}, {7, 15}), true), (std::vector<TaskId>{1}));
  EXPECT_EQ(tasks_of(map, t, true), (std::vector<TaskId>{1, 2, 3, 4}));
  // Readers do not drop each other: a read of the whole buffer keeps every earlier reader.
  map.record_read(t, 5);
  EXPECT_EQ(map.reader_entry_count(), 3u);
  EXPECT_EQ(map.reader_count(), 4u);
  // Writer 1 is now ordered by reader 5, who read all of it after it: a write waits for 5.
  EXPECT_EQ(tasks_of(map, bottom, true), (std::vector<TaskId>{4, 5}));
  Tensor empty = t;
  empty.shape[0] = 0;
  EXPECT_EQ(map.record_read(empty, 6), TensorMap::kNoEntry);
}

// W, then 1000 readers of one tile, then W': W' waits for all of them and its covering write
// drops them, so the next write of the tile waits for W' alone and the map is back to one entry.
// The readers of the one view share entries, kEntryReaders to an entry.
TEST(TensorMap, CoveringWriteDropsTheReadersItWaitedFor) {
  TensorMap map;
  const Tensor tile = matrix(16, 16).view({4, 4}, {4, 8});
  map.record_write(tile, 0);
  for (TaskId r = 1; r <= 1000; ++r) {
    ASSERT_EQ(tasks_of(map, tile, false), (std::vector<TaskId>{0}));
    map.record_read(tile, r);
  }
  EXPECT_EQ(map.entry_count(), 1u + 1000u / TensorMap::kEntryReaders);
  EXPECT_EQ(map.reader_count(), 1000u);
  // W' waits for the readers, not for W: they read the tile after W, so they waited for it.
  std::vector<TaskId> expected(1000);
  for (TaskId i = 1; i <= 1000; ++i) expected[static_cast<std::size_t>(i - 1)] = i;
  EXPECT_EQ(tasks_of(map, tile, true), expected);
  map.record_write(tile, 2000);
  EXPECT_EQ(map.entry_count(), 1u);
  EXPECT_EQ(map.reader_entry_count(), 0u);
  EXPECT_EQ(map.reader_count(), 0u);
  EXPECT_EQ(tasks_of(map, tile, true), (std::vector<TaskId>{2000}));
  // Readers of sub-views are covered by a write of the whole matrix, too (through a read
  // lookup's Prepared, which must not let the write skip its search for entries to drop).
  const Tensor m = matrix(16, 16);
  for (uint64_t k = 0; k < 16; ++k)
    map.record_read(m.view({4, 4}, {4 * (k / 4), 4 * (k % 4)}), 3000);
  map.record_read(m.view({16, 1}, {0, 3}), 3001);
  TensorMap::Prepared prepared;
  map.lookup(
      m, [](TaskId) {}, &prepared);
  map.record_write(m, 4000, prepared);
  EXPECT_EQ(map.entry_count(), 1u);
  EXPECT_EQ(map.reader_entry_count(), 0u);
}

// Readers of the identical view share one entry id; erasing one reader (a ring retiring it)
// keeps the others reported, the entry goes with its last reader, and a write of the view drops
// the entry with all its readers (their later erase_entry is refused).
TEST(TensorMap, ReadersOfOneViewShareAnEntry) {
  TensorMap map;
  const Tensor tile = matrix(16, 16).view({4, 4}, {4, 8});
  map.record_write(tile, 1);
  const uint32_t a = map.record_read(tile, 2);
  EXPECT_EQ(map.record_read(tile, 3), a);
  EXPECT_EQ(map.record_read(tile, 3), a);  // the task's second read of the view: not added twice
  EXPECT_EQ(map.record_read(tile, 4), a);
  EXPECT_EQ(map.reader_entry_count(), 1u);
  EXPECT_EQ(map.reader_count(), 3u);
  // A write waits for the readers, which waited for writer 1; a read waits for writer 1.
  EXPECT_EQ(tasks_of(map, tile, true), (std::vector<TaskId>{2, 3, 4}));
  EXPECT_TRUE(tasks_of(map, tile, false) == (std::vector<TaskId>{1}));
  EXPECT_FALSE(map.erase_entry(a, 5));  // not one of its readers
  EXPECT_TRUE(map.erase_entry(a, 3));
  EXPECT_FALSE(map.erase_entry(a, 3));
  EXPECT_EQ(map.reader_count(), 2u);
  EXPECT_EQ(tasks_of(map, tile, true), (std::vector<TaskId>{2, 4}));
  EXPECT_EQ(map.record_read(tile, 6), a);  // room again
  EXPECT_TRUE(map.erase_entry(a, 2));
  EXPECT_TRUE(map.erase_entry(a, 4));
  EXPECT_EQ(tasks_of(map, tile, true), (std::vector<TaskId>{6}));
  EXPECT_TRUE(map.erase_entry(a, 6));
  EXPECT_EQ(map.reader_entry_count(), 0u);
  EXPECT_EQ(map.entry_count(), 1u);
  // A full entry is followed by a new entry of the same view; a write of the view drops both.
  std::set<uint32_t> ids;
  for (TaskId r = 10; r < 10 + 2 * TensorMap::kEntryReaders; ++r)
    ids.insert(map.record_read(tile, r));
  EXPECT_EQ(ids.size(), 2u);
  EXPECT_EQ(map.reader_count(), 2 * TensorMap::kEntryReaders);
  map.record_write(tile, 100);
  EXPECT_EQ(map.entry_count(), 1u);
  EXPECT_EQ(map.reader_count(), 0u);
  EXPECT_EQ(tasks_of(map, tile, true), (std::vector<TaskId>{100}));
  for (const uint32_t id : ids) EXPECT_FALSE(map.erase_entry(id, 10));
  EXPECT_EQ(map.entry_count(), 1u);
}

// Only the identical view of the same buffer shares an entry: other buffers, other views, and
// the same bytes seen with another element type or shape each get their own.
TEST(TensorMap, ReadersOfOtherViewsDoNotShare) {
  TensorMap map;
  const DeviceBuffer other{0x900000, 1 << 20};
  const Tensor m = matrix(16, 16);
  const Tensor tile = m.view({4, 4}, {4, 8});
  std::set<uint32_t> ids;
  ids.insert(map.record_read(tile, 1));
  ids.insert(map.record_read(Tensor::make(other, {16, 16}, DataType::F32).view({4, 4}, {4, 8}), 2));
  ids.insert(map.record_read(m.view({4, 4}, {4, 4}), 3));  // the neighbouring tile
  ids.insert(map.record_read(m.view({3, 4}, {4, 8}), 4));  // a part of it
  ids.insert(map.record_read(matrix(16, 64, DataType::U8).view({4, 16}, {4, 32}), 5));  // bytes
  ids.insert(map.record_read(m.slice(1, 8, 12, 1).slice(0, 4, 8, 1).transpose(0, 1), 6));
  EXPECT_EQ(ids.size(), 6u);
  EXPECT_EQ(map.reader_entry_count(), 6u);
  EXPECT_EQ(map.reader_count(), 6u);
  EXPECT_EQ(tasks_of(map, tile, true), (std::vector<TaskId>{1, 4, 5, 6}));
  // Identical non-exact views (interleaved columns) share, too.
  const uint32_t odd = map.record_read(m.slice(1, 1, 16, 2), 7);
  EXPECT_EQ(map.record_read(m.slice(1, 1, 16, 2), 8), odd);
  EXPECT_NE(map.record_read(m.slice(1, 0, 16, 2), 9), odd);
  EXPECT_EQ(map.reader_count(), 9u);
}

// A write that covers a reader only in part leaves it: a later write of the rest still waits.
TEST(TensorMap, PartialWriteKeepsTheReaders) {
  TensorMap map;
  const Tensor t = matrix(8, 16);
  map.record_read(t, 1);
  map.record_read(t.view({2, 16}, {2, 0}), 2);
  EXPECT_EQ(tasks_of(map, t.view({4, 16}, {0, 0}), true), (std::vector<TaskId>{1, 2}));
  map.record_write(t.view({4, 16}, {0, 0}), 3);  // covers reader 2, not reader 1
  EXPECT_EQ(map.reader_entry_count(), 1u);
  EXPECT_EQ(tasks_of(map, t.view({4, 16}, {4, 0}), true), (std::vector<TaskId>{1}));
  EXPECT_EQ(tasks_of(map, t.view({1, 16}, {1, 0}), true), (std::vector<TaskId>{1, 3}));
  // Interleaved columns: a write of the even columns leaves a reader of the odd ones alone.
  TensorMap cols;
  cols.record_read(t.slice(1, 1, 16, 2), 1);
  cols.record_write(t.slice(1, 0, 16, 2), 2);
  EXPECT_EQ(cols.reader_entry_count(), 1u);
  EXPECT_EQ(tasks_of(cols, t.slice(1, 0, 16, 2), true), (std::vector<TaskId>{2}));
  EXPECT_EQ(tasks_of(cols, t.slice(1, 1, 16, 2), true), (std::vector<TaskId>{1}));
}

// A reader of a whole vector, then one writer per element (a fan stage): the writes together
// overwrite the reader's region, so its entry goes and later writes do not wait for it (they
// wait for the element writers, which waited for it). Repeated, the map stays the same size.
TEST(TensorMap, WritesThatTogetherOverwriteAReaderDropIt) {
  TensorMap map;
  const Tensor v = Tensor::make(kBuf, {64}, DataType::F32);
  TaskId next = 0;
  for (int stage = 0; stage < 50; ++stage) {
    const TaskId reader = next++;
    map.record_read(v, reader);
    for (uint64_t i = 0; i < 64; ++i) {
      const TaskId writer = next++;
      const std::vector<TaskId> waits = tasks_of(map, v.view({1}, {i}), true);
      // The reader of this stage; the element's previous writer from the stage before.
      EXPECT_TRUE(std::find(waits.begin(), waits.end(), reader) != waits.end())
          << "stage " << stage << " element " << i;
      EXPECT_LE(waits.size(), 2u) << "stage " << stage << " element " << i;
      map.record_write(v.view({1}, {i}), writer);
    }
    EXPECT_EQ(map.reader_entry_count(), 0u) << "stage " << stage;
    EXPECT_EQ(map.entry_count(), 64u) << "stage " << stage;
  }
}

// Writes inside a reader's region that overlap each other are counted once: the entry stays
// until every byte was overwritten, and a reader of a partly overwritten region starts an entry
// of its own (the earlier writes did not wait for it).
TEST(TensorMap, OverlappingPieceWritesDoNotOvercount) {
  TensorMap map;
  const Tensor v = Tensor::make(kBuf, {8}, DataType::F32);
  map.record_read(v, 1);
  map.record_write(v.view({4}, {0}), 2);
  map.record_write(v.view({4}, {2}), 3);  // overlaps write 2: not counted
  map.record_write(v.view({2}, {6}), 4);  // 4 + 2 of 8 elements counted
  EXPECT_EQ(map.reader_entry_count(), 1u);
  EXPECT_EQ(tasks_of(map, v.view({1}, {5}), true), (std::vector<TaskId>{1, 3}));
  map.record_read(v, 5);  // must not join reader 1's entry
  EXPECT_EQ(map.reader_entry_count(), 2u);
  map.record_write(v.view({2}, {4}), 6);  // overlaps write 3: reader 1 stays; reader 5 counts 2
  // Writer 2 is ordered by reader 5 (who read all of v after it).
  EXPECT_EQ(tasks_of(map, v.view({1}, {0}), true), (std::vector<TaskId>{1, 5}));
  map.record_write(v.view({4}, {0}), 7);
  map.record_write(v.view({2}, {6}), 8);  // reader 5: 2 + 4 + 2 = 8 elements: dropped
  EXPECT_EQ(tasks_of(map, v.view({1}, {7}), true), (std::vector<TaskId>{1, 8}));
  // Reader 1 was overwritten only by a counted 6 elements: it stays until a write covers it.
  map.record_write(v, 9);
  EXPECT_EQ(map.reader_entry_count(), 0u);
}

// Random reads and writes of 1-D runs and 2-D tiles of one buffer, many of them pieces of a
// region read before, against the history of every access: a write is told every earlier access
// the covering-write rule keeps (an access no later write covers, readers for writes only)
// except readers whose every byte writes made after them overwrote, and nothing else.
TEST(TensorMap, PieceWritesDropOnlyWhollyOverwrittenReaders) {
  std::mt19937_64 rng(7);
  const Tensor flat = Tensor::make(kBuf, {256}, DataType::F32);
  const Tensor grid = flat.reshape({16, 16});
  // The accesses no later write covers (the others are forgotten by both), with the bytes of
  // each that no later write overwrote.
  struct Access {
    TaskId task;
    bool write;
    TensorRegion region;
    std::set<uint64_t> left;
  };
  std::vector<Access> live;
  TensorMap map;
  std::size_t omitted = 0;
  // Half of the writes sweep the region read last piece by piece (a fan stage), the other
  // accesses are aligned runs or tiles anywhere.
  Tensor swept;
  uint64_t sweep_next = 0;
  for (TaskId task = 0; task < 3000; ++task) {
    const bool tiles = task % 500 >= 250;  // each layout in turn; the map re-indexes
    bool write = rng() % 3 != 0;
    Tensor t;
    if (write && swept.ndim == (tiles ? 2u : 1u) && rng() % 2 == 0) {
      const uint64_t piece = tiles ? 1 : 2;
      if (tiles) {
        t = swept.view({1, 1}, {sweep_next / swept.shape[1], sweep_next % swept.shape[1]});
      } else {
        t = swept.view({piece}, {sweep_next});
      }
      sweep_next = (sweep_next + piece) % swept.numel();
    } else if (tiles) {
      const uint64_t edge = uint64_t{1} << (rng() % 4);  // aligned tiles and their pieces
      t = grid.view({edge, edge}, {edge * (rng() % (16 / edge)), edge * (rng() % (16 / edge))});
    } else {
      const uint64_t length = uint64_t{2} << (rng() % 6);
      t = flat.view({length}, {length * (rng() % (256 / length))});
    }
    if (!write && t.numel() > 1) {
      swept = t;
      sweep_next = 0;
    }
    const TensorRegion region = TensorRegion::of(t);
    std::vector<TaskId> allowed, required;
    for (const Access& a : live) {
      if ((!write && !a.write) || !regions_may_overlap(a.region, region)) continue;
      allowed.push_back(a.task);
      // A writer that a later reader of all of it (which the write overlaps) waited for may be
      // left out too.
      const bool ordered_by_reader =
          a.write && std::any_of(live.begin(), live.end(), [&](const Access& r) {
            return !r.write && r.task > a.task && regions_may_overlap(r.region, region) &&
                   region_covers(r.region, a.region);
          });
      if ((a.write && !ordered_by_reader) || (!a.write && !a.left.empty())) {
        required.push_back(a.task);
      }
    }
    const std::vector<TaskId> got = tasks_of(map, t, write);
    ASSERT_TRUE(std::includes(allowed.begin(), allowed.end(), got.begin(), got.end()))
        << "task " << task << ": told of an access the covering-write rule dropped";
    ASSERT_TRUE(std::includes(got.begin(), got.end(), required.begin(), required.end()))
        << "task " << task << ": not told of an access it must wait for: " << t.to_string();
    omitted += allowed.size() - got.size();
    const std::set<uint64_t> bytes = bytes_of(t);
    if (write) {
      map.record_write(t, task);
      std::erase_if(live, [&](const Access& a) { return region_covers(region, a.region); });
      for (Access& a : live) {
        for (const uint64_t b : bytes) a.left.erase(b);
      }
    } else {
      map.record_read(t, task);
    }
    live.push_back(Access{task, write, region, bytes});
  }
  EXPECT_GT(omitted, 100u) << "few readers were overwritten piece by piece: the rule was barely "
                              "tested";
}

// A strided reader (not a dense rectangle) is left to covering writes.
TEST(TensorMap, StridedReaderIsNotCountedPieceByPiece) {
  TensorMap map;
  const Tensor m = matrix(8, 16);
  const Tensor odd = m.slice(1, 1, 16, 2);
  map.record_read(odd, 1);
  for (uint64_t r = 0; r < 8; ++r) {
    for (uint64_t c = 1; c < 16; c += 2) map.record_write(m.view({1, 1}, {r, c}), 2 + r * 16 + c);
  }
  EXPECT_EQ(map.reader_entry_count(), 1u);
}

// Reader entries are erased like writer entries (a ring retiring the reader), by their own id
// and task only; the last one releases the buffer; erase_buffer drops both kinds.
TEST(TensorMap, EraseEntryDropsReaderEntries) {
  TensorMap map;
  const Tensor t = matrix(8, 16);
  Tensor unbounded = t;
  unbounded.shape[0] = UINT64_MAX;
  unbounded.strides[0] = UINT64_MAX / 2;
  const uint32_t a = map.record_read(t.view({4, 4}, {0, 0}), 1);
  const uint32_t b = map.record_read(t.view({4, 4}, {4, 4}), 2);
  const uint32_t c = map.record_read(unbounded, 3);
  EXPECT_EQ(tasks_of(map, t.view({1, 1}, {7, 15}), true), (std::vector<TaskId>{3}));
  EXPECT_TRUE(tasks_of(map, t, false).empty());
  EXPECT_NE(a, b);
  EXPECT_FALSE(map.erase_entry(a, 2));  // another task's entry
  EXPECT_TRUE(map.erase_entry(a, 1));
  EXPECT_FALSE(map.erase_entry(a, 1));
  EXPECT_EQ(tasks_of(map, t, true), (std::vector<TaskId>{2, 3}));
  EXPECT_TRUE(map.erase_entry(c, 3));
  EXPECT_EQ(map.buffer_count(), 1u);
  EXPECT_TRUE(map.erase_entry(b, 2));
  EXPECT_EQ(map.entry_count(), 0u);
  EXPECT_EQ(map.reader_entry_count(), 0u);
  EXPECT_EQ(map.buffer_count(), 0u);
  map.record_write(t.view({4, 4}, {0, 0}), 4);
  map.record_read(t.view({4, 4}, {4, 4}), 5);
  map.record_read(unbounded, 6);
  map.erase_buffer(kBuf.addr);
  EXPECT_EQ(map.entry_count(), 0u);
  EXPECT_EQ(map.reader_entry_count(), 0u);
  EXPECT_TRUE(tasks_of(map, t, true).empty());
}

// The wavefront pattern with write-after-read tracked: each task reads its left and upper
// neighbours and updates its own tile, then the whole grid is updated again. Reads look at
// writers only, writes at both kinds; every operation examines a bounded number of entries and
// the second sweep's covering writes drop the first sweep's readers.
TEST(TensorMap, TileGridReadersKeepOperationsBounded) {
  constexpr uint64_t kTiles = 128;
  const TileGrid tile(kTiles);
  TensorMap map;
  TaskId id = 0;
  std::vector<TaskId> first_sweep(kTiles * kTiles, kNoTask);
  for (int sweep = 0; sweep < 2; ++sweep) {
    for (uint64_t i = 1; i < kTiles; ++i) {
      for (uint64_t j = 1; j < kTiles; ++j) {
        std::vector<TaskId> producers;
        auto on_task = [&](TaskId p) { producers.push_back(p); };
        map.lookup(tile(i, j - 1), on_task);
        map.lookup(tile(i - 1, j), on_task);
        map.lookup_write(tile(i, j), on_task);
        std::sort(producers.begin(), producers.end());
        producers.erase(std::unique(producers.begin(), producers.end()), producers.end());
        std::vector<TaskId> expected;
        if (sweep == 0) {
          if (i > 1) expected.push_back(id - static_cast<TaskId>(kTiles - 1));  // upper
          if (j > 1) expected.push_back(id - 1);                                // left
        } else {
          // The tile's first-sweep readers (right and lower neighbours), as far as this sweep
          // has not overwritten them yet; its first-sweep writer only when no reader read the
          // tile after it (they waited for it).
          const TaskId base = first_sweep[i * kTiles + j];
          if (j + 1 == kTiles && i + 1 == kTiles) expected.push_back(base);
          if (j + 1 < kTiles) expected.push_back(base + 1);
          if (i + 1 < kTiles) expected.push_back(base + static_cast<TaskId>(kTiles - 1));
          if (i > 1) expected.push_back(id - static_cast<TaskId>(kTiles - 1));
          if (j > 1) expected.push_back(id - 1);
          std::sort(expected.begin(), expected.end());
        }
        ASSERT_EQ(producers, expected) << "sweep " << sweep << " tile " << i << "," << j;
        map.record_read(tile(i, j - 1), id);
        map.record_read(tile(i - 1, j), id);
        map.record_write(tile(i, j), id);
        if (sweep == 0) first_sweep[i * kTiles + j] = id;
        ++id;
      }
    }
    const TensorMapStats& stats = map.stats();
    EXPECT_LE(stats.max_candidates, 8u) << "sweep " << sweep;
    EXPECT_LE(stats.candidates, 3 * stats.operations) << "sweep " << sweep;
  }
  // Left: one writer per interior tile, every read of the second sweep (none was overwritten
  // after it) and the first sweep's reads of the first row and column (never written); the
  // second sweep dropped every other first-sweep read.
  const uint64_t interior = (kTiles - 1) * (kTiles - 1);
  EXPECT_EQ(map.entry_count() - map.reader_entry_count(), interior);
  EXPECT_EQ(map.reader_count(), 2 * interior + 2 * (kTiles - 1));
  // A tile's readers share its one reader entry: every tile but two corners is read.
  EXPECT_EQ(map.reader_entry_count(), kTiles * kTiles - 2);
}

}  // namespace
}  // namespace chiprt::orchestrator
