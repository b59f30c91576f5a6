// The host: build the callable, copy a and b in, run, copy c out, check it. Prints PASS or FAIL.
#include <chiprt/chiprt.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <vector>

static std::vector<uint8_t> read_file(const char* path) {
  std::ifstream file(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

int main() {
  const uint64_t n = 4096, bytes = n * sizeof(float);
  std::vector<float> host_a(n), host_b(n), host_c(n);
  for (uint64_t i = 0; i < n; ++i) {
    host_a[i] = 0.5f * static_cast<float>(i);
    host_b[i] = static_cast<float>(1 + i % 7);
  }

  chiprt::Worker worker;
  worker.init();  // the simulated chip, host_build_graph
  worker.register_callable(/*callable_id=*/0,
                           chiprt::CallableBuilder()
                               .orchestration_object(read_file(ORCHESTRATION_SO), {})
                               .kernel_object(0, chiprt::CoreType::AIV, read_file(KERNEL_SO), {},
                                              /*symbol=*/"vector_add")
                               .build());
  chiprt::DeviceBuffer a = worker.malloc(bytes), b = worker.malloc(bytes), c = worker.malloc(bytes);
  worker.copy_to(a, host_a.data(), bytes);
  worker.copy_to(b, host_b.data(), bytes);
  chiprt::TaskArgs args;
  args.in(chiprt::Tensor::make(a, {n}, chiprt::DataType::F32))
      .in(chiprt::Tensor::make(b, {n}, chiprt::DataType::F32))
      .output_existing(chiprt::Tensor::make(c, {n}, chiprt::DataType::F32));
  const chiprt::RunReport report = worker.run(0, args);  // throws chiprt::Error on failure
  worker.copy_from(host_c.data(), c, bytes);

  uint64_t wrong = 0;
  for (uint64_t i = 0; i < n; ++i) wrong += host_c[i] != (host_a[i] + host_b[i]) + host_b[i];
  std::printf("%s standalone: %llu tasks, %llu wrong elements\n", wrong == 0 ? "PASS" : "FAIL",
              static_cast<unsigned long long>(report.task_count),
              static_cast<unsigned long long>(wrong));
  return wrong == 0 ? 0 : 1;
}
