#include "host/arena.h"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>

#include "common/retention.h"
#include "host/log.h"

namespace chiprt::host {

std::string_view arena_region_name(ArenaRegion region) noexcept {
  switch (region) {
    case ArenaRegion::OutputHeap:
      return "output_heap";
    case ArenaRegion::SharedState:
      return "shared_state";
    case ArenaRegion::RuntimeImage:
      return "runtime_image";
  }
  return "invalid";
}

uint64_t ArenaSizes::of(ArenaRegion region) const noexcept {
  switch (region) {
    case ArenaRegion::OutputHeap:
      return output_heap;
    case ArenaRegion::SharedState:
      return shared_state;
    case ArenaRegion::RuntimeImage:
      return runtime_image;
  }
  return 0;
}

Status ArenaSet::setup(uint32_t bank_index, const ArenaSizes& sizes, ArenaRegionSet regions) {
  if (bank_index >= kPipelineDepth) {
    return Status(StatusCode::InvalidArgument, "arena bank " + std::to_string(bank_index) +
                                                   " is outside [0, " +
                                                   std::to_string(kPipelineDepth) + ")");
  }
  Bank& bank = banks_[bank_index];
  bool changed = false;
  Status failure;
  for (int r = 0; r < kArenaRegionCount && failure.is_ok(); ++r) {
    const ArenaRegion region = static_cast<ArenaRegion>(r);
    if ((regions & arena_regions(region)) == 0) continue;
    const uint64_t requested = sizes.of(region);
    DeviceBuffer& current = bank.regions[r];
    if (requested == 0) {
      if (!current.empty()) {
        failure = memory_->free(current.addr, AllocationOwner::Runtime);
        current = {};
        changed = true;
      }
      continue;
    }
    if (!current.empty() && current.size >= requested) {
      // Reused while big enough, unless the retention rule gives a much larger region back; a
      // bank's regions stay while they hold its replay cache's layout.
      const bool keeps_cache = prebuilt_[bank_index].valid;
      if (keeps_cache || !common::release_retained(current.size, requested, current.size)) continue;
    }
    // Grow (or shrink): release first so the old and new regions never need to fit at once.
    if (!current.empty()) {
      failure = memory_->free(current.addr, AllocationOwner::Runtime);
      current = {};
      if (!failure.is_ok()) break;
    }
    changed = true;
    Status status = memory_->allocate(requested, kDeviceAlign, AllocationOwner::Runtime, &current);
    if (!status.is_ok()) {
      current = {};
      failure = Status(StatusCode::ArenaCommitFailed,
                       "arena bank " + std::to_string(bank_index) + " region " +
                           std::string(arena_region_name(region)) + " could not commit " +
                           std::to_string(requested) +
                           " bytes (output_heap=" + std::to_string(sizes.output_heap) +
                           ", shared_state=" + std::to_string(sizes.shared_state) +
                           ", runtime_image=" + std::to_string(sizes.runtime_image) +
                           "): " + status.message());
      break;
    }
    ++commit_count_;
  }
  if (!failure.is_ok()) {
    // Failure means failure: no region of the bank survives, so a retry starts from nothing.
    release_bank(bank);
    invalidate_prebuilt(bank_index);
    return failure;
  }
  if (changed) invalidate_prebuilt(bank_index);
  return Status::ok();
}

void ArenaSet::release_bank(Bank& bank) {
  for (DeviceBuffer& region : bank.regions) {
    if (region.empty()) continue;
    Status status = memory_->free(region.addr, AllocationOwner::Runtime);
    if (!status.is_ok()) CHIPRT_LOG_WARN("arena release: %s", status.to_string().c_str());
    region = {};
  }
}

DeviceBuffer ArenaSet::region(uint32_t bank, ArenaRegion region) const noexcept {
  if (bank >= kPipelineDepth) return {};
  return banks_[bank].regions[static_cast<int>(region)];
}

ArenaSizes ArenaSet::committed_sizes(uint32_t bank) const noexcept {
  if (bank >= kPipelineDepth) return {};
  const Bank& b = banks_[bank];
  return ArenaSizes{b.regions[0].size, b.regions[1].size, b.regions[2].size};
}

const PrebuiltImage* ArenaSet::lookup_prebuilt(uint32_t bank,
                                               const std::vector<uint8_t>& key) const {
  // An entry's addresses point into its own bank: a bank never gets another's image.
  if (bank >= kPipelineDepth || !prebuilt_[bank].valid || prebuilt_[bank].image.key != key) {
    return nullptr;
  }
  return &prebuilt_[bank].image;
}

void ArenaSet::store_prebuilt(uint32_t bank, PrebuiltImage image) {
  if (bank >= kPipelineDepth) return;
  // The image may sit in storage an earlier, larger image left (the builder reuses it).
  if (common::release_retained(image.image.capacity(), image.image.size(),
                               image.image.capacity())) {
    image.image.shrink_to_fit();
  }
  prebuilt_[bank].image = std::move(image);
  prebuilt_[bank].valid = true;
}

void ArenaSet::mark_prebuilt_validated(uint32_t bank, const std::vector<uint8_t>& key) noexcept {
  if (bank < kPipelineDepth && prebuilt_[bank].valid && prebuilt_[bank].image.key == key) {
    prebuilt_[bank].image.chip_validated = true;
  }
}

bool ArenaSet::prebuilt_valid() const noexcept {
  return std::any_of(prebuilt_.begin(), prebuilt_.end(),
                     [](const CacheEntry& entry) { return entry.valid; });
}

void ArenaSet::invalidate_prebuilt(uint32_t bank) noexcept {
  if (bank >= kPipelineDepth) return;
  // A fresh entry, and the old image's storage given back, not just its size.
  prebuilt_[bank] = CacheEntry{};
}

void ArenaSet::invalidate_all_prebuilt() noexcept {
  for (uint32_t bank = 0; bank < kPipelineDepth; ++bank) invalidate_prebuilt(bank);
}

Status ArenaSet::release_all() {
  Status first;
  for (Bank& bank : banks_) {
    for (DeviceBuffer& region : bank.regions) {
      if (region.empty()) continue;
      Status status = memory_->free(region.addr, AllocationOwner::Runtime);
      if (!status.is_ok() && first.is_ok()) first = status;
      region = {};
    }
  }
  invalidate_all_prebuilt();
  return first;
}

void ArenaSet::abandon() noexcept {
  for (Bank& bank : banks_) bank.regions.fill(DeviceBuffer{});
  invalidate_all_prebuilt();
}

Status StagingBuffers::acquire(uint32_t slot, uint64_t bytes, DeviceBuffer* out) {
  if (slot >= kPipelineDepth) {
    return Status(StatusCode::InvalidArgument, "pipeline slot " + std::to_string(slot) +
                                                   " is outside [0, " +
                                                   std::to_string(kPipelineDepth) + ")");
  }
  DeviceBuffer& buffer = buffers_[slot];
  if (!buffer.empty() && buffer.size >= bytes) {
    *out = buffer;
    return Status::ok();
  }
  DeviceBuffer fresh;
  Status status = memory_->allocate(bytes, kDeviceAlign, AllocationOwner::Runtime, &fresh);
  if (!status.is_ok()) return status;
  if (!buffer.empty()) {
    Status freed = memory_->free(buffer.addr, AllocationOwner::Runtime);
    if (!freed.is_ok()) {
      (void)memory_->free(fresh.addr, AllocationOwner::Runtime);
      return freed;
    }
  }
  buffer = fresh;
  *out = buffer;
  return Status::ok();
}

DeviceBuffer StagingBuffers::current(uint32_t slot) const noexcept {
  return slot < kPipelineDepth ? buffers_[slot] : DeviceBuffer{};
}

Status StagingBuffers::release_all() {
  Status first;
  for (DeviceBuffer& buffer : buffers_) {
    if (buffer.empty()) continue;
    Status status = memory_->free(buffer.addr, AllocationOwner::Runtime);
    if (!status.is_ok() && first.is_ok()) first = status;
    buffer = {};
  }
  return first;
}

void StagingBuffers::abandon() noexcept {
  buffers_.fill(DeviceBuffer{});
}

Status GraphDefinitionBuffers::acquire(uint32_t slot, uint64_t key, uint64_t bytes,
                                       uint64_t alignment, uint64_t* aligned_addr) {
  if (slot >= kPipelineDepth) {
    return Status(StatusCode::InvalidArgument, "graph-definition buffer: pipeline slot " +
                                                   std::to_string(slot) + " is outside [0, " +
                                                   std::to_string(kPipelineDepth) + ")");
  }
  if (bytes == 0) {
    return Status(StatusCode::InvalidArgument,
                  "graph-definition buffer: size 0 requested; ask for at least 1 byte");
  }
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
    return Status(StatusCode::InvalidArgument, "graph-definition buffer: alignment " +
                                                   std::to_string(alignment) +
                                                   " is not a non-zero power of two");
  }
  if (bytes > std::numeric_limits<uint64_t>::max() - (alignment - 1)) {
    return Status(StatusCode::InvalidArgument,
                  "graph-definition buffer: size " + std::to_string(bytes) + " plus alignment " +
                      std::to_string(alignment) + " overflows 64 bits");
  }
  auto& by_key = by_slot_[slot];
  auto found = by_key.find(key);
  if (found != by_key.end() && found->second.capacity >= bytes &&
      found->second.aligned_addr % alignment == 0) {
    *aligned_addr = found->second.aligned_addr;
    return Status::ok();
  }
  const uint64_t allocation_bytes = bytes + alignment - 1;
  DeviceBuffer allocation;
  Status status =
      memory_->allocate(allocation_bytes, kDeviceAlign, AllocationOwner::Runtime, &allocation);
  if (!status.is_ok()) return status;
  if (allocation.addr > std::numeric_limits<uint64_t>::max() - (alignment - 1)) {
    (void)memory_->free(allocation.addr, AllocationOwner::Runtime);
    return Status(StatusCode::InvalidArgument,
                  "graph-definition buffer: aligning the allocation "
                  "overflows the address space");
  }
  const uint64_t aligned = (allocation.addr + alignment - 1) & ~(alignment - 1);
  status = memory_->memset(aligned, 0, bytes);
  if (!status.is_ok()) {
    (void)memory_->free(allocation.addr, AllocationOwner::Runtime);
    return status;
  }
  if (found != by_key.end() && found->second.allocation != 0) {
    status = memory_->free(found->second.allocation, AllocationOwner::Runtime);
    if (!status.is_ok()) {
      (void)memory_->free(allocation.addr, AllocationOwner::Runtime);
      return status;
    }
  }
  by_key[key] = Buffer{allocation.addr, aligned, bytes};
  *aligned_addr = aligned;
  return Status::ok();
}

std::size_t GraphDefinitionBuffers::count(uint32_t slot) const noexcept {
  return slot < kPipelineDepth ? by_slot_[slot].size() : 0;
}

uint64_t GraphDefinitionBuffers::capacity(uint32_t slot, uint64_t key) const noexcept {
  if (slot >= kPipelineDepth) return 0;
  auto it = by_slot_[slot].find(key);
  return it == by_slot_[slot].end() ? 0 : it->second.capacity;
}

Status GraphDefinitionBuffers::release_all() {
  Status first;
  for (auto& by_key : by_slot_) {
    for (auto& [key, buffer] : by_key) {
      if (buffer.allocation == 0) continue;
      Status status = memory_->free(buffer.allocation, AllocationOwner::Runtime);
      if (!status.is_ok() && first.is_ok()) first = status;
    }
    by_key.clear();
  }
  return first;
}

void GraphDefinitionBuffers::abandon() noexcept {
  for (auto& by_key : by_slot_) by_key.clear();
}

}  // namespace chiprt::host
