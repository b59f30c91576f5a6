#include "node/node_chips.h"

#include <string>
#include <utility>

#include "chiprt/status.h"
#include "host/facade_text.h"
#include "host/open_device.h"
#include "platform/registry.h"

namespace chiprt::node {

namespace {

void check_options(const NodeOptions& options) {
  if (options.chips < 1 || options.chips > kMaxChips) {
    throw Error(StatusCode::InvalidConfig, "NodeOptions::chips=" + std::to_string(options.chips) +
                                               " is out of range; use 1.." +
                                               std::to_string(kMaxChips));
  }
  if (!options.chip_sim.empty() && options.chip_sim.size() != options.chips) {
    throw Error(StatusCode::InvalidConfig,
                "NodeOptions::chip_sim has " + std::to_string(options.chip_sim.size()) +
                    " entries for " + std::to_string(options.chips) +
                    " chips; give one per chip, or none to use NodeOptions::sim for all");
  }
  for (uint32_t k = 0; k < options.chips; ++k) {
    const SimOptions& sim = options.chip_sim.empty() ? options.sim : options.chip_sim[k];
    if (sim.isolation != SimIsolation::Default) {
      throw Error(StatusCode::InvalidConfig,
                  std::string(options.chip_sim.empty()
                                  ? "NodeOptions::sim"
                                  : "NodeOptions::chip_sim[" + std::to_string(k) + "]") +
                      ".isolation is set; a node's chips each run in a device process of their "
                      "own, or all in this process with NodeOptions::in_process");
    }
  }
}

}  // namespace

NodeChips::NodeChips(const NodeOptions& options) : in_process_(options.in_process) {
  check_options(options);
  // Before any pipeline exists: the starter forks while this node runs no thread of its own.
  if (!in_process_) {
    throw_if_error(platform::start_device_starter(options.platform, &starter_));
  }
  chips_.reserve(options.chips);
  for (uint32_t k = 0; k < options.chips; ++k) {
    host::FacadeText facade;
    facade.owner = "Node";
    facade.reset_call = "Node::reset_chip(" + std::to_string(k) + ")";
    facade.malloc_call = "Node::malloc";
    auto pipeline = std::make_unique<host::RunPipeline>(std::move(facade));
    pipeline->init([&] {
      host::DeviceOpening opening;
      opening.platform = options.platform;
      opening.device_id = static_cast<int>(k);
      opening.runtime = options.runtime;
      opening.sim = options.chip_sim.empty() ? options.sim : options.chip_sim[k];
      opening.sim.isolation = in_process_ ? SimIsolation::None : SimIsolation::Process;
      opening.device_starter = starter_;
      opening.facade = pipeline->facade();
      return host::open_device(opening);
    });
    chips_.push_back(std::move(pipeline));
  }
}

NodeChips::~NodeChips() {
  // Each pipeline's destructor closes it (logging a failure); the chips go in reverse order, the
  // starter after them.
  while (!chips_.empty()) chips_.pop_back();
}

host::RunPipeline& NodeChips::chip(uint32_t k) const {
  if (k >= chips_.size()) {
    throw Error(StatusCode::InvalidArgument,
                "chip " + std::to_string(k) + " does not exist; the node has " +
                    std::to_string(chips_.size()) + " chip(s), numbered 0.." +
                    std::to_string(chips_.size() - 1));
  }
  return *chips_[k];
}

void NodeChips::copy(uint32_t dst_chip, uint64_t dst, uint32_t src_chip, uint64_t src_addr,
                     uint64_t bytes) {
  host::RunPipeline& to = chip(dst_chip);
  host::RunPipeline& from = chip(src_chip);
  if (dst_chip == src_chip) {
    auto call = to.enter("copy");
    to.copy_from_peer(call, dst, from, call, src_addr, bytes);
    return;
  }
  for (;;) {
    // Each side's runs waited for with its own lock alone, then both taken in chip order: a run
    // admitted in between sends us round again.
    {
      auto call = to.enter("copy");
      to.wait_for_memory(call, dst, dst + bytes);
    }
    {
      auto call = from.enter("copy");
      from.wait_for_memory(call, src_addr, src_addr + bytes);
    }
    auto first = (dst_chip < src_chip ? to : from).enter("copy");
    auto second = (dst_chip < src_chip ? from : to).enter("copy");
    auto& to_call = dst_chip < src_chip ? first : second;
    auto& from_call = dst_chip < src_chip ? second : first;
    if (to.copy_from_peer(to_call, dst, from, from_call, src_addr, bytes)) return;
  }
}

void NodeChips::register_callable(uint32_t k, int32_t callable_id,
                                  std::span<const uint8_t> container) {
  host::RunPipeline& pipeline = chip(k);
  const auto call = pipeline.enter("register_callable");
  pipeline.runner(call).register_callable(callable_id, container);
}

void NodeChips::unregister_callable(uint32_t k, int32_t callable_id) {
  host::RunPipeline& pipeline = chip(k);
  auto call = pipeline.enter("unregister_callable");
  pipeline.unregister_callable(call, callable_id);
}

bool NodeChips::has_callable(uint32_t k, int32_t callable_id) const {
  host::RunPipeline& pipeline = chip(k);
  const auto call = pipeline.enter("has_callable");
  return pipeline.runner(call).has_callable(callable_id);
}

DeviceBuffer NodeChips::allocate(uint32_t k, uint64_t bytes, const char* what) {
  host::RunPipeline& pipeline = chip(k);
  const auto call = pipeline.enter(what);
  return pipeline.runner(call).allocate(bytes);
}

void NodeChips::free(uint32_t k, DeviceBuffer buffer, const char* what) {
  host::RunPipeline& pipeline = chip(k);
  auto call = pipeline.enter(what);
  pipeline.free(call, buffer);
}

void NodeChips::copy_to(uint32_t k, uint64_t dst, const void* src, uint64_t bytes,
                        const char* what) {
  host::RunPipeline& pipeline = chip(k);
  auto call = pipeline.enter(what);
  pipeline.copy_to(call, dst, src, bytes);
}

void NodeChips::copy_from(uint32_t k, void* dst, uint64_t src, uint64_t bytes, const char* what) {
  host::RunPipeline& pipeline = chip(k);
  auto call = pipeline.enter(what);
  pipeline.copy_from(call, dst, src, bytes);
}

void NodeChips::memset(uint32_t k, uint64_t dst, int value, uint64_t bytes, const char* what) {
  host::RunPipeline& pipeline = chip(k);
  auto call = pipeline.enter(what);
  pipeline.memset(call, dst, value, bytes);
}

bool NodeChips::faulted(uint32_t k) const {
  host::RunPipeline& pipeline = chip(k);
  const auto call = pipeline.enter("faulted");
  return pipeline.runner(call).faulted();
}

void NodeChips::reset_chip(uint32_t k) {
  host::RunPipeline& pipeline = chip(k);
  auto call = pipeline.enter("reset_chip");
  pipeline.reset(call);
}

void NodeChips::close() {
  for (auto& pipeline : chips_) pipeline->close();
}

}  // namespace chiprt::node
