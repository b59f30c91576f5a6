// y[i] += alpha * t[i].
#include <cstdint>

#include "chiprt/kernel.h"

extern "C" __attribute__((visibility("default"))) void kernel_entry(int64_t* args) {
  namespace kernel = chiprt::kernel;
  const float* t = kernel::tensor_arg<const float>(args, 0);
  float* y = kernel::tensor_arg<float>(args, 1);
  const int64_t n = kernel::scalar_arg<int64_t>(args, 2);
  const float alpha = kernel::scalar_arg<float>(args, 3);
  for (int64_t i = 0; i < n; ++i) y[i] += alpha * t[i];
}
