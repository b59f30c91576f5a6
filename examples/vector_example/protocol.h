// vector_example protocol: the func_ids and argument layouts shared by the orchestration, the
// kernels and the host side. Constants only.
//
// Orchestration args: a (In), b (In), f (OutputExisting), all 1-D f32 of the same length;
// scalar 0: chunk (elements per task, divides the length).
// Kernels (AIV): kAdd / kAddInto (x, y, out; n) out = x + y; kAddScalar (x, out; n, value f32)
// out = x + value; kMul (x, y, out; n) out = x * y. kAdd writes a runtime Out tensor, kAddInto
// the same code into an existing tensor (OutputExisting).
#pragma once

#include <cstdint>

namespace chiprt::examples::vector_example {

inline constexpr int32_t kAdd = 0;
inline constexpr int32_t kAddScalar = 1;
inline constexpr int32_t kMul = 2;
inline constexpr int32_t kAddInto = 3;
// Kernel tasks per chunk: add, add_scalar x2, mul, add_into.
inline constexpr uint64_t kTasksPerChunk = 5;

}  // namespace chiprt::examples::vector_example
