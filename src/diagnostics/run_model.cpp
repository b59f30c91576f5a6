#include "diagnostics/run_model.h"

namespace chiprt::diagnostics {

CoreSlot core_slot(const ChipShape& shape, uint32_t core) {
  if (core < shape.device_clusters) return CoreSlot{core, 0};
  const uint32_t vector_index = core - shape.device_clusters;
  return CoreSlot{vector_index / 2, 1 + vector_index % 2};
}

std::string core_label(const ChipShape& shape, uint32_t core) {
  static constexpr const char* kLaneNames[3] = {"AIC", "AIV0", "AIV1"};
  const CoreSlot slot = core_slot(shape, core);
  return std::string(kLaneNames[slot.lane]) + " c" + std::to_string(slot.cluster) + " (core " +
         std::to_string(core) + ")";
}

const KernelName* RunModel::kernel(int32_t func_id) const {
  for (const KernelName& name : kernels) {
    if (name.func_id == func_id) return &name;
  }
  return nullptr;
}

std::string RunModel::kernel_label(int32_t func_id) const {
  if (func_id < 0) return "dependency-only";
  const KernelName* name = kernel(func_id);
  const std::string func = "func " + std::to_string(func_id);
  if (name == nullptr) return func;
  const std::string& shown = name->name.empty() ? name->symbol : name->name;
  return shown.empty() ? func : shown + " (" + func + ")";
}

}  // namespace chiprt::diagnostics
