// The compute-bound kernel of `chiprt bench --task-bench`: a dependent chain of multiply-adds
// whose duration is set by its iteration count, like Task Bench's compute_bound kernel. Every
// runtime runs this same function (chiprt's kernel, the peers' task bodies); calibrate once per
// bench run to turn iterations into nanoseconds.
//
// Header-only (the LLVM libomp child process compiles it too); stateless, callable from any thread.
#pragma once

#include <time.h>

#include <algorithm>
#include <cstdint>

namespace chiprt::perf {

// Runs `iterations` dependent multiply-adds; returns the value so the work is not optimised away.
inline double tb_spin(uint64_t iterations) noexcept {
  double a = 1.0;
  const double b = 1.0000001;
  const double c = 1e-9;
  for (uint64_t i = 0; i < iterations; ++i) {
    a = a * b + c;
    asm volatile("" : "+x"(a));  // one multiply-add per iteration, never folded
  }
  return a;
}

// Nanoseconds per iteration of tb_spin on this thread: the fastest of `samples` runs of
// `iterations` each, timed with the thread's CPU clock so that time the thread spends preempted
// on a busy host does not count (the kernel's own peak).
inline double tb_calibrate_ns_per_iteration(uint64_t iterations = 200'000, int samples = 50) {
  const auto cpu_ns = [] {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
  };
  double best = 0;
  for (int s = 0; s < samples; ++s) {
    const double start = cpu_ns();
    const double sink = tb_spin(iterations);
    const double ns = cpu_ns() - start;
    asm volatile("" : : "x"(sink));
    best = s == 0 ? ns : std::min(best, ns);
  }
  return std::max(best, 1.0) / static_cast<double>(iterations);
}

}  // namespace chiprt::perf
