#include <limits>

#include "common/chip_launch.h"

namespace chiprt::common {
namespace {

constexpr uint64_t kNsPerSecond = 1'000'000'000;

// cycles * 1e9 / hz without intermediate overflow; saturates at 2^64-1. hz == 0 (clock unknown)
// reports cycles unchanged, as if the clock ran at 1 GHz.
uint64_t cycles_to_ns(uint64_t cycles, uint64_t hz) noexcept {
  if (hz == 0) return cycles;
  const unsigned __int128 ns = static_cast<unsigned __int128>(cycles) * kNsPerSecond / hz;
  return ns > std::numeric_limits<uint64_t>::max() ? std::numeric_limits<uint64_t>::max()
                                                   : static_cast<uint64_t>(ns);
}

}  // namespace

void reduce_phase_buffer(const PhaseBuffer& buffer, uint32_t threads, uint64_t hz,
                         std::array<PhaseSpan, kPhaseCount>* out) {
  if (threads > kMaxAicpuThreads) threads = kMaxAicpuThreads;
  PhaseStamp merged[kPhaseCount] = {};
  for (int p = 0; p < kPhaseCount; ++p) {
    for (uint32_t t = 0; t < threads; ++t) {
      const PhaseStamp& s = buffer.stamps[t][p];
      if (s.start != 0 && (merged[p].start == 0 || s.start < merged[p].start)) {
        merged[p].start = s.start;
      }
      if (s.end > merged[p].end) merged[p].end = s.end;
    }
  }
  // A phase counts only when both ends were stamped: a start without an end is a thread that
  // never finished the phase, and its span would be meaningless.
  auto present = [&](int p) { return merged[p].start != 0 && merged[p].end != 0; };

  const int run_wall = static_cast<int>(Phase::RunWall);
  uint64_t origin = 0;
  for (int p = 0; p < kPhaseCount; ++p) {
    if (p != run_wall && present(p) && (origin == 0 || merged[p].start < origin)) {
      origin = merged[p].start;
    }
  }
  if (origin == 0 && present(run_wall)) origin = merged[run_wall].start;

  for (int p = 0; p < kPhaseCount; ++p) {
    PhaseSpan& span = (*out)[p];
    span = PhaseSpan{};
    if (!present(p)) continue;
    span.present = true;
    const PhaseStamp& s = merged[p];
    span.span_ns = s.end > s.start ? cycles_to_ns(s.end - s.start, hz) : 0;
    span.start_ns = (p == run_wall || s.start <= origin) ? 0 : cycles_to_ns(s.start - origin, hz);
  }
}

}  // namespace chiprt::common
