// out[i] = x[i] + value. Args: x, out; scalars n, value (f32).
#include <cstdint>

#include "chiprt/kernel.h"

extern "C" __attribute__((visibility("default"))) void kernel_entry(int64_t* args) {
  using chiprt::kernel::scalar_arg;
  using chiprt::kernel::tensor_arg;
  const float* x = tensor_arg<const float>(args, 0);
  float* out = tensor_arg<float>(args, 1);
  const int64_t n = scalar_arg<int64_t>(args, 2);
  const float value = scalar_arg<float>(args, 3);
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] + value;
}
