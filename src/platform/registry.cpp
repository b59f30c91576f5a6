#include "platform/registry.h"

#include <array>
#include <string>

#include "platform/sim/sim_platform.h"

namespace chiprt::platform {
namespace {

using Factory = Status (*)(const PlatformOptions& options, std::unique_ptr<Platform>* out);
using StarterFactory = Status (*)(std::shared_ptr<DeviceStarter>* out);

struct Entry {
  std::string_view name;
  Factory create;
  StarterFactory start_starter;
};

Status create_sim(const PlatformOptions& options, std::unique_ptr<Platform>* out) {
  return sim::create_sim_platform(options.sim, options.device_starter, out);
}

// One line per platform.
constexpr Entry kPlatforms[] = {
    {"sim", &create_sim, &sim::start_sim_device_starter},
};
constexpr auto kNames = [] {
  std::array<std::string_view, std::size(kPlatforms)> names{};
  for (std::size_t i = 0; i < names.size(); ++i) names[i] = kPlatforms[i].name;
  return names;
}();

// InvalidConfig naming the known platforms.
Status unknown_platform(std::string_view name) {
  std::string known;
  for (std::string_view known_name : kNames) {
    known += (known.empty() ? "" : ", ") + std::string(known_name);
  }
  // The name comes from the user: quoted printable, and at most 64 characters of it.
  constexpr std::size_t kQuotedChars = 64;
  std::string quoted;
  for (char c : name.substr(0, kQuotedChars)) {
    quoted += (c >= 0x20 && c < 0x7f) ? c : '?';
  }
  if (name.size() > kQuotedChars) quoted += "... (" + std::to_string(name.size()) + " characters)";
  return Status(StatusCode::InvalidConfig,
                "unknown platform '" + quoted + "'; available: " + known);
}

}  // namespace

std::span<const std::string_view> platform_names() noexcept {
  return kNames;
}

Status create_platform(std::string_view name, const PlatformOptions& options,
                       std::unique_ptr<Platform>* out) {
  if (out == nullptr) {
    return Status(StatusCode::InvalidArgument, "create_platform: out must not be null");
  }
  for (const Entry& entry : kPlatforms) {
    if (entry.name == name) return entry.create(options, out);
  }
  return unknown_platform(name);
}

Status start_device_starter(std::string_view name, std::shared_ptr<DeviceStarter>* out) {
  if (out == nullptr) {
    return Status(StatusCode::InvalidArgument, "start_device_starter: out must not be null");
  }
  for (const Entry& entry : kPlatforms) {
    if (entry.name == name) return entry.start_starter(out);
  }
  return unknown_platform(name);
}

}  // namespace chiprt::platform
