// Value types shared by host, orchestrator, scheduler and cores: data types, core shapes,
// device buffers and task ids. All are trivially copyable plain data and may live in device
// memory; none owns a resource. Functions here are pure and thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace chiprt {

enum class DataType : uint8_t {
  F32 = 0,
  F16,
  BF16,
  F64,
  I8,
  I16,
  I32,
  I64,
  U8,
  U16,
  U32,
  U64,
  Bool,
};
inline constexpr int kDataTypeCount = 13;

// Bytes per element; 0 for a value outside the enum. Inline: the orchestrator asks per tensor.
inline std::size_t element_size(DataType dtype) noexcept {
  static constexpr uint8_t kSizes[kDataTypeCount] = {4, 2, 2, 8, 1, 2, 4, 8, 1, 2, 4, 8, 1};
  const auto i = static_cast<std::size_t>(dtype);
  return i < static_cast<std::size_t>(kDataTypeCount) ? kSizes[i] : 0;
}
// Stable lower-case name ("f32", "bf16", ...); "invalid" for a value outside the enum.
std::string_view dtype_name(DataType dtype) noexcept;
// Parses a name produced by dtype_name; returns false when unknown.
bool parse_dtype(std::string_view name, DataType* out) noexcept;

// The kind of compute core a task runs on. A cluster has one AIC (cube) and two AIV (vector)
// cores. MIX (one cluster's cores together) is reserved for the full task model.
enum class CoreType : uint8_t { AIC = 0, AIV = 1, MIX = 2 };
inline constexpr int kCoreTypeCount = 3;
std::string_view core_type_name(CoreType type) noexcept;

// A region of device memory. `addr` is a device address: on the simulated chip it is also a
// host pointer, but host code must only pass it to Platform / Worker calls, never dereference it.
struct DeviceBuffer {
  uint64_t addr = 0;
  uint64_t size = 0;  // bytes
  bool empty() const noexcept { return addr == 0; }
  friend bool operator==(const DeviceBuffer&, const DeviceBuffer&) = default;
};

// Index of a task within one run, in submission order. kNoTask marks "none".
using TaskId = int64_t;
inline constexpr TaskId kNoTask = -1;

// Maximum func_id a kernel may carry (exclusive); the kernel address table has this many entries.
inline constexpr int32_t kMaxFuncId = 256;
// Callable ids are in [0, kMaxCallableIds).
inline constexpr int32_t kMaxCallableIds = 64;

}  // namespace chiprt
