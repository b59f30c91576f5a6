#include "host/callable_registry.h"

#include <cstring>
#include <string>
#include <utility>

#include "host/log.h"
#include "host/run_steps.h"

namespace chiprt::host {

uint32_t CallableRegistry::upload_refcount(uint64_t content_hash) const noexcept {
  uint32_t total = 0;
  auto [first, last] = uploads_.equal_range(content_hash);
  for (auto it = first; it != last; ++it) total += it->second.refcount;
  return total;
}

const RegisteredCallable* CallableRegistry::find(int32_t id) const noexcept {
  auto it = callables_.find(id);
  return it == callables_.end() ? nullptr : &it->second;
}

Status CallableRegistry::acquire_upload(const Bytes& shared, uint64_t hash, uint64_t* device_addr) {
  const std::vector<uint8_t>& bytes = *shared;
  auto [first, last] = uploads_.equal_range(hash);
  for (auto it = first; it != last; ++it) {
    Upload& upload = it->second;
    if (upload.bytes->size() == bytes.size() &&
        std::memcmp(upload.bytes->data(), bytes.data(), bytes.size()) == 0) {
      ++upload.refcount;
      *device_addr = upload.device.addr;
      return Status::ok();
    }
  }
  Upload upload;
  Status status =
      memory_->allocate(bytes.size(), kObjectAlign, AllocationOwner::Runtime, &upload.device);
  if (!status.is_ok()) return status;
  status = memory_->copy_to_device(upload.device.addr, bytes.data(), bytes.size());
  if (!status.is_ok()) {
    (void)memory_->free(upload.device.addr, AllocationOwner::Runtime);
    return status;
  }
  upload.bytes = shared;
  upload.refcount = 1;
  *device_addr = upload.device.addr;
  uploads_.emplace(hash, std::move(upload));
  ++upload_total_;
  return Status::ok();
}

void CallableRegistry::release_upload(uint64_t hash, uint64_t device_addr) {
  auto [first, last] = uploads_.equal_range(hash);
  for (auto it = first; it != last; ++it) {
    if (it->second.device.addr != device_addr) continue;
    if (--it->second.refcount == 0) {
      Status status = memory_->free(device_addr, AllocationOwner::Runtime);
      if (!status.is_ok()) CHIPRT_LOG_WARN("callable upload free: %s", status.to_string().c_str());
      uploads_.erase(it);
    }
    return;
  }
}

Status CallableRegistry::load_entry(const ParsedObject& object, const char* symbol,
                                    const std::string& what, RegisteredCallable* reg,
                                    uint64_t* entry, bool host_side) {
  if (object.kind == ObjectKind::InProcess) {
    *entry = object.function_addr();
    if (*entry == 0) {
      return Status(StatusCode::LoadFailed, what + ": in-process function address is null");
    }
    return Status::ok();
  }
  const uint64_t hash = object.checksum;  // content_hash64(object.bytes), verified by the parser
  uint64_t handle = 0;
  auto [first, last] = object_by_hash_.equal_range(hash);
  for (auto it = first; it != last && handle == 0; ++it) {
    const LoadedObjectEntry& candidate = objects_.at(it->second);
    const std::vector<uint8_t>& cached = candidate.bytes;
    if (candidate.host_side == host_side && cached.size() == object.bytes.size() &&
        std::memcmp(cached.data(), object.bytes.data(), cached.size()) == 0) {
      handle = it->second;
    }
  }
  if (handle == 0) {
    platform::LoadedObject loaded;
    Status status = host_side ? platform_->load_host_object(object.bytes, &loaded)
                              : platform_->load_object(object.bytes, &loaded);
    if (!status.is_ok()) {
      return Status(StatusCode::LoadFailed, what + ": loading its " +
                                                std::to_string(object.bytes.size()) +
                                                "-byte shared object failed: " + status.message());
    }
    handle = host_side ? loaded.handle | kHostObjectKey : loaded.handle;
    objects_[handle] = LoadedObjectEntry{
        loaded, host_side, hash, std::vector<uint8_t>(object.bytes.begin(), object.bytes.end()), 0};
    object_by_hash_.emplace(hash, handle);
  }
  LoadedObjectEntry& cached = objects_.at(handle);
  ++cached.refcount;
  reg->object_handles.push_back(handle);
  Status status = host_side ? platform_->resolve_host_symbol(cached.object, symbol, entry)
                            : platform_->resolve_symbol(cached.object, symbol, entry);
  if (!status.is_ok() || *entry == 0) {
    // Almost always a function the object defines but does not export: chip objects are built
    // with -fvisibility=hidden, so the entry needs the attribute (and C linkage for its name).
    const bool orchestration = std::strcmp(symbol, kOrchestrationSymbol) == 0;
    return Status(
        StatusCode::LoadFailed,
        what + ": symbol '" + symbol + "' not found in its " + std::to_string(object.bytes.size()) +
            "-byte shared object (checksum " + hex(hash) + ")" +
            (status.is_ok() ? "" : ": " + status.message()),
        std::string("export the entry point: declare it extern \"C\" "
                    "__attribute__((visibility(\"default\"))) ") +
            (orchestration ? std::string("void chiprt_orchestration(chiprt::Orchestration&, const "
                                         "chiprt::TaskArgs&)")
                           : "void " + std::string(symbol) + "(int64_t* args)") +
            "; chip objects are compiled with -fvisibility=hidden, which hides a function without "
            "the attribute (nm -D --defined-only OBJECT lists what it exports)" +
            // A kernel's symbol is the callable's choice; the orchestration's is fixed.
            (orchestration ? "" : ", or name the symbol the object exports"));
  }
  return Status::ok();
}

void CallableRegistry::release_object(uint64_t handle) {
  auto it = objects_.find(handle);
  if (it == objects_.end()) return;
  if (--it->second.refcount != 0) return;
  Status status = unload(it->second);
  if (!status.is_ok()) CHIPRT_LOG_WARN("object unload: %s", status.to_string().c_str());
  auto [first, last] = object_by_hash_.equal_range(it->second.hash);
  for (auto h = first; h != last; ++h) {
    if (h->second == handle) {
      object_by_hash_.erase(h);
      break;
    }
  }
  objects_.erase(it);
}

Status CallableRegistry::unload(const LoadedObjectEntry& entry) {
  return entry.host_side ? platform_->unload_host_object(entry.object)
                         : platform_->unload_object(entry.object);
}

void CallableRegistry::release_registration(const RegisteredCallable& reg) {
  for (uint64_t handle : reg.object_handles) release_object(handle);
  if (!reg.device_copy.empty()) release_upload(reg.content_hash, reg.device_copy.addr);
}

Status CallableRegistry::check_id_range(int32_t id) {
  if (id >= 0 && id < kMaxCallableIds) return Status::ok();
  return Status(StatusCode::CallableIdOutOfRange, "callable id " + std::to_string(id) +
                                                      " is outside [0, " +
                                                      std::to_string(kMaxCallableIds) + ")");
}

Status CallableRegistry::check_registered(int32_t id) const {
  Status status = check_id_range(id);
  if (status.is_ok() && callables_.count(id) == 0) {
    status = Status(StatusCode::UnknownCallable,
                    "callable id " + std::to_string(id) + " is not registered");
  }
  return status;
}

Status CallableRegistry::register_callable(int32_t id, std::span<const uint8_t> container,
                                           RuntimeVariant variant) {
  if (Status status = check_id_range(id); !status.is_ok()) return status;
  if (kept_.count(id) != 0) {
    return Status(StatusCode::DuplicateCallable,
                  "callable id " + std::to_string(id) +
                      " is already registered; unregister it first or use another id");
  }
  return register_container(
      id, std::make_shared<const std::vector<uint8_t>>(container.begin(), container.end()),
      variant);
}

Status CallableRegistry::register_container(int32_t id, Bytes shared, RuntimeVariant variant) {
  const std::span<const uint8_t> container(*shared);
  if (container.empty()) {
    return Status(StatusCode::EmptyCallable,
                  "callable id " + std::to_string(id) + ": the container is empty (0 bytes)");
  }
  ParsedCallable parsed;
  Status status = parse_callable(container, &parsed);
  if (!status.is_ok()) {
    return status.with_context("callable id " + std::to_string(id) + ": ");
  }
  if (variant != RuntimeVariant::HostBuildGraph && variant != RuntimeVariant::TensormapRingbuffer) {
    return Status(StatusCode::InvalidConfig,
                  "callable id " + std::to_string(id) + ": runtime variant " +
                      std::to_string(static_cast<int>(variant)) + " is not a concrete variant");
  }

  RegisteredCallable reg;
  reg.id = id;
  reg.variant = variant;
  reg.content_hash = parsed.content_hash;
  reg.kernel_image_hash = parsed.kernel_image_hash;
  reg.orchestration_signature = parsed.orchestration_signature;

  uint64_t device_addr = 0;
  status = acquire_upload(shared, parsed.content_hash, &device_addr);
  if (!status.is_ok()) return status;
  reg.device_copy = DeviceBuffer{device_addr, container.size()};

  // Objects are loaded from the retained host copy so their images outlive the caller's span.
  status = parse_callable(retained_bytes(parsed.content_hash, device_addr), &parsed);
  if (status.is_ok()) status = load_orchestration(parsed, variant, &reg);
  for (std::size_t k = 0; k < parsed.kernels.size() && status.is_ok(); ++k) {
    const ParsedKernel& kernel = parsed.kernels[k];
    if (kernel.func_id < 0 || kernel.func_id >= kMaxFuncId) {
      status = Status(StatusCode::MalformedCallable,
                      "callable id " + std::to_string(id) + ": kernel func_id " +
                          std::to_string(kernel.func_id) + " is outside [0, " +
                          std::to_string(kMaxFuncId) + ")");
      break;
    }
    RegisteredKernel& slot = reg.kernels[static_cast<std::size_t>(kernel.func_id)];
    std::string what =
        "callable id " + std::to_string(id) + " kernel func_id " + std::to_string(kernel.func_id);
    if (!kernel.name.empty() && kernel.name != kernel.symbol) what += " ('" + kernel.name + "')";
    status = load_entry(kernel.object, kernel.symbol.c_str(), what, &reg, &slot.entry);
    if (!status.is_ok()) break;
    slot.present = true;
    slot.symbol = kernel.symbol;
    slot.name = kernel.name;
    slot.core = kernel.core;
    slot.signature = kernel.signature;
    ++reg.kernel_count;
  }
  if (!status.is_ok()) {
    release_registration(reg);
    return status;
  }
  CHIPRT_LOG_INFO("registered callable id %d: %d kernels, content hash 0x%016llx", id,
                  reg.kernel_count, static_cast<unsigned long long>(reg.content_hash));
  KeptRegistration& kept = kept_[id];
  kept.container = std::move(shared);
  kept.variant = variant;
  kept.host_entry = reg.orchestration != nullptr;
  kept.device_entry = reg.device_orchestration != 0;
  callables_.emplace(id, std::move(reg));
  return Status::ok();
}

std::span<const uint8_t> CallableRegistry::retained_bytes(uint64_t hash,
                                                          uint64_t device_addr) const noexcept {
  auto [first, last] = uploads_.equal_range(hash);
  for (auto it = first; it != last; ++it) {
    if (it->second.device.addr == device_addr) return *it->second.bytes;
  }
  return {};
}

Status CallableRegistry::load_orchestration(const ParsedCallable& parsed, RuntimeVariant variant,
                                            RegisteredCallable* reg) {
  const std::string what = "callable id " + std::to_string(reg->id) + " orchestration";
  uint64_t entry = 0;
  if (variant == RuntimeVariant::HostBuildGraph) {
    if (reg->orchestration != nullptr) return Status::ok();
    // Called by the host: loaded into the host process even when the chip lives in another.
    Status status = load_entry(parsed.orchestration, kOrchestrationSymbol, what, reg, &entry,
                               /*host_side=*/true);
    if (status.is_ok()) reg->orchestration = reinterpret_cast<OrchestrationEntry>(entry);
    return status;
  }
  if (variant == RuntimeVariant::TensormapRingbuffer) {
    if (reg->device_orchestration != 0) return Status::ok();
    // The platform's object loader is the chip's loader (kernels come through it too), so the
    // entry it resolves is callable by an AICPU thread.
    Status status = load_entry(parsed.orchestration, kOrchestrationSymbol,
                               what + " (chip side, tensormap_ringbuffer)", reg, &entry);
    if (status.is_ok()) reg->device_orchestration = entry;
    return status;
  }
  return Status(StatusCode::InvalidConfig, what + ": runtime variant " +
                                               std::to_string(static_cast<int>(variant)) +
                                               " is not a concrete variant");
}

Status CallableRegistry::prepare_orchestration(int32_t id, RuntimeVariant variant) {
  if (Status status = check_registered(id); !status.is_ok()) return status;
  auto it = callables_.find(id);
  RegisteredCallable& reg = it->second;
  if ((variant == RuntimeVariant::HostBuildGraph && reg.orchestration != nullptr) ||
      (variant == RuntimeVariant::TensormapRingbuffer && reg.device_orchestration != 0)) {
    return Status::ok();
  }
  ParsedCallable parsed;
  Status status = parse_callable(retained_bytes(reg.content_hash, reg.device_copy.addr), &parsed);
  if (status.is_ok()) status = load_orchestration(parsed, variant, &reg);
  if (status.is_ok()) {
    KeptRegistration& kept = kept_.at(id);
    kept.host_entry = reg.orchestration != nullptr;
    kept.device_entry = reg.device_orchestration != 0;
  }
  return status;
}

Status CallableRegistry::unregister_callable(int32_t id) {
  if (Status status = check_registered(id); !status.is_ok()) return status;
  auto it = callables_.find(id);
  RegisteredCallable reg = std::move(it->second);
  callables_.erase(it);
  kept_.erase(id);
  release_registration(reg);
  return Status::ok();
}

Status CallableRegistry::bind(int32_t id, uint64_t table_addr, common::KernelTable* builder_table) {
  if (Status status = check_registered(id); !status.is_ok()) return status;
  auto it = callables_.find(id);
  const RegisteredCallable& reg = it->second;
  // Rebuilt from zero every time: an entry left over from another callable would point at code
  // that may have been unloaded, and the chip would call it.
  uint64_t table[kMaxFuncId] = {};
  for (int32_t f = 0; f < kMaxFuncId; ++f) {
    const RegisteredKernel& kernel = reg.kernels[static_cast<std::size_t>(f)];
    if (kernel.present) table[f] = kernel.entry;
    if (builder_table != nullptr) {
      common::KernelInfo& info = (*builder_table)[static_cast<std::size_t>(f)];
      info.present = kernel.present;
      info.core = kernel.core;
      info.signature = kernel.signature;
    }
  }
  return memory_->copy_to_device(table_addr, table, sizeof(table));
}

Status CallableRegistry::release_all() {
  for (auto& [id, reg] : callables_) release_registration(reg);
  callables_.clear();
  kept_.clear();
  Status first;
  // Anything still cached is unreferenced by registrations; drop it too.
  for (auto& [handle, entry] : objects_) {
    Status status = unload(entry);
    if (!status.is_ok() && first.is_ok()) first = status;
  }
  objects_.clear();
  object_by_hash_.clear();
  for (auto& [hash, upload] : uploads_) {
    Status status = memory_->free(upload.device.addr, AllocationOwner::Runtime);
    if (!status.is_ok() && first.is_ok()) first = status;
  }
  uploads_.clear();
  return first;
}

void CallableRegistry::abandon() noexcept {
  callables_.clear();
  objects_.clear();
  object_by_hash_.clear();
  uploads_.clear();
}

void CallableRegistry::forget_registrations() noexcept {
  abandon();
  kept_.clear();
}

Status CallableRegistry::reregister_all() {
  for (const auto& [id, kept] : kept_) {
    if (callables_.count(id) != 0) continue;  // a retry after a partial failure
    Status status = register_container(id, kept.container, kept.variant);
    // Both entries it had: a run of the other variant loaded its entry on the old device.
    if (status.is_ok() && kept.host_entry) {
      status = prepare_orchestration(id, RuntimeVariant::HostBuildGraph);
    }
    if (status.is_ok() && kept.device_entry) {
      status = prepare_orchestration(id, RuntimeVariant::TensormapRingbuffer);
    }
    if (!status.is_ok()) {
      return status.with_context("re-registering callable id " + std::to_string(id) +
                                 " on the new device failed: ");
    }
  }
  return Status::ok();
}

}  // namespace chiprt::host
