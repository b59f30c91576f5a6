// The protocol headers' device addresses name the fields the chip uses: what the host reads
// through the platform by address is the field the chip writes.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>

#include "common/chip_launch.h"
#include "common/handshake.h"
#include "common/ring_layout.h"
#include "common/shared_layout.h"

namespace chiprt::common {
namespace {

uint64_t address_of(const void* p) {
  return reinterpret_cast<uintptr_t>(p);
}

TEST(ProtocolLayoutTest, PrefixFieldAddressesNameTheFields) {
  auto prefix = std::make_unique<SharedPrefix>();
  const uint64_t base = address_of(prefix.get());
  EXPECT_EQ(orchestrator_beat_addr(base), address_of(&prefix->orchestrator_beat));
  for (uint32_t core : {0u, 1u, 37u, kMaxCores - 1}) {
    EXPECT_EQ(core_starts_addr(base, core), address_of(&prefix->cells[core].starts)) << core;
    EXPECT_EQ(core_kernel_ns_addr(base, core), address_of(&prefix->cells[core].kernel_ns)) << core;
  }
}

TEST(ProtocolLayoutTest, ResultCodeAddressNamesTheStatusWord) {
  auto args = std::make_unique<ChipLaunchArgs>();
  EXPECT_EQ(launch_result_code_addr(address_of(args.get())), address_of(&args->result.code));
  EXPECT_EQ(launch_shared_addr_addr(address_of(args.get())), address_of(&args->shared_addr));
}

TEST(ProtocolLayoutTest, SchedulerTimeoutDefaultsWhenUnset) {
  ChipLaunchArgs args;
  EXPECT_EQ(scheduler_timeout_ms(args), kDefaultSchedulerTimeoutMs);
  args.scheduler_timeout_ms = 250;
  EXPECT_EQ(scheduler_timeout_ms(args), 250u);
}

TEST(ProtocolLayoutTest, HostBuildGraphRegionSizes) {
  EXPECT_EQ(shared_state_bytes(0), 0u);  // no tasks: no launch, no region
  EXPECT_EQ(shared_state_bytes(1000), shared_layout(1000).total_bytes);
  EXPECT_EQ(shared_layout(1000).queue_capacity, 1024u);
  EXPECT_EQ(kSharedClearedBytes, shared_layout(1).queue_offset[0]);
  EXPECT_EQ(shared_layout(1).state_offset % 64, 0u);
}

TEST(ProtocolLayoutTest, RingRegionFollowsTheCommonPartAndRejectsBadSizes) {
  RingSizes sizes;
  for (uint32_t d = 0; d < kRingDepths; ++d) {
    sizes.task_window[d] = 64;
    sizes.heap_bytes[d] = 8192;
    sizes.dep_pool[d] = 256;
  }
  const RingLayout layout = ring_layout(sizes);
  EXPECT_EQ(layout.total_slots, 256u);
  EXPECT_EQ(layout.control_offset, align64(shared_layout(256).total_bytes));
  EXPECT_EQ(layout.public_ids_offset - layout.records_offset, align64(256 * sizeof(TaskRecord)));
  // The slot arguments come last and are not cleared by the host.
  EXPECT_EQ(layout.slot_args_offset, layout.cleared_bytes);
  EXPECT_GT(layout.slot_args_offset, layout.spill_offset);
  EXPECT_EQ(layout.total_bytes - layout.slot_args_offset,
            align64(256ull * kRingSlotArgs * sizeof(int64_t)));
  EXPECT_EQ(kRingSlotArgs, 3u + 32 + 16 * 13);
  EXPECT_EQ(ring_shared_state_bytes(sizes), layout.total_bytes);
  char message[256];
  EXPECT_FALSE(ring_sizes_problem(sizes, message, sizeof(message)));
  sizes.task_window[2] = 100;
  EXPECT_EQ(ring_shared_state_bytes(sizes), UINT64_MAX);
  ASSERT_TRUE(ring_sizes_problem(sizes, message, sizeof(message)));
  EXPECT_STREQ(message,
               "ring task_window of depth 2 is 100: it must be a power of two in [16, 1048576] "
               "(set CallConfig::rings or CHIPRT_RING_*)");
}

}  // namespace
}  // namespace chiprt::common
