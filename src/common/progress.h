// Launch progress: the one rule by which every watchdog of a launch decides that it is alive (the
// schedulers' watchdog, the tensormap_ringbuffer orchestrator's waits and the host's launch wait).
//
// A launch makes progress when a task completes, a kernel starts on a core, or the orchestration
// function (tensormap_ringbuffer) submits a task or returns. Each of these bumps a counter: a
// core's HandshakeCell::starts, the run's completed count, SharedPrefix::orchestrator_beat. An
// observer samples the sum of the counters it can read (a sum of counters that only grow changes
// whenever one of them does) and notes a change as progress at the time it saw it. It samples at
// least every quarter of its timeout, so a launch is declared stuck between 1 and 1.25 timeouts
// after its last progress, and never while it makes progress.
//
// The chip's observers read every counter; the host reads the cores' starts and the beat through
// the platform (it cannot see the scheduler's completed count): a completion without a kernel
// start after it is either the run's last or followed by more, within a scheduler timeout.
//
// Lifetime and threading: ProgressWatch is plain state owned by one observer thread; the counters
// it samples are atomics of the launch's shared-state region.
#pragma once

#include <cstdint>

#include "common/handshake.h"

namespace chiprt::common {

// The chip's view: every core's kernel starts and the orchestrator's beat (add the completed
// count). `cores`: the device's cores (cells [0, cores)).
inline uint64_t chip_progress_counters(const SharedPrefix& prefix, uint32_t cores) {
  uint64_t sum = prefix.orchestrator_beat.load(std::memory_order_relaxed);
  for (uint32_t core = 0; core < cores && core < kMaxCores; ++core) {
    sum += prefix.cells[core].starts.load(std::memory_order_relaxed);
  }
  return sum;
}

// Time is in the observer's unit (chip cycles on the chip, milliseconds on the host).
class ProgressWatch {
 public:
  ProgressWatch() = default;
  ProgressWatch(uint64_t signature, uint64_t now, uint64_t timeout) {
    restart(signature, now, timeout);
  }

  void restart(uint64_t signature, uint64_t now, uint64_t timeout) {
    signature_ = signature;
    since_ = now;
    last_sample_ = now;
    timeout_ = timeout;
  }
  // The one question an observer asks: has the launch made no progress for the timeout?
  // `sample()` reads the counters; it is called when a sample is due (a quarter timeout since the
  // last) and always before a verdict, so progress in the last quarter is never missed however
  // late the observer looks.
  template <class Sample>
  bool stalled(uint64_t now, Sample&& sample) {
    const bool deadline_passed = now - since_ >= timeout_;
    if (deadline_passed || now - last_sample_ >= sample_interval()) {
      if (observe(sample(), now)) return false;
    }
    return deadline_passed;
  }
  // Progress the observer saw by other means (its own completions, a count it reads anyway).
  void note_progress(uint64_t now) { since_ = now; }
  // When the observer must look again at the latest: the next sample or the deadline.
  uint64_t next_check() const {
    const uint64_t deadline = since_ + timeout_;
    const uint64_t sample = last_sample_ + sample_interval();
    return deadline < sample ? deadline : sample;
  }
  uint64_t since() const { return since_; }
  uint64_t timeout() const { return timeout_; }

 private:
  // Records a sample; returns whether it shows progress since the previous one.
  bool observe(uint64_t signature, uint64_t now) {
    last_sample_ = now;
    if (signature == signature_) return false;
    signature_ = signature;
    since_ = now;
    return true;
  }
  uint64_t sample_interval() const { return timeout_ / 4 == 0 ? 1 : timeout_ / 4; }

  uint64_t signature_ = 0;
  uint64_t since_ = 0;
  uint64_t last_sample_ = 0;
  uint64_t timeout_ = 0;
};

}  // namespace chiprt::common
