// The device half of the isolated simulated device (isolated_platform.h): what the forked device
// process runs. It maps the device memory file where the host reserved the device range, drops the
// host's mapping, sends its stdout/stderr into the host's pipes (stdout line-buffered), closes
// every other descriptor it inherited (the host's sockets, pipes and files stay the host's),
// installs the fault recorders (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP handlers on an
// alternate signal stack on every chip thread, and an exit handler), starts a LaunchEngine whose
// chip threads park on shared futexes, publishes its ChipServices in the control block
// (device_channel.h) and serves the host's commands until Shutdown.
//
// Lifetime: the process ends with _exit (Shutdown, the death of the host process, which a watcher
// thread sees through a pidfd, or exit() from chip code after it was recorded) or by a signal,
// never by returning, so the host's destructors and atexit handlers (LSan's among them) never run
// in it. It lives as long as the host process, not as long as the host thread that forked it.
// Threading: the server loop runs on the thread that forked (the only thread of the new process,
// besides the host watcher); the engine's threads run chip code.
#pragma once

#include <sys/types.h>

#include <cstdint>

#include "platform/sim/device_channel.h"
#include "platform/sim/launch_engine.h"

namespace chiprt::platform::sim {

struct DeviceProcessStart {
  pid_t host_pid = 0;
  // The device memory file (control block first) and where the host mapped it (`host_view`, to
  // unmap) and reserved the device range (`device_view`, to map it MAP_FIXED), `bytes` each.
  int memfd = -1;
  void* host_view = nullptr;
  void* device_view = nullptr;
  uint64_t bytes = 0;
  // The write ends of the host's output pipes (become fds 1 and 2) and the read ends (closed).
  int stdout_write = -1;
  int stderr_write = -1;
  int stdout_read = -1;
  int stderr_read = -1;
  LaunchEngine::Options engine;
};

// Runs the device process; called in the child right after fork. Never returns.
[[noreturn]] void run_device_process(const DeviceProcessStart& start) noexcept;

}  // namespace chiprt::platform::sim
