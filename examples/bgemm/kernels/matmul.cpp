// product = a * b for one tile (AIC). Args: a, b, product (contiguous); scalars tile, lda, ldb
// (row strides of a and b in elements).
#include <cstdint>

#include "chiprt/kernel.h"

extern "C" __attribute__((visibility("default"))) void kernel_entry(int64_t* args) {
  using chiprt::kernel::scalar_arg;
  using chiprt::kernel::tensor_arg;
  const float* a = tensor_arg<const float>(args, 0);
  const float* b = tensor_arg<const float>(args, 1);
  float* product = tensor_arg<float>(args, 2);
  const int64_t tile = scalar_arg<int64_t>(args, 3);
  const int64_t lda = scalar_arg<int64_t>(args, 4);
  const int64_t ldb = scalar_arg<int64_t>(args, 5);
  for (int64_t r = 0; r < tile; ++r) {
    for (int64_t c = 0; c < tile; ++c) {
      float sum = 0.0f;
      for (int64_t x = 0; x < tile; ++x) sum += a[r * lda + x] * b[x * ldb + c];
      product[r * tile + c] = sum;
    }
  }
}
