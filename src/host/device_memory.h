// DeviceMemory: the runner's view of device memory, every allocation tracked.
//
// All host-side device allocations (user tensors, arenas, staging and graph-definition buffers,
// uploaded callables, launch blocks) go through one DeviceMemory so that finalize can free what
// is left and abandon can forget it. A device reset loses every buffer: the user's buffers of the
// old device are kept in a bounded history (forget_as_lost), so that a later use of one is told
// apart from a bad pointer (lost_buffer). Owned by a DeviceRunner and used by one thread at a time
// (the runner's caller); it never dereferences device addresses.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>

#include "chiprt/status.h"
#include "chiprt/types.h"
#include "platform/platform.h"

namespace chiprt::host {

// Who an allocation belongs to: user buffers may be freed through the Worker API; runtime
// buffers only by the runner's own components.
enum class AllocationOwner : uint8_t { User, Runtime };

inline constexpr uint64_t kDeviceAlign = 64;

class DeviceMemory {
 public:
  explicit DeviceMemory(platform::Platform* platform) : platform_(platform) {}
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;

  Status allocate(uint64_t bytes, uint64_t align, AllocationOwner owner, DeviceBuffer* out);
  // InvalidDevicePointer when `addr` is not tracked or (with `owner`) belongs to someone else.
  Status free(uint64_t addr, AllocationOwner owner);
  Status copy_to_device(uint64_t dst, const void* src, uint64_t bytes);
  Status copy_from_device(void* dst, uint64_t src, uint64_t bytes);
  Status memset(uint64_t dst, int value, uint64_t bytes);

  // The tracked allocation starting at `addr`, if any.
  bool find(uint64_t addr, uint64_t* size, AllocationOwner* owner) const;
  // Whether [addr, addr+bytes) lies inside one tracked allocation (of `owner`, when given).
  bool contains(uint64_t addr, uint64_t bytes, const AllocationOwner* owner = nullptr) const;
  std::size_t tracked_count() const noexcept { return allocations_.size(); }
  std::size_t tracked_count(AllocationOwner owner) const noexcept;
  uint64_t tracked_bytes() const noexcept;

  // Frees every tracked allocation; returns the first failure (all are attempted).
  Status release_all();
  // Forgets every allocation without touching the device.
  void abandon() noexcept;
  // abandon(), first noting every user allocation as lost by reset number `reset_number` (the
  // reset that replaces this device). The history keeps the newest kLostHistory buffers.
  void forget_as_lost(uint64_t reset_number);

  struct LostBuffer {
    uint64_t addr = 0;
    uint64_t size = 0;
    uint64_t reset_number = 0;
  };
  static constexpr std::size_t kLostHistory = 4096;
  // The lost user buffer containing `addr`, if any (a later allocation at its address makes it
  // live again, and no longer lost).
  bool lost_buffer(uint64_t addr, LostBuffer* out) const;
  // "device buffer 0x1000 (256 bytes) was lost when the device was reset (reset 1); allocate a new
  // one" for a lost buffer containing `addr`; empty when `addr` is in none.
  std::string lost_buffer_text(uint64_t addr) const;

 private:
  struct Allocation {
    uint64_t size;
    AllocationOwner owner;
  };
  platform::Platform* platform_;
  std::map<uint64_t, Allocation> allocations_;  // by start address
  std::deque<LostBuffer> lost_;                 // oldest first, at most kLostHistory
};

}  // namespace chiprt::host
