// Part of the named-kernels test object: one chip object of several kernels, each exported under
// its own symbol (with named_kernels_sign.cpp). Each kernel updates its one tensor argument (f32,
// InOut) in place, element by element.
#include <chiprt/kernel.h>

#include <cstdint>

namespace {

template <class Op>
void update(int64_t* args, Op op) {
  const chiprt::kernel::TensorView& x = chiprt::kernel::view(args, 0);
  float* data = chiprt::kernel::tensor_arg<float>(args, 0);
  for (uint64_t i = 0; i < x.numel(); ++i) data[i] = op(data[i]);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) void named_double(int64_t* args) {
  update(args, [](float v) { return 2 * v; });
}

extern "C" __attribute__((visibility("default"))) void named_add_one(int64_t* args) {
  update(args, [](float v) { return v + 1; });
}
