// ForkServer: a single-threaded process that starts isolated devices for the host, so that the
// host never forks while threads of its own run.
//
// A process that drives several isolated devices (a node of chips) always has threads running:
// other devices' output forwarders, run pipelines, copy engines. Forking it then copies locks that
// another thread may hold (a sanitizer's allocator among them) and, under ThreadSanitizer, makes
// the device's first thread reuse a dead thread's stack. So the host forks once, early, while it
// is still single-threaded (start), and that copy of itself, the server, starts every device
// after: it clone()s the device's init with CLONE_PARENT, so the host stays the init's parent and
// reaps it, signals it and reads its exit exactly as for a device it forked itself
// (isolated_platform.h). The init then runs run_device_init as after the host's own fork.
//
// What a device started this way sees is the server's copy of the host, taken at start: code the
// host loaded later (dlopen) and host globals written later are not in it (device memory, the
// start record and the object images the host loads are). Device ranges the host reserves later
// are reserved in the server too (reserve), so a device's MAP_FIXED mapping never replaces a
// mapping of the server's that the device would still use; a range the server has in use is
// refused, and the host takes another.
//
// Lifetime: start() in a single-threaded process; the server ends when this object is destroyed
// (the socket closes; the destructor reaps it, SIGKILL after a grace) or when the host process
// dies. In a forked child of the host, the object is the parent's: every call is refused.
// Threading: reserve and spawn may be called from any host thread; they are serialised.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>

#include "chiprt/status.h"
#include "platform/platform.h"
#include "platform/sim/device_process.h"

namespace chiprt::platform::sim {

class ForkServer final : public DeviceStarter {
 public:
  // Forks the server. `inherited_views`: the host's views of isolated devices' memories that exist
  // now (the server's devices unmap them; later views are not in the server). Call it while this
  // process runs no other thread (InternalError when the fork or the socket fails).
  static Status start(std::span<const DeviceProcessStart::HostView> inherited_views,
                      std::shared_ptr<ForkServer>* out);
  ~ForkServer() override;
  ForkServer(const ForkServer&) = delete;
  ForkServer& operator=(const ForkServer&) = delete;

  // Reserves [start, start + bytes) PROT_NONE in the server: Ok, or InvalidArgument when the
  // server has something mapped there (the host then takes another range).
  Status reserve(uintptr_t start, uint64_t bytes);
  // Starts a device's init from `start` (its descriptors are sent along; the server closes its
  // copies), in a pid namespace of its own when `pid_namespace` and permitted. Sets the init's pid
  // (a child of this process) and whether it got the namespace.
  Status spawn(const DeviceProcessStart& start, pid_t* init_pid, bool* pid_namespace);

  pid_t pid() const noexcept { return pid_; }

 private:
  ForkServer(pid_t pid, int socket) : pid_(pid), socket_(socket), creator_(getpid()) {}
  // One request and its reply; `fds` travel with a spawn.
  Status call(const void* request, std::size_t bytes, std::span<const int> fds, void* reply,
              std::size_t reply_bytes, const char* what);

  const pid_t pid_;
  const int socket_;
  const pid_t creator_;
  std::mutex mutex_;
  uint32_t next_seq_ = 1;
  bool lost_ = false;
};

}  // namespace chiprt::platform::sim
