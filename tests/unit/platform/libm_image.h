// A real shared object for the object-loading tests: the bytes of the libm this process runs with
// (found through the address of cos, so no path is assumed). Empty when it cannot be read.
#pragma once

#include <dlfcn.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <vector>

namespace chiprt::platform {

inline std::vector<uint8_t> libm_image() {
  Dl_info info{};
  double (*cos_fn)(double) = &::cos;
  if (dladdr(reinterpret_cast<void*>(cos_fn), &info) == 0 || info.dli_fname == nullptr) return {};
  std::ifstream file(info.dli_fname, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(file), {});
}

}  // namespace chiprt::platform
