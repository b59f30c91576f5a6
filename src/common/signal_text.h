// A signal named for a person reading a fault message: "SIGSEGV (invalid memory reference)".
// The host's fault messages and the isolated device's fault summary share it, so a crash reads
// the same in both.
//
// Threading: pure; safe from any thread.
#pragma once

#include <string>

namespace chiprt::common {

// "SIGSEGV (invalid memory reference)", "SIGUSR1 (signal 10)", "signal 77" (a number without a
// name).
std::string signal_text(int signal);

}  // namespace chiprt::common
