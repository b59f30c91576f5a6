// The compute-bound kernel of `chiprt bench --task-bench`: a dependent chain of multiply-adds
// whose duration is set by its iteration count, like Task Bench's compute_bound kernel. Every
// runtime runs this same function (chiprt's kernel, the peers' task bodies); calibrate once per
// bench run to turn iterations into nanoseconds.
//
// Header-only (the LLVM libomp child process compiles it too); stateless, callable from any thread.
#pragma once

#include <algorithm>
#include <chrono>
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
// `iterations` each (the kernel's own peak, undisturbed by other threads as far as possible).
inline double tb_calibrate_ns_per_iteration(uint64_t iterations = 2'000'000, int samples = 5) {
  double best = 0;
  for (int s = 0; s < samples; ++s) {
    const auto start = std::chrono::steady_clock::now();
    const double sink = tb_spin(iterations);
    const double ns =
        std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
    asm volatile("" : : "x"(sink));
    best = s == 0 ? ns : std::min(best, ns);
  }
  return std::max(best, 1.0) / static_cast<double>(iterations);
}

}  // namespace chiprt::perf
