// An AIV kernel, exported as vector_add: out[i] = a[i] + b[i]. Args: tensors a, b, out; scalar n.
#include <chiprt/kernel.h>

extern "C" __attribute__((visibility("default"))) void vector_add(int64_t* args) {
  using namespace chiprt::kernel;
  const float* a = tensor_arg<const float>(args, 0);
  const float* b = tensor_arg<const float>(args, 1);
  float* out = tensor_arg<float>(args, 2);
  const auto n = scalar_arg<uint64_t>(args, 3);
  for (uint64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}
