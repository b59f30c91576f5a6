// NodeGraph: the graph a node's orchestration function submits, before and while the node runs
// it: chip runs (a registered callable on a chip, with its TaskArgs over node buffers) and host
// tasks (a host function over host copies of its regions). Dependencies come from the tensor
// regions tasks touch by exactly the chip's rule (orchestrator/task_dependencies.h: read after
// write, write after write, write after read; NoDep opts out, after() names producers), over node
// addresses, which no two buffers share.
//
// Placement happens at submission, so it is deterministic: a chip run placed on any_chip goes to
// the chip that will then hold most of its input bytes (a projection of where each region's last
// submitted writer leaves it, starting from the buffers' homes), ties to the chip with the fewest
// chip runs placed so far, then the lowest index.
//
// Beyond the chip's rule, writers at different locations whose byte extents meet are ordered even
// when their elements do not (interleaved strided views, no_dep): the node keeps its copies
// coherent per byte range.
//
// Lifetime: one per node run; tasks are only added. Threading: the orchestrating thread only.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include "chiprt/task_args.h"
#include "node/coherence.h"
#include "node/node_memory.h"
#include "orchestrator/task_dependencies.h"

namespace chiprt::node {

struct Placement {
  enum class Kind : uint8_t { Chip, AnyChip };
  Kind kind = Kind::AnyChip;
  uint32_t chip = 0;  // Kind::Chip
};

// One region a task uses: bytes [lo, hi) of the node buffer at `buffer`.
struct RegionUse {
  uint64_t buffer = 0;
  uint64_t lo = 0;
  uint64_t hi = 0;
  Coherence::Access access = Coherence::Access::Read;
  ArgTag tag = ArgTag::In;  // the argument's
  bool dense = true;        // the view covers every byte of [lo, hi)
  bool operator==(const RegionUse&) const = default;
};

struct NodeTask {
  enum class Kind : uint8_t { ChipRun, HostTask };
  Kind kind = Kind::ChipRun;
  int32_t callable_id = -1;  // a chip run's
  TaskArgs args;             // over node addresses
  Location location = 0;     // the chip it runs on, or kHostLocation
  bool placed_by_data = false;
  std::vector<RegionUse> uses;      // per tensor argument, in order
  std::vector<uint32_t> producers;  // ascending, each once
  std::vector<uint32_t> consumers;  // ascending
};

class NodeGraph {
 public:
  // `chips_with(callable_id)`: a mask of the chips that have the callable registered (bit k:
  // chip k); none given: every chip has every callable.
  using ChipsWith = std::function<uint32_t(int32_t callable_id)>;
  NodeGraph(uint32_t chips, const NodeMemory& memory, ChipsWith chips_with = {});

  // Adds a chip run / host task and returns its id (0, 1, ...). Refused, naming the task and the
  // argument: a tensor whose buffer is not a live node buffer (InvalidDevicePointer), a view
  // outside its buffer (ViewOutOfBounds), a runtime output (Out: InvalidArgument; node runs take
  // buffers from Node::malloc), a predicate (UnsupportedFeature), an after() id not yet submitted
  // (InvalidTask), a chip that does not exist (InvalidArgument), a callable registered on no chip,
  // or not on the chip named (UnknownCallable). any_chip() picks among the chips that have it.
  uint32_t add_chip_run(int32_t callable_id, const TaskArgs& args, Placement placement);
  uint32_t add_host_task(const TaskArgs& args);

  uint32_t size() const noexcept { return static_cast<uint32_t>(tasks_.size()); }
  uint32_t chips() const noexcept { return chips_; }
  const NodeTask& task(uint32_t id) const { return tasks_.at(id); }
  // Chip runs placed on `chip` so far.
  uint32_t chip_runs_on(uint32_t chip) const { return placed_.at(chip); }

 private:
  uint32_t add(NodeTask task, Placement placement);
  // Checks the task's arguments and fills its uses (the name is "node task N").
  void describe_uses(NodeTask& task, uint32_t id);
  uint32_t choose_chip(const NodeTask& task, uint32_t eligible) const;
  // The chips that have `callable_id` (cached per graph).
  uint32_t eligible_chips(int32_t callable_id);
  // The projection: where each byte's last submitted writer leaves it.
  void project(const NodeTask& task);
  // Orders the task after every earlier writer at another location whose byte extent meets one it
  // writes, also when their elements do not meet (interleaved strided views, no_dep): coherence is
  // per byte range, and two locations must not each own interleaved bytes of one extent.
  void order_interleaved_writes(const NodeTask& task, uint32_t id);

  const uint32_t chips_;
  const NodeMemory& memory_;
  ChipsWith chips_with_;
  std::map<int32_t, uint32_t> eligible_;
  std::vector<NodeTask> tasks_;
  std::vector<uint32_t> placed_;
  orchestrator::TaskDependencies deps_;
  orchestrator::ProducerKinds producers_;
  Coherence projection_;
  struct WriteExtent {
    uint64_t lo, hi;
    uint32_t task;
    Location location;
  };
  // By buffer, then by the writer's location (a task scans only the other locations' writers).
  std::map<uint64_t, std::array<std::vector<WriteExtent>, kLocations>> writes_;
};

}  // namespace chiprt::node
