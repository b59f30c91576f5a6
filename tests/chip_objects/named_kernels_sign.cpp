// Part of the named-kernels test object (see named_kernels_arith.cpp): x = -x in place, and the
// default symbol.
#include <chiprt/kernel.h>

#include <cstdint>

extern "C" __attribute__((visibility("default"))) void named_negate(int64_t* args) {
  const chiprt::kernel::TensorView& x = chiprt::kernel::view(args, 0);
  float* data = chiprt::kernel::tensor_arg<float>(args, 0);
  for (uint64_t i = 0; i < x.numel(); ++i) data[i] = -data[i];
}

// The default symbol too: x = x + 10 (an object may export kernel_entry beside named kernels).
extern "C" __attribute__((visibility("default"))) void kernel_entry(int64_t* args) {
  const chiprt::kernel::TensorView& x = chiprt::kernel::view(args, 0);
  float* data = chiprt::kernel::tensor_arg<float>(args, 0);
  for (uint64_t i = 0; i < x.numel(); ++i) data[i] += 10;
}
