// The consumer's protocol: func ids and argument layouts shared by its kernels, its orchestration
// and its host program.
//
// Orchestration args: x (In), y (InOut), both 1-D f32 of the same length; scalars: chunk
// (elements per task, divides the length), alpha (f32). Per chunk: t = square(x) on AIV with
// SPMD blocks, then y += alpha * t on AIV. Result: y = y0 + alpha * x * x.
#pragma once

#include <cstdint>

namespace consumer {
inline constexpr int32_t kSquare = 0;  // x (In), t (Out); scalar n
inline constexpr int32_t kAxpy = 1;    // t (In), y (InOut); scalars n, alpha (f32)
inline constexpr uint32_t kSquareBlocks = 2;
}  // namespace consumer
