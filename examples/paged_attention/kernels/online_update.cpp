// Online softmax update (AIV): folds one KV block's partial result into the running state of a
// head. Per query row, with m the running max and mb the block max:
//   m' = max(m, mb); acc = acc * exp(m - m') + partial * exp(mb - m');
//   sum = sum * exp(m - m') + block_sum * exp(mb - m').
// The first block initialises the state (m = mb, sum = block_sum, acc = partial).
// Args: partial [q_rows, head_dim], block_max [q_rows], block_sum [q_rows], running_max [q_rows],
// running_sum [q_rows], acc [q_rows, head_dim]; scalars q_rows, head_dim, first (0 or 1).
#include <cmath>
#include <cstdint>

#include "chiprt/kernel.h"

extern "C" __attribute__((visibility("default"))) void paged_attention_online_update(
    int64_t* args) {
  using chiprt::kernel::scalar_arg;
  using chiprt::kernel::tensor_arg;
  const float* partial = tensor_arg<const float>(args, 0);
  const float* block_max = tensor_arg<const float>(args, 1);
  const float* block_sum = tensor_arg<const float>(args, 2);
  float* running_max = tensor_arg<float>(args, 3);
  float* running_sum = tensor_arg<float>(args, 4);
  float* acc = tensor_arg<float>(args, 5);
  const int64_t q_rows = scalar_arg<int64_t>(args, 6);
  const int64_t head_dim = scalar_arg<int64_t>(args, 7);
  const bool first = scalar_arg<int64_t>(args, 8) != 0;
  for (int64_t r = 0; r < q_rows; ++r) {
    float* acc_row = acc + r * head_dim;
    const float* partial_row = partial + r * head_dim;
    if (first) {
      running_max[r] = block_max[r];
      running_sum[r] = block_sum[r];
      for (int64_t x = 0; x < head_dim; ++x) acc_row[x] = partial_row[x];
      continue;
    }
    const float new_max = std::fmax(running_max[r], block_max[r]);
    const float old_scale = std::exp(running_max[r] - new_max);
    const float block_scale = std::exp(block_max[r] - new_max);
    for (int64_t x = 0; x < head_dim; ++x) {
      acc_row[x] = acc_row[x] * old_scale + partial_row[x] * block_scale;
    }
    running_sum[r] = running_sum[r] * old_scale + block_sum[r] * block_scale;
    running_max[r] = new_max;
  }
}
