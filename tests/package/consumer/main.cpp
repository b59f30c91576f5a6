// The consumer's host program: builds its callable from its own chip objects, runs it on both
// runtime variants through an installed chiprt, and checks y against a reference computed here.
// Prints one PASS or FAIL line per variant; exits non-zero on any failure.
#include <chiprt/chiprt.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <vector>

#include "protocol.h"

namespace {

std::vector<uint8_t> read_object(const char* path) {
  std::ifstream file(path, std::ios::binary);
  if (!file)
    throw chiprt::Error(chiprt::StatusCode::LoadFailed, std::string("cannot open ") + path);
  return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

bool run_variant(const char* program, chiprt::Worker& worker, chiprt::RuntimeVariant variant) {
  constexpr uint64_t kLength = 4096;
  constexpr uint64_t kChunk = 512;
  constexpr float kAlpha = 0.5f;
  std::vector<float> x(kLength), y(kLength), want(kLength);
  for (uint64_t i = 0; i < kLength; ++i) {
    x[i] = static_cast<float>(i % 97) * 0.125f - 3.0f;
    y[i] = static_cast<float>(i % 13);
    want[i] = y[i] + kAlpha * (x[i] * x[i]);
  }
  const uint64_t bytes = kLength * sizeof(float);
  chiprt::DeviceBuffer dev_x = worker.malloc(bytes);
  chiprt::DeviceBuffer dev_y = worker.malloc(bytes);
  worker.copy_to(dev_x, x.data(), bytes);
  worker.copy_to(dev_y, y.data(), bytes);

  chiprt::TaskArgs args;
  args.in(chiprt::Tensor::make(dev_x, {kLength}, chiprt::DataType::F32));
  args.inout(chiprt::Tensor::make(dev_y, {kLength}, chiprt::DataType::F32));
  args.scalar(kChunk).scalar(kAlpha);
  chiprt::CallConfig config;
  config.runtime = variant;
  const chiprt::RunReport report = worker.run(0, args, config);

  std::vector<float> got(kLength);
  worker.copy_from(got.data(), dev_y, bytes);
  worker.free(dev_x);
  worker.free(dev_y);
  double max_error = 0;
  for (uint64_t i = 0; i < kLength; ++i) {
    max_error = std::max(max_error, std::fabs(static_cast<double>(got[i]) - want[i]));
  }
  const uint64_t want_tasks = 2 * (kLength / kChunk);
  const bool passed = max_error <= 1e-6 && report.task_count == want_tasks;
  std::printf("%s %s %s: %llu tasks (want %llu), max error %g\n", passed ? "PASS" : "FAIL", program,
              std::string(chiprt::runtime_variant_name(variant)).c_str(),
              static_cast<unsigned long long>(report.task_count),
              static_cast<unsigned long long>(want_tasks), max_error);
  return passed;
}

}  // namespace

int main(int, char** argv) {
  try {
    const chiprt::ArgSignature square =
        chiprt::ArgSignature::of({chiprt::ArgTag::In, chiprt::ArgTag::Out}, 1);
    const chiprt::ArgSignature axpy =
        chiprt::ArgSignature::of({chiprt::ArgTag::In, chiprt::ArgTag::InOut}, 2);
    chiprt::CallableBuilder builder;
    builder
        .orchestration_object(
            read_object(ORCHESTRATION_OBJECT),
            chiprt::ArgSignature::of({chiprt::ArgTag::In, chiprt::ArgTag::InOut}, 2))
        .kernel_object(consumer::kSquare, chiprt::CoreType::AIV, read_object(SQUARE_OBJECT), square)
        .kernel_object(consumer::kAxpy, chiprt::CoreType::AIV, read_object(AXPY_OBJECT), axpy);
    const std::vector<uint8_t> container = builder.build();

    chiprt::Worker worker;
    worker.init();
    worker.register_callable(0, container);
    bool passed = run_variant(argv[0], worker, chiprt::RuntimeVariant::HostBuildGraph);
    passed = run_variant(argv[0], worker, chiprt::RuntimeVariant::TensormapRingbuffer) && passed;
    worker.close();
    return passed ? 0 : 1;
  } catch (const chiprt::Error& error) {
    std::fprintf(stderr, "FAIL consumer: %s\n", error.what());
    return 1;
  }
}
