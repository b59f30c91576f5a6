#include "common/signal_text.h"

#include <csignal>
#include <cstring>

namespace chiprt::common {

std::string signal_text(int signal) {
  switch (signal) {
    case SIGSEGV:
      return "SIGSEGV (invalid memory reference)";
    case SIGBUS:
      return "SIGBUS (bus error: misaligned access or memory past the end of a mapping)";
    case SIGILL:
      return "SIGILL (illegal instruction)";
    case SIGFPE:
      return "SIGFPE (arithmetic fault, e.g. integer division by zero)";
    case SIGABRT:
      return "SIGABRT (abort() or a failed assert)";
    case SIGTRAP:
      return "SIGTRAP (trace/breakpoint trap)";
    case SIGKILL:
      return "SIGKILL (killed)";
    default:
      break;
  }
  const char* name = sigabbrev_np(signal);
  return name != nullptr ? "SIG" + std::string(name) + " (signal " + std::to_string(signal) + ")"
                         : "signal " + std::to_string(signal);
}

}  // namespace chiprt::common
