// One wavefront tile update (see wavefront/protocol.h). Args: x, left, up; scalars tile, ld.
#include <cstdint>

#include "chiprt/kernel.h"
#include "wavefront/protocol.h"

extern "C" __attribute__((visibility("default"))) void kernel_entry(int64_t* args) {
  using chiprt::kernel::scalar_arg;
  using chiprt::kernel::tensor_arg;
  namespace proto = chiprt::examples::wavefront;
  float* x = tensor_arg<float>(args, 0);
  const float* left = tensor_arg<const float>(args, 1);
  const float* up = tensor_arg<const float>(args, 2);
  const int64_t tile = scalar_arg<int64_t>(args, 3);
  const int64_t ld = scalar_arg<int64_t>(args, 4);
  for (int64_t r = 0; r < tile; ++r) {
    const float from_left = proto::kLeftWeight * left[r * ld + tile - 1];
    for (int64_t c = 0; c < tile; ++c) {
      x[r * ld + c] = x[r * ld + c] + from_left + proto::kUpWeight * up[(tile - 1) * ld + c];
    }
  }
}
