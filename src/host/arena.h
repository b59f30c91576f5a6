// Device arenas and retained per-slot buffers of a DeviceRunner.
//
// ArenaSet holds kPipelineDepth banks; each bank has three regions (the output heap runtime
// outputs are carved from, the orchestrator<->scheduler shared state, the runtime graph image).
// A region is committed once and reused; a larger request releases and recommits it; a request of
// 0 releases it; a request of less than a quarter of a region above 64 MiB recommits it at the
// requested size (common/retention.h), except a bank's while it holds its replay cache's layout.
// If any region of a bank fails to commit, all three are released (the bank returns
// to its initial state) so a failure never leaves a half-sized layout behind.
//
// Each bank has a single-entry prebuilt-image cache of its own (its addresses point into that
// bank's regions, so pipelined runs in both banks replay), invalidated by every change of that
// bank's layout.
//
// StagingBuffers and GraphDefinitionBuffers are per pipeline slot, retained between runs and
// grow-only. Everything here is owned by one DeviceRunner and used by one thread at a time.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "chiprt/graph_export.h"
#include "chiprt/status.h"
#include "chiprt/types.h"
#include "host/device_memory.h"

namespace chiprt::host {

inline constexpr uint32_t kPipelineDepth = 2;

enum class ArenaRegion : uint8_t { OutputHeap = 0, SharedState = 1, RuntimeImage = 2 };
inline constexpr int kArenaRegionCount = 3;
std::string_view arena_region_name(ArenaRegion region) noexcept;

struct ArenaSizes {
  uint64_t output_heap = 0;
  uint64_t shared_state = 0;
  uint64_t runtime_image = 0;
  uint64_t of(ArenaRegion region) const noexcept;
};

// A set of regions of one bank (bit r: ArenaRegion r).
using ArenaRegionSet = uint8_t;
constexpr ArenaRegionSet arena_regions(ArenaRegion region) noexcept {
  return static_cast<ArenaRegionSet>(1u << static_cast<unsigned>(region));
}
template <class... Rest>
constexpr ArenaRegionSet arena_regions(ArenaRegion region, Rest... rest) noexcept {
  return static_cast<ArenaRegionSet>(arena_regions(region) | arena_regions(rest...));
}
inline constexpr ArenaRegionSet kAllArenaRegions =
    arena_regions(ArenaRegion::OutputHeap, ArenaRegion::SharedState, ArenaRegion::RuntimeImage);

// A cached runtime image and the layout it was built for.
struct PrebuiltImage {
  std::vector<uint8_t> key;  // what the image depends on (callable, args, sizing)
  std::vector<uint8_t> image;
  std::vector<DependencyKinds> edge_kinds;  // the image's edges' kinds (deps diagnostics)
  uint64_t task_count = 0;                  // records, scope fences included
  uint64_t user_task_count = 0;             // the orchestration's tasks (RunReport::task_count)
  DeviceBuffer output_heap;                 // the bank's regions when the image was built
  DeviceBuffer shared_state;
  DeviceBuffer runtime_image;
  // A launch of this image passed the chip's checks; replays then launch it prevalidated
  // (ChipLaunchArgs::image_prevalidated). The host never rewrites a cached image's bytes.
  bool chip_validated = false;
};

class ArenaSet {
 public:
  explicit ArenaSet(DeviceMemory* memory) : memory_(memory) {}
  ArenaSet(const ArenaSet&) = delete;
  ArenaSet& operator=(const ArenaSet&) = delete;

  // Makes each region of `bank` in `regions` at least the requested size (0 releases the region);
  // the others are left as they are. On failure every region of the bank is released and
  // ArenaCommitFailed names the region and `sizes` (all three, as given).
  Status setup(uint32_t bank, const ArenaSizes& sizes, ArenaRegionSet regions = kAllArenaRegions);
  // The committed region (empty when not committed or `bank` is out of range).
  DeviceBuffer region(uint32_t bank, ArenaRegion region) const noexcept;
  ArenaSizes committed_sizes(uint32_t bank) const noexcept;
  // How many times any region of any bank was committed (for tests and statistics).
  uint64_t commit_count() const noexcept { return commit_count_; }

  // The prebuilt-image cache of `bank`: lookup returns nullptr on a miss (or a bank out of range).
  const PrebuiltImage* lookup_prebuilt(uint32_t bank, const std::vector<uint8_t>& key) const;
  // Stores `image` as `bank`'s entry (replacing the one it had); ignored for a bank out of range.
  void store_prebuilt(uint32_t bank, PrebuiltImage image);
  // Records that a launch of `bank`'s cached image for `key` completed (the chip checked it).
  void mark_prebuilt_validated(uint32_t bank, const std::vector<uint8_t>& key) noexcept;
  // Whether `bank` holds an entry; without a bank, whether any does.
  bool prebuilt_valid(uint32_t bank) const noexcept {
    return bank < kPipelineDepth && prebuilt_[bank].valid;
  }
  bool prebuilt_valid() const noexcept;
  void invalidate_prebuilt(uint32_t bank) noexcept;
  void invalidate_all_prebuilt() noexcept;

  Status release_all();
  void abandon() noexcept;

 private:
  struct Bank {
    std::array<DeviceBuffer, kArenaRegionCount> regions{};
  };
  void release_bank(Bank& bank);

  DeviceMemory* memory_;
  std::array<Bank, kPipelineDepth> banks_{};
  uint64_t commit_count_ = 0;
  struct CacheEntry {
    bool valid = false;
    PrebuiltImage image;
  };
  std::array<CacheEntry, kPipelineDepth> prebuilt_{};
};

// One retained scratch buffer per pipeline slot (launch arguments and phase buffer of a run).
class StagingBuffers {
 public:
  explicit StagingBuffers(DeviceMemory* memory) : memory_(memory) {}
  // A buffer of at least `bytes` for `slot`, reused while large enough, replaced when not.
  Status acquire(uint32_t slot, uint64_t bytes, DeviceBuffer* out);
  DeviceBuffer current(uint32_t slot) const noexcept;
  Status release_all();
  void abandon() noexcept;

 private:
  DeviceMemory* memory_;
  std::array<DeviceBuffer, kPipelineDepth> buffers_{};
};

// Per-slot device buffers keyed by the 64-bit content key of what they hold (graph definitions
// reused across runs). Grow-only; a (re)allocated buffer is zeroed; the returned address is
// aligned to `alignment`.
class GraphDefinitionBuffers {
 public:
  explicit GraphDefinitionBuffers(DeviceMemory* memory) : memory_(memory) {}
  // InvalidArgument for a slot out of range, bytes == 0, or an alignment that is zero or not a
  // power of two; the allocator's error when memory runs out (the old buffer is then kept).
  Status acquire(uint32_t slot, uint64_t key, uint64_t bytes, uint64_t alignment,
                 uint64_t* aligned_addr);
  std::size_t count(uint32_t slot) const noexcept;
  uint64_t capacity(uint32_t slot, uint64_t key) const noexcept;
  Status release_all();
  void abandon() noexcept;

 private:
  struct Buffer {
    uint64_t allocation = 0;
    uint64_t aligned_addr = 0;
    uint64_t capacity = 0;
  };
  DeviceMemory* memory_;
  std::array<std::unordered_map<uint64_t, Buffer>, kPipelineDepth> by_slot_;
};

}  // namespace chiprt::host
