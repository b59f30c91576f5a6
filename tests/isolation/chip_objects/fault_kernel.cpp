// The isolation suite's fault kernel as a chip object (a shared object the platform loads on the
// device), so a KernelCrashed message can name its symbol. Arguments as faults.h's fault_kernel.
#include <chiprt/kernel.h>

#include "faults.h"

extern "C" __attribute__((visibility("default"))) void kernel_entry(int64_t* args) {
  chiprt::isolation_test::fault_kernel(args);
}
