// CallableRegistry: chip callables uploaded to a device and registered under callable ids.
//
// A container is uploaded to device memory once per distinct content (content-hash deduplication
// confirmed byte for byte, with a reference count per registration). Each registration loads its
// kernels (one entry address per func_id) and the orchestration entry its variant needs: a
// host-callable entry for host_build_graph, a chip-side entry (loaded through the platform's
// object loader, like kernels) for tensormap_ringbuffer. A run of the other variant loads the
// missing entry on first use (prepare_orchestration), so one registration serves both variants.
// Kernel and orchestration shared objects are loaded once per distinct image and reference
// counted too: the kernels of one object (several symbols, or one symbol under several func_ids)
// share one load, each func_id resolving its own symbol in it. bind() rewrites the device kernel
// address table with exactly one callable's kernels. The host keeps every registered container
// (shared with its upload's host copy), so that after a device reset reregister_all() loads the
// same registrations on the new device. Owned by a DeviceRunner; one thread at a time.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "chiprt/call_config.h"
#include "chiprt/callable.h"
#include "chiprt/status.h"
#include "common/callable_format.h"
#include "common/kernel_table.h"
#include "host/device_memory.h"
#include "platform/platform.h"

namespace chiprt::host {

struct RegisteredKernel {
  bool present = false;
  uint64_t entry = 0;  // address the core calls (the symbol, resolved)
  // The symbol `entry` was resolved as in its shared object; empty for an in-process function
  // kernel (CallableBuilder::kernel_function), which has no symbol the runtime knows.
  std::string symbol;
  // The display name the diagnostics and messages use (the symbol unless the callable gave one);
  // empty only for an in-process function given none.
  std::string name;
  CoreType core = CoreType::AIC;
  ArgSignature signature;
};

struct RegisteredCallable {
  int32_t id = -1;
  RuntimeVariant variant = RuntimeVariant::HostBuildGraph;
  uint64_t content_hash = 0;
  uint64_t kernel_image_hash = 0;
  DeviceBuffer device_copy;  // the uploaded container (shared between identical registrations)
  OrchestrationEntry orchestration = nullptr;  // host orchestration (host_build_graph runs)
  // Chip-side address of the orchestration entry (tensormap_ringbuffer runs: an AICPU thread calls
  // it); 0 until loaded. On sim the chip shares the process, so it is a function address.
  uint64_t device_orchestration = 0;
  ArgSignature orchestration_signature;
  std::array<RegisteredKernel, kMaxFuncId> kernels{};
  int kernel_count = 0;
  // Shared objects this registration holds a reference on (object cache handles).
  std::vector<uint64_t> object_handles;
};

class CallableRegistry {
 public:
  CallableRegistry(platform::Platform* platform, DeviceMemory* memory)
      : platform_(platform), memory_(memory) {}
  CallableRegistry(const CallableRegistry&) = delete;
  CallableRegistry& operator=(const CallableRegistry&) = delete;

  // Errors: CallableIdOutOfRange, DuplicateCallable, MalformedCallable / EmptyCallable (from the
  // parser), InvalidConfig for a variant that is not concrete, LoadFailed, and allocation
  // failures. `variant` chooses which orchestration entry is loaded now (tensormap_ringbuffer:
  // device_orchestration, `orchestration` stays null). On error nothing stays registered or
  // uploaded.
  Status register_callable(int32_t id, std::span<const uint8_t> container, RuntimeVariant variant);
  // Every entry taking a callable id checks it first with these: CallableIdOutOfRange outside
  // [0, kMaxCallableIds), then (check_registered) UnknownCallable when nothing is registered.
  static Status check_id_range(int32_t id);
  Status check_registered(int32_t id) const;
  // Loads the orchestration entry a run of `variant` needs when the registration has not loaded it
  // yet (CallableIdOutOfRange, UnknownCallable, LoadFailed; InvalidConfig for a variant that is not
  // concrete).
  Status prepare_orchestration(int32_t id, RuntimeVariant variant);
  // CallableIdOutOfRange / UnknownCallable (check_registered).
  Status unregister_callable(int32_t id);
  // Registered with the host (also while its device state is abandoned, until reregister_all).
  bool has(int32_t id) const noexcept { return kept_.count(id) != 0; }
  const RegisteredCallable* find(int32_t id) const noexcept;

