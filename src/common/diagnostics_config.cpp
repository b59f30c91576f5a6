#include <charconv>
#include <string>
#include <vector>

#include "chiprt/diagnostics.h"

namespace chiprt {
namespace {

// "name" or "name=N" with N in [lo, hi]; *level keeps its default when no "=N" is given.
bool parse_level(std::string_view item, std::string_view value, int lo, int hi, int* level,
                 std::string* error) {
  int parsed = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), parsed);
  if (ec != std::errc() || end != value.data() + value.size() || parsed < lo || parsed > hi) {
    *error = "'" + std::string(item) + "': the level must be an integer in [" + std::to_string(lo) +
             ", " + std::to_string(hi) + "]";
    return false;
  }
  *level = parsed;
  return true;
}

}  // namespace

DiagnosticsConfig DiagnosticsConfig::all(std::string output_dir) {
  DiagnosticsConfig config;
  config.swimlane_level = kMaxSwimlaneLevel;
  config.task_timing = true;
  config.dependency_graph = true;
  config.scope_stats = true;
  config.args_dump_level = 1;
  config.hardware_counters = true;
  config.output_dir = std::move(output_dir);
  return config;
}

std::vector<std::string> DiagnosticsConfig::validate() const {
  std::vector<std::string> errors;
  if (swimlane_level < 0 || swimlane_level > kMaxSwimlaneLevel) {
    errors.push_back("diagnostics.swimlane_level=" + std::to_string(swimlane_level) +
                     ": must be in [0, " + std::to_string(kMaxSwimlaneLevel) + "] (0 off)");
  }
  if (args_dump_level < 0 || args_dump_level > kMaxArgsDumpLevel) {
    errors.push_back("diagnostics.args_dump_level=" + std::to_string(args_dump_level) +
                     ": must be in [0, " + std::to_string(kMaxArgsDumpLevel) + "] (0 off)");
  }
  if (args_dump_budget_bytes > kMaxArgsDumpBudgetBytes) {
    errors.push_back(
        "diagnostics.args_dump_budget_bytes=" + std::to_string(args_dump_budget_bytes) +
        ": must be at most " + std::to_string(kMaxArgsDumpBudgetBytes) + " (4 GiB)");
  }
  if (any() && output_dir.empty()) {
    errors.push_back(
        "diagnostics: a collector is on but output_dir is empty; set diagnostics.output_dir to "
        "the directory the run directories go into (chiprt run: --diag-dir DIR)");
  }
  return errors;
}

bool parse_diagnostics_list(std::string_view list, DiagnosticsConfig* out, std::string* error) {
  std::string ignored;
  if (error == nullptr) error = &ignored;
  if (out == nullptr) {
    *error = "no DiagnosticsConfig to fill";
    return false;
  }
  DiagnosticsConfig config = *out;
  if (list == "all") {
    DiagnosticsConfig all = DiagnosticsConfig::all(config.output_dir);
    all.args_dump_budget_bytes = config.args_dump_budget_bytes;
    all.background_write = config.background_write;
    *out = all;
    return true;
  }
  if (list.empty()) {
    *error =
        "the list is empty; give 'all' or some of swimlane[=1-4], tasks, deps, scopes, "
        "args[=1-3], counters";
    return false;
  }
  std::size_t pos = 0;
  while (pos <= list.size()) {
    const std::size_t comma = list.find(',', pos);
    const std::string_view item =
        list.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    const std::size_t eq = item.find('=');
    const std::string_view name = item.substr(0, eq);
    const bool has_value = eq != std::string_view::npos;
    const std::string_view value = has_value ? item.substr(eq + 1) : std::string_view();
    bool ok = true;
    if (name == "swimlane") {
      config.swimlane_level = DiagnosticsConfig::kMaxSwimlaneLevel;
      if (has_value) {
        ok = parse_level(item, value, 1, DiagnosticsConfig::kMaxSwimlaneLevel,
                         &config.swimlane_level, error);
      }
    } else if (name == "args") {
      config.args_dump_level = 1;
      if (has_value) {
        ok = parse_level(item, value, 1, DiagnosticsConfig::kMaxArgsDumpLevel,
                         &config.args_dump_level, error);
      }
    } else if (!has_value && name == "tasks") {
      config.task_timing = true;
    } else if (!has_value && name == "deps") {
      config.dependency_graph = true;
    } else if (!has_value && name == "scopes") {
      config.scope_stats = true;
    } else if (!has_value && name == "counters") {
      config.hardware_counters = true;
    } else if (item == "all") {
      *error =
          "'all' stands alone: give 'all' by itself, or a comma-separated list of "
          "swimlane[=1-4], tasks, deps, scopes, args[=1-3], counters without it";
      ok = false;
    } else if (item.empty()) {
      *error = "an empty entry in '" + std::string(list) +
               "' (two commas in a row, or a comma at an end); give a comma-separated list of "
               "swimlane[=1-4], tasks, deps, scopes, args[=1-3], counters, or 'all'";
      ok = false;
    } else {
      *error = "'" + std::string(item) +
               "' is not a diagnostics switch; give 'all' or a comma-separated list of "
               "swimlane[=1-4], tasks, deps, scopes, args[=1-3], counters";
      ok = false;
    }
    if (!ok) return false;
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  *out = config;
  return true;
}

}  // namespace chiprt
