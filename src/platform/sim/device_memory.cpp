#include "platform/sim/device_memory.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <new>

namespace chiprt::platform::sim {
namespace {

// Host allocations are at least cache-line aligned so chip-side atomics never share a line with
// another allocation.
constexpr uint64_t kMinHostAlign = 64;

std::string hex(uint64_t value) {
  char buffer[24];
  std::snprintf(buffer, sizeof(buffer), "0x%llx", static_cast<unsigned long long>(value));
  return buffer;
}

std::string describe(uint64_t addr, uint64_t size) {
  return "[" + hex(addr) + ", +" + std::to_string(size) + " bytes)";
}

}  // namespace

DeviceMemory::DeviceMemory(const DeviceRegion& region) : capacity_(region.bytes), region_(region) {
  if (region.bytes != 0) free_ranges_.emplace(region.device_base, region.bytes);
}

DeviceMemory::~DeviceMemory() {
  if (region_backed()) return;  // the region's mapping is its owner's to release
  for (const auto& [addr, allocation] : live_) release(addr, allocation);
  for (const Quarantined& q : quarantine_) release(q.addr, q.allocation);
}

void* DeviceMemory::host_view(uint64_t addr) const noexcept {
  if (!region_backed()) return reinterpret_cast<void*>(addr);
  return region_.host_base + (addr - region_.device_base);
}

Status DeviceMemory::reserve(uint64_t bytes, uint64_t align, uint64_t* addr,
                             Allocation* allocation) {
  const uint64_t host_align = align < kMinHostAlign ? kMinHostAlign : align;
  if (!region_backed()) {
    void* memory = ::operator new(bytes, std::align_val_t(host_align), std::nothrow);
    if (memory == nullptr) {
      return Status(StatusCode::OutOfDeviceMemory,
                    "alloc: the host could not provide " + std::to_string(bytes) +
                        " bytes for the simulated device (capacity " + std::to_string(capacity_) +
                        " bytes is larger than the host can back); lower SimOptions.memory_bytes");
    }
    *addr = reinterpret_cast<uint64_t>(memory);
    *allocation = Allocation{bytes, host_align, 0};
    return Status::ok();
  }
  // First fit; sizes are rounded to whole cache lines, like the heap's alignment, so chip-side
  // atomics never share a line with another allocation.
  const uint64_t reserved = (bytes + kMinHostAlign - 1) / kMinHostAlign * kMinHostAlign;
  uint64_t largest = 0;
  for (auto it = free_ranges_.begin(); it != free_ranges_.end(); ++it) {
    const uint64_t start = it->first;
    const uint64_t end = start + it->second;
    const uint64_t aligned = (start + host_align - 1) / host_align * host_align;
    largest = std::max(largest, it->second);
    if (aligned > end || end - aligned < reserved) continue;
    free_ranges_.erase(it);
    if (aligned > start) free_ranges_.emplace(start, aligned - start);
    if (aligned + reserved < end)
      free_ranges_.emplace(aligned + reserved, end - aligned - reserved);
    *addr = aligned;
    *allocation = Allocation{bytes, host_align, reserved};
    return Status::ok();
  }
  return Status(StatusCode::OutOfDeviceMemory,
                "alloc: no free range of the device memory holds " + std::to_string(bytes) +
                    " bytes aligned to " + std::to_string(host_align) + " (largest free range " +
                    std::to_string(largest) +
                    " bytes; memory of a faulted launch stays "
                    "quarantined until the device is reset)");
}

void DeviceMemory::release(uint64_t addr, const Allocation& allocation) noexcept {
  if (!region_backed()) {
    ::operator delete(reinterpret_cast<void*>(addr), std::align_val_t(allocation.host_align));
    return;
  }
  uint64_t start = addr;
  uint64_t bytes = allocation.reserved;
  auto next = free_ranges_.lower_bound(start);
  if (next != free_ranges_.end() && start + bytes == next->first) {
    bytes += next->second;
    next = free_ranges_.erase(next);
  }
  if (next != free_ranges_.begin()) {
    auto previous = std::prev(next);
    if (previous->first + previous->second == start) {
      start = previous->first;
      bytes += previous->second;
      free_ranges_.erase(previous);
    }
  }
  free_ranges_.emplace(start, bytes);
}

Status DeviceMemory::alloc(uint64_t bytes, uint64_t align, DeviceBuffer* out) {
  if (out == nullptr) return Status(StatusCode::InvalidArgument, "alloc: out must not be null");
  if (bytes == 0) {
    return Status(StatusCode::InvalidArgument, "alloc: bytes must be > 0 (got 0)");
  }
  if (align == 0 || align > kMaxAlign || (align & (align - 1)) != 0) {
    return Status(StatusCode::InvalidArgument, "alloc: align must be a power of two in [1, " +
                                                   std::to_string(kMaxAlign) + "] (got " +
                                                   std::to_string(align) + ")");
  }
  std::lock_guard lock(mutex_);
  const uint64_t available = capacity_ - in_use_;
  if (bytes > available) {
    return Status(StatusCode::OutOfDeviceMemory, "alloc: requested " + std::to_string(bytes) +
                                                     " bytes, available " +
                                                     std::to_string(available) + " of capacity " +
                                                     std::to_string(capacity_) + " bytes");
  }
  uint64_t addr = 0;
  Allocation allocation;
  if (Status status = reserve(bytes, align, &addr, &allocation); !status) return status;
  live_.emplace(addr, allocation);
  in_use_ += bytes;
  // A reused address is live again: a later free of it is not a double free.
  if (freed_.erase(addr) != 0) {
    for (auto it = freed_order_.begin(); it != freed_order_.end(); ++it) {
      if (*it == addr) {
        freed_order_.erase(it);
        break;
      }
    }
  }
  *out = DeviceBuffer{addr, bytes};
  return Status::ok();
}

void DeviceMemory::remember_freed(uint64_t addr) {
  if (freed_order_.size() == kFreedHistory) {
    freed_.erase(freed_order_.front());
    freed_order_.pop_front();
  }
  freed_order_.push_back(addr);
  freed_.insert(addr);
}

Status DeviceMemory::free(uint64_t addr) {
  std::lock_guard lock(mutex_);
  const auto it = live_.find(addr);
  if (it == live_.end()) {
    if (freed_.count(addr) != 0) {
      return Status(StatusCode::InvalidDevicePointer,
                    "free: double free of device address " + hex(addr) + " (it was already freed)");
    }
    return Status(StatusCode::InvalidDevicePointer,
                  "free: device address " + hex(addr) + " is not a live allocation");
  }
  in_use_ -= it->second.size;
  release(it->first, it->second);
  live_.erase(it);
  remember_freed(addr);
  return Status::ok();
}

Status DeviceMemory::check_range(const char* operation, uint64_t addr, uint64_t bytes) const {
  auto it = live_.upper_bound(addr);
  if (it == live_.begin()) {
    return Status(StatusCode::InvalidDevicePointer, std::string(operation) + ": device address " +
                                                        hex(addr) +
                                                        " is not inside any live allocation");
  }
  --it;
  const uint64_t base = it->first;
  const uint64_t size = it->second.size;
  const uint64_t offset = addr - base;
  if (offset >= size) {
    return Status(StatusCode::InvalidDevicePointer, std::string(operation) + ": device address " +
                                                        hex(addr) +
                                                        " is not inside any live allocation");
  }
  if (bytes > size - offset) {
    return Status(StatusCode::InvalidDevicePointer,
                  std::string(operation) + ": range " + describe(addr, bytes) +
                      " overflows allocation " + describe(base, size) + " by " +
                      std::to_string(bytes - (size - offset)) + " bytes");
  }
  return Status::ok();
}

Status DeviceMemory::copy_to_device(uint64_t dst, const void* src, uint64_t bytes) {
  if (src == nullptr && bytes != 0) {
    return Status(StatusCode::InvalidArgument, "copy_to_device: host source pointer is null");
  }
  std::lock_guard lock(mutex_);
  if (Status status = check_range("copy_to_device", dst, bytes); !status) return status;
  if (bytes != 0) std::memcpy(host_view(dst), src, bytes);
  return Status::ok();
}

Status DeviceMemory::check(const char* operation, uint64_t addr, uint64_t bytes) const {
  std::lock_guard lock(mutex_);
  return check_range(operation, addr, bytes);
}

Status DeviceMemory::copy_from(DeviceMemory& src, uint64_t dst, uint64_t src_addr, uint64_t bytes) {
  if (&src == this) {
    std::lock_guard lock(mutex_);
    if (Status status = check_range("copy_from_peer (source)", src_addr, bytes); !status) {
      return status;
    }
    if (Status status = check_range("copy_from_peer (destination)", dst, bytes); !status) {
      return status;
    }
    if (bytes != 0) std::memmove(host_view(dst), host_view(src_addr), bytes);
    return Status::ok();
  }
  std::scoped_lock lock(mutex_, src.mutex_);
  if (Status status = src.check_range("copy_from_peer (source)", src_addr, bytes); !status) {
    return status;
  }
  if (Status status = check_range("copy_from_peer (destination)", dst, bytes); !status) {
    return status;
  }
  if (bytes != 0) std::memcpy(host_view(dst), src.host_view(src_addr), bytes);
  return Status::ok();
}

Status DeviceMemory::copy_from_device(void* dst, uint64_t src, uint64_t bytes) {
  if (dst == nullptr && bytes != 0) {
    return Status(StatusCode::InvalidArgument,
                  "copy_from_device: host destination pointer is null");
  }
  std::lock_guard lock(mutex_);
  if (Status status = check_range("copy_from_device", src, bytes); !status) return status;
  if (bytes != 0) std::memcpy(dst, host_view(src), bytes);
  return Status::ok();
}

Status DeviceMemory::load_word(uint64_t src, uint32_t* out) {
  if (out == nullptr) return Status(StatusCode::InvalidArgument, "load_word: out is null");
  if (src % alignof(uint32_t) != 0) {
    return Status(StatusCode::InvalidArgument,
                  "load_word: address " + std::to_string(src) + " is not 4-byte aligned");
  }
  std::lock_guard lock(mutex_);
  if (Status status = check_range("load_word", src, sizeof(uint32_t)); !status) return status;
  *out = std::atomic_ref<uint32_t>(*static_cast<uint32_t*>(host_view(src)))
             .load(std::memory_order_acquire);
  return Status::ok();
}

Status DeviceMemory::load_u64(uint64_t src, uint64_t* out) {
  if (out == nullptr) return Status(StatusCode::InvalidArgument, "load_u64: out is null");
  if (src % alignof(uint64_t) != 0) {
    return Status(StatusCode::InvalidArgument,
                  "load_u64: address " + std::to_string(src) + " is not 8-byte aligned");
  }
  std::lock_guard lock(mutex_);
  if (Status status = check_range("load_u64", src, sizeof(uint64_t)); !status) return status;
  *out = std::atomic_ref<uint64_t>(*static_cast<uint64_t*>(host_view(src)))
             .load(std::memory_order_acquire);
  return Status::ok();
}

Status DeviceMemory::store_u64(uint64_t dst, uint64_t value) {
  if (dst % alignof(uint64_t) != 0) {
    return Status(StatusCode::InvalidArgument,
                  "store_u64: address " + std::to_string(dst) + " is not 8-byte aligned");
  }
  std::lock_guard lock(mutex_);
  if (Status status = check_range("store_u64", dst, sizeof(uint64_t)); !status) return status;
  std::atomic_ref<uint64_t>(*static_cast<uint64_t*>(host_view(dst)))
      .store(value, std::memory_order_release);
  return Status::ok();
}

Status DeviceMemory::memset(uint64_t dst, int value, uint64_t bytes) {
  std::lock_guard lock(mutex_);
  if (Status status = check_range("memset", dst, bytes); !status) return status;
  if (bytes != 0) std::memset(host_view(dst), value, bytes);
  return Status::ok();
}

uint64_t DeviceMemory::bytes_in_use() const {
  std::lock_guard lock(mutex_);
  return in_use_;
}

std::size_t DeviceMemory::live_allocations() const {
  std::lock_guard lock(mutex_);
  return live_.size();
}

void DeviceMemory::abandon() {
  std::lock_guard lock(mutex_);
  for (const auto& [addr, allocation] : live_) quarantine_.push_back({addr, allocation});
  live_.clear();
  in_use_ = 0;
  // Quarantined addresses are never handed out again, so forgetting them is no double-free risk;
  // freeing one now reports "not a live allocation".
  freed_.clear();
  freed_order_.clear();
}

}  // namespace chiprt::platform::sim
