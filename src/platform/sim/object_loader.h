// ObjectLoader: loads chip objects (shared object images) from memory on the simulated chip.
//
// An image is first validated (check_elf_object, elf_check.h: a corrupt or truncated object is
// rejected with LoadFailed naming the ELF field instead of crashing the dynamic loader), then
// written to an anonymous memory file (memfd_create) and dlopen'ed through /proc/PID/fd/N, so no
// user-managed path is involved. Identical images (same size, same
// content_hash64, same bytes) share one loaded object with a reference count; unload dlcloses at
// zero. Handles are small integers never reused within one loader.
// Lifetime: owned by the platform (and kept alive by stuck stream threads, whose kernels may still
// execute code of a loaded object); the destructor dlcloses what is still loaded.
// Threading: every method is thread-safe (one mutex; host-side calls only).
#pragma once

#include <cstdint>
#include <mutex>
#include <span>
#include <unordered_map>
#include <vector>

#include "chiprt/status.h"

namespace chiprt::platform::sim {

class ObjectLoader {
 public:
  ObjectLoader() = default;
  ~ObjectLoader();
  ObjectLoader(const ObjectLoader&) = delete;
  ObjectLoader& operator=(const ObjectLoader&) = delete;

  Status load(std::span<const uint8_t> image, uint64_t* handle);
  Status resolve(uint64_t handle, const char* symbol, uint64_t* addr);
  Status unload(uint64_t handle);
  // Loaded objects and the reference count of one (0 when unknown); for tests and diagnostics.
  std::size_t loaded_count() const;
  uint32_t refcount(uint64_t handle) const;

 private:
  struct Object {
    void* dl = nullptr;
    int fd = -1;  // kept open while loaded so the /proc/PID/fd/N name stays unique
    uint64_t hash = 0;
    uint32_t refs = 0;
    std::vector<uint8_t> image;  // compared on a hash hit so a collision never aliases objects
  };
  void close_object(Object& object);

  mutable std::mutex mutex_;
  uint64_t next_handle_ = 1;
  std::unordered_map<uint64_t, Object> objects_;         // handle -> object
  std::unordered_multimap<uint64_t, uint64_t> by_hash_;  // content hash -> handle
};

}  // namespace chiprt::platform::sim
