#include "vector_example/host/vector_example.h"

#include <random>

#include "chiprt/callable.h"
#include "chiprt/tensor.h"
#include "support.h"
#include "vector_example/protocol.h"

namespace chiprt::examples {
namespace {

namespace proto = vector_example;

// Float math in the kernels' order, so the result matches to rounding.
constexpr double kTolerance = 1e-5;

std::vector<uint8_t> build_container() {
  const ArgSignature binary = ArgSignature::of({ArgTag::In, ArgTag::In, ArgTag::Out}, 1);
  const ArgSignature binary_into =
      ArgSignature::of({ArgTag::In, ArgTag::In, ArgTag::OutputExisting}, 1);
  const ArgSignature add_scalar = ArgSignature::of({ArgTag::In, ArgTag::Out}, 2);
  const std::vector<uint8_t> add = read_chip_object("vector_example_add");
  CallableBuilder builder;
  builder
      .orchestration_object(read_chip_object("vector_example_orchestration"),
                            ArgSignature::of({ArgTag::In, ArgTag::In, ArgTag::OutputExisting}, 1))
      .kernel_object(proto::kAdd, CoreType::AIV, add, binary, kKernelSymbol, "add")
      .kernel_object(proto::kAddScalar, CoreType::AIV,
                     read_chip_object("vector_example_add_scalar"), add_scalar, kKernelSymbol,
                     "add_scalar")
      .kernel_object(proto::kMul, CoreType::AIV, read_chip_object("vector_example_mul"), binary,
                     kKernelSymbol, "mul")
      // The same object and symbol under a second func_id, with a name of its own.
      .kernel_object(proto::kAddInto, CoreType::AIV, add, binary_into, kKernelSymbol, "add_into");
  return builder.build();
}

Outcome run_vector_example(Worker& worker, const ExampleCase& example_case,
                           const CallConfig& config, const Executor& executor) {
  const auto length = static_cast<uint64_t>(example_case.param("elements"));
  const auto chunk = static_cast<uint64_t>(example_case.param("chunk"));
  const uint64_t bytes = length * sizeof(float);

  std::mt19937 rng(20240501);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> a(length), b(length);
  for (float& x : a) x = dist(rng);
  for (float& x : b) x = dist(rng);
  std::vector<double> want(length);
  for (uint64_t i = 0; i < length; ++i) {
    const float s = a[i] + b[i];
    want[i] = (s + 1.0f) * (s + 2.0f) + s;
  }

  DeviceAllocation dev_a(worker, bytes), dev_b(worker, bytes), dev_f(worker, bytes);
  worker.copy_to(dev_a.buffer(), a.data(), bytes);
  worker.copy_to(dev_b.buffer(), b.data(), bytes);
  // Poison the output so an element the run never writes cannot pass by accident.
  worker.memset(dev_f.buffer(), 0xff, bytes);

  const std::vector<uint8_t> container = build_container();
  RegisteredCallable callable(worker, container);
  TaskArgs args;
  args.in(Tensor::make(dev_a.buffer(), {length}, DataType::F32))
      .in(Tensor::make(dev_b.buffer(), {length}, DataType::F32))
      .output_existing(Tensor::make(dev_f.buffer(), {length}, DataType::F32))
      .scalar(chunk);
  const RunReport report = executor(worker, callable.id(), args, config);

  std::vector<float> got(length);
  worker.copy_from(got.data(), dev_f.buffer(), bytes);
  callable.release();
  dev_f.release();
  dev_b.release();
  dev_a.release();
  return make_outcome(compare_results(got, want, kTolerance), kTolerance, report,
                      length / chunk * proto::kTasksPerChunk);
}

}  // namespace

Example make_vector_example() {
  Example example;
  example.name = "vector_example";
  example.description =
      "f = (a+b+1)(a+b+2) + (a+b) over f32 vectors on AIV cores, intermediates in nested scopes";
  example.cases = {
      {"default", {{"elements", 16384}, {"chunk", 4096}}},
      {"small", {{"elements", 1024}, {"chunk", 1024}}},
  };
  example.runner = run_vector_example;
  return example;
}

}  // namespace chiprt::examples
