// Fork detection for the host objects that own threads and a device (Worker, RunHandle).
//
// What a process created before fork() belongs to that process: in the child, its threads (the
// pipeline thread, the chip's threads) do not exist and its device (an isolated device process,
// its shared control block) is the parent's. An object records fork_generation() when it is
// created; in a forked child the generation differs, and the object refuses every call with
// Error(InheritedWorker) and is dropped without joining a thread or talking to the device.
// Thread-safe; the counter is bumped by a pthread_atfork child handler (async-signal-safe).
#pragma once

#include <cstdint>

namespace chiprt::host {

// How many fork()s this process descends from since the handler was registered (registered by
// the first call; 0 in the process that made it).
uint64_t fork_generation() noexcept;

// Throws Error(InheritedWorker) when `generation` (fork_generation() taken at creation by the
// process `creator_pid`) is not this process's: "<object>::<what> called in process P, a forked
// child of process C, which created it ...; create a new <facade> in this process".
void refuse_inherited(uint64_t generation, int creator_pid, const char* object, const char* what,
                      const char* facade);

}  // namespace chiprt::host
