// The device half of the isolated simulated device (isolated_platform.h): what the forked processes
// run. Two of them: the device's init, the host's child, and under it the device process.
//
// The init (run_device_init) exists so that what a kernel forks ends with the device, every
// descendant, including one that left the device's session and process group (a daemon). Where
// the host could create a pid namespace for it (the host forks it with CLONE_NEWPID in effect:
// root, or CAP_SYS_ADMIN), the init is pid 1 of that namespace: when it ends, however it ends
// (even SIGKILL), the kernel ends every process in the namespace before the host can reap the
// init, and the device's getppid() is 1 (the init, which ignores the signals a process of its
// namespace sends it), so chip code cannot name the host by pid. Elsewhere (an unprivileged host)
// the init is a child subreaper: the device's orphaned descendants become its children, and once
// the device process ended it kills them (SIGKILL, level by level from /proc/thread-self/children)
// and reaps them before it exits; the host asks it to end the device with SIGTERM and SIGKILLs it
// only when it does not exit in time. Either way the init reaps the device process, writes its
// wait status into the control block (device_channel.h) and exits; it ends the device when the
// host process is gone (a pidfd of the host's, opened by the host before the fork). It runs in a
// process group of its own, which the device shares, so the terminal's Ctrl-C reaches the host
// only (which then ends the device).
//
// The device process maps the device memory file where the host reserved the device range,
// drops the host's mapping, sends its stdout/stderr into the host's pipes (stdout line-buffered),
// closes every other descriptor it inherited (the host's sockets, pipes and files stay the
// host's), installs the fault recorders (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP
// handlers on an alternate signal stack on every chip thread, and an exit handler), starts a
// LaunchEngine whose chip threads park on shared futexes, publishes its ChipServices in the
// control block and serves the host's commands until Shutdown.
//
// Lifetime: both processes end with _exit (Shutdown, the death of the host process, which a
// watcher thread sees through the host's pidfd, or exit() from chip code after it was recorded)
// or by a signal, never by returning, so the host's destructors and atexit handlers (LSan's
// among them) never run in them. They live as long as the host process, not as long as the host
// thread that forked them. The device process also ends when its parent changes (the init died).
// Threading: the init is single-threaded; the device's server loop runs on its main thread (the
// only one, besides the host watcher); the engine's threads run chip code.
#pragma once

#include <sys/types.h>

#include <cstdint>

#include "platform/sim/device_channel.h"
#include "platform/sim/launch_engine.h"

namespace chiprt::platform::sim {

struct DeviceProcessStart {
  pid_t host_pid = 0;
  // A pidfd of the host process (opened by the host before the fork; -1 where pidfds are
  // missing, then the processes poll getppid() instead). Required for `pid_namespace`.
  int host_pidfd = -1;
  // The init is pid 1 of a pid namespace of its own (else a child subreaper).
  bool pid_namespace = false;
  // The device memory file (control block first) and where the host mapped it (`host_view`, to
  // unmap) and reserved the device range (`device_view`, to map it MAP_FIXED), `bytes` each.
  int memfd = -1;
  void* host_view = nullptr;
  void* device_view = nullptr;
  uint64_t bytes = 0;
  // The write ends of the host's output pipes (become fds 1 and 2; every other descriptor but
  // `memfd` and `host_pidfd` is closed).
  int stdout_write = -1;
  int stderr_write = -1;
  LaunchEngine::Options engine;
  // The host's views of the other isolated devices' memories in this process (shared, writable
  // mappings the fork copies): the device process unmaps them, so that its kernels cannot reach
  // another device's memory. Fixed capacity: the init may not allocate.
  struct HostView {
    void* start = nullptr;
    uint64_t bytes = 0;
  };
  static constexpr int kMaxForeignViews = 64;
  HostView foreign_views[kMaxForeignViews] = {};
  int foreign_view_count = 0;
};

// Runs the device's init, which forks the device process; called in the host's child right after
// fork. Never returns.
[[noreturn]] void run_device_init(const DeviceProcessStart& start) noexcept;

}  // namespace chiprt::platform::sim
