// Kernel side: what code running on a compute core sees of its task.
//
// A kernel is a function `void(int64_t* args)`, exported from a kernel shared object as
// `extern "C" kernel_entry` (or handed to CallableBuilder::kernel_function in process). `args`
// holds the task's tensor arguments as device data addresses (in argument order, the predicate
// excluded), then its scalars as 64-bit patterns, then the block context: the block index and the
// block count of an SPMD task (TaskSpec::block_num). The helpers below read that array with the
// right types. On the simulated chip device addresses are host addresses, so a kernel (and only
// code that runs where a kernel runs, such as an executor of an exported graph) dereferences
// them; host code never does.
//
// Lifetime and threading: `args` and the memory it points to are valid for the duration of the
// call; the kernel runs on one core (one thread) and may not call the Worker (ReentrantCall).
// The helpers are stateless, header-only and include nothing but <cstdint>, so a kernel object
// links nothing of the host.
#pragma once

#include <cstdint>

namespace chiprt {

// Entry point of a kernel; the symbol a kernel shared object must export is `kernel_entry`.
using KernelEntry = void (*)(int64_t* args);
inline constexpr char kKernelSymbol[] = "kernel_entry";

}  // namespace chiprt

namespace chiprt::kernel {

// The index-th argument as a pointer to T (a tensor argument: its data address).
template <class T>
inline T* tensor_arg(int64_t* args, int index) {
  return reinterpret_cast<T*>(static_cast<uintptr_t>(args[index]));
}
// The index-th argument as a scalar of type T (at most 8 bytes, bit-cast as TaskArgs::scalar
// stored it).
template <class T>
inline T scalar_arg(int64_t* args, int index) {
  T value;
  static_assert(sizeof(T) <= 8);
  __builtin_memcpy(&value, &args[index], sizeof(T));
  return value;
}
// The block context follows the task's tensors and scalars (`arg_count` of them).
inline uint32_t block_idx(const int64_t* args, int arg_count) {
  return static_cast<uint32_t>(args[arg_count]);
}
inline uint32_t block_num(const int64_t* args, int arg_count) {
  return static_cast<uint32_t>(args[arg_count + 1]);
}

// The predicate test of a predicated task (TaskArgs::when): the first `bytes` (1, 2, 4 or 8) at
// device address `addr`, read as one unsigned integer, are not zero. The chip's dispatcher applies
// it when the task is dispatched, after its producers completed, and skips the kernel when it
// fails (zero-filling the task's runtime outputs); an executor of an exported graph
// (ExportedTask::predicate_addr / predicate_bytes, skip_fill_addr / skip_fill_bytes) applies the
// same test and fill to run the graph as the chip would.
inline bool predicate_holds(uint64_t addr, uint32_t bytes) noexcept {
  const auto* p = reinterpret_cast<const uint8_t*>(static_cast<uintptr_t>(addr));
  switch (bytes) {
    case 1:
      return *p != 0;
    case 2:
      return *reinterpret_cast<const uint16_t*>(p) != 0;
    case 4:
      return *reinterpret_cast<const uint32_t*>(p) != 0;
    default:
      return *reinterpret_cast<const uint64_t*>(p) != 0;
  }
}

}  // namespace chiprt::kernel
