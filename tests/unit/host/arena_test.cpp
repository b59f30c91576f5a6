#include "host/arena.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "host/device_memory.h"
#include "host/log.h"
#include "host_test_support.h"
#include "platform/platform.h"

namespace chiprt::host {
namespace {

using ::testing::HasSubstr;

std::unique_ptr<platform::Platform> make_sim(uint64_t memory_bytes) {
  return test::make_sim(/*clusters=*/1, /*serial=*/false, memory_bytes, /*host_threads=*/1);
}

class ArenaTest : public ::testing::Test {
 protected:
  explicit ArenaTest(uint64_t memory_bytes = 64ull << 20)
      : platform_(make_sim(memory_bytes)), memory_(platform_.get()), arenas_(&memory_) {}
  void SetUp() override {
    saved_ = log_level();
    set_log_level(LogLevel::Off);
  }
  void TearDown() override {
    EXPECT_TRUE(arenas_.release_all().is_ok());
    set_log_level(saved_);
  }

  std::unique_ptr<platform::Platform> platform_;
  DeviceMemory memory_;
  ArenaSet arenas_;
  LogLevel saved_ = LogLevel::Warn;
};

TEST_F(ArenaTest, CommitsEachRegionOnceAndReusesIt) {
  ASSERT_TRUE(arenas_.setup(0, {4096, 8192, 1024}).is_ok());
  const DeviceBuffer heap = arenas_.region(0, ArenaRegion::OutputHeap);
  const DeviceBuffer shared = arenas_.region(0, ArenaRegion::SharedState);
  const DeviceBuffer image = arenas_.region(0, ArenaRegion::RuntimeImage);
  EXPECT_EQ(heap.size, 4096u);
  EXPECT_EQ(shared.size, 8192u);
  EXPECT_EQ(image.size, 1024u);
  EXPECT_EQ(arenas_.commit_count(), 3u);
  EXPECT_EQ(heap.addr % kDeviceAlign, 0u);

  // Same or smaller sizes: nothing is recommitted and the bases stay put.
  ASSERT_TRUE(arenas_.setup(0, {4096, 100, 1024}).is_ok());
  EXPECT_EQ(arenas_.commit_count(), 3u);
  EXPECT_EQ(arenas_.region(0, ArenaRegion::OutputHeap), heap);
  EXPECT_EQ(arenas_.region(0, ArenaRegion::SharedState), shared);
  EXPECT_EQ(platform_->bytes_in_use(), 4096u + 8192u + 1024u);
}

TEST_F(ArenaTest, GrowsOnlyTheRegionThatNeedsIt) {
  ASSERT_TRUE(arenas_.setup(1, {4096, 4096, 4096}).is_ok());
  const DeviceBuffer heap = arenas_.region(1, ArenaRegion::OutputHeap);
  ASSERT_TRUE(arenas_.setup(1, {4096, 65536, 4096}).is_ok());
  EXPECT_EQ(arenas_.commit_count(), 4u);
  EXPECT_EQ(arenas_.region(1, ArenaRegion::OutputHeap), heap);
  EXPECT_EQ(arenas_.region(1, ArenaRegion::SharedState).size, 65536u);
  EXPECT_EQ(platform_->bytes_in_use(), 4096u + 65536u + 4096u);  // the old region was released
}

TEST_F(ArenaTest, SizeZeroReleasesTheRegion) {
  ASSERT_TRUE(arenas_.setup(0, {4096, 4096, 4096}).is_ok());
  ASSERT_TRUE(arenas_.setup(0, {4096, 4096, 0}).is_ok());
  EXPECT_TRUE(arenas_.region(0, ArenaRegion::RuntimeImage).empty());
  EXPECT_EQ(platform_->bytes_in_use(), 8192u);
}

// A run commits each region where its size becomes known (the output heap before orchestrating,
// the other two after): a setup of some regions leaves the others as they are, whatever `sizes`
// says of them, and a failure still releases the whole bank.
TEST_F(ArenaTest, SetupOfSomeRegionsLeavesTheOthers) {
  ASSERT_TRUE(arenas_.setup(0, {4096, 4096, 4096}).is_ok());
  const DeviceBuffer shared = arenas_.region(0, ArenaRegion::SharedState);
  const DeviceBuffer image = arenas_.region(0, ArenaRegion::RuntimeImage);
  ASSERT_TRUE(
      arenas_.setup(0, {65536, 0, 1ull << 40}, arena_regions(ArenaRegion::OutputHeap)).is_ok());
  EXPECT_EQ(arenas_.region(0, ArenaRegion::OutputHeap).size, 65536u);
  EXPECT_EQ(arenas_.region(0, ArenaRegion::SharedState), shared);
  EXPECT_EQ(arenas_.region(0, ArenaRegion::RuntimeImage), image);
  EXPECT_EQ(arenas_.commit_count(), 4u);

  const DeviceBuffer heap = arenas_.region(0, ArenaRegion::OutputHeap);
  ASSERT_TRUE(arenas_
                  .setup(0, {0, 8192, 0},
                         arena_regions(ArenaRegion::SharedState, ArenaRegion::RuntimeImage))
                  .is_ok());
  EXPECT_EQ(arenas_.region(0, ArenaRegion::OutputHeap), heap);
  EXPECT_EQ(arenas_.region(0, ArenaRegion::SharedState).size, 8192u);
  EXPECT_TRUE(arenas_.region(0, ArenaRegion::RuntimeImage).empty());

  Status status = arenas_.setup(0, {1, 1ull << 40, 2}, arena_regions(ArenaRegion::SharedState));
  EXPECT_EQ(status.code(), StatusCode::ArenaCommitFailed);
  EXPECT_THAT(status.message(),
              HasSubstr("region shared_state could not commit 1099511627776 bytes (output_heap=1, "
                        "shared_state=1099511627776, runtime_image=2)"));
  EXPECT_TRUE(arenas_.region(0, ArenaRegion::OutputHeap).empty());
  EXPECT_EQ(platform_->bytes_in_use(), 0u);
}

TEST_F(ArenaTest, BankOutOfRangeIsAnError) {
  Status status = arenas_.setup(kPipelineDepth, {1, 1, 1});
  EXPECT_EQ(status.code(), StatusCode::InvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("arena bank 2"));
  EXPECT_TRUE(arenas_.region(kPipelineDepth, ArenaRegion::OutputHeap).empty());
}

PrebuiltImage image_for(const ArenaSet& arenas, std::vector<uint8_t> key) {
  PrebuiltImage entry;
  entry.key = std::move(key);
  entry.image = {1, 2, 3, 4};
  entry.task_count = 2;
  entry.output_heap = arenas.region(0, ArenaRegion::OutputHeap);
  return entry;
}

// Each bank caches its own image (its addresses point into that bank): a bank never gets the
// other's, and a change of one bank's layout drops only its own entry.
TEST_F(ArenaTest, EachBankHasAPrebuiltCacheOfItsOwn) {
  ASSERT_TRUE(arenas_.setup(0, {4096, 4096, 4096}).is_ok());
  ASSERT_TRUE(arenas_.setup(1, {4096, 4096, 4096}).is_ok());
  EXPECT_FALSE(arenas_.prebuilt_valid());
  arenas_.store_prebuilt(1, image_for(arenas_, {9}));
  EXPECT_TRUE(arenas_.prebuilt_valid(1));
  EXPECT_FALSE(arenas_.prebuilt_valid(0));
  EXPECT_TRUE(arenas_.prebuilt_valid());
  arenas_.store_prebuilt(0, image_for(arenas_, {7, 7}));
  ASSERT_TRUE(arenas_.prebuilt_valid(0));
  const PrebuiltImage* hit = arenas_.lookup_prebuilt(0, {7, 7});
  ASSERT_NE(hit, nullptr);
  EXPECT_EQ(hit->task_count, 2u);
  EXPECT_EQ(arenas_.lookup_prebuilt(1, {7, 7}), nullptr);  // bank 1 never gets bank 0's image
  EXPECT_EQ(arenas_.lookup_prebuilt(0, {9}), nullptr);     // nor bank 0 bank 1's
  EXPECT_NE(arenas_.lookup_prebuilt(1, {9}), nullptr);
  EXPECT_EQ(arenas_.lookup_prebuilt(0, {7, 8}), nullptr);  // different key
  EXPECT_EQ(arenas_.lookup_prebuilt(2, {9}), nullptr);     // no such bank
  arenas_.mark_prebuilt_validated(1, {9});
  EXPECT_TRUE(arenas_.lookup_prebuilt(1, {9})->chip_validated);
  EXPECT_FALSE(arenas_.lookup_prebuilt(0, {7, 7})->chip_validated);
}

TEST_F(ArenaTest, PrebuiltCacheIsInvalidatedByAnyChangeOfItsBank) {
  ASSERT_TRUE(arenas_.setup(0, {4096, 4096, 4096}).is_ok());
  ASSERT_TRUE(arenas_.setup(1, {4096, 4096, 4096}).is_ok());
  arenas_.store_prebuilt(0, image_for(arenas_, {1}));
  arenas_.store_prebuilt(1, image_for(arenas_, {2}));
  ASSERT_TRUE(arenas_.setup(0, {4096, 4096, 4096}).is_ok());  // no change
  EXPECT_TRUE(arenas_.prebuilt_valid(0));
  ASSERT_TRUE(arenas_.setup(1, {8192, 8192, 8192}).is_ok());  // bank 1 grows: only its entry goes
  EXPECT_TRUE(arenas_.prebuilt_valid(0));
  EXPECT_FALSE(arenas_.prebuilt_valid(1));
  ASSERT_TRUE(arenas_.setup(0, {4096, 8192, 4096}).is_ok());  // grow
  EXPECT_FALSE(arenas_.prebuilt_valid(0));
  EXPECT_EQ(arenas_.lookup_prebuilt(0, {1}), nullptr);

  arenas_.store_prebuilt(0, image_for(arenas_, {1}));
  ASSERT_TRUE(arenas_.setup(0, {4096, 8192, 0}).is_ok());  // release
  EXPECT_FALSE(arenas_.prebuilt_valid());
}

class LargeArenaTest : public ArenaTest {
 protected:
  LargeArenaTest() : ArenaTest(512ull << 20) {}
};

// The retention rule (common/retention.h): a region above 64 MiB is recommitted at the requested
// size when the request is below a quarter of it; smaller regions and larger requests reuse it.
TEST_F(LargeArenaTest, AMuchSmallerRequestGivesALargeRegionBack) {
  constexpr uint64_t kMiB = 1ull << 20;
  ASSERT_TRUE(arenas_.setup(1, {64 * kMiB, 200 * kMiB, 4096}).is_ok());
  const uint64_t commits = arenas_.commit_count();
  // A quarter or more of the region: reused as it is.
  ASSERT_TRUE(arenas_.setup(1, {16 * kMiB, 50 * kMiB, 4096}).is_ok());
  EXPECT_EQ(arenas_.commit_count(), commits);
  EXPECT_EQ(arenas_.committed_sizes(1).shared_state, 200 * kMiB);
  // Below a quarter: the 200 MiB region is recommitted at 1 MiB; the 64 MiB heap (not above the
  // floor) is kept.
  ASSERT_TRUE(arenas_.setup(1, {kMiB, kMiB, 4096}).is_ok());
  EXPECT_EQ(arenas_.commit_count(), commits + 1);
  EXPECT_EQ(arenas_.committed_sizes(1).shared_state, kMiB);
  EXPECT_EQ(arenas_.committed_sizes(1).output_heap, 64 * kMiB);
  EXPECT_EQ(platform_->bytes_in_use(), 65 * kMiB + 4096);
}

class TinyArenaTest : public ArenaTest {
 protected:
  TinyArenaTest() : ArenaTest(1ull << 20) {}
};

TEST_F(TinyArenaTest, FailureRollsBackAllThreeRegionsAndTheCache) {
  ASSERT_TRUE(arenas_.setup(0, {256 << 10, 256 << 10, 0}).is_ok());
  arenas_.store_prebuilt(0, image_for(arenas_, {3}));
  Status status = arenas_.setup(0, {256 << 10, 256 << 10, 2 << 20});
  EXPECT_EQ(status.code(), StatusCode::ArenaCommitFailed);
  EXPECT_THAT(status.message(), HasSubstr("runtime_image"));
  EXPECT_THAT(status.message(), HasSubstr("2097152 bytes"));
  // The earlier, successfully committed peers are gone too.
  EXPECT_TRUE(arenas_.region(0, ArenaRegion::OutputHeap).empty());
  EXPECT_TRUE(arenas_.region(0, ArenaRegion::SharedState).empty());
  EXPECT_TRUE(arenas_.region(0, ArenaRegion::RuntimeImage).empty());
  EXPECT_FALSE(arenas_.prebuilt_valid());
  EXPECT_EQ(platform_->bytes_in_use(), 0u);
  EXPECT_EQ(memory_.tracked_count(), 0u);
  // A smaller layout can be retried from scratch.
  EXPECT_TRUE(arenas_.setup(0, {256 << 10, 256 << 10, 256 << 10}).is_ok());
}

TEST_F(TinyArenaTest, FailureOnTheFirstRegionLeavesOtherBanksAlone) {
  ASSERT_TRUE(arenas_.setup(1, {128 << 10, 0, 0}).is_ok());
  Status status = arenas_.setup(0, {4 << 20, 4096, 4096});
  EXPECT_EQ(status.code(), StatusCode::ArenaCommitFailed);
  EXPECT_THAT(status.message(), HasSubstr("output_heap"));
  EXPECT_EQ(arenas_.region(1, ArenaRegion::OutputHeap).size, 128u << 10);
}

class SlotBufferTest : public ArenaTest {
 protected:
  SlotBufferTest() : staging_(&memory_), graph_(&memory_) {}
  void TearDown() override {
    EXPECT_TRUE(staging_.release_all().is_ok());
    EXPECT_TRUE(graph_.release_all().is_ok());
    ArenaTest::TearDown();
  }
  StagingBuffers staging_;
  GraphDefinitionBuffers graph_;
};

TEST_F(SlotBufferTest, StagingBuffersAreRetainedAndGrowOnly) {
  DeviceBuffer a;
  ASSERT_TRUE(staging_.acquire(0, 1024, &a).is_ok());
  DeviceBuffer b;
  ASSERT_TRUE(staging_.acquire(0, 512, &b).is_ok());
  EXPECT_EQ(a, b);
  DeviceBuffer c;
  ASSERT_TRUE(staging_.acquire(0, 4096, &c).is_ok());
  EXPECT_GE(c.size, 4096u);
  EXPECT_EQ(platform_->bytes_in_use(), 4096u);
  DeviceBuffer other;
  ASSERT_TRUE(staging_.acquire(1, 64, &other).is_ok());
  EXPECT_NE(other.addr, c.addr);
  EXPECT_EQ(staging_.acquire(2, 64, &other).code(), StatusCode::InvalidArgument);
}

TEST_F(SlotBufferTest, GraphDefinitionBufferIsReusedForTheSameKey) {
  uint64_t first = 0;
  ASSERT_TRUE(graph_.acquire(0, 42, 1000, 256, &first).is_ok());
  EXPECT_EQ(first % 256, 0u);
  uint64_t again = 0;
  ASSERT_TRUE(graph_.acquire(0, 42, 600, 256, &again).is_ok());
  EXPECT_EQ(again, first);
  EXPECT_EQ(graph_.capacity(0, 42), 1000u);
  uint64_t other_key = 0;
  ASSERT_TRUE(graph_.acquire(0, 43, 100, 64, &other_key).is_ok());
  EXPECT_NE(other_key, first);
  EXPECT_EQ(graph_.count(0), 2u);
  EXPECT_EQ(graph_.count(1), 0u);
}

TEST_F(SlotBufferTest, GraphDefinitionBufferGrowsZeroed) {
  uint64_t small = 0;
  ASSERT_TRUE(graph_.acquire(1, 5, 64, 64, &small).is_ok());
  std::vector<uint8_t> pattern(64, 0xAB);
  ASSERT_TRUE(memory_.copy_to_device(small, pattern.data(), pattern.size()).is_ok());
  uint64_t grown = 0;
  ASSERT_TRUE(graph_.acquire(1, 5, 8192, 4096, &grown).is_ok());
  EXPECT_EQ(grown % 4096, 0u);
  EXPECT_EQ(graph_.capacity(1, 5), 8192u);
  std::vector<uint8_t> readback(8192, 0xFF);
  ASSERT_TRUE(memory_.copy_from_device(readback.data(), grown, readback.size()).is_ok());
  EXPECT_EQ(readback, std::vector<uint8_t>(8192, 0));
  EXPECT_EQ(memory_.tracked_count(), 1u);  // the smaller buffer was released
}

TEST_F(SlotBufferTest, GraphDefinitionBufferRejectsBadRequests) {
  uint64_t addr = 0;
  Status status = graph_.acquire(0, 1, 64, 0, &addr);
  EXPECT_EQ(status.code(), StatusCode::InvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("alignment 0"));
  status = graph_.acquire(0, 1, 64, 48, &addr);
  EXPECT_EQ(status.code(), StatusCode::InvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("alignment 48 is not a non-zero power of two"));
  status = graph_.acquire(0, 1, 0, 64, &addr);
  EXPECT_EQ(status.code(), StatusCode::InvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("size 0"));
  status = graph_.acquire(kPipelineDepth, 1, 64, 64, &addr);
  EXPECT_EQ(status.code(), StatusCode::InvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("pipeline slot 2"));
  status = graph_.acquire(0, 1, UINT64_MAX, 64, &addr);
  EXPECT_EQ(status.code(), StatusCode::InvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("overflows"));
  EXPECT_EQ(memory_.tracked_count(), 0u);
}

TEST_F(ArenaTest, DeviceMemoryTracksOwnersAndFreesLeftovers) {
  DeviceBuffer user;
  ASSERT_TRUE(memory_.allocate(100, kDeviceAlign, AllocationOwner::User, &user).is_ok());
  DeviceBuffer runtime;
  ASSERT_TRUE(memory_.allocate(200, kDeviceAlign, AllocationOwner::Runtime, &runtime).is_ok());
  EXPECT_EQ(memory_.tracked_count(AllocationOwner::User), 1u);
  EXPECT_TRUE(memory_.contains(user.addr + 10, 90));
  EXPECT_FALSE(memory_.contains(user.addr + 10, 91));
  Status status = memory_.free(runtime.addr, AllocationOwner::User);
  EXPECT_EQ(status.code(), StatusCode::InvalidDevicePointer);
  EXPECT_THAT(status.message(), HasSubstr("belongs to the runtime"));
  ASSERT_TRUE(memory_.free(user.addr, AllocationOwner::User).is_ok());
  status = memory_.free(user.addr, AllocationOwner::User);
  EXPECT_EQ(status.code(), StatusCode::InvalidDevicePointer);
  EXPECT_THAT(status.message(), HasSubstr("not a live allocation"));
  EXPECT_TRUE(memory_.release_all().is_ok());
  EXPECT_EQ(platform_->bytes_in_use(), 0u);
}

}  // namespace
}  // namespace chiprt::host
