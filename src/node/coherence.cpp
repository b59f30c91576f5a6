#include "node/coherence.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

namespace chiprt::node {

std::string location_name(Location location) {
  return location == kHostLocation ? std::string("the host") : "chip " + std::to_string(location);
}

namespace {

std::string buffer_text(uint64_t buffer) {
  char text[32];
  std::snprintf(text, sizeof(text), "0x%" PRIx64, buffer);
  return text;
}

}  // namespace

ByteRanges Coherence::valid_elsewhere(const Buffer& b, Location at, const ByteRange& range) const {
  scratch_.clear();
  for (Location l = 0; l < kLocations; ++l) {
    if (l != at) b.valid[l].overlaps(range.lo, range.hi, &scratch_);
  }
  ByteRanges elsewhere;
  for (const ByteRange& o : scratch_) elsewhere.add(o.lo, o.hi);
  return elsewhere;
}

void Coherence::Buffer::mark_lost(uint64_t lo, uint64_t hi, const std::string& why) {
  unmark_lost(lo, hi);
  lost.add(lo, hi);
  reasons.push_back(LostReason{ByteRange{lo, hi}, why});
}

void Coherence::Buffer::unmark_lost(uint64_t lo, uint64_t hi) {
  lost.remove(lo, hi);
  std::vector<LostReason> kept;
  for (LostReason& r : reasons) {
    if (r.range.hi <= lo || hi <= r.range.lo) {
      kept.push_back(std::move(r));
      continue;
    }
    if (r.range.lo < lo) kept.push_back(LostReason{ByteRange{r.range.lo, lo}, r.why});
    if (hi < r.range.hi) kept.push_back(LostReason{ByteRange{hi, r.range.hi}, r.why});
  }
  reasons = std::move(kept);
}

const std::string& Coherence::Buffer::why_lost(uint64_t lo) const {
  static const std::string unknown = "an unknown loss";
  for (const LostReason& r : reasons) {
    if (r.range.lo <= lo && lo < r.range.hi) return r.why;
  }
  return unknown;
}

void Coherence::check_location(Location location) {
  if (location >= kLocations) {
    throw Error(StatusCode::InvalidArgument, "location " + std::to_string(location) +
                                                 " is neither a chip (0.." +
                                                 std::to_string(kMaxChips - 1) + ") nor the host");
  }
}

Coherence::Buffer& Coherence::find(uint64_t buffer) {
  return const_cast<Buffer&>(static_cast<const Coherence*>(this)->find(buffer));
}

const Coherence::Buffer& Coherence::find(uint64_t buffer) const {
  const auto it = buffers_.find(buffer);
  if (it == buffers_.end()) {
    throw Error(StatusCode::InvalidDevicePointer,
                "node buffer " + buffer_text(buffer) + " is not a live node allocation");
  }
  return it->second;
}

void Coherence::add_buffer(uint64_t buffer, uint64_t size, Location home) {
  check_location(home);
  if (buffers_.count(buffer) != 0) {
    throw Error(StatusCode::InvalidArgument,
                "node buffer " + buffer_text(buffer) + " is already tracked");
  }
  Buffer& added = buffers_[buffer];
  added.size = size;
  added.valid[home].add(0, size);
}

void Coherence::remove_buffer(uint64_t buffer) {
  find(buffer);
  buffers_.erase(buffer);
}

Status Coherence::plan(uint64_t buffer, uint64_t lo, uint64_t hi, Location at, Access access,
                       std::vector<Transfer>* out) const {
  check_location(at);
  const Buffer& b = find(buffer);
  if (lo > hi || hi > b.size) {
    return Status(StatusCode::InvalidArgument,
                  "bytes [" + std::to_string(lo) + ", " + std::to_string(hi) + ") of node buffer " +
                      buffer_text(buffer) + " exceed its " + std::to_string(b.size) + " bytes");
  }
  std::vector<ByteRange> missing;
  b.valid[at].gaps(lo, hi, &missing);
  if (missing.empty()) return Status::ok();
  ByteRanges todo;
  for (const ByteRange& r : missing) todo.add(r.lo, r.hi);
  std::vector<Transfer> planned;
  for (Location from = 0; from < kLocations && !todo.empty(); ++from) {
    if (from == at || b.valid[from].empty()) continue;
    scratch_.clear();
    for (const ByteRange& r : todo.ranges()) b.valid[from].overlaps(r.lo, r.hi, &scratch_);
    for (const ByteRange& r : scratch_) {
      planned.push_back(Transfer{buffer, from, at, r.lo, r.hi});
      todo.remove(r.lo, r.hi);
    }
  }
  for (const ByteRange& r : todo.ranges()) {
    if (!b.lost.contains(r.lo, r.hi)) {
      return Status(StatusCode::InternalError,
                    "node buffer " + buffer_text(buffer) + ": bytes [" + std::to_string(r.lo) +
                        ", " + std::to_string(r.hi) + ") are valid nowhere and were not lost");
    }
    if (access == Access::Read) {
      return Status(StatusCode::InvalidDevicePointer,
                    "bytes [" + std::to_string(r.lo) + ", " + std::to_string(r.hi) +
                        ") of node buffer " + buffer_text(buffer) +
                        " were lost: " + b.why_lost(r.lo),
                    "write them again (copy_to, memset, or a run that writes them) before "
                    "reading them");
    }
  }
  out->insert(out->end(), planned.begin(), planned.end());
  return Status::ok();
}

void Coherence::copied(const Transfer& transfer) {
  check_location(transfer.to);
  Buffer& b = find(transfer.buffer);
  b.valid[transfer.to].add(transfer.lo, std::min(transfer.hi, b.size));
}

void Coherence::written(uint64_t buffer, uint64_t lo, uint64_t hi, Location at, bool dense) {
  check_location(at);
  Buffer& b = find(buffer);
  hi = std::min(hi, b.size);
  for (Location l = 0; l < kLocations; ++l) {
    if (l != at) b.valid[l].remove(lo, hi);
  }
  if (dense) {
    b.valid[at].add(lo, hi);
    b.unmark_lost(lo, hi);
    return;
  }
  std::vector<ByteRange> kept;  // the bytes of [lo, hi) that were not lost
  b.lost.gaps(lo, hi, &kept);
  for (const ByteRange& r : kept) b.valid[at].add(r.lo, r.hi);
}

void Coherence::discard(uint64_t buffer, uint64_t lo, uint64_t hi, const std::string& why) {
  Buffer& b = find(buffer);
  hi = std::min(hi, b.size);
  if (lo >= hi) return;
  for (ByteRanges& valid : b.valid) valid.remove(lo, hi);
  b.mark_lost(lo, hi, why);
}

void Coherence::lose(Location location, const std::string& why) {
  check_location(location);
  for (auto& [id, b] : buffers_) {
    for (const ByteRange& r : b.valid[location].ranges()) {
      std::vector<ByteRange> only_here;
      valid_elsewhere(b, location, r).gaps(r.lo, r.hi, &only_here);
      for (const ByteRange& gone : only_here) {
        b.mark_lost(gone.lo, gone.hi, why + ", which held their only valid copy");
      }
    }
    b.valid[location].clear();
  }
}

uint64_t Coherence::valid_bytes(uint64_t buffer, uint64_t lo, uint64_t hi, Location at) const {
  check_location(at);
  return find(buffer).valid[at].covered(lo, hi);
}

bool Coherence::holds(uint64_t buffer, Location at) const {
  check_location(at);
  return !find(buffer).valid[at].empty();
}

bool Coherence::is_replica(uint64_t buffer, Location at) const {
  check_location(at);
  const Buffer& b = find(buffer);
  if (b.valid[at].empty()) return false;
  for (const ByteRange& r : b.valid[at].ranges()) {
    if (!valid_elsewhere(b, at, r).contains(r.lo, r.hi)) return false;
  }
  return true;
}

void Coherence::drop_replica(uint64_t buffer, Location at) {
  if (!is_replica(buffer, at)) {
    throw Error(StatusCode::InvalidArgument, location_name(at) + "'s copy of node buffer " +
                                                 buffer_text(buffer) +
                                                 " is not a replica; dropping it would lose bytes");
  }
  find(buffer).valid[at].clear();
}

const ByteRanges& Coherence::lost(uint64_t buffer) const {
  return find(buffer).lost;
}

}  // namespace chiprt::node
