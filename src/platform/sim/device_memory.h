// DeviceMemory: the simulated chip's device memory, a tracked allocator over one of two backings.
//
// - Heap (the in-process sim): each allocation is its own block of host memory; device addresses
//   are host pointers, so chip-side code dereferences them directly.
// - Region (the isolated sim, isolated_platform.h): a carve-out of one mapped range with a
//   first-fit free list. Device addresses lie in `DeviceRegion::device_base` (where the device
//   process maps the memory); the host reaches the same bytes at `host_base`, and every host-side
//   operation translates.
// Either way every allocation is recorded (address -> size) against a fixed capacity, and
// host-side operations (alloc, free, copies, memset) validate addresses and ranges and report
// errors as Status, never crash.
// Lifetime: owned by the platform (and kept alive by stuck stream threads, see launch_engine.h);
// the destructor releases live and abandoned heap allocations (a region's mapping belongs to
// whoever mapped it). Threading: every method is thread-safe (one mutex; these are host-side calls,
// not the chip's hot path).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "chiprt/status.h"
#include "chiprt/types.h"

namespace chiprt::platform::sim {

// A mapped range that a region-backed DeviceMemory carves allocations from: `bytes` at
// `host_base` in this process, named by device addresses from `device_base`.
struct DeviceRegion {
  uint8_t* host_base = nullptr;
  uint64_t device_base = 0;
  uint64_t bytes = 0;
};

class DeviceMemory {
 public:
  static constexpr uint64_t kMaxAlign = 4096;
  // How many freed addresses are remembered to tell a double free from an unknown pointer.
  static constexpr std::size_t kFreedHistory = 4096;

  // Heap-backed: `capacity_bytes` of host memory at most, allocated per allocation.
  explicit DeviceMemory(uint64_t capacity_bytes) : capacity_(capacity_bytes) {}
  // Region-backed: allocations are carved from `region` (its bytes are the capacity).
  explicit DeviceMemory(const DeviceRegion& region);
  ~DeviceMemory();
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;

  // `align` must be a power of two in [1, kMaxAlign]; `bytes` > 0.
  Status alloc(uint64_t bytes, uint64_t align, DeviceBuffer* out);
  Status free(uint64_t addr);
  Status copy_to_device(uint64_t dst, const void* src, uint64_t bytes);
  Status copy_from_device(void* dst, uint64_t src, uint64_t bytes);
  Status load_word(uint64_t src, uint32_t* out);
  // Atomic acquire load / release store of an aligned 64-bit word chip threads use atomically.
  Status load_u64(uint64_t src, uint64_t* out);
  Status store_u64(uint64_t dst, uint64_t value);
  Status memset(uint64_t dst, int value, uint64_t bytes);
  // Whether [addr, addr + bytes) lies inside one live allocation (InvalidDevicePointer naming
  // `operation` otherwise).
  Status check(const char* operation, uint64_t addr, uint64_t bytes) const;
  // Copies `bytes` at `src_addr` of `src` (another device's memory, or this one: then as memmove)
  // to `dst`, host view to host view, after checking both ranges; holds both mutexes (taken in a
  // deadlock-free order), so two threads may copy A to B and B to A at once.
  Status copy_from(DeviceMemory& src, uint64_t dst, uint64_t src_addr, uint64_t bytes);
  uint64_t bytes_in_use() const;
  uint64_t capacity() const noexcept { return capacity_; }
  std::size_t live_allocations() const;
  // Forgets every allocation without freeing it: the memory moves to a quarantine released only by
  // the destructor (after a device fault, chip threads may still touch it).
  void abandon();
  // True when allocations are carved from a DeviceRegion.
  bool region_backed() const noexcept { return region_.host_base != nullptr; }

 private:
  struct Allocation {
    uint64_t size = 0;
    uint64_t host_align = 0;  // heap: alignment passed to the host allocator (to release it)
    uint64_t reserved = 0;    // region: bytes taken from the free list (size rounded up)
  };
  struct Quarantined {
    uint64_t addr = 0;
    Allocation allocation;
  };
  // Checks that [addr, addr + bytes) lies inside one live allocation. Caller holds mutex_.
  Status check_range(const char* operation, uint64_t addr, uint64_t bytes) const;
  void remember_freed(uint64_t addr);
  // Takes the memory of a new allocation from the backing (caller holds mutex_).
  Status reserve(uint64_t bytes, uint64_t align, uint64_t* addr, Allocation* allocation);
  // Gives a freed allocation's memory back to the backing (heap: the host; region: the free list).
  void release(uint64_t addr, const Allocation& allocation) noexcept;
  void* host_view(uint64_t addr) const noexcept;

  const uint64_t capacity_;
  const DeviceRegion region_{};
  mutable std::mutex mutex_;
  std::map<uint64_t, uint64_t> free_ranges_;  // region: device address -> bytes, coalesced
  std::map<uint64_t, Allocation> live_;  // ordered: range checks look up the enclosing allocation
  uint64_t in_use_ = 0;
  std::deque<uint64_t> freed_order_;
  std::unordered_set<uint64_t> freed_;
  std::vector<Quarantined> quarantine_;
};

}  // namespace chiprt::platform::sim
