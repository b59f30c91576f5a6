#include "chiprt/run_report.h"

namespace chiprt {

std::string_view phase_name(Phase phase) noexcept {
  switch (phase) {
    case Phase::RunWall:
      return "run_wall";
    case Phase::Preamble:
      return "preamble";
    case Phase::Load:
      return "load";
    case Phase::GraphBuild:
      return "graph_build";
    case Phase::Orchestration:
      return "orchestration";
    case Phase::Scheduling:
      return "scheduling";
    case Phase::PostOrchestration:
      return "post_orchestration";
  }
  return "invalid";
}

}  // namespace chiprt
