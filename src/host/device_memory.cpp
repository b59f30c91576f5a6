#include "host/device_memory.h"

#include <cstdio>
#include <string>

namespace chiprt::host {

Status DeviceMemory::allocate(uint64_t bytes, uint64_t align, AllocationOwner owner,
                              DeviceBuffer* out) {
  if (bytes == 0) {
    return Status(StatusCode::InvalidArgument, "device allocation of 0 bytes: request at least 1");
  }
  DeviceBuffer buffer;
  Status status = platform_->alloc(bytes, align, &buffer);
  if (!status.is_ok()) return status;
  allocations_[buffer.addr] = Allocation{bytes, owner};
  if (!lost_.empty()) {
    // The new device handed the range out again: a buffer lost there is live memory now.
    const uint64_t end = buffer.addr + bytes;
    std::erase_if(lost_, [&](const LostBuffer& lost) {
      return lost.addr < end && buffer.addr < lost.addr + lost.size;
    });
  }
  buffer.size = bytes;
  *out = buffer;
  return Status::ok();
}

Status DeviceMemory::free(uint64_t addr, AllocationOwner owner) {
  auto it = allocations_.find(addr);
  if (it == allocations_.end() && owner == AllocationOwner::User) {
    if (std::string lost = lost_buffer_text(addr); !lost.empty()) {
      return Status(StatusCode::InvalidDevicePointer, lost);
    }
  }
  if (it == allocations_.end() || it->second.owner != owner) {
    char text[64];
    std::snprintf(text, sizeof(text), "0x%llx", static_cast<unsigned long long>(addr));
    return Status(StatusCode::InvalidDevicePointer,
                  std::string("device address ") + text +
                      (it == allocations_.end()
                           ? " is not a live allocation of this device (already freed, or never "
                             "returned by malloc)"
                           : " belongs to the runtime, not to the caller"));
  }
  Status status = platform_->free(addr);
  if (status.is_ok()) allocations_.erase(it);
  return status;
}

Status DeviceMemory::copy_to_device(uint64_t dst, const void* src, uint64_t bytes) {
  if (bytes == 0) return Status::ok();
  return platform_->copy_to_device(dst, src, bytes);
}

Status DeviceMemory::copy_from_device(void* dst, uint64_t src, uint64_t bytes) {
  if (bytes == 0) return Status::ok();
  return platform_->copy_from_device(dst, src, bytes);
}

Status DeviceMemory::memset(uint64_t dst, int value, uint64_t bytes) {
  if (bytes == 0) return Status::ok();
  return platform_->memset(dst, value, bytes);
}

bool DeviceMemory::find(uint64_t addr, uint64_t* size, AllocationOwner* owner) const {
  auto it = allocations_.find(addr);
  if (it == allocations_.end()) return false;
  if (size != nullptr) *size = it->second.size;
  if (owner != nullptr) *owner = it->second.owner;
  return true;
}

bool DeviceMemory::contains(uint64_t addr, uint64_t bytes, const AllocationOwner* owner) const {
  auto it = allocations_.upper_bound(addr);
  if (it == allocations_.begin()) return false;
  --it;
  if (owner != nullptr && it->second.owner != *owner) return false;
  const uint64_t offset = addr - it->first;
  return offset <= it->second.size && bytes <= it->second.size - offset;
}

std::size_t DeviceMemory::tracked_count(AllocationOwner owner) const noexcept {
  std::size_t count = 0;
  for (const auto& [addr, allocation] : allocations_) count += allocation.owner == owner ? 1 : 0;
  return count;
}

uint64_t DeviceMemory::tracked_bytes() const noexcept {
  uint64_t total = 0;
  for (const auto& [addr, allocation] : allocations_) total += allocation.size;
  return total;
}

Status DeviceMemory::release_all() {
  Status first;
  for (const auto& [addr, allocation] : allocations_) {
    Status status = platform_->free(addr);
    if (!status.is_ok() && first.is_ok()) first = status;
  }
  allocations_.clear();
  return first;
}

void DeviceMemory::abandon() noexcept {
  allocations_.clear();
}

void DeviceMemory::forget_as_lost(uint64_t reset_number) {
  for (const auto& [addr, allocation] : allocations_) {
    if (allocation.owner != AllocationOwner::User) continue;
    if (lost_.size() == kLostHistory) lost_.pop_front();
    lost_.push_back(LostBuffer{addr, allocation.size, reset_number});
  }
  abandon();
}

bool DeviceMemory::lost_buffer(uint64_t addr, LostBuffer* out) const {
  // Newest first: an address two resets reused names the latest loss.
  for (auto it = lost_.rbegin(); it != lost_.rend(); ++it) {
    if (addr >= it->addr && addr - it->addr < it->size) {
      if (out != nullptr) *out = *it;
      return true;
    }
  }
  return false;
}

std::string DeviceMemory::lost_buffer_text(uint64_t addr) const {
  LostBuffer lost;
  if (!lost_buffer(addr, &lost)) return {};
  char text[32];
  std::snprintf(text, sizeof(text), "0x%llx", static_cast<unsigned long long>(lost.addr));
  return std::string("device buffer ") + text + " (" + std::to_string(lost.size) +
         " bytes) was lost when the device was reset (reset " + std::to_string(lost.reset_number) +
         "); allocate a new one";
}

}  // namespace chiprt::host
