// NodeChips: the chips of a node, each a full chip as a Worker has it (a host::RunPipeline over
// its own DeviceRunner), each in its own device process unless the node runs them in process, and
// the device-to-device copy between them.
//
// The device processes are started by one device starter (the sim: a fork server) made first
// thing in the constructor, before the chips' pipelines or any other thread of the node exist, so
// that a chip's start or reset_chip never forks a process running threads of its own. Every
// error a chip raises names the node's calls (Node::reset_chip(k), Node::malloc), never Worker's.
//
// Lifetime: the constructor opens every chip (the devices start lazily, on a chip's first call
// that needs its device); close() closes them all (idempotent); the destructor closes. The
// starter outlives the chips that use it.
// Threading: chip(k) returns a pipeline whose calls may come from any host thread (its own
// rules, host/run_pipeline.h); copy and reset_chip may be called from any thread, concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "chiprt/node.h"
#include "chiprt/types.h"
#include "host/run_pipeline.h"
#include "platform/platform.h"

namespace chiprt::node {

inline constexpr uint32_t kMaxChips = 16;

class NodeChips {
 public:
  // InvalidConfig for options out of range (naming the field); what starting the device starter
  // or opening a chip throws otherwise.
  explicit NodeChips(const NodeOptions& options);
  ~NodeChips();
  NodeChips(const NodeChips&) = delete;
  NodeChips& operator=(const NodeChips&) = delete;

  uint32_t count() const noexcept { return static_cast<uint32_t>(chips_.size()); }
  // Chip k's pipeline; InvalidArgument naming k and the chip count when k is out of range.
  host::RunPipeline& chip(uint32_t k) const;

  // Copies `bytes` at `src_addr` of chip `src_chip` to `dst` of chip `dst_chip` (device to
  // device, Platform::copy_from_peer; one chip to itself as memmove), once no admitted run of
  // either chip names its side's range. Both must be live allocations of their chips (Node::malloc
  // or the node's own); a faulted chip refuses (DeviceFaulted naming its reset_chip). The chips'
  // pipelines are entered in chip order, so copies in opposite directions never deadlock.
  void copy(uint32_t dst_chip, uint64_t dst, uint32_t src_chip, uint64_t src_addr, uint64_t bytes);
  // Registers a callable on chip k (DeviceRunner::register_callable, with the chip's default
  // variant) / whether chip k has it.
  void register_callable(uint32_t k, int32_t callable_id, std::span<const uint8_t> container);
  bool has_callable(uint32_t k, int32_t callable_id) const;
  // Once no admitted run of chip k uses it (RunPipeline::unregister_callable).
  void unregister_callable(uint32_t k, int32_t callable_id);
  // Chip k's memory calls, each entering its pipeline (host/run_pipeline.h: free and the copies
  // wait for admitted runs naming the range). `what` names the node's call in errors.
  DeviceBuffer allocate(uint32_t k, uint64_t bytes, const char* what = "malloc");
  void free(uint32_t k, DeviceBuffer buffer, const char* what = "free");
  void copy_to(uint32_t k, uint64_t dst, const void* src, uint64_t bytes,
               const char* what = "copy_to");
  void copy_from(uint32_t k, void* dst, uint64_t src, uint64_t bytes,
                 const char* what = "copy_from");
  void memset(uint32_t k, uint64_t dst, int value, uint64_t bytes, const char* what = "memset");
  // Whether chip k's device faulted and waits for reset_chip(k) (its memory is not to be read).
  bool faulted(uint32_t k) const;
  // Replaces chip k's device by a fresh one once its admitted runs are done (RunPipeline::reset):
  // its buffers are lost, its callables registered again.
  void reset_chip(uint32_t k);
  // Closes every chip (each finishes its admitted runs first); idempotent.
  void close();

 private:
  // Declared first: destroyed after the chips whose devices it started.
  std::shared_ptr<platform::DeviceStarter> starter_;
  std::vector<std::unique_ptr<host::RunPipeline>> chips_;
  bool in_process_ = false;
};

}  // namespace chiprt::node
