#include "chiprt/types.h"

namespace chiprt {
namespace {

struct DTypeInfo {
  std::string_view name;
};

// Sizes live in element_size (types.h, inline); names here.
constexpr DTypeInfo kDTypes[kDataTypeCount] = {
    {"f32"}, {"f16"}, {"bf16"}, {"f64"}, {"i8"},  {"i16"},  {"i32"},
    {"i64"}, {"u8"},  {"u16"},  {"u32"}, {"u64"}, {"bool"},
};

}  // namespace

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
