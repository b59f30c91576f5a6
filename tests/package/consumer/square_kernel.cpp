// t[i] = x[i] * x[i]; each SPMD block takes its share of the n elements.
#include <cstdint>

#include "chiprt/kernel.h"

extern "C" __attribute__((visibility("default"))) void kernel_entry(int64_t* args) {
  namespace kernel = chiprt::kernel;
  const float* x = kernel::tensor_arg<const float>(args, 0);
  float* t = kernel::tensor_arg<float>(args, 1);
  const int64_t n = kernel::scalar_arg<int64_t>(args, 2);
  const int64_t blocks = kernel::block_num(args);
  const int64_t block = kernel::block_idx(args);
  const int64_t per_block = (n + blocks - 1) / blocks;
  const int64_t end = (block + 1) * per_block < n ? (block + 1) * per_block : n;
  for (int64_t i = block * per_block; i < end; ++i) t[i] = x[i] * x[i];
}
