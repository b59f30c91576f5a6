#include "platform/sim/device_memory.h"

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

DeviceMemory::~DeviceMemory() {
  for (const auto& [addr, allocation] : live_) release(addr, allocation);
  for (const Quarantined& q : quarantine_) release(q.addr, q.allocation);
}

void DeviceMemory::release(uint64_t addr, const Allocation& allocation) noexcept {
  ::operator delete(reinterpret_cast<void*>(addr), std::align_val_t(allocation.host_align));
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
  const uint64_t host_align = align < kMinHostAlign ? kMinHostAlign : align;
  void* memory = ::operator new(bytes, std::align_val_t(host_align), std::nothrow);
  if (memory == nullptr) {
    return Status(StatusCode::OutOfDeviceMemory,
                  "alloc: the host could not provide " + std::to_string(bytes) +
                      " bytes for the simulated device (capacity " + std::to_string(capacity_) +
                      " bytes is larger than the host can back); lower SimOptions.memory_bytes");
  }
  const auto addr = reinterpret_cast<uint64_t>(memory);
  live_.emplace(addr, Allocation{bytes, host_align});
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
  if (bytes != 0) std::memcpy(reinterpret_cast<void*>(dst), src, bytes);
  return Status::ok();
}

Status DeviceMemory::copy_from_device(void* dst, uint64_t src, uint64_t bytes) {
  if (dst == nullptr && bytes != 0) {
    return Status(StatusCode::InvalidArgument,
                  "copy_from_device: host destination pointer is null");
  }
  std::lock_guard lock(mutex_);
  if (Status status = check_range("copy_from_device", src, bytes); !status) return status;
  if (bytes != 0) std::memcpy(dst, reinterpret_cast<const void*>(src), bytes);
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
  *out =
      std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(src)).load(std::memory_order_acquire);
  return Status::ok();
}

Status DeviceMemory::memset(uint64_t dst, int value, uint64_t bytes) {
  std::lock_guard lock(mutex_);
  if (Status status = check_range("memset", dst, bytes); !status) return status;
  if (bytes != 0) std::memset(reinterpret_cast<void*>(dst), value, bytes);
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
