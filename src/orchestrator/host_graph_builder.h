// HostGraphBuilder: the host_build_graph orchestrator.
//
// Runs the user's orchestration function on the host, deriving dependencies from tensor regions
// (TensorMap) plus explicit ones, allocating runtime outputs from the output heap region (only
// addresses are computed; the heap memory is never touched), and finally lays the graph out as a
// position-independent image (common/graph_image.h). One builder per run, used by one thread.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "chiprt/callable.h"
#include "chiprt/orchestration.h"
#include "chiprt/task_args.h"
#include "chiprt/types.h"

namespace chiprt::orchestrator {

// What the builder knows about each func_id of the active callable (for validation at submit).
struct KernelInfo {
  bool present = false;
  CoreType core = CoreType::AIC;
  ArgSignature signature;
};
using KernelTable = std::array<KernelInfo, kMaxFuncId>;

struct BuilderLimits {
  uint64_t max_tasks = 1ull << 20;
  uint32_t clusters = 8;
};

class HostGraphBuilder final : public Orchestration {
 public:
  // `heap` is the device region runtime outputs are carved from (64-byte aligned pieces).
  HostGraphBuilder(const KernelTable& kernels, DeviceBuffer heap, const BuilderLimits& limits);
  ~HostGraphBuilder() override;

  // Runs `entry(*this, args)` and closes the graph. Throws chiprt::Error (the user's own
  // exceptions are wrapped as OrchestrationFailed); scopes left open are an error.
  void build(OrchestrationEntry entry, const TaskArgs& args);

  // The finished image; valid after build().
  const std::vector<uint8_t>& image() const noexcept { return image_; }
  uint64_t heap_high_water() const noexcept;  // bytes of the heap ever in use

  // Orchestration
  TaskId submit(int32_t func_id, CoreType core, TaskArgs& args) override;
  TaskId submit_dummy(TaskArgs& args) override;
  void scope_begin() override;
  void scope_end() override;
  uint64_t task_count() const override;
  uint32_t cluster_count() const override { return limits_.clusters; }

 private:
  struct State;
  const KernelTable& kernels_;
  BuilderLimits limits_;
  std::vector<uint8_t> image_;
  std::unique_ptr<State> state_;  // pimpl keeps the tensor map out of this header
};

}  // namespace chiprt::orchestrator
