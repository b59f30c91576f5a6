// FifoRing edge cases (exact fit, wrap, rebase, full/empty, shrink) and TensorMap::erase_entry.
#include <gtest/gtest.h>

#include <deque>

#include "chiprt/tensor.h"
#include "orchestrator/ring_allocators.h"
#include "orchestrator/tensor_map.h"

namespace chiprt::orchestrator {
namespace {

TEST(FifoRing, ExactFitWhenEmptyAndFullAfterwards) {
  FifoRing ring(256);
  uint64_t offset = 99;
  ASSERT_TRUE(ring.allocate(256, &offset));
  EXPECT_EQ(offset, 0u);
  EXPECT_EQ(ring.used(), 256u);
  uint64_t other = 0;
  EXPECT_FALSE(ring.allocate(1, &other)) << "a full ring has no room";
  ring.release_to(ring.release_mark());
  EXPECT_TRUE(ring.empty());
  ASSERT_TRUE(ring.allocate(256, &offset)) << "an emptied ring fits its whole capacity again";
  EXPECT_EQ(offset, 0u);
}

TEST(FifoRing, RejectsZeroAndOversizedRequests) {
  FifoRing ring(128);
  uint64_t offset = 0;
  EXPECT_FALSE(ring.allocate(0, &offset));
  EXPECT_FALSE(ring.allocate(129, &offset));
  EXPECT_TRUE(ring.empty());
}

TEST(FifoRing, WrapsWithoutStraddlingTheEnd) {
  FifoRing ring(256);
  uint64_t a = 0, b = 0, c = 0;
  ASSERT_TRUE(ring.allocate(128, &a));
  const uint64_t mark_a = ring.release_mark();
  ASSERT_TRUE(ring.allocate(64, &b));
  EXPECT_EQ(b, 128u);
  ring.release_to(mark_a);  // a retired: [0, 128) is free, [128, 192) still in use
  // 128 units do not fit in the 64-unit tail: the range starts at 0 of the next lap.
  ASSERT_TRUE(ring.allocate(128, &c));
  EXPECT_EQ(c, 0u);
  EXPECT_EQ(ring.used(), 256u) << "the skipped tail counts as used until b is released";
  uint64_t d = 0;
  EXPECT_FALSE(ring.allocate(1, &d));
}

TEST(FifoRing, WrapWaitsForTheHeadToBeReleased) {
  FifoRing ring(256);
  uint64_t a = 0, b = 0;
  ASSERT_TRUE(ring.allocate(64, &a));
  const uint64_t mark_a = ring.release_mark();
  ASSERT_TRUE(ring.allocate(128, &b));
  uint64_t c = 0;
  // 128 units: the tail [192, 256) is too short and [0, 64) is still a's.
  EXPECT_FALSE(ring.allocate(128, &c));
  ring.release_to(mark_a);
  EXPECT_FALSE(ring.allocate(128, &c)) << "tail 64 + head 64 is not contiguous";
  ASSERT_TRUE(ring.allocate(64, &c));
  EXPECT_EQ(c, 192u) << "a request that fits the tail stays there";
}

TEST(FifoRing, RebasesToOffsetZeroWhenEmpty) {
  FifoRing ring(256);
  uint64_t a = 0;
  ASSERT_TRUE(ring.allocate(100, &a));
  ring.release_to(ring.release_mark());
  uint64_t b = 0;
  ASSERT_TRUE(ring.allocate(200, &b));
  EXPECT_EQ(b, 0u) << "an empty ring starts over at 0 instead of wrapping from 100";
}

TEST(FifoRing, StaleMarksNeverMoveTheFreePositionBack) {
  FifoRing ring(256);
  const uint64_t early_mark = ring.release_mark();  // a task that allocated nothing
  uint64_t a = 0;
  ASSERT_TRUE(ring.allocate(100, &a));
  ring.release_to(ring.release_mark());
  ASSERT_TRUE(ring.allocate(50, &a));  // rebased
  ring.release_to(early_mark);         // the old task retires late
  EXPECT_EQ(ring.used(), 50u);
}

TEST(FifoRing, ShrinkLastReturnsUnusedUnits) {
  FifoRing ring(256);
  uint64_t a = 0;
  ASSERT_TRUE(ring.allocate(100, &a));
  ring.shrink_last(60);
  EXPECT_EQ(ring.used(), 40u);
  uint64_t b = 0;
  ASSERT_TRUE(ring.allocate(216, &b));
  EXPECT_EQ(b, 40u) << "the returned units are handed out again";
  ring.shrink_last(216);
  EXPECT_EQ(ring.used(), 40u);
}

TEST(FifoRing, ManyLapsKeepUsageBounded) {
  FifoRing ring(1000);
  std::deque<uint64_t> live;  // release marks of the live ranges, oldest first
  for (int i = 0; i < 10000; ++i) {
    const uint64_t units = 1 + static_cast<uint64_t>(i * 37 % 300);
    uint64_t offset = 0;
    while (!ring.allocate(units, &offset)) {
      ASSERT_FALSE(live.empty()) << "an empty ring must fit " << units << " units";
      ring.release_to(live.front());
      live.pop_front();
    }
    ASSERT_LE(offset + units, 1000u) << "a range never straddles the end";
    ASSERT_LE(ring.used(), 1000u);
    live.push_back(ring.release_mark());
    if (live.size() > 3) {
      ring.release_to(live.front());
      live.pop_front();
    }
  }
}

constexpr DeviceBuffer kBuffer{0x20000, 1 << 16};

TEST(TensorMapEraseEntry, ErasesOnlyWhileTheEntryNamesTheWriter) {
  TensorMap map;
  const Tensor whole = Tensor::make(kBuffer, {64, 64}, DataType::F32);
  const uint32_t first = map.record_write(whole.view({32, 64}, {0, 0}), 7);
  const uint32_t second = map.record_write(whole.view({32, 64}, {32, 0}), 8);
  ASSERT_NE(first, TensorMap::kNoEntry);
  ASSERT_NE(second, TensorMap::kNoEntry);
  EXPECT_FALSE(map.erase_entry(first, 8)) << "another writer's entry is kept";
  EXPECT_TRUE(map.erase_entry(first, 7));
  EXPECT_FALSE(map.erase_entry(first, 7)) << "erasing twice is a no-op";
  std::vector<TaskId> writers;
  map.lookup(whole, [&](TaskId w) { writers.push_back(w); });
  EXPECT_EQ(writers, std::vector<TaskId>{8});
  EXPECT_TRUE(map.erase_entry(second, 8));
  EXPECT_EQ(map.entry_count(), 0u);
  EXPECT_EQ(map.buffer_count(), 0u) << "a buffer without entries is forgotten";
}

TEST(TensorMapEraseEntry, CoveredAndReusedEntryIsNotErasedForTheOldWriter) {
  TensorMap map;
  const Tensor t = Tensor::make(kBuffer, {256}, DataType::F32);
  const uint32_t old_entry = map.record_write(t, 1);
  map.record_write(t, 2);  // covers and frees the old entry
  const Tensor other = Tensor::make(DeviceBuffer{0x90000, 1024}, {256}, DataType::F32);
  map.record_write(other, 3);  // may reuse the freed entry id
  EXPECT_FALSE(map.erase_entry(old_entry, 1));
  EXPECT_EQ(map.entry_count(), 2u);
}

TEST(TensorMapEraseEntry, UnboundedEntriesAndEmptyRegions) {
  TensorMap map;
  Tensor odd = Tensor::make(kBuffer, {4}, DataType::F32);
  odd.strides[0] = UINT64_MAX / 2;  // hand-made: the extent overflows
  const uint32_t bounded = map.record_write(Tensor::make(kBuffer, {4}, DataType::F32), 4);
  const uint32_t unbounded = map.record_write(odd, 5);
  ASSERT_NE(unbounded, TensorMap::kNoEntry);
  EXPECT_TRUE(map.erase_entry(unbounded, 5));
  EXPECT_TRUE(map.erase_entry(bounded, 4));
  EXPECT_EQ(map.buffer_count(), 0u);
  Tensor empty = Tensor::make(kBuffer, {4}, DataType::F32);
  empty.shape[0] = 0;
  EXPECT_EQ(map.record_write(empty, 6), TensorMap::kNoEntry);
  EXPECT_FALSE(map.erase_entry(TensorMap::kNoEntry, 6));
}

}  // namespace
}  // namespace chiprt::orchestrator
