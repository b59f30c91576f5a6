#include "wavefront/host/wavefront.h"

#include <random>

#include "chiprt/callable.h"
#include "chiprt/tensor.h"
#include "support.h"
#include "wavefront/protocol.h"

namespace chiprt::examples {
namespace {

namespace proto = wavefront;

// The reference repeats the kernel's float operations in the same order.
constexpr double kTolerance = 1e-5;

std::vector<uint8_t> build_container() {
  CallableBuilder builder;
  builder
      .orchestration_object(read_chip_object("wavefront_orchestration"),
                            ArgSignature::of({ArgTag::InOut}, 1))
      .kernel_object(proto::kUpdate, CoreType::AIV, read_chip_object("wavefront_update"),
                     ArgSignature::of({ArgTag::InOut, ArgTag::In, ArgTag::In}, 2), kKernelSymbol,
                     "update");
  return builder.build();
}

// The stencil on the host, tile by tile in submission order.
void reference_wavefront(std::vector<float>& x, uint64_t tile_rows, uint64_t tile_cols,
                         uint64_t tile) {
  const uint64_t ld = tile_cols * tile;
  for (uint64_t i = 1; i < tile_rows; ++i) {
    for (uint64_t j = 1; j < tile_cols; ++j) {
      float* t = &x[i * tile * ld + j * tile];
      const float* left = t - tile;
      const float* up = t - tile * ld;
      for (uint64_t r = 0; r < tile; ++r) {
        const float from_left = proto::kLeftWeight * left[r * ld + tile - 1];
        for (uint64_t c = 0; c < tile; ++c) {
          t[r * ld + c] = t[r * ld + c] + from_left + proto::kUpWeight * up[(tile - 1) * ld + c];
        }
      }
    }
  }
}

Outcome run_wavefront(Worker& worker, const ExampleCase& example_case, const CallConfig& config,
                      const Executor& executor) {
  const auto tile = static_cast<uint64_t>(example_case.param("tile"));
  // Interior tiles plus the halo row and column.
  const uint64_t tile_rows = static_cast<uint64_t>(example_case.param("tiles_r")) + 1;
  const uint64_t tile_cols = static_cast<uint64_t>(example_case.param("tiles_c")) + 1;
  const uint64_t rows = tile_rows * tile, cols = tile_cols * tile;
  const uint64_t bytes = rows * cols * sizeof(float);

  std::mt19937 rng(12345);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> x(rows * cols);
  for (float& v : x) v = dist(rng);
  std::vector<float> expected = x;
  reference_wavefront(expected, tile_rows, tile_cols, tile);
  const std::vector<double> want(expected.begin(), expected.end());

  DeviceAllocation dev_x(worker, bytes);
  worker.copy_to(dev_x.buffer(), x.data(), bytes);
  const std::vector<uint8_t> container = build_container();
  RegisteredCallable callable(worker, container);
  TaskArgs args;
  args.inout(Tensor::make(dev_x.buffer(), {rows, cols}, DataType::F32)).scalar(tile);
  const RunReport report = executor(worker, callable.id(), args, config);

  std::vector<float> got(rows * cols);
  worker.copy_from(got.data(), dev_x.buffer(), bytes);
  callable.release();
  dev_x.release();
  return make_outcome(compare_results(got, want, kTolerance, cols), kTolerance, report,
                      (tile_rows - 1) * (tile_cols - 1));
}

}  // namespace

Example make_wavefront_example() {
  Example example;
  example.name = "wavefront";
  example.description =
      "2-D tiled stencil updated in place; dependencies only from overlapping views of one buffer";
  example.cases = {
      {"default", {{"tiles_r", 32}, {"tiles_c", 32}, {"tile", 8}}},
      {"small", {{"tiles_r", 8}, {"tiles_c", 8}, {"tile", 8}}},
      {"large", {{"tiles_r", 64}, {"tiles_c", 64}, {"tile", 8}}, true},
  };
  example.runner = run_wavefront;
  return example;
}

}  // namespace chiprt::examples
