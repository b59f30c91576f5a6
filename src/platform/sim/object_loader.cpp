#include "platform/sim/object_loader.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "common/callable_format.h"
#include "platform/sim/elf_check.h"

namespace chiprt::platform::sim {
namespace {

// Named with this process's pid, not "self": glibc finds loaded objects by name first, and a
// device process forked from the host inherits the host's loaded objects under their names while
// its own memory files reuse the host's fd numbers (it closed the host's descriptors); a
// "/proc/self/fd/N" it loads would be answered with the host's object of that name. The pid is
// the one /proc names this process by (what "/proc/self" links to), which in a device process of
// a pid namespace of its own is not getpid().
std::string fd_path(int fd) {
  char self[32] = {};
  const ssize_t length = readlink("/proc/self", self, sizeof(self) - 1);
  const std::string pid =
      length > 0 ? std::string(self, static_cast<std::size_t>(length)) : std::to_string(getpid());
  return "/proc/" + pid + "/fd/" + std::to_string(fd);
}

std::string dl_error_text() {
  const char* text = dlerror();
  return text != nullptr ? text : "unknown loader error";
}

bool write_all(int fd, std::span<const uint8_t> bytes) {
  std::size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    written += static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

ObjectLoader::~ObjectLoader() {
  for (auto& [handle, object] : objects_) close_object(object);
}

void ObjectLoader::close_object(Object& object) {
  const std::string path = fd_path(object.fd);
  dlclose(object.dl);
  // glibc finds loaded objects by name first: if this object stays resident (e.g. it has
  // STB_GNU_UNIQUE symbols and is marked NODELETE), a new memfd that reuses the fd number would
  // be answered with the old object. Keep such an fd open for the life of the process.
  if (void* still_loaded = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD); still_loaded != nullptr) {
    dlclose(still_loaded);
    return;
  }
  ::close(object.fd);
}

Status ObjectLoader::load(std::span<const uint8_t> image, uint64_t* handle) {
  if (handle == nullptr) {
    return Status(StatusCode::InvalidArgument, "load_object: out must not be null");
  }
  if (image.empty()) {
    return Status(StatusCode::InvalidArgument, "load_object: the object image is empty (0 bytes)");
  }
  const uint64_t hash = content_hash64(image);
  std::lock_guard lock(mutex_);
  const auto [first, last] = by_hash_.equal_range(hash);
  for (auto it = first; it != last; ++it) {
    Object& object = objects_.at(it->second);
    if (object.image.size() == image.size() &&
        std::memcmp(object.image.data(), image.data(), image.size()) == 0) {
      ++object.refs;
      *handle = it->second;
      return Status::ok();
    }
  }

  // The dynamic loader trusts the object's headers and would crash the process on a corrupt or
  // truncated one; only an image that passed check_elf_object is handed to it.
  if (Status valid = check_elf_object(image); !valid.is_ok()) {
    return Status(StatusCode::LoadFailed,
                  "load_object: the " + std::to_string(image.size()) +
                      "-byte image is not a loadable shared object: " + valid.message());
  }
  const int fd = memfd_create("chiprt-chip-object", MFD_CLOEXEC);
  if (fd < 0) {
    return Status(StatusCode::LoadFailed,
                  std::string("load_object: memfd_create failed: ") + std::strerror(errno));
  }
  if (!write_all(fd, image)) {
    const int error = errno;
    ::close(fd);
    return Status(StatusCode::LoadFailed,
                  "load_object: writing " + std::to_string(image.size()) +
                      " bytes to the memory file failed: " + std::strerror(error));
  }
  dlerror();  // clear any stale error
  void* dl = dlopen(fd_path(fd).c_str(), RTLD_NOW | RTLD_LOCAL);
  if (dl == nullptr) {
    const std::string error = dl_error_text();
    ::close(fd);
    return Status(StatusCode::LoadFailed,
                  "load_object: the " + std::to_string(image.size()) +
                      "-byte image is not a loadable shared object: " + error);
  }
  const uint64_t new_handle = next_handle_++;
  Object object;
  object.dl = dl;
  object.fd = fd;
  object.hash = hash;
  object.refs = 1;
  object.image.assign(image.begin(), image.end());
  objects_.emplace(new_handle, std::move(object));
  by_hash_.emplace(hash, new_handle);
  *handle = new_handle;
  return Status::ok();
}

Status ObjectLoader::resolve(uint64_t handle, const char* symbol, uint64_t* addr) {
  if (symbol == nullptr || addr == nullptr) {
    return Status(StatusCode::InvalidArgument, "resolve_symbol: symbol and out must not be null");
  }
  std::lock_guard lock(mutex_);
  const auto it = objects_.find(handle);
  if (it == objects_.end()) {
    return Status(StatusCode::InvalidArgument, "resolve_symbol: unknown object handle " +
                                                   std::to_string(handle) +
                                                   " (not loaded, or already unloaded)");
  }
  dlerror();
  void* found = dlsym(it->second.dl, symbol);
  if (found == nullptr) {
    return Status(StatusCode::LoadFailed, "resolve_symbol: symbol '" + std::string(symbol) +
                                              "' not found in object " + std::to_string(handle) +
                                              ": " + dl_error_text());
  }
  *addr = reinterpret_cast<uint64_t>(found);
  return Status::ok();
}

Status ObjectLoader::unload(uint64_t handle) {
  std::lock_guard lock(mutex_);
  const auto it = objects_.find(handle);
  if (it == objects_.end()) {
    return Status(StatusCode::InvalidArgument, "unload_object: unknown object handle " +
                                                   std::to_string(handle) +
                                                   " (not loaded, or already unloaded)");
  }
  if (--it->second.refs != 0) return Status::ok();
  const auto [first, last] = by_hash_.equal_range(it->second.hash);
  for (auto h = first; h != last; ++h) {
    if (h->second == handle) {
      by_hash_.erase(h);
      break;
    }
  }
  close_object(it->second);
  objects_.erase(it);
  return Status::ok();
}

std::size_t ObjectLoader::loaded_count() const {
  std::lock_guard lock(mutex_);
  return objects_.size();
}

uint32_t ObjectLoader::refcount(uint64_t handle) const {
  std::lock_guard lock(mutex_);
  const auto it = objects_.find(handle);
  return it == objects_.end() ? 0 : it->second.refs;
}

}  // namespace chiprt::platform::sim
