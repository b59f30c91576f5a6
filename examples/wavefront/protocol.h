// wavefront protocol: the func_id and argument layout shared by the orchestration, the kernel and
// the host side. Constants only.
//
// Orchestration args: X (InOut), a row-major f32 matrix of (rows + 1) x (cols + 1) square tiles;
// scalar 0: tile (edge length). Tile row 0 and tile column 0 are a fixed halo; every other tile
// (i, j), in row-major order, is updated in place from its left (i, j-1) and upper (i-1, j)
// neighbours, passed as In views of the same buffer, so the dependencies come only from
// overlapping views of X:
//   x[r][c] = x[r][c] + 0.5 * left[r][tile-1] + 0.25 * up[tile-1][c]
// Kernel kUpdate (AIV): (x InOut, left In, up In; tile, ld) with ld the row stride of X.
#pragma once

#include <cstdint>

namespace chiprt::examples::wavefront {

inline constexpr int32_t kUpdate = 0;
inline constexpr float kLeftWeight = 0.5f;
inline constexpr float kUpWeight = 0.25f;

}  // namespace chiprt::examples::wavefront
