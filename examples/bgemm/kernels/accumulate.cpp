// c += product for one tile (AIV). Args: product (contiguous), c; scalars tile, ldc (row stride
// of c in elements).
#include <cstdint>

#include "chiprt/kernel.h"

extern "C" __attribute__((visibility("default"))) void kernel_entry(int64_t* args) {
  using chiprt::kernel::scalar_arg;
  using chiprt::kernel::tensor_arg;
  const float* product = tensor_arg<const float>(args, 0);
  float* c = tensor_arg<float>(args, 1);
  const int64_t tile = scalar_arg<int64_t>(args, 2);
  const int64_t ldc = scalar_arg<int64_t>(args, 3);
  for (int64_t r = 0; r < tile; ++r) {
    for (int64_t col = 0; col < tile; ++col) c[r * ldc + col] += product[r * tile + col];
  }
}
