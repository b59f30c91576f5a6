// partial = probs v for one KV block of one head (AIC). Args: probs [q_rows, len],
// v [len, head_dim], partial [q_rows, head_dim] (all contiguous); scalars q_rows, head_dim, len.
#include <cstdint>

#include "chiprt/kernel.h"

extern "C" __attribute__((visibility("default"))) void paged_attention_pv(int64_t* args) {
  using chiprt::kernel::scalar_arg;
  using chiprt::kernel::tensor_arg;
  const float* probs = tensor_arg<const float>(args, 0);
  const float* v = tensor_arg<const float>(args, 1);
  float* partial = tensor_arg<float>(args, 2);
  const int64_t q_rows = scalar_arg<int64_t>(args, 3);
  const int64_t head_dim = scalar_arg<int64_t>(args, 4);
  const int64_t len = scalar_arg<int64_t>(args, 5);
  for (int64_t r = 0; r < q_rows; ++r) {
    float* out = partial + r * head_dim;
    for (int64_t x = 0; x < head_dim; ++x) out[x] = 0.0f;
    for (int64_t j = 0; j < len; ++j) {
      const float p = probs[r * len + j];
      for (int64_t x = 0; x < head_dim; ++x) out[x] += p * v[j * head_dim + x];
    }
  }
}
