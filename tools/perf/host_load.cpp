#include "host_load.h"

#include <cstdio>
#include <fstream>

namespace chiprt::perf {

std::optional<double> read_load_average() {
  std::ifstream in("/proc/loadavg");
  double one_minute = 0;
  if (!(in >> one_minute)) return std::nullopt;
  return one_minute;
}

bool HostLoad::busy() const noexcept {
  const auto reaches = [&](const std::optional<double>& load) {
    return load.has_value() && *load >= static_cast<double>(hardware_threads);
  };
  return reaches(start) || reaches(end);
}

std::string HostLoad::describe() const {
  const auto text = [](const std::optional<double>& load) {
    if (!load.has_value()) return std::string("unknown");
    char buffer[32];
    std::snprintf(buffer, sizeof(buffer), "%.2f", *load);
    return std::string(buffer);
  };
  std::string out = "host load average (1 min): " + text(start) + " at start, " + text(end) +
                    " at end (" + std::to_string(hardware_threads) + " hardware threads)\n";
  if (busy()) {
    out +=
        "warning: the host's load reached its hardware threads during this run: other work "
        "competed for the CPUs, so threaded cells are inflated (compare cells within this run "
        "only, or rerun on a quieter host)\n";
  }
  return out;
}

nlohmann::json HostLoad::to_json() const {
  const auto value = [](const std::optional<double>& load) {
    return load.has_value() ? nlohmann::json(*load) : nlohmann::json(nullptr);
  };
  return {{"start", value(start)}, {"end", value(end)}, {"busy", busy()}};
}

}  // namespace chiprt::perf
