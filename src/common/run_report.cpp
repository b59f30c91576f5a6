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

std::string format_count(uint64_t count) {
  std::string digits = std::to_string(count);
  for (std::ptrdiff_t at = static_cast<std::ptrdiff_t>(digits.size()) - 3; at > 0; at -= 3) {
    digits.insert(static_cast<std::size_t>(at), 1, ',');
  }
  return digits;
}

std::string format_task_count(uint64_t kernel_tasks, uint64_t dependency_only_tasks) {
  std::string text =
      format_count(kernel_tasks) + (kernel_tasks == 1 ? " kernel task" : " kernel tasks");
  if (dependency_only_tasks > 0)
    text += " + " + format_count(dependency_only_tasks) + " dependency-only";
  return text;
}

}  // namespace chiprt
