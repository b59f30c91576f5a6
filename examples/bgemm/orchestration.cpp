// bgemm orchestration: C += A B over square tiles. One scope per C tile releases its tile
// products once they are accumulated.
#include <string>

#include "bgemm/protocol.h"
#include "chiprt/orchestration.h"
#include "chiprt/status.h"

namespace {

using chiprt::CoreType;
using chiprt::DataType;
using chiprt::Error;
using chiprt::StatusCode;
using chiprt::TaskArgs;
using chiprt::Tensor;
namespace proto = chiprt::examples::bgemm;

// Tiles along each dimension of a row-major f32 matrix.
void tile_grid(const Tensor& t, const char* name, uint64_t tile, uint64_t* rows, uint64_t* cols) {
  if (t.ndim != 2 || t.dtype != DataType::F32 || !t.is_contiguous()) {
    throw Error(StatusCode::InvalidArgument, std::string("bgemm: tensor '") + name + "' is " +
                                                 t.to_string() +
                                                 ", expected a contiguous 2-D f32 matrix");
  }
  if (t.shape[0] % tile != 0 || t.shape[1] % tile != 0) {
    throw Error(StatusCode::InvalidArgument,
                std::string("bgemm: tensor '") + name + "' shape " + std::to_string(t.shape[0]) +
                    " x " + std::to_string(t.shape[1]) +
                    " is not a multiple of tile=" + std::to_string(tile));
  }
  *rows = t.shape[0] / tile;
  *cols = t.shape[1] / tile;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) void chiprt_orchestration(
    chiprt::Orchestration& orch, const chiprt::TaskArgs& args) {
  const Tensor& a = args.tensor(0);
  const Tensor& b = args.tensor(1);
  const Tensor& c = args.tensor(2);
  const uint64_t tile = args.scalar_bits(0);
  if (tile == 0) throw Error(StatusCode::InvalidArgument, "bgemm: tile=0 must be positive");
  uint64_t tiles_m = 0, tiles_k = 0, b_rows = 0, tiles_n = 0, c_rows = 0, c_cols = 0;
  tile_grid(a, "A", tile, &tiles_m, &tiles_k);
  tile_grid(b, "B", tile, &b_rows, &tiles_n);
  tile_grid(c, "C", tile, &c_rows, &c_cols);
  if (b_rows != tiles_k || c_rows != tiles_m || c_cols != tiles_n) {
    throw Error(StatusCode::InvalidArgument,
                "bgemm: shapes do not chain: A " + std::to_string(a.shape[0]) + "x" +
                    std::to_string(a.shape[1]) + ", B " + std::to_string(b.shape[0]) + "x" +
                    std::to_string(b.shape[1]) + ", C " + std::to_string(c.shape[0]) + "x" +
                    std::to_string(c.shape[1]));
  }
  const auto tile_arg = static_cast<int64_t>(tile);
  for (uint64_t i = 0; i < tiles_m; ++i) {
    for (uint64_t j = 0; j < tiles_n; ++j) {
      chiprt::Scope c_tile_scope(orch);
      const Tensor c_tile = c.view({tile, tile}, {i * tile, j * tile});
      for (uint64_t k = 0; k < tiles_k; ++k) {
        TaskArgs matmul;
        matmul.in(a.view({tile, tile}, {i * tile, k * tile}))
            .in(b.view({tile, tile}, {k * tile, j * tile}))
            .out({tile, tile}, DataType::F32)
            .scalar(tile_arg)
            .scalar(static_cast<int64_t>(a.strides[0]))
            .scalar(static_cast<int64_t>(b.strides[0]));
        orch.submit(proto::kMatmul, CoreType::AIC, matmul);

        TaskArgs accumulate;
        accumulate.in(matmul.output(0))
            .inout(c_tile)
            .scalar(tile_arg)
            .scalar(static_cast<int64_t>(c.strides[0]));
        orch.submit(proto::kAccumulate, CoreType::AIV, accumulate);
      }
    }
  }
}
