// Coherence: where the valid bytes of every node buffer live, across a node's chips and the host,
// and which copies make a region valid where a chip run or a host task is about to use it (the
// memory nodes of StarPU, by byte range rather than whole buffer).
//
// Every byte of a buffer is valid in at least one location, or lost: a chip reset takes its copies
// with it, and bytes whose only valid copy was there stay lost until written again. A reader makes
// the region it reads valid where it runs (copies from a location that holds it; lost bytes are an
// error naming the reset); a writer first does the same for the region it writes (it may write
// only part of it), then holds the only valid copy of it. A location's copy of a buffer whose
// bytes are all valid elsewhere too is a replica: it may be dropped (evicted) at no loss.
//
// Pure bookkeeping: it plans transfers and records what was done; it copies nothing.
// Not thread-safe: the node's scheduler owns it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "chiprt/status.h"
#include "node/byte_ranges.h"
#include "node/node_chips.h"

namespace chiprt::node {

// Chips are locations 0..kMaxChips-1; the host is kHostLocation.
using Location = uint32_t;
inline constexpr Location kHostLocation = kMaxChips;
inline constexpr uint32_t kLocations = kMaxChips + 1;

// "chip 3" / "the host".
std::string location_name(Location location);

// One copy to make: bytes [lo, hi) of a buffer from `from` to `to`.
struct Transfer {
  uint64_t buffer = 0;
  Location from = 0;
  Location to = 0;
  uint64_t lo = 0;
  uint64_t hi = 0;
  bool operator==(const Transfer&) const = default;
};

class Coherence {
 public:
  // A buffer of `size` bytes whose bytes are all valid at `home` (InvalidArgument for a known id
  // or a location out of range).
  void add_buffer(uint64_t buffer, uint64_t size, Location home);
  void remove_buffer(uint64_t buffer);
  bool has_buffer(uint64_t buffer) const noexcept { return buffers_.count(buffer) != 0; }

  enum class Access { Read, Write };
  // Appends to `out` the transfers that make [lo, hi) of `buffer` valid at `at`, each missing
  // piece from the location holding it with the lowest index (chips before the host). Read: lost
  // bytes are an error (InvalidDevicePointer naming the reset that lost them; nothing appended).
  // Write: lost bytes need no copy (they are about to be written).
  Status plan(uint64_t buffer, uint64_t lo, uint64_t hi, Location at, Access access,
              std::vector<Transfer>* out) const;
  // A planned transfer was made: its bytes are valid at `to` too.
  void copied(const Transfer& transfer);
  // [lo, hi) of `buffer` was written at `at`: valid there only. `dense`: every byte of it was
  // written (a host write, a contiguous view), so lost bytes there are lost no more; otherwise
  // (a strided view, which may not have written them) lost bytes stay lost.
  void written(uint64_t buffer, uint64_t lo, uint64_t hi, Location at, bool dense = true);
  // [lo, hi) of `buffer` is valid nowhere any more (a run that was writing it failed, `why`):
  // lost until written again.
  void discard(uint64_t buffer, uint64_t lo, uint64_t hi, const std::string& why);
  // Every copy at `location` is gone (`why`: "chip 2 was reset (reset 1)"): bytes valid nowhere
  // else become lost.
  void lose(Location location, const std::string& why);

  // Bytes of [lo, hi) of `buffer` valid at `at` (placement by data).
  uint64_t valid_bytes(uint64_t buffer, uint64_t lo, uint64_t hi, Location at) const;
  // Whether `at` holds any valid byte of `buffer`.
  bool holds(uint64_t buffer, Location at) const;
  // Whether `at`'s copy of `buffer` is a replica: it holds valid bytes, all of them valid
  // elsewhere too.
  bool is_replica(uint64_t buffer, Location at) const;
  // Drops `at`'s copy of a replica (InvalidArgument when it is not one: bytes would be lost).
  void drop_replica(uint64_t buffer, Location at);
  // The buffer's lost bytes.
  const ByteRanges& lost(uint64_t buffer) const;

 private:
  struct Buffer {
    uint64_t size = 0;
    ByteRanges valid[kLocations];
    ByteRanges lost;
    // Why each lost range was lost (disjoint; together exactly `lost`).
    struct LostReason {
      ByteRange range;
      std::string why;
    };
    std::vector<LostReason> reasons;
    void mark_lost(uint64_t lo, uint64_t hi, const std::string& why);
    void unmark_lost(uint64_t lo, uint64_t hi);
    // Why [lo, hi) (lost) was lost: the reason of its first byte.
    const std::string& why_lost(uint64_t lo) const;
  };
  Buffer& find(uint64_t buffer);
  const Buffer& find(uint64_t buffer) const;
  static void check_location(Location location);
  // The bytes of `range` valid somewhere other than `at`.
  ByteRanges valid_elsewhere(const Buffer& b, Location at, const ByteRange& range) const;

  std::map<uint64_t, Buffer> buffers_;
  mutable std::vector<ByteRange> scratch_;
};

}  // namespace chiprt::node
