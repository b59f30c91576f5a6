// Node: the public node API (include/chiprt/node.h), a facade over the node's chips, memory,
// graph and executor: it checks its own API's arguments, serialises its calls and forwards.
#include "chiprt/node.h"

#include <unistd.h>

#include <algorithm>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "host/fork_guard.h"
#include "host/run_guard.h"
#include "node/node_chips.h"
#include "node/node_executor.h"
#include "node/node_graph.h"
#include "node/node_memory.h"

namespace chiprt {

namespace {

// The node whose run this thread is executing (its host tasks and orchestration function run
// here): a call on it from there would wait for the run it is part of.
thread_local const Node* t_running_node = nullptr;

// The hints of the Node's own refusals (the status table's speak of Worker calls).
constexpr char kReentrantHint[] =
    "call Node methods from a host thread outside node runs, chip runs and kernels; inside a node "
    "orchestration function use its NodeOrchestration (submit, submit_host)";

Error called_before_init(const char* what) {
  return Error(StatusCode::NotInitialized,
               std::string("Node::") + what + " called before init(); call Node::init first",
               "call Node::init first");
}

// The node's thread budget: busy chips' AICPU threads stay within twice the host's hardware
// threads (idle chips park theirs).
uint32_t max_active_chips(const NodeOptions& options) {
  uint32_t per_chip = options.sim.serial ? 1 : options.sim.aicpu_threads;
  for (const SimOptions& sim : options.chip_sim) {
    per_chip = std::max(per_chip, sim.serial ? 1 : sim.aicpu_threads);
  }
  const uint32_t budget = 2 * std::max(1u, std::thread::hardware_concurrency());
  return std::max(1u, budget / std::max(1u, per_chip));
}

node::Location location_of(uint32_t home) {
  return home == kHostHome ? node::kHostLocation : home;
}

}  // namespace

struct Node::Impl {
  mutable std::mutex mutex;
  bool closed = false;
  // Destroyed in reverse: the executor and memory before the chips they use.
  std::unique_ptr<node::NodeChips> chips;
  std::unique_ptr<node::NodeMemory> memory;
  std::unique_ptr<node::NodeExecutor> executor;

  // The process that created the node (host/fork_guard.h).
  const uint64_t fork_generation = host::fork_generation();
  const int creator_pid = ::getpid();
  bool inherited() const noexcept { return fork_generation != host::fork_generation(); }

