// The isolation suite's normal run, y = (x + 1) + 2 in two tasks of the add kernel (func_id 0,
// AIV: in a, out b, scalar f: b = a + f), submitted by the suite's in-process orchestration
// function and by its orchestration chip object (chip_objects/orchestration.cpp) alike.
// Header-only; public headers only, so a chip object may include it.
#pragma once

#include <cstdint>

#include "chiprt/orchestration.h"
#include "chiprt/task_args.h"
#include "chiprt/tensor.h"

namespace chiprt::isolation_test {

inline constexpr int32_t kAddFunc = 0;

// Task 0 of every scenario: tmp = x + 1, a runtime output, which it returns.
inline Tensor submit_first_task(Orchestration& o, const Tensor& x) {
  TaskArgs first;
  first.in(x).out({x.numel()}, DataType::F32).scalar(1.0f);
  o.submit(kAddFunc, CoreType::AIV, first);
  return first.output(0);
}

// The normal run: task 0, then task 1: y = tmp + 2.
inline void submit_normal_run(Orchestration& o, const Tensor& x, const Tensor& y) {
  const Tensor tmp = submit_first_task(o, x);
  TaskArgs second;
  second.in(tmp).output_existing(y).scalar(2.0f);
  o.submit(kAddFunc, CoreType::AIV, second);
}

}  // namespace chiprt::isolation_test
