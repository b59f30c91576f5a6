// Final normalisation of one head (AIV): out = acc / running_sum per query row. Args: acc
// [q_rows, head_dim], running_sum [q_rows], out [q_rows, head_dim] (contiguous rows of the
// output tensor); scalars q_rows, head_dim.
#include <cstdint>

#include "chiprt/kernel.h"

extern "C" __attribute__((visibility("default"))) void paged_attention_normalize(int64_t* args) {
  using chiprt::kernel::scalar_arg;
  using chiprt::kernel::tensor_arg;
  const float* acc = tensor_arg<const float>(args, 0);
  const float* running_sum = tensor_arg<const float>(args, 1);
  float* out = tensor_arg<float>(args, 2);
  const int64_t q_rows = scalar_arg<int64_t>(args, 3);
  const int64_t head_dim = scalar_arg<int64_t>(args, 4);
  for (int64_t r = 0; r < q_rows; ++r) {
    const float inv_sum = 1.0f / running_sum[r];
    for (int64_t x = 0; x < head_dim; ++x) out[r * head_dim + x] = acc[r * head_dim + x] * inv_sum;
  }
}
