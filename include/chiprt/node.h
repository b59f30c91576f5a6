// Node: several chips under one host, running one task graph across them.
//
// A node owns `chips` chips (1..16), each a full chip as a Worker has it, each in a device process
// of its own (a kernel that crashes takes down its chip only) unless NodeOptions::in_process runs
// them all on threads of this process (to step through in a debugger). The device processes are
// started by a fork server the node starts before any thread of its own, so that reset_chip never
// forks a process running threads.
//
// Memory. A node buffer (NodeBuffer, from Node::malloc) is a name in the node's own address space,
// never a device address: its bytes live in copies, one on each chip (or the host) that needed
// them. It has a home, a chip or the host, which holds its first copy and takes host writes
// (copy_to, memset). Before a chip run (or a host task) uses a region, the node makes it valid
// where the task runs, copying it from a chip or the host that holds it (chip to chip directly);
// the copy stays as a replica until the region is next written, and a write leaves the writer's
// copy the only valid one. A chip whose memory is full drops its least recently used replicas
// before OutOfDeviceMemory. copy_from gathers each byte from wherever it is valid.
//
// Runs. Node::run calls a node orchestration function (a host function) with a NodeOrchestration,
// through which it submits chip runs (a registered callable on a chip, with its TaskArgs over node
// buffers: on_chip(k), or any_chip() to place it by data) and host tasks (a host function over
// host copies of its regions, chiprt/host_task.h). Their dependencies come from the tensor regions
// they touch, by exactly the rule a chip applies to its tasks (read after write, write after
// write, write after read; no_dep opts out; TaskArgs::after names earlier node tasks by the ids
// submit returned). A chip run placed by data goes to the chip that will hold most of its input
// bytes, ties to the chip with the fewest chip runs so far, then the lowest index: decided at
// submission, so the same program places the same way every time. Then the node runs the graph:
// a chip run starts once its producers are done and its inputs are on its chip, with up to two
// runs in flight per chip (one executing, one prepared behind it); host tasks run on the node's
// thread. A node with one chip computes exactly what a Worker computes for the same runs.
//
// Failures. A chip run fails with its chip's error (KernelCrashed, OpExecuteTimeout, ...: naming
// Node::reset_chip(k)); a host task that throws fails with KernelFault (or its chiprt::Error).
// Every task depending on a failed one ends Cancelled, naming it; independent tasks complete; the
// regions a failed or cancelled task writes are lost (reads refused, InvalidDevicePointer naming
// why) until written again. run() throws the error of the failed task with the lowest id. A faulted
// chip refuses work (DeviceFaulted) until reset_chip(k); bytes whose only valid copy was on it
// are lost, and reading them names the fault or the reset.
//
// Lifetime: construct, init() once, then any calls, close() (also done by the destructor).
// Threading: the methods may be called from several host threads; they are serialised (a call
// waits while a run executes). Not from inside a run (a host task, an orchestration function or a
// kernel): such a call throws ReentrantCall. In a forked child an inherited Node refuses every
// call (InheritedWorker) and its destructor leaves the parent's chips alone.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "chiprt/call_config.h"
#include "chiprt/host_task.h"
#include "chiprt/run_report.h"
#include "chiprt/sim_options.h"
#include "chiprt/status.h"
#include "chiprt/task_args.h"
#include "chiprt/tensor.h"
#include "chiprt/types.h"

