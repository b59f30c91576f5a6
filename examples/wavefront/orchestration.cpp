// wavefront orchestration: one task per interior tile, in row-major order, with no explicit
// dependencies: the tensor map derives them from the overlapping views of X.
#include <string>

#include "chiprt/orchestration.h"
#include "chiprt/status.h"
#include "wavefront/protocol.h"

extern "C" __attribute__((visibility("default"))) void chiprt_orchestration(
    chiprt::Orchestration& orch, const chiprt::TaskArgs& args) {
  using chiprt::Error;
  using chiprt::StatusCode;
  using chiprt::Tensor;
  const Tensor& x = args.tensor(0);
  const uint64_t tile = args.scalar_bits(0);
  if (tile == 0) throw Error(StatusCode::InvalidArgument, "wavefront: tile=0 must be positive");
  if (x.ndim != 2 || x.dtype != chiprt::DataType::F32 || !x.is_contiguous() ||
      x.shape[0] % tile != 0 || x.shape[1] % tile != 0 || x.shape[0] < 2 * tile ||
      x.shape[1] < 2 * tile) {
    throw Error(StatusCode::InvalidArgument,
                "wavefront: X is " + x.to_string() +
                    ", expected a contiguous 2-D f32 matrix of at least 2 x 2 tiles of tile=" +
                    std::to_string(tile));
  }
  const uint64_t tile_rows = x.shape[0] / tile;
  const uint64_t tile_cols = x.shape[1] / tile;
  const auto ld = static_cast<int64_t>(x.strides[0]);
  auto tile_at = [&](uint64_t i, uint64_t j) { return x.view({tile, tile}, {i * tile, j * tile}); };
  for (uint64_t i = 1; i < tile_rows; ++i) {
    for (uint64_t j = 1; j < tile_cols; ++j) {
      chiprt::TaskArgs update;
      update.inout(tile_at(i, j))
          .in(tile_at(i, j - 1))
          .in(tile_at(i - 1, j))
          .scalar(static_cast<int64_t>(tile))
          .scalar(ld);
      orch.submit(chiprt::examples::wavefront::kUpdate, chiprt::CoreType::AIV, update);
    }
  }
}
