#include "node/node_graph.h"

#include <algorithm>
#include <string>
#include <utility>

#include "chiprt/status.h"
#include "orchestrator/task_checks.h"
#include "orchestrator/tensor_map.h"

namespace chiprt::node {

NodeGraph::NodeGraph(uint32_t chips, const NodeMemory& memory, ChipsWith chips_with)
    : chips_(chips), memory_(memory), chips_with_(std::move(chips_with)), placed_(chips, 0) {}

uint32_t NodeGraph::eligible_chips(int32_t callable_id) {
  const uint32_t all = chips_ >= 32 ? ~0u : (1u << chips_) - 1;
  if (!chips_with_) return all;
  auto it = eligible_.find(callable_id);
  if (it == eligible_.end())
    it = eligible_.emplace(callable_id, chips_with_(callable_id) & all).first;
  return it->second;
}

namespace {

std::string task_name(uint32_t id) {
  return "node task " + std::to_string(id);
}

Coherence::Access access_of(ArgTag tag) {
  // NoDep orders nothing but may be written: the chip that ran it holds the only valid copy.
  return tag == ArgTag::In ? Coherence::Access::Read : Coherence::Access::Write;
}

}  // namespace

void NodeGraph::describe_uses(NodeTask& task, uint32_t id) {
  const TaskArgs& args = task.args;
  if (args.has_predicate()) {
    throw Error(StatusCode::UnsupportedFeature,
                task_name(id) +
                    ": a node task takes no predicate (when); give it to the tasks "
                    "inside the chip run instead");
  }
  for (int i = 0; i < args.dep_count(); ++i) {
    if (args.dep(i) < 0 || args.dep(i) >= static_cast<TaskId>(id)) {
      throw Error(StatusCode::InvalidTask, task_name(id) + ": after(" +
                                               std::to_string(args.dep(i)) +
                                               ") names a node task not submitted before it");
    }
  }
  for (int i = 0; i < args.tensor_count(); ++i) {
    const std::string where = task_name(id) + " arg " + std::to_string(i);
    const ArgTag tag = args.tag(i);
    const Tensor& t = args.tensor(i);
    if (tag == ArgTag::Out) {
      throw Error(StatusCode::InvalidArgument,
                  where +
                      ": a node task takes no runtime output (out); allocate the buffer with "
                      "Node::malloc and pass it with output_existing");
    }
    const NodeAllocation buffer = memory_.buffer_of(t.buffer.addr, 1, where.c_str());
    if (buffer.addr != t.buffer.addr || buffer.size != t.buffer.size) {
      throw Error(StatusCode::InvalidDevicePointer,
                  where +
                      ": the tensor's buffer is not a whole node buffer (it starts or ends "
                      "inside one); make tensors over the NodeBuffer Node::malloc returned");
    }
    const orchestrator::TensorRegion region = orchestrator::TensorRegion::of(t);
    if (!region.bounded || region.hi > buffer.size) {
      throw Error(StatusCode::ViewOutOfBounds, where +
                                                   ": the view reaches past its node buffer's " +
                                                   std::to_string(buffer.size) + " bytes");
    }
    const bool dense = t.is_contiguous() && region.hi - region.lo == t.numel() * t.element_bytes();
    task.uses.push_back(RegionUse{buffer.addr, region.lo, region.hi, access_of(tag), tag, dense});
  }
}

uint32_t NodeGraph::choose_chip(const NodeTask& task, uint32_t eligible) const {
  uint32_t best = kMaxChips;
  uint64_t best_bytes = 0;
  for (uint32_t chip = 0; chip < chips_; ++chip) {
    if ((eligible >> chip & 1u) == 0) continue;
    uint64_t bytes = 0;
    for (const RegionUse& use : task.uses) {
      if (use.tag != ArgTag::In && use.tag != ArgTag::InOut) continue;  // inputs only
      if (projection_.has_buffer(use.buffer)) {
        bytes += projection_.valid_bytes(use.buffer, use.lo, use.hi, chip);
      } else if (memory_.home_of(use.buffer) == chip) {
        bytes += use.hi - use.lo;
      }
    }
    const bool first = best == kMaxChips;
    if (first || bytes > best_bytes || (bytes == best_bytes && placed_[chip] < placed_[best])) {
      best = chip;
      best_bytes = bytes;
    }
  }
  return best;
}

void NodeGraph::project(const NodeTask& task) {
  for (const RegionUse& use : task.uses) {
    if (!projection_.has_buffer(use.buffer)) {
      projection_.add_buffer(use.buffer, memory_.buffer_of(use.buffer, 1).size,
                             memory_.home_of(use.buffer));
    }
    if (use.access == Coherence::Access::Write) {
      projection_.written(use.buffer, use.lo, use.hi, task.location);
      continue;
    }
    std::vector<Transfer> transfers;
    if (projection_.plan(use.buffer, use.lo, use.hi, task.location, use.access, &transfers)) {
      for (const Transfer& t : transfers) projection_.copied(t);
    }
  }
}

void NodeGraph::order_interleaved_writes(const NodeTask& task, uint32_t id) {
  for (const RegionUse& use : task.uses) {
    if (use.access != Coherence::Access::Write || use.lo >= use.hi) continue;
    auto& by_location = writes_[use.buffer];
    for (Location l = 0; l < kLocations; ++l) {
      // One location runs its tasks one at a time: only writers elsewhere need the order. None is
      // forgotten when a later one covers it: tasks at one location are not ordered among
      // themselves, so a writer elsewhere must meet each of them.
      if (l == task.location) continue;
      for (const WriteExtent& w : by_location[l]) {
        if (w.lo < use.hi && use.lo < w.hi) producers_.add(w.task, kDependencyWaw);
      }
    }
    by_location[task.location].push_back(WriteExtent{use.lo, use.hi, id, task.location});
  }
}

uint32_t NodeGraph::add(NodeTask task, Placement placement) {
  const auto id = static_cast<uint32_t>(tasks_.size());
  describe_uses(task, id);
  if (task.kind == NodeTask::Kind::ChipRun) {
    const uint32_t eligible = eligible_chips(task.callable_id);
    if (eligible == 0) {
      throw Error(StatusCode::UnknownCallable,
                  task_name(id) + ": callable " + std::to_string(task.callable_id) +
                      " is registered on no chip; register it first (Node::register_callable)");
    }
    if (placement.kind == Placement::Kind::Chip && placement.chip < chips_ &&
        (eligible >> placement.chip & 1u) == 0) {
      throw Error(StatusCode::UnknownCallable,
                  task_name(id) + ": callable " + std::to_string(task.callable_id) +
                      " is not registered on chip " + std::to_string(placement.chip) +
                      "; register it there, or place the run with any_chip()");
    }
    if (placement.kind == Placement::Kind::Chip) {
      if (placement.chip >= chips_) {
        throw Error(StatusCode::InvalidArgument,
                    task_name(id) + ": on_chip(" + std::to_string(placement.chip) +
                        ") names a chip the node does not have (it has " + std::to_string(chips_) +
                        ")");
      }
      task.location = placement.chip;
    } else {
      task.location = choose_chip(task, eligible);
      task.placed_by_data = true;
    }
  } else {
    task.location = kHostLocation;
  }
  // Dependencies by the chip's rule, over node addresses.
  orchestrator::ArgList list;
  orchestrator::read_args(task.args, &list);
  producers_.clear();
  deps_.lookup(task.args, list,
               [&](TaskId producer, DependencyKinds kinds) { producers_.add(producer, kinds); });
  orchestrator::lookup_after_producers(
      task.args, [&](TaskId producer, DependencyKinds kinds) { producers_.add(producer, kinds); });
  deps_.record(id, task.args, list);
  order_interleaved_writes(task, id);
  for (const auto& p : producers_.merged()) task.producers.push_back(static_cast<uint32_t>(p.task));
  for (uint32_t p : task.producers) tasks_[p].consumers.push_back(id);
  project(task);
  if (task.kind == NodeTask::Kind::ChipRun) ++placed_[task.location];
  tasks_.push_back(std::move(task));
  return id;
}

uint32_t NodeGraph::add_chip_run(int32_t callable_id, const TaskArgs& args, Placement placement) {
  NodeTask task;
  task.kind = NodeTask::Kind::ChipRun;
  task.callable_id = callable_id;
  task.args = args;
  return add(std::move(task), placement);
}

uint32_t NodeGraph::add_host_task(const TaskArgs& args) {
  NodeTask task;
  task.kind = NodeTask::Kind::HostTask;
  task.args = args;
  return add(std::move(task), Placement{});
}

}  // namespace chiprt::node
