// DeviceMemory: the simulated chip's device memory, a tracked allocator over real host memory.
//
// Every allocation is recorded (address -> size) against a fixed capacity; device addresses are
// host pointers so chip-side code can dereference them directly. Host-side operations (alloc,
// free, copies, memset) validate addresses and ranges and report errors as Status, never crash.
// Lifetime: owned by the platform (and kept alive by stuck stream threads, see launch_engine.h);
// the destructor releases live and abandoned allocations. Threading: every method is thread-safe
// (one mutex; these are host-side calls, not the chip's hot path).
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

class DeviceMemory {
 public:
  static constexpr uint64_t kMaxAlign = 4096;
  // How many freed addresses are remembered to tell a double free from an unknown pointer.
  static constexpr std::size_t kFreedHistory = 4096;

  explicit DeviceMemory(uint64_t capacity_bytes) : capacity_(capacity_bytes) {}
  ~DeviceMemory();
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;

  // `align` must be a power of two in [1, kMaxAlign]; `bytes` > 0.
  Status alloc(uint64_t bytes, uint64_t align, DeviceBuffer* out);
  Status free(uint64_t addr);
  Status copy_to_device(uint64_t dst, const void* src, uint64_t bytes);
  Status copy_from_device(void* dst, uint64_t src, uint64_t bytes);
  Status load_word(uint64_t src, uint32_t* out);
  Status memset(uint64_t dst, int value, uint64_t bytes);
  uint64_t bytes_in_use() const;
  uint64_t capacity() const noexcept { return capacity_; }
  std::size_t live_allocations() const;
  // Forgets every allocation without freeing it: the memory moves to a quarantine released only by
  // the destructor (after a device fault, chip threads may still touch it).
  void abandon();

 private:
  struct Allocation {
    uint64_t size = 0;
    uint64_t host_align = 0;  // alignment passed to the host allocator (needed to release it)
  };
  struct Quarantined {
    uint64_t addr = 0;
    Allocation allocation;
  };
  // Checks that [addr, addr + bytes) lies inside one live allocation. Caller holds mutex_.
  Status check_range(const char* operation, uint64_t addr, uint64_t bytes) const;
  void remember_freed(uint64_t addr);
  static void release(uint64_t addr, const Allocation& allocation) noexcept;

  const uint64_t capacity_;
  mutable std::mutex mutex_;
  std::map<uint64_t, Allocation> live_;  // ordered: range checks look up the enclosing allocation
  uint64_t in_use_ = 0;
  std::deque<uint64_t> freed_order_;
  std::unordered_set<uint64_t> freed_;
  std::vector<Quarantined> quarantine_;
};

}  // namespace chiprt::platform::sim