  // Refuses a call in a forked child, from inside a chip's run (an orchestration function or a
  // kernel) or from inside this node's run, then takes the lock and requires init.
  std::unique_lock<std::mutex> enter(const Node* self, const char* what) const {
    host::refuse_inherited(fork_generation, creator_pid, "Node", what, "Node");
    host::refuse_inside_run("Node", what, kReentrantHint);
    refuse_own_run(self, what);
    std::unique_lock lock(mutex);
    if (closed) {
      throw Error(StatusCode::AlreadyClosed,
                  std::string("Node::") + what + " called after close(); create a new Node",
                  "create and init a new Node");
    }
    if (!chips) throw called_before_init(what);
    return lock;
  }
  // A call from this node's own run (a host task or the node orchestration function): its run
  // holds the lock the call would wait for.
  static void refuse_own_run(const Node* self, const char* what) {
    if (t_running_node == self) {
      throw Error(StatusCode::ReentrantCall,
                  std::string("Node::") + what +
                      " called from inside a run of the same node (a host task or the node "
                      "orchestration function); call it after Node::run returns",
                  kReentrantHint);
    }
  }
  // Registers on every chip named or on none: a failure unregisters what this call registered.
  void register_on(int32_t callable_id, std::span<const uint8_t> container,
                   std::span<const uint32_t> on) {
    for (uint32_t k : on) chips->chip(k);  // every chip exists before any registers
    std::vector<uint32_t> done;
    try {
      for (uint32_t k : on) {
        chips->register_callable(k, callable_id, container);
        done.push_back(k);
      }
    } catch (const Error& e) {
      for (uint32_t k : done) chips->unregister_callable(k, callable_id);
      throw Error(
          e.code(),
          "Node::register_callable: " + e.message() + " (nothing was registered on any chip)",
          std::string(e.hint()));
    }
  }
  // [offset, offset + bytes) inside `buffer`.
  static uint64_t checked_address(const char* what, const NodeBuffer& buffer, uint64_t offset,
                                  uint64_t bytes) {
    if (buffer.empty()) {
      throw Error(StatusCode::InvalidDevicePointer,
                  std::string("Node::") + what + ": the NodeBuffer is empty (address 0)");
    }
    if (offset > buffer.size || bytes > buffer.size - offset) {
      throw Error(StatusCode::InvalidArgument,
                  std::string("Node::") + what + ": offset " + std::to_string(offset) + " + " +
                      std::to_string(bytes) + " bytes exceeds the buffer size " +
                      std::to_string(buffer.size));
    }
    return buffer.addr + offset;
  }
};

Node::Node() : impl_(std::make_unique<Impl>()) {}

Node::~Node() {
  if (impl_->inherited()) {
    // A forked child's copy of the parent's node: its threads and devices are the parent's.
    // Nothing is closed or freed; the copy's memory goes with this process.
    (void)impl_.release();
    return;
  }
  try {
    close();
  } catch (const Error&) {
    // close() reports through the chips' own logging; a destructor does not throw.
  }
}

void Node::init(const NodeOptions& options) {
  host::refuse_inherited(impl_->fork_generation, impl_->creator_pid, "Node", "init", "Node");
  host::refuse_inside_run("Node", "init", kReentrantHint);
  impl_->refuse_own_run(this, "init");
  std::lock_guard lock(impl_->mutex);
  if (impl_->closed) {
    throw Error(StatusCode::AlreadyClosed, "Node::init called after close(); create a new Node",
                "create and init a new Node");
  }
  if (impl_->chips) {
    throw Error(StatusCode::InvalidArgument, "Node::init called twice; a Node is initialised once");
  }
  auto chips = std::make_unique<node::NodeChips>(options);
  auto memory = std::make_unique<node::NodeMemory>(*chips);
  impl_->executor =
      std::make_unique<node::NodeExecutor>(*chips, *memory, max_active_chips(options));
  impl_->memory = std::move(memory);
  impl_->chips = std::move(chips);
}

bool Node::initialized() const noexcept {
  if (impl_->inherited()) return false;
  if (t_running_node == this) return true;  // its run holds the lock
  std::lock_guard lock(impl_->mutex);
  return impl_->chips != nullptr && !impl_->closed;
}

uint32_t Node::chips() const {
  const auto lock = impl_->enter(this, "chips");
  return impl_->chips->count();
}

void Node::register_callable(int32_t callable_id, std::span<const uint8_t> container) {
  const auto lock = impl_->enter(this, "register_callable");
  std::vector<uint32_t> all(impl_->chips->count());
  for (uint32_t k = 0; k < all.size(); ++k) all[k] = k;
  impl_->register_on(callable_id, container, all);
}

void Node::register_callable(int32_t callable_id, std::span<const uint8_t> container,
                             std::span<const uint32_t> chips) {
  const auto lock = impl_->enter(this, "register_callable");
  impl_->register_on(callable_id, container, chips);
}

bool Node::has_callable(int32_t callable_id, uint32_t chip) const {
  const auto lock = impl_->enter(this, "has_callable");
  return impl_->chips->has_callable(chip, callable_id);
}

NodeBuffer Node::malloc(uint64_t bytes, uint32_t home) {
  const auto lock = impl_->enter(this, "malloc");
  const node::NodeAllocation a = impl_->memory->allocate(bytes, location_of(home));
  return NodeBuffer{a.addr, a.size};
}

void Node::free(NodeBuffer buffer) {
  const auto lock = impl_->enter(this, "free");
  if (buffer.empty()) {
    throw Error(StatusCode::InvalidDevicePointer,
                "Node::free: the NodeBuffer is empty (address 0)");
  }
  impl_->memory->free(buffer.addr);
}

void Node::copy_to(NodeBuffer dst, const void* src, uint64_t bytes, uint64_t dst_offset) {
  const auto lock = impl_->enter(this, "copy_to");
  impl_->memory->copy_to(Impl::checked_address("copy_to", dst, dst_offset, bytes), src, bytes);
}

void Node::copy_from(void* dst, NodeBuffer src, uint64_t bytes, uint64_t src_offset) {
  const auto lock = impl_->enter(this, "copy_from");
  impl_->memory->copy_from(dst, Impl::checked_address("copy_from", src, src_offset, bytes), bytes);
}

void Node::memset(NodeBuffer dst, int value, uint64_t bytes, uint64_t dst_offset) {
  const auto lock = impl_->enter(this, "memset");
  impl_->memory->memset(Impl::checked_address("memset", dst, dst_offset, bytes), value, bytes);
}

NodeRunReport Node::run(const NodeOrchestrationFunction& orchestration, const TaskArgs& args,
                        const CallConfig& config) {
  const auto lock = impl_->enter(this, "run");
  if (!orchestration) {
    throw Error(StatusCode::InvalidArgument, "Node::run: the orchestration function is empty");
  }
  node::NodeChips& chips = *impl_->chips;
  node::NodeGraph graph(chips.count(), *impl_->memory, [&chips](int32_t callable_id) {
    uint32_t mask = 0;
    for (uint32_t k = 0; k < chips.count(); ++k) {
      if (chips.has_callable(k, callable_id)) mask |= 1u << k;
    }
    return mask;
  });
  std::vector<HostFunction> host_functions;
  node::NodeRunResult result;
  {
    // A host task of another node's run may run this one: that node is current again after.
    struct Enter {
      explicit Enter(const Node* node) : previous(t_running_node) { t_running_node = node; }
      ~Enter() { t_running_node = previous; }
      const Node* previous;
    } enter(this);
    NodeOrchestration orch(graph, host_functions);
    try {
      orchestration(orch, args);
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      throw Error(StatusCode::OrchestrationFailed,
                  std::string("the node orchestration function threw: ") + e.what());
    }
    orch.open_ = false;  // a host task that kept it must not grow the graph being run
    host_functions.resize(graph.size());
    result = impl_->executor->execute(graph, host_functions, config);
  }
  if (result.error) throw *result.error;
  NodeRunReport report;
  report.copies = result.traffic.copies;
  report.copy_bytes = result.traffic.bytes;
  report.evictions = result.traffic.evictions;
  report.wall_ns = result.wall_ns;
  for (uint32_t id = 0; id < graph.size(); ++id) {
    const node::NodeTask& task = graph.task(id);
    NodeTaskReport t;
    t.id = id;
    t.host_task = task.kind == node::NodeTask::Kind::HostTask;
    t.callable_id = task.callable_id;
    t.chip = task.location == node::kHostLocation ? kHostHome : task.location;
    t.placed_by_data = task.placed_by_data;
    t.input_wait_ns = result.tasks[id].wait_ns;
    t.run = std::move(result.tasks[id].report);
    report.tasks.push_back(std::move(t));
  }
  return report;
}

void Node::reset_chip(uint32_t chip) {
  const auto lock = impl_->enter(this, "reset_chip");
  impl_->chips->chip(chip);  // exists
  // First: the device's memory is gone whether or not the fresh device starts.
  impl_->memory->chip_reset(chip, "chip " + std::to_string(chip) + " was reset (Node::reset_chip(" +
                                      std::to_string(chip) + "))");
  impl_->chips->reset_chip(chip);
}

void Node::close() {
  host::refuse_inherited(impl_->fork_generation, impl_->creator_pid, "Node", "close", "Node");
  host::refuse_inside_run("Node", "close", kReentrantHint);
  impl_->refuse_own_run(this, "close");
  std::lock_guard lock(impl_->mutex);
  if (impl_->closed) return;
  impl_->closed = true;
  impl_->executor.reset();
  impl_->memory.reset();
  if (impl_->chips) impl_->chips->close();
  impl_->chips.reset();
}

void NodeOrchestration::require_open(const char* what) const {
  if (!open_) {
    throw Error(StatusCode::InvalidArgument,
                std::string("NodeOrchestration::") + what +
                    " called after the node orchestration function returned; submit every task "
                    "from inside it (a host task cannot add tasks to the run it is part of)");
  }
}

TaskId NodeOrchestration::submit(int32_t callable_id, const TaskArgs& args,
                                 ChipPlacement placement) {
  require_open("submit");
  const node::Placement p{
      placement.any ? node::Placement::Kind::AnyChip : node::Placement::Kind::Chip, placement.chip};
  return graph_.add_chip_run(callable_id, args, p);
}

TaskId NodeOrchestration::submit_host(HostFunction fn, const TaskArgs& args) {
  require_open("submit_host");
  if (!fn) {
    throw Error(StatusCode::InvalidArgument,
                "NodeOrchestration::submit_host: the host function is empty");
  }
  const uint32_t id = graph_.add_host_task(args);
  host_functions_.resize(id + 1);
  host_functions_[id] = std::move(fn);
  return id;
}

uint32_t NodeOrchestration::placement_of(TaskId task) const {
  if (task < 0 || task >= static_cast<TaskId>(graph_.size())) {
    throw Error(StatusCode::InvalidTask, "NodeOrchestration::placement_of: node task " +
                                             std::to_string(task) + " was not submitted");
  }
  const node::Location at = graph_.task(static_cast<uint32_t>(task)).location;
  return at == node::kHostLocation ? kHostHome : at;
}

uint32_t NodeOrchestration::chips() const noexcept {
  return graph_.chips();
}

}  // namespace chiprt
