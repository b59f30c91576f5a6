// Block softmax statistics for one KV block (AIV): per query row, block_max = max of the scores,
// probs = exp(scores - block_max), block_sum = sum of probs. Args: scores [q_rows, len], probs
// [q_rows, len], block_max [q_rows], block_sum [q_rows]; scalars q_rows, len.
#include <cmath>
#include <cstdint>

#include "chiprt/kernel.h"

extern "C" __attribute__((visibility("default"))) void paged_attention_softmax(int64_t* args) {
  using chiprt::kernel::scalar_arg;
  using chiprt::kernel::tensor_arg;
  const float* scores = tensor_arg<const float>(args, 0);
  float* probs = tensor_arg<float>(args, 1);
  float* block_max = tensor_arg<float>(args, 2);
  float* block_sum = tensor_arg<float>(args, 3);
  const int64_t q_rows = scalar_arg<int64_t>(args, 4);
  const int64_t len = scalar_arg<int64_t>(args, 5);
  for (int64_t r = 0; r < q_rows; ++r) {
    const float* row = scores + r * len;
    float max = row[0];
    for (int64_t j = 1; j < len; ++j) max = std::fmax(max, row[j]);
    float sum = 0.0f;
    for (int64_t j = 0; j < len; ++j) {
      const float p = std::exp(row[j] - max);
      probs[r * len + j] = p;
      sum += p;
    }
    block_max[r] = max;
    block_sum[r] = sum;
  }
}
