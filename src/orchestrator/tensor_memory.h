// TensorMemory: the device bytes host_build_graph's get_tensor_data / set_tensor_data read and
// write, injected into HostGraphBuilder (as RingDriver is into RingOrchestrator) so that host code
// never dereferences a device address: DeviceRunner implements it over its platform's copies.
//
// Calls come from the thread running the orchestration function, one at a time; an implementation
// must outlive the builders it is given to.
#pragma once

#include <cstdint>

#include "chiprt/status.h"

namespace chiprt::orchestrator {

class TensorMemory {
 public:
  virtual ~TensorMemory() = default;
  // Copies `bytes` device bytes at `device_addr` into `dst`.
  virtual Status read(uint64_t device_addr, void* dst, uint64_t bytes) = 0;
  // Copies `bytes` from `src` to the device bytes at `device_addr`.
  virtual Status write(uint64_t device_addr, const void* src, uint64_t bytes) = 0;
};

}  // namespace chiprt::orchestrator
