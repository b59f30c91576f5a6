#include "common/run_context.h"

namespace chiprt::common {

std::string describe(const RunContext& context) {
  switch (context.role) {
    case RunRole::None:
      return "outside any run";
    case RunRole::AicpuThread:
      return "AICPU thread " + std::to_string(context.unit) + " of the chip";
    case RunRole::CoreExecutor:
      return "core executor thread " + std::to_string(context.unit) + " of the chip";
    case RunRole::HostOrchestration:
      return "the orchestration function of a host_build_graph run (on the host thread running "
             "it)";
    case RunRole::ChipOrchestration:
      return "the orchestration function of a tensormap_ringbuffer run (on the chip's AICPU "
             "thread 0)";
    case RunRole::Kernel:
      return "kernel func_id " + std::to_string(context.func_id) + " (task " +
             std::to_string(context.task) + " on core " + std::to_string(context.unit) + ")";
  }
  return "an unknown part of a run";
}

}  // namespace chiprt::common
