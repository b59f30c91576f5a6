// What the node suite's tests share. Header-only.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "chiprt/callable.h"
#include "chiprt/kernel.h"
#include "chiprt/orchestration.h"
#include "chiprt/status.h"
#include "chiprt/task_args.h"
#include "faults.h"

namespace chiprt::node {

// Under a sanitizer a device process takes about a second to start: the suite keeps every case
// but starts fewer isolated chips (the budget: a third of the default build's time).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kUnderSanitizer = true;
#else
inline constexpr bool kUnderSanitizer = false;
#endif

// The Error `call` throws (a test failure, and an Ok error, when it throws none).
template <class Call>
Error error_of(Call&& call) {
  try {
    call();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no error";
  return Error(StatusCode::Ok, "");
}

// The suite's callable: one task, out = in + f, or a kernel that aborts.
inline constexpr int32_t kCallable = 7;
inline constexpr int32_t kAddFunc = 0;    // AIV: out[i] = in[i] + f (contiguous F32)
inline constexpr int32_t kCrashFunc = 1;  // AIV: abort()

inline void add_kernel(int64_t* args) {
  const float* in = kernel::tensor_arg<const float>(args, 0);
  float* out = kernel::tensor_arg<float>(args, 1);
  const auto f = kernel::scalar_arg<float>(args, 2);
  const uint64_t n = kernel::view(args, 0).numel();
  for (uint64_t i = 0; i < n; ++i) out[i] = in[i] + f;
}

inline void crash_kernel(int64_t*) {
  isolation_test::raise_fault(isolation_test::Fault::Abort, 0);
}

// Run arguments: in, output_existing out; scalars [0] f (float), [1] crash (0/1).
inline void add_orchestration(Orchestration& o, const TaskArgs& run) {
  TaskArgs task;
  task.in(run.tensor(0)).output_existing(run.tensor(1)).scalar(run.scalar_bits(0));
  o.submit(run.scalar_bits(1) != 0 ? kCrashFunc : kAddFunc, CoreType::AIV, task);
}

inline std::vector<uint8_t> add_callable() {
  CallableBuilder builder;
  builder.orchestration_function(&add_orchestration, {})
      .kernel_function(kAddFunc, CoreType::AIV, &add_kernel, {})
      .kernel_function(kCrashFunc, CoreType::AIV, &crash_kernel, {});
  return builder.build();
}

// Run arguments for add_callable.
inline TaskArgs add_args(const Tensor& in, const Tensor& out, float f, bool crash = false) {
  TaskArgs args;
  args.in(in).output_existing(out).scalar(f).scalar(static_cast<int64_t>(crash ? 1 : 0));
  return args;
}

}  // namespace chiprt::node