  // Clears the kernel address table at `table_addr` (uint64_t[kMaxFuncId]) and writes exactly the
  // kernels of callable `id`; fills `builder_table` with what the orchestrator validates against.
  Status bind(int32_t id, uint64_t table_addr, common::KernelTable* builder_table);

  // Distinct containers in device memory, and how many uploads (device copies) ever happened.
  std::size_t uploaded_container_count() const noexcept { return uploads_.size(); }
  uint64_t upload_total() const noexcept { return upload_total_; }
  uint32_t upload_refcount(uint64_t content_hash) const noexcept;
  std::size_t loaded_object_count() const noexcept { return objects_.size(); }
  std::size_t size() const noexcept { return callables_.size(); }

  // Unloads every object and frees every upload (device alive).
  Status release_all();
  // Forgets every device resource (uploads, loaded objects, entries) without touching the device;
  // the registered containers stay kept for reregister_all. Loaded objects are deliberately not
  // unloaded: a kernel may still be executing on a stuck chip thread, and unmapping its code
  // would turn a reported fault into a crash. Their mappings live until process exit.
  void abandon() noexcept;
  // Forgets the kept containers too (nothing stays registered).
  void forget_registrations() noexcept;
  // After abandon() and a device reset: registers every kept container again under its id with
  // its variant, loading the orchestration entries it had loaded. On failure nothing is lost from
  // the kept set (a later call may retry) and the error names the callable id.
  Status reregister_all();

 private:
  using Bytes = std::shared_ptr<const std::vector<uint8_t>>;
  struct Upload {
    Bytes bytes;  // host copy: exact dedup check; object images are loaded from it
    DeviceBuffer device;
    uint32_t refcount = 0;
  };
  struct LoadedObjectEntry {
    platform::LoadedObject object;
    bool host_side = false;  // loaded by load_host_object (code the host calls)
    uint64_t hash = 0;
    std::vector<uint8_t> bytes;  // the image, so a hash collision is told apart byte for byte
    uint32_t refcount = 0;
  };

  // What the host keeps of a registration to load it again after a device reset.
  struct KeptRegistration {
    Bytes container;
    RuntimeVariant variant = RuntimeVariant::HostBuildGraph;
    bool host_entry = false;    // the host_build_graph entry was loaded
    bool device_entry = false;  // the tensormap_ringbuffer entry was loaded
  };

  // register_callable with the container already held by the host (a new registration copies
  // the caller's span once; reregister_all passes the kept copy).
  Status register_container(int32_t id, Bytes container, RuntimeVariant variant);
  // Both caches are keyed by content hash; entries with the same hash but different content
  // (a collision) coexist, told apart by their device address / object handle.
  Status acquire_upload(const Bytes& bytes, uint64_t hash, uint64_t* device_addr);
  void release_upload(uint64_t hash, uint64_t device_addr);
  // `host_side`: the entry is called by the host (host_build_graph orchestration), so a shared
  // object is loaded with Platform::load_host_object; otherwise by the chip (load_object).
  Status load_entry(const ParsedObject& object, const char* symbol, const std::string& what,
                    RegisteredCallable* reg, uint64_t* entry, bool host_side = false);
  // Cache keys: the platform's handle, with kHostObjectKey set for a host-side object (host and
  // chip handles are separate numberings).
  static constexpr uint64_t kHostObjectKey = 1ull << 63;
  void release_object(uint64_t handle);
  Status unload(const LoadedObjectEntry& entry);
  void release_registration(const RegisteredCallable& reg);
  // Loads reg's orchestration entry for `variant` from `parsed` (the retained container).
  Status load_orchestration(const ParsedCallable& parsed, RuntimeVariant variant,
                            RegisteredCallable* reg);
  // The retained host copy of the container uploaded at `device_addr`.
  std::span<const uint8_t> retained_bytes(uint64_t hash, uint64_t device_addr) const noexcept;

  platform::Platform* platform_;
  DeviceMemory* memory_;
  std::map<int32_t, RegisteredCallable> callables_;
  std::map<int32_t, KeptRegistration> kept_;
  std::unordered_multimap<uint64_t, Upload> uploads_;
  std::unordered_map<uint64_t, LoadedObjectEntry> objects_;     // by handle
  std::unordered_multimap<uint64_t, uint64_t> object_by_hash_;  // content hash -> handle
  uint64_t upload_total_ = 0;
};

}  // namespace chiprt::host
