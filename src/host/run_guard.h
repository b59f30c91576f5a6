// The refusal every public host object (Worker, Node) makes of a call from inside a run: from an
// orchestration function or a kernel, the call would wait for the run it is part of.
// Thread-safe (reads the calling thread's run context).
#pragma once

namespace chiprt::host {

// Throws Error(ReentrantCall) "<owner>::<what> called from inside a run, from <where>" when the
// calling thread is running a run's code; `hint`, when given, replaces the code's (which speaks of
// Worker calls).
void refuse_inside_run(const char* owner, const char* what, const char* hint = nullptr);

}  // namespace chiprt::host
