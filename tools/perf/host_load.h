// HostLoad: the host's 1-minute load average at the start and the end of a `chiprt bench` run,
// so a table says how busy the shared machine was while it was measured. Threaded cells on a host
// whose load reaches its hardware threads measure the share of the CPUs the run got as much as
// the runtime (on the 2-core development machine, 2-3x higher at load 3-7).
//
// A plain value; read_load_average() reads /proc/loadavg (Linux) and is safe from any thread.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace chiprt::perf {

// The 1-minute load average, or nullopt where /proc/loadavg cannot be read.
std::optional<double> read_load_average();

struct HostLoad {
  std::optional<double> start;
  std::optional<double> end;
  unsigned hardware_threads = 1;

  // Load at start or end at least the hardware threads: other work competed for the CPUs.
  bool busy() const noexcept;
  // "host load average (1 min): 0.8 at start, 1.1 at end (2 hardware threads)", plus a warning
  // line when busy(); one line "... unknown ..." without /proc/loadavg. Ends with a newline.
  std::string describe() const;
  // {"start": 0.8, "end": 1.1, "busy": false} (null where unknown).
  nlohmann::json to_json() const;
};

}  // namespace chiprt::perf
