// The compute-core loop: wait for a dispatch in the core's handshake cell, run the kernel,
// report completion. On the simulated chip the loop is run by a bounded pool of host threads:
// core_service runs it until the core has nothing to do and returns; the platform calls it again
// after the scheduler kicks the core.
#pragma once

#include <cstdint>

namespace chiprt::aicore {

void core_service(void* launch_args, uint32_t core);

}  // namespace chiprt::aicore