namespace chiprt {

namespace node {
class NodeGraph;
}  // namespace node

// The home of a node buffer on the host rather than on a chip (Node::malloc).
inline constexpr uint32_t kHostHome = 0xFFFF'FFFFu;

// A node chip's options unless told otherwise: two AICPU threads running the kernels of their
// own cores (SimCoreExecution::Aicpu), so that N chips add 2N host threads, each parked while its
// chip is idle.
inline SimOptions default_node_chip_options() {
  SimOptions sim;
  sim.aicpu_threads = 2;
  sim.core_execution = SimCoreExecution::Aicpu;
  return sim;
}

struct NodeOptions {
  uint32_t chips = 1;  // 1..16
  std::string platform = "sim";
  // The variant of chip runs whose CallConfig::runtime is Default.
  RuntimeVariant runtime = RuntimeVariant::HostBuildGraph;
  // Every chip's options, unless chip_sim gives one per chip (then exactly `chips` entries). A
  // chip's SimOptions::isolation must stay Default: the node decides (in_process).
  SimOptions sim = default_node_chip_options();
  std::vector<SimOptions> chip_sim;
  // All chips on threads of this process instead of each in a device process of its own.
  bool in_process = false;
};

// A buffer of a node: [addr, addr + size) of the node's address space. Plain data; valid until
// Node::free or the node's close. Make tensors over it (tensor(), or Tensor::make over
// tensor_buffer()) to pass it to chip runs and host tasks.
struct NodeBuffer {
  uint64_t addr = 0;
  uint64_t size = 0;
  bool empty() const noexcept { return addr == 0; }
  // The DeviceBuffer a Tensor names it by (its address is the node buffer's, not a device's).
  DeviceBuffer tensor_buffer() const noexcept { return DeviceBuffer{addr, size}; }
  Tensor tensor(std::initializer_list<uint64_t> shape, DataType dtype,
                uint64_t start_offset = 0) const {
    return Tensor::make(tensor_buffer(), shape, dtype, start_offset);
  }
  bool operator==(const NodeBuffer&) const = default;
};

// Where a chip run goes: on_chip(k), or any_chip() (placed by data at submission).
struct ChipPlacement {
  bool any = true;
  uint32_t chip = 0;
};
inline ChipPlacement on_chip(uint32_t chip) noexcept {
  return ChipPlacement{false, chip};
}
inline ChipPlacement any_chip() noexcept {
  return ChipPlacement{};
}

using HostFunction = std::function<void(const HostTask&)>;

// What a node orchestration function submits through. Valid only during that call: once it has
// returned, submit and submit_host (from a host task that kept a reference, say) throw
// InvalidArgument; the graph is closed when the node starts running it.
class NodeOrchestration {
 public:
  // A chip run of registered callable `callable_id` with `args` (tensors over node buffers; no
  // runtime outputs, no predicate). Returns its node task id, for TaskArgs::after.
  TaskId submit(int32_t callable_id, const TaskArgs& args, ChipPlacement placement = any_chip());
  // A host task: `fn` runs on a host thread of the node over host copies of `args`' regions.
  TaskId submit_host(HostFunction fn, const TaskArgs& args);
  // The chip a submitted chip run was placed on (kHostHome for a host task).
  uint32_t placement_of(TaskId task) const;
  uint32_t chips() const noexcept;

 private:
  friend class Node;
  NodeOrchestration(node::NodeGraph& graph, std::vector<HostFunction>& host_functions)
      : graph_(graph), host_functions_(host_functions) {}
  // Throws InvalidArgument once the orchestration function returned.
  void require_open(const char* what) const;
  node::NodeGraph& graph_;
  std::vector<HostFunction>& host_functions_;
  bool open_ = true;
};

using NodeOrchestrationFunction = std::function<void(NodeOrchestration&, const TaskArgs&)>;

// What one node task did.
struct NodeTaskReport {
  TaskId id = 0;
  bool host_task = false;
  int32_t callable_id = -1;   // a chip run's
  uint32_t chip = kHostHome;  // where it ran
  bool placed_by_data = false;
  uint64_t input_wait_ns = 0;  // from ready to started: its inputs copied to its chip
  RunReport run;               // a chip run's own report
};

struct NodeRunReport {
  std::vector<NodeTaskReport> tasks;  // by id
  uint64_t copies = 0;                // between chips and the host, made for this run
  uint64_t copy_bytes = 0;
  uint64_t evictions = 0;  // replicas dropped to make room
  uint64_t wall_ns = 0;
};

class Node {
 public:
  Node();
  ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // Starts the fork server (unless in process) and opens every chip (devices start on first use).
  // InvalidConfig for options out of range, naming the field.
  void init(const NodeOptions& options = {});
  bool initialized() const noexcept;
  uint32_t chips() const;

  // Registers a callable on every chip, or on the chips named: on all of them, or (when one
  // refuses: a taken id, a bad container, a chip that does not exist) on none.
  void register_callable(int32_t callable_id, std::span<const uint8_t> container);
  void register_callable(int32_t callable_id, std::span<const uint8_t> container,
                         std::span<const uint32_t> chips);
  bool has_callable(int32_t callable_id, uint32_t chip) const;

  // A node buffer of `bytes`, homed on chip `home` or on the host (kHostHome).
  NodeBuffer malloc(uint64_t bytes, uint32_t home = kHostHome);
  void free(NodeBuffer buffer);
  void copy_to(NodeBuffer dst, const void* src, uint64_t bytes, uint64_t dst_offset = 0);
  void copy_from(void* dst, NodeBuffer src, uint64_t bytes, uint64_t src_offset = 0);
  void memset(NodeBuffer dst, int value, uint64_t bytes, uint64_t dst_offset = 0);

  // Runs `orchestration` (with `args`), then its graph across the chips; each chip run with
  // `config`. Returns once every task is done, or throws the first failure (see above).
  NodeRunReport run(const NodeOrchestrationFunction& orchestration, const TaskArgs& args = {},
                    const CallConfig& config = {});

  // Replaces chip k's device by a fresh one (its callables registered again); data whose only
  // valid copy was on it is lost.
  void reset_chip(uint32_t chip);
  void close();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace chiprt
