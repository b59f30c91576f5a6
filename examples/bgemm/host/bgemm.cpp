#include "bgemm/host/bgemm.h"

#include <random>

#include "bgemm/protocol.h"
#include "chiprt/callable.h"
#include "chiprt/tensor.h"
#include "support.h"

namespace chiprt::examples {
namespace {

namespace proto = bgemm;

std::vector<uint8_t> build_container() {
  CallableBuilder builder;
  builder
      .orchestration_object(read_chip_object("bgemm_orchestration"),
                            ArgSignature::of({ArgTag::In, ArgTag::In, ArgTag::InOut}, 1))
      .kernel_object(proto::kMatmul, CoreType::AIC, read_chip_object("bgemm_matmul"),
                     ArgSignature::of({ArgTag::In, ArgTag::In, ArgTag::Out}, 3), kKernelSymbol,
                     "matmul")
      .kernel_object(proto::kAccumulate, CoreType::AIV, read_chip_object("bgemm_accumulate"),
                     ArgSignature::of({ArgTag::In, ArgTag::InOut}, 2), kKernelSymbol, "accumulate");
  return builder.build();
}

std::vector<float> random_matrix(std::mt19937& rng, uint64_t elements) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> m(elements);
  for (float& x : m) x = dist(rng);
  return m;
}

Outcome run_bgemm(Worker& worker, const ExampleCase& example_case, const CallConfig& config,
                  const Executor& executor) {
  const auto tile = static_cast<uint64_t>(example_case.param("tile"));
  const uint64_t m = static_cast<uint64_t>(example_case.param("tiles_m")) * tile;
  const uint64_t n = static_cast<uint64_t>(example_case.param("tiles_n")) * tile;
  const uint64_t k = static_cast<uint64_t>(example_case.param("tiles_k")) * tile;

  std::mt19937 rng(7);
  const std::vector<float> a = random_matrix(rng, m * k);
  const std::vector<float> b = random_matrix(rng, k * n);
  // Reference in double: the device sums in float, tile by tile.
  std::vector<double> want(m * n, 0.0);
  for (uint64_t r = 0; r < m; ++r) {
    for (uint64_t x = 0; x < k; ++x) {
      const double a_rx = a[r * k + x];
      for (uint64_t c = 0; c < n; ++c) want[r * n + c] += a_rx * b[x * n + c];
    }
  }
  // Float rounding grows with the reduction length (|terms| <= 1).
  const double tolerance = 1e-6 * static_cast<double>(k) + 1e-5;

  DeviceAllocation dev_a(worker, a.size() * sizeof(float));
  DeviceAllocation dev_b(worker, b.size() * sizeof(float));
  DeviceAllocation dev_c(worker, m * n * sizeof(float));
  worker.copy_to(dev_a.buffer(), a.data(), a.size() * sizeof(float));
  worker.copy_to(dev_b.buffer(), b.data(), b.size() * sizeof(float));
  worker.memset(dev_c.buffer(), 0, m * n * sizeof(float));

  const std::vector<uint8_t> container = build_container();
  RegisteredCallable callable(worker, container);
  TaskArgs args;
  args.in(Tensor::make(dev_a.buffer(), {m, k}, DataType::F32))
      .in(Tensor::make(dev_b.buffer(), {k, n}, DataType::F32))
      .inout(Tensor::make(dev_c.buffer(), {m, n}, DataType::F32))
      .scalar(tile);
  const RunReport report = executor(worker, callable.id(), args, config);

  std::vector<float> got(m * n);
  worker.copy_from(got.data(), dev_c.buffer(), m * n * sizeof(float));
  callable.release();
  dev_c.release();
  dev_b.release();
  dev_a.release();
  const uint64_t kernel_tasks = (m / tile) * (n / tile) * (k / tile) * proto::kTasksPerTileProduct;
  return make_outcome(compare_results(got, want, tolerance, n), tolerance, report, kernel_tasks);
}

}  // namespace

Example make_bgemm_example() {
  Example example;
  example.name = "bgemm";
  example.description =
      "tiled C = sum_k A_k B_k: tile products on AIC, accumulation into C tiles on AIV (INOUT)";
  example.cases = {
      {"small", {{"tiles_m", 4}, {"tiles_n", 4}, {"tiles_k", 4}, {"tile", 16}}},
      {"medium", {{"tiles_m", 8}, {"tiles_n", 8}, {"tiles_k", 8}, {"tile", 16}}},
      {"large", {{"tiles_m", 16}, {"tiles_n", 16}, {"tiles_k", 8}, {"tile", 8}}, true},
      // `chiprt bench`'s bgemm row: 64x64 tiles make each tile product hundreds of microseconds
      // of kernel work, so the runtime's per-task cost is small beside it; 8 x 8 C tiles keep
      // both host threads busy to the end (chains of 4 accumulations each).
      {"bench", {{"tiles_m", 8}, {"tiles_n", 8}, {"tiles_k", 4}, {"tile", 64}}, true},
  };
  example.runner = run_bgemm;
  return example;
}

}  // namespace chiprt::examples
