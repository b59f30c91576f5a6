// NodeExecutor: runs one NodeGraph on a node's chips, on the calling thread (the node's scheduler
// for that run). A task whose producers are all done is ready; a ready chip run is dispatched as
// soon as its chip has room (at most host::kPipelineDepth runs in flight per chip: one executing,
// one prepared behind it): its regions are made valid on its chip (NodeMemory::acquire: device to
// device, host to chip), its arguments rewritten to the chip's copies and the run submitted to the
// chip's pipeline, whose completion wakes the scheduler. A host task runs on the scheduler thread
// over host copies of its regions. Between events the scheduler parks on a condition variable.
// At most max_active_chips chips have runs at once (the node's thread budget: an idle chip's
// threads park, a busy chip's are runnable).
//
// Failures: a chip run's error (KernelCrashed, OpExecuteTimeout, ... naming the chip) or a host
// task's exception fails that task; every task that depends on it, directly or not, ends Cancelled
// naming the failed producer and its location, unrun; independent tasks complete. The regions a
// failed or cancelled task writes are discarded (lost until written again, NodeMemory::discard),
// so no later read sees them silently stale. The run's error is the failed task's with the lowest
// id (deterministic, whatever the order they failed in).
//
// Lifetime: one per node; execute() any number of times, one at a time. Threading: execute() on
// one thread at a time; the completion callbacks come from the chips' pipeline threads.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "chiprt/call_config.h"
#include "chiprt/host_task.h"
#include "chiprt/node.h"
#include "chiprt/run_report.h"
#include "chiprt/status.h"
#include "node/node_chips.h"
#include "node/node_graph.h"
#include "node/node_memory.h"

namespace chiprt::node {

using chiprt::HostFunction;

// What became of one task of a node run.
struct NodeTaskOutcome {
  enum class State : uint8_t { Done, Failed, Cancelled };
  State state = State::Done;
  std::optional<Error> error;  // Failed, Cancelled
  RunReport report;            // a chip run that completed
  uint64_t wait_ns = 0;        // from ready to dispatched (copies in)
};

struct NodeRunResult {
  std::vector<NodeTaskOutcome> tasks;  // by task id
  std::optional<Error> error;          // the failed task with the lowest id
  NodeMemory::Traffic traffic;         // copies this run made
  uint64_t wall_ns = 0;
  uint32_t peak_active_chips = 0;  // most chips with runs in flight at once
};

class NodeExecutor {
 public:
  // `max_active_chips`: how many chips may run at once (the node's thread budget; at least 1).
  NodeExecutor(NodeChips& chips, NodeMemory& memory, uint32_t max_active_chips = kMaxChips)
      : chips_(chips), memory_(memory), max_active_chips_(max_active_chips) {}

  // Runs every task of `graph` (host task i calls host_functions[i]; chip runs with `config`) and
  // returns once all are done, failed or cancelled.
  NodeRunResult execute(const NodeGraph& graph, std::span<const HostFunction> host_functions,
                        const CallConfig& config);

 private:
  NodeChips& chips_;
  NodeMemory& memory_;
  const uint32_t max_active_chips_;
};

}  // namespace chiprt::node
