// bgemm protocol: the func_ids and argument layouts shared by the orchestration, the kernels and
// the host side. Constants only.
//
// Orchestration args: A (In, M x K), B (In, K x N), C (InOut, M x N), row-major f32, every
// dimension a multiple of the tile; scalar 0: tile (edge length of the square tiles).
// C += sum_k A[i,k] B[k,j] tile by tile: per (i, j, k) one kMatmul task on an AIC core writes the
// tile product into a runtime Out tensor, then one kAccumulate task on an AIV core adds it into
// the C tile (InOut), so the accumulations into one C tile chain through the tensor map.
// Kernels: kMatmul (a, b, product; tile, lda, ldb), product contiguous tile x tile;
//          kAccumulate (product, c; tile, ldc) c += product.
#pragma once

#include <cstdint>

namespace chiprt::examples::bgemm {

inline constexpr int32_t kMatmul = 0;
inline constexpr int32_t kAccumulate = 1;
// Kernel tasks per (i, j, k) tile triple: matmul + accumulate.
inline constexpr uint64_t kTasksPerTileProduct = 2;

}  // namespace chiprt::examples::bgemm
