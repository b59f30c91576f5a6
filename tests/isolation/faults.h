// The faults of the isolation suite, raised on purpose by a kernel (or an orchestration function):
// one definition shared by the suite's in-process kernels and its chip object
// (chip_objects/fault_kernel.cpp), so both crash in exactly the same way.
//
// raise_fault never returns for a real fault. The functions are not instrumented by UBSan: the
// null dereference and the division by zero must reach the CPU as the signals under test, not as
// sanitizer reports. Header-only; depends on libc and chiprt/kernel.h only, so a chip object may
// include it.
#pragma once

#include <csignal>
#include <cstdint>
#include <cstdlib>

#include "chiprt/kernel.h"

namespace chiprt::isolation_test {

enum class Fault : int64_t {
  None = 0,  // the kernel does nothing
  Segv,      // store through a null-based pointer: SIGSEGV at kSegvAddress
  Bus,       // touch a page beyond the end of a truncated memfd mapping: SIGBUS at that page
  Ill,       // __builtin_trap: SIGILL
  Fpe,       // integer division by zero through volatile operands: SIGFPE
  Abort,     // abort(): SIGABRT
  Exit,      // exit(kExitCode)
};
inline constexpr int kExitCode = 3;
// A null pointer plus a small offset: still a null dereference, but an address a message has to
// carry through to be asserted (0 would match a missing one).
inline constexpr uint64_t kSegvAddress = 0x10;

// `bus_address`: a mapped address whose page lies beyond the end of its file (Fault::Bus).
[[gnu::noinline, gnu::no_sanitize("undefined")]] inline void raise_fault(Fault fault,
                                                                         uint64_t bus_address) {
  switch (fault) {
    case Fault::None:
      return;
    case Fault::Segv: {
      volatile uintptr_t base = 0;
      *reinterpret_cast<volatile int*>(base + kSegvAddress) = 1;
      break;
    }
    case Fault::Bus:
      *reinterpret_cast<volatile int*>(static_cast<uintptr_t>(bus_address)) = 1;
      break;
    case Fault::Ill:
      __builtin_trap();
    case Fault::Fpe: {
      volatile int numerator = 1;
      volatile int denominator = 0;
      volatile int quotient = numerator / denominator;
      (void)quotient;
      break;
    }
    case Fault::Abort:
      std::abort();
    case Fault::Exit:
      std::exit(kExitCode);
  }
}

// A fault kernel. Its tensor arguments, if any, come first and are not used; then the scalars
// [fault, block to fault in (-1: every block), bus address].
inline constexpr int kFaultScalars = 3;
inline void fault_kernel(int64_t* args) {
  const int first = kernel::tensor_count(args);
  const auto block = kernel::scalar_arg<int64_t>(args, first + 1);
  if (block >= 0 && static_cast<uint32_t>(block) != kernel::block_idx(args)) return;
  raise_fault(static_cast<Fault>(kernel::scalar_arg<int64_t>(args, first)),
              kernel::scalar_arg<uint64_t>(args, first + 2));
}

}  // namespace chiprt::isolation_test
