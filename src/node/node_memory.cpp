#include "node/node_memory.h"

#include <sys/mman.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <limits>
#include <new>
#include <utility>

namespace chiprt::node {

namespace {

std::string hex(uint64_t value) {
  char text[32];
  std::snprintf(text, sizeof(text), "0x%" PRIx64, value);
  return text;
}

uint64_t round_up(uint64_t bytes, uint64_t alignment) {
  return (bytes + alignment - 1) / alignment * alignment;
}

}  // namespace

NodeMemory::NodeMemory(NodeChips& chips) : chips_(chips) {
  // Never mapped readable: a node address is a name, and a dereference of one faults at once.
  reservation_ = ::mmap(nullptr, kAddressSpaceBytes, PROT_NONE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (reservation_ == MAP_FAILED) {
    reservation_ = nullptr;
    throw Error(StatusCode::InternalError, "reserving the node's address space (" +
                                               std::to_string(kAddressSpaceBytes >> 30) +
                                               " GiB) failed: " + std::strerror(errno));
  }
  base_ = reinterpret_cast<uintptr_t>(reservation_);
  free_space_.add(0, kAddressSpaceBytes);
}

NodeMemory::~NodeMemory() {
  for (auto& [addr, b] : buffers_) {
    for (auto& [location, copy] : b.copies) free_copy(location, copy, b.size);
  }
  if (reservation_ != nullptr) ::munmap(reservation_, kAddressSpaceBytes);
}

bool NodeMemory::is_node_address(uint64_t addr) const noexcept {
  return addr >= base_ && addr - base_ < kAddressSpaceBytes;
}

NodeMemory::Buffer& NodeMemory::find(uint64_t buffer) {
  return const_cast<Buffer&>(static_cast<const NodeMemory*>(this)->find(buffer));
}

const NodeMemory::Buffer& NodeMemory::find(uint64_t buffer) const {
  const auto it = buffers_.find(buffer);
  if (it == buffers_.end()) {
    throw Error(StatusCode::InvalidDevicePointer,
                hex(buffer) + " does not start a live node buffer");
  }
  return it->second;
}

uint64_t NodeMemory::locate(uint64_t addr, uint64_t bytes, const char* what) const {
  auto it = buffers_.upper_bound(addr);
  if (it != buffers_.begin()) {
    --it;
    const uint64_t offset = addr - it->first;
    if (offset < it->second.size && bytes <= it->second.size - offset) return it->first;
    if (offset < it->second.size) {
      throw Error(StatusCode::InvalidArgument, std::string(what) + ": " + std::to_string(bytes) +
                                                   " bytes at offset " + std::to_string(offset) +
                                                   " exceed node buffer " + hex(it->first) + "'s " +
                                                   std::to_string(it->second.size) + " bytes");
    }
  }
  throw Error(StatusCode::InvalidDevicePointer,
              std::string(what) + ": " + hex(addr) +
                  (is_node_address(addr) ? " is not inside a live node buffer"
                                         : " is not a node buffer's address") +
                  "; pass an address inside a buffer from Node::malloc that has not been freed");
}

NodeAllocation NodeMemory::buffer_of(uint64_t addr, uint64_t bytes, const char* what) const {
  std::lock_guard lock(mutex_);
  const uint64_t buffer = locate(addr, bytes, what);
  return NodeAllocation{buffer, buffers_.at(buffer).size};
}

Location NodeMemory::home_of(uint64_t buffer) const {
  std::lock_guard lock(mutex_);
  return find(buffer).home;
}

DeviceBuffer NodeMemory::allocate_on_chip(uint32_t k, uint64_t bytes) {
  for (;;) {
    try {
      return chips_.allocate(k, bytes, "malloc");
    } catch (const Error& e) {
      if (e.code() != StatusCode::OutOfDeviceMemory) throw;
      // The least recently used copy on chip k that no run pins and that holds nothing only it
      // holds.
      uint64_t victim = 0;
      uint64_t oldest = std::numeric_limits<uint64_t>::max();
      for (auto& [addr, b] : buffers_) {
        const auto it = b.copies.find(k);
        if (it == b.copies.end() || it->second.pins != 0 || it->second.last_use >= oldest) continue;
        if (coherence_.holds(addr, k) && !coherence_.is_replica(addr, k)) continue;
        victim = addr;
        oldest = it->second.last_use;
      }
      if (victim == 0) {
        throw Error(StatusCode::OutOfDeviceMemory,
                    "chip " + std::to_string(k) + " cannot hold " + std::to_string(bytes) +
                        " more bytes, and every node buffer copy on it is in use or the only "
                        "valid copy of its bytes: " +
                        e.message(),
                    "free node buffers (Node::free), home fewer of them on this chip, or raise "
                    "the chip's SimOptions::memory_bytes");
      }
      Buffer& b = buffers_.at(victim);
      if (coherence_.holds(victim, k)) coherence_.drop_replica(victim, k);
      free_copy(k, b.copies.at(k), b.size);
      b.copies.erase(k);
      ++traffic_.evictions;
    }
  }
}

NodeMemory::Copy& NodeMemory::copy_at(Buffer& b, Location at) {
  auto it = b.copies.find(at);
  if (it != b.copies.end()) return it->second;
  Copy copy;
  if (at == kHostLocation) {
    copy.host.reset(new (std::nothrow) uint8_t[b.size]);
    if (copy.host == nullptr) {
      throw Error(
          StatusCode::OutOfDeviceMemory,
          "the host cannot hold a copy of a node buffer of " + std::to_string(b.size) + " bytes",
          "free node buffers (Node::free) or home this one on a chip");
    }
    copy.addr = reinterpret_cast<uintptr_t>(copy.host.get());
  } else {
    copy.addr = allocate_on_chip(at, b.size).addr;
  }
  return b.copies.emplace(at, std::move(copy)).first->second;
}

void NodeMemory::free_copy(Location at, Copy& copy, uint64_t size) noexcept {
  if (at == kHostLocation) {
    copy.host.reset();
    return;
  }
  try {
    chips_.free(at, DeviceBuffer{copy.addr, size}, "free");
  } catch (const Error&) {
    // A faulted chip: the copy went with its device; the chip's reset forgets it.
  }
}

NodeAllocation NodeMemory::allocate(uint64_t bytes, Location home) {
  std::lock_guard lock(mutex_);
  if (bytes == 0) {
    throw Error(StatusCode::InvalidArgument, "Node::malloc: 0 bytes requested; ask for >= 1");
  }
  if (home != kHostLocation && home >= chips_.count()) {
    throw Error(StatusCode::InvalidArgument, "Node::malloc: home chip " + std::to_string(home) +
                                                 " does not exist; the node has " +
                                                 std::to_string(chips_.count()) +
                                                 " chip(s) (or home the buffer on the host)");
  }
  if (bytes > kAddressSpaceBytes) {
    throw Error(StatusCode::OutOfDeviceMemory,
                "Node::malloc: " + std::to_string(bytes) +
                    " bytes exceed the node's address space (" +
                    std::to_string(kAddressSpaceBytes >> 30) + " GiB in all)",
                "ask for less; a node buffer must fit its home's memory anyway");
  }
  const uint64_t span = round_up(bytes, kAlignment);
  uint64_t offset = std::numeric_limits<uint64_t>::max();
  for (const ByteRange& r : free_space_.ranges()) {
    if (r.bytes() >= span) {
      offset = r.lo;
      break;
    }
  }
  if (offset == std::numeric_limits<uint64_t>::max()) {
    throw Error(StatusCode::OutOfDeviceMemory,
                "Node::malloc: the node's address space has no " + std::to_string(span) +
                    " free bytes in one piece (" + std::to_string(kAddressSpaceBytes >> 30) +
                    " GiB in all)",
                "free node buffers (Node::free)");
  }
  const uint64_t addr = base_ + offset;
  Buffer b;
  b.size = bytes;
  b.home = home;
  copy_at(b, home);  // throws before anything is recorded
  free_space_.remove(offset, offset + span);
  coherence_.add_buffer(addr, bytes, home);
  buffers_.emplace(addr, std::move(b));
  return NodeAllocation{addr, bytes};
}

void NodeMemory::free(uint64_t addr) {
  std::lock_guard lock(mutex_);
  if (buffers_.count(addr) == 0) {
    throw Error(StatusCode::InvalidDevicePointer,
                "Node::free: " + hex(addr) +
                    " does not start a live node buffer of this node (freed already, from "
                    "another Node, or not from Node::malloc)");
  }
  Buffer& b = find(addr);
  for (const auto& [location, copy] : b.copies) {
    if (copy.pins != 0) {
      throw Error(StatusCode::InvalidArgument, "Node::free: node buffer " + hex(addr) +
                                                   " is in use on " + location_name(location) +
                                                   "; free it once the runs using it are done");
    }
  }
  for (auto& [location, copy] : b.copies) free_copy(location, copy, b.size);
  const uint64_t offset = addr - base_;
  free_space_.add(offset, offset + round_up(b.size, kAlignment));
  coherence_.remove_buffer(addr);
  buffers_.erase(addr);
}

template <class HostWrite, class ChipWrite>
void NodeMemory::write_at_home(uint64_t addr, uint64_t bytes, const char* what,
                               HostWrite&& host_write, ChipWrite&& chip_write) {
  const uint64_t buffer = locate(addr, bytes, what);
  Buffer& b = find(buffer);
  const uint64_t lo = addr - buffer;
  Copy& home = copy_at(b, b.home);  // made anew after a reset of its chip
  if (b.home == kHostLocation) {
    host_write(home.host.get() + lo);
  } else {
    chip_write(b.home, home.addr + lo);
  }
  coherence_.written(buffer, lo, lo + bytes, b.home);
}

void NodeMemory::copy_to(uint64_t addr, const void* src, uint64_t bytes) {
  std::lock_guard lock(mutex_);
  if (bytes == 0) return;
  if (src == nullptr) throw Error(StatusCode::InvalidArgument, "Node::copy_to: source is null");
  write_at_home(
      addr, bytes, "Node::copy_to", [&](uint8_t* host) { std::memcpy(host, src, bytes); },
      [&](uint32_t chip, uint64_t dst) { chips_.copy_to(chip, dst, src, bytes, "copy_to"); });
}

void NodeMemory::memset(uint64_t addr, int value, uint64_t bytes) {
  std::lock_guard lock(mutex_);
  if (bytes == 0) return;
  write_at_home(
      addr, bytes, "Node::memset", [&](uint8_t* host) { std::memset(host, value, bytes); },
      [&](uint32_t chip, uint64_t dst) { chips_.memset(chip, dst, value, bytes, "memset"); });
}

void NodeMemory::copy_from(void* dst, uint64_t addr, uint64_t bytes) {
  std::lock_guard lock(mutex_);
  if (bytes == 0) return;
  const uint64_t buffer = locate(addr, bytes, "Node::copy_from");
  if (dst == nullptr) {
    throw Error(StatusCode::InvalidArgument, "Node::copy_from: destination is null");
  }
  const Buffer& b = find(buffer);
  const uint64_t lo = addr - buffer;
  const uint64_t hi = lo + bytes;
  std::vector<Transfer> plan;
  throw_if_error(coherence_.plan(buffer, lo, hi, kHostLocation, Coherence::Access::Read, &plan));
  auto* out = static_cast<uint8_t*>(dst);
  ByteRanges fetched;
  for (const Transfer& t : plan) {  // straight into dst: no host copy is made
    chips_.copy_from(t.from, out + (t.lo - lo), b.copies.at(t.from).addr + t.lo, t.hi - t.lo,
                     "copy_from");
    fetched.add(t.lo, t.hi);
  }
  std::vector<ByteRange> on_host;
  fetched.gaps(lo, hi, &on_host);
  for (const ByteRange& r : on_host) {
    std::memcpy(out + (r.lo - lo), b.copies.at(kHostLocation).host.get() + r.lo, r.bytes());
  }
}

void NodeMemory::transfer(const Transfer& t) {
  Buffer& b = find(t.buffer);
  const Copy& from = b.copies.at(t.from);
  const Copy& to = b.copies.at(t.to);
  const uint64_t bytes = t.hi - t.lo;
  if (t.from == kHostLocation) {
    chips_.copy_to(t.to, to.addr + t.lo, from.host.get() + t.lo, bytes, "copy");
  } else if (t.to == kHostLocation) {
    chips_.copy_from(t.from, to.host.get() + t.lo, from.addr + t.lo, bytes, "copy");
  } else {
    chips_.copy(t.to, to.addr + t.lo, t.from, from.addr + t.lo, bytes);
  }
  coherence_.copied(t);
  ++traffic_.copies;
  traffic_.bytes += bytes;
}

CopyAddress NodeMemory::acquire(uint64_t buffer, uint64_t lo, uint64_t hi, Location at,
                                Coherence::Access access) {
  std::lock_guard lock(mutex_);
  Buffer& b = find(buffer);
  if (at != kHostLocation && at >= chips_.count()) {
    throw Error(StatusCode::InvalidArgument, "chip " + std::to_string(at) + " does not exist");
  }
  // The copy first: allocating it may drop replicas the plan would otherwise copy from.
  Copy& copy = copy_at(b, at);
  ++copy.pins;
  try {
    for (;;) {
      std::vector<Transfer> plan;
      throw_if_error(coherence_.plan(buffer, lo, hi, at, access, &plan));
      std::size_t done = 0;
      try {
        for (; done < plan.size(); ++done) transfer(plan[done]);
        break;
      } catch (const Error& e) {
        // A source chip that faulted (under the copy, or before it while its run was still being
        // collected) is no source: forget it and plan again from what is left.
        const Location from = plan[done].from;
        if (from == kHostLocation || from == at || !chips_.faulted(from)) throw;
        forget_chip(from, "chip " + std::to_string(from) + " faulted (" + e.message() + ")");
      }
    }
  } catch (...) {
    --copy.pins;
    throw;
  }
  copy.last_use = ++tick_;
  return CopyAddress{at, copy.addr};
}

bool NodeMemory::release(uint64_t buffer, uint64_t lo, uint64_t hi, Location at,
                         Coherence::Access access, bool dense) {
  std::lock_guard lock(mutex_);
  Buffer& b = find(buffer);
  const auto it = b.copies.find(at);
  if (it == b.copies.end()) return false;  // gone with its chip's fault or reset
  if (it->second.pins > 0) --it->second.pins;
  if (access == Coherence::Access::Write) coherence_.written(buffer, lo, hi, at, dense);
  return true;
}

void NodeMemory::discard(uint64_t buffer, uint64_t lo, uint64_t hi, const std::string& why) {
  std::lock_guard lock(mutex_);
  find(buffer);
  coherence_.discard(buffer, lo, hi, why);
}

void NodeMemory::chip_reset(uint32_t k, const std::string& why) {
  std::lock_guard lock(mutex_);
  forget_chip(k, why);
}

void NodeMemory::forget_chip(uint32_t k, const std::string& why) {
  for (auto& [addr, b] : buffers_) b.copies.erase(k);  // gone with the device: nothing to free
  coherence_.lose(k, why);
}

NodeMemory::Traffic NodeMemory::traffic() const {
  std::lock_guard lock(mutex_);
  return traffic_;
}

bool NodeMemory::has_copy(uint64_t buffer, Location at) const {
  std::lock_guard lock(mutex_);
  return find(buffer).copies.count(at) != 0;
}

}  // namespace chiprt::node
