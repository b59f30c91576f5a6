// DiagWriter: the producer side of one diagnostics stream (common/diag_layout.h), used by the
// chip-side collectors (cores, schedulers, the ring orchestrator). Writes a record without locks
// or allocation; a full ring makes it back off through ChipServices until the host drains it, and
// after kDiagFullWaitMs it drops the record and counts it, so a run never hangs on diagnostics.
//
// An inactive writer (no region, its switch off, or a stream without records) costs one branch
// per event site: `if (writer.on(kDiagX)) writer.put(...)`.
//
// Lifetime: made at the start of a launch from ChipLaunchArgs; valid while the launch runs.
// Threading: one writer per stream, used only by the chip thread that owns the stream.
#pragma once

#include <cstdint>

#include "common/chip_launch.h"
#include "common/chip_services.h"
#include "common/diag_layout.h"

namespace chiprt::common {

class DiagWriter {
 public:
  DiagWriter() = default;
  // The writers of core `core`'s and of AICPU thread `thread`'s stream (inactive when the launch
  // has no region).
  static DiagWriter core_stream(const ChipLaunchArgs& args, const ChipServices& services,
                                uint32_t core) {
    return DiagWriter(args, services, core, false);
  }
  static DiagWriter thread_stream(const ChipLaunchArgs& args, const ChipServices& services,
                                  uint32_t thread) {
    return DiagWriter(args, services, thread, true);
  }

 private:
  DiagWriter(const ChipLaunchArgs& args, const ChipServices& services, uint32_t index,
             bool thread) {
    if (args.diag_addr == 0) return;
    auto* header = reinterpret_cast<DiagRegionHeader*>(static_cast<uintptr_t>(args.diag_addr));
    if (header->magic != kDiagMagic) return;
    const uint32_t stream = thread ? diag_thread_stream(*header, index) : index;
    if (stream >= header->stream_count || (!thread && index >= header->cores)) return;
    auto* streams = reinterpret_cast<DiagStream*>(static_cast<uintptr_t>(header->streams_addr));
    DiagStream& s = streams[stream];
    if (s.capacity == 0 || (s.capacity & (s.capacity - 1)) != 0 || s.records_addr == 0) return;
    header_ = header;
    stream_ = &s;
    records_ = reinterpret_cast<DiagRecord*>(static_cast<uintptr_t>(s.records_addr));
    mask_ = s.capacity - 1;
    switches_ = header->switches;
    services_ = &services;
    clock_hz_ = args.clock_hz;
  }

 public:
  bool on(uint32_t switch_bits) const noexcept { return (switches_ & switch_bits) != 0; }
  DiagRegionHeader* header() const noexcept { return header_; }
  uint64_t now() const noexcept { return services_->cycles(services_->ctx); }
  const ChipServices& services() const noexcept { return *services_; }

  void put(const DiagRecord& record) noexcept {
    const uint64_t head = stream_->head.load(std::memory_order_relaxed);
    if (head - stream_->tail.load(std::memory_order_acquire) > mask_ && !wait_for_room(head)) {
      stream_->dropped.store(stream_->dropped.load(std::memory_order_relaxed) + 1,
                             std::memory_order_release);
      return;
    }
    records_[head & mask_] = record;
    stream_->head.store(head + 1, std::memory_order_release);
  }

  void put(DiagKind kind, uint16_t where, uint64_t task, uint64_t begin, uint64_t end,
           int32_t func_id = -1, uint32_t block = 0, uint32_t value = 0, uint64_t a = 0,
           uint64_t b = 0, uint64_t c = 0) noexcept {
    put(DiagRecord{static_cast<uint16_t>(kind), where, func_id, block, value, task, begin, end, a,
                   b, c});
  }

 private:
  // Backs off until the host has drained a record's room, or kDiagFullWaitMs passed (false).
  bool wait_for_room(uint64_t head) noexcept {
    stream_->full_waits.store(stream_->full_waits.load(std::memory_order_relaxed) + 1,
                              std::memory_order_release);
    if (services_->diag_backoff == nullptr) return false;
    const uint64_t start = now();
    const uint64_t limit = clock_hz_ / 1000 * kDiagFullWaitMs;
    for (uint32_t attempt = 0;; ++attempt) {
      services_->diag_backoff(services_->ctx, attempt);
      if (head - stream_->tail.load(std::memory_order_acquire) <= mask_) return true;
      if (now() - start > limit) return false;
    }
  }

  DiagRegionHeader* header_ = nullptr;
  DiagStream* stream_ = nullptr;
  DiagRecord* records_ = nullptr;
  uint64_t mask_ = 0;
  uint32_t switches_ = 0;
  const ChipServices* services_ = nullptr;
  uint64_t clock_hz_ = 0;
};

}  // namespace chiprt::common
