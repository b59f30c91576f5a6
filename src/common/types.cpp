#include "chiprt/types.h"

namespace chiprt {
namespace {

struct DTypeInfo {
  std::string_view name;
  std::size_t size;
};

constexpr DTypeInfo kDTypes[kDataTypeCount] = {
    {"f32", 4}, {"f16", 2}, {"bf16", 2}, {"f64", 8}, {"i8", 1},  {"i16", 2},  {"i32", 4},
    {"i64", 8}, {"u8", 1},  {"u16", 2},  {"u32", 4}, {"u64", 8}, {"bool", 1},
};

}  // namespace

std::size_t element_size(DataType dtype) noexcept {
  const auto i = static_cast<std::size_t>(dtype);
  return i < std::size(kDTypes) ? kDTypes[i].size : 0;
}

std::string_view dtype_name(DataType dtype) noexcept {
  const auto i = static_cast<std::size_t>(dtype);
  return i < std::size(kDTypes) ? kDTypes[i].name : "invalid";
}

bool parse_dtype(std::string_view name, DataType* out) noexcept {
  for (std::size_t i = 0; i < std::size(kDTypes); ++i) {
    if (kDTypes[i].name == name) {
      *out = static_cast<DataType>(i);
      return true;
    }
  }
  return false;
}

std::string_view core_type_name(CoreType type) noexcept {
  switch (type) {
    case CoreType::AIC:
      return "aic";
    case CoreType::AIV:
      return "aiv";
    case CoreType::MIX:
      return "mix";
  }
  return "invalid";
}

}  // namespace chiprt
