// scores = q k^T * scale for one KV block of one head (AIC). Args: q [q_rows, head_dim],
// k [len, head_dim], scores [q_rows, len] (all contiguous); scalars q_rows, head_dim, len,
// scale (f32).
#include <cstdint>

#include "chiprt/kernel.h"

extern "C" __attribute__((visibility("default"))) void paged_attention_qk(int64_t* args) {
  using chiprt::kernel::scalar_arg;
  using chiprt::kernel::tensor_arg;
  const float* q = tensor_arg<const float>(args, 0);
  const float* k = tensor_arg<const float>(args, 1);
  float* scores = tensor_arg<float>(args, 2);
  const int64_t q_rows = scalar_arg<int64_t>(args, 3);
  const int64_t head_dim = scalar_arg<int64_t>(args, 4);
  const int64_t len = scalar_arg<int64_t>(args, 5);
  const float scale = scalar_arg<float>(args, 6);
  for (int64_t r = 0; r < q_rows; ++r) {
    for (int64_t j = 0; j < len; ++j) {
      float dot = 0.0f;
      for (int64_t x = 0; x < head_dim; ++x) dot += q[r * head_dim + x] * k[j * head_dim + x];
      scores[r * len + j] = dot * scale;
    }
  }
}
