#include "diagnostics/artifacts/files.h"

#include "chiprt/ring_sizes.h"

namespace chiprt::diagnostics::artifact {
namespace {

std::string scope_recommendation(const ScopeStat& scope) {
  static constexpr RingField kFields[3] = {RingField::TaskWindow, RingField::HeapBytes,
                                           RingField::DepPool};
  const uint64_t capacity[3] = {scope.task_window_capacity, scope.heap_capacity,
                                scope.dep_pool_capacity};
  std::string text;
  for (int ring = 0; ring < 3; ++ring) {
    if (scope.waits[ring] == 0) continue;
    if (!text.empty()) text += "; ";
    text += "raise " + std::string(ring_field_config_name(kFields[ring])) + " (" +
            std::string(ring_field_env_name(kFields[ring])) + ") for depth " +
            std::to_string(scope.depth) + " above " + std::to_string(capacity[ring]) + ": " +
            std::to_string(scope.waits[ring]) + " wait(s), " +
            format_duration_ns(scope.wait_ns[ring]);
  }
  return text;
}

}  // namespace

void write_scope_stats(TextOut& out, const RunModel& model) {
  for (const ScopeStat& s : model.scopes) {
    out << "{\"scope\":" << s.scope << ",\"depth\":" << s.depth << ",\"tasks\":" << s.tasks
        << ",\"peak_task_window\":" << s.peak_task_window
        << ",\"task_window_capacity\":" << s.task_window_capacity
        << ",\"peak_heap_bytes\":" << s.peak_heap_bytes << ",\"heap_capacity\":" << s.heap_capacity
        << ",\"peak_dep_pool\":" << s.peak_dep_pool
        << ",\"dep_pool_capacity\":" << s.dep_pool_capacity;
    for (const auto& [field, values] :
         {std::pair{"waits", s.waits}, std::pair{"wait_ns", s.wait_ns}}) {
      out << ",\"" << field << "\":{";
      for (int ring = 0; ring < 3; ++ring) {
        out << (ring ? ",\"" : "\"") << ring_key(ring) << "\":" << values[ring];
      }
      out << '}';
    }
    const std::string recommendation = scope_recommendation(s);
    out << ",\"recommendation\":" << (recommendation.empty() ? "\"\"" : quote(recommendation))
        << "}\n";
  }
}

void read_scope_stats(const std::string& path, RunModel& model) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "missing or unreadable");
  std::string line;
  size_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) continue;
    try {
      const json j = json::parse(line);
      ScopeStat s;
      s.scope = j.at("scope").get<uint64_t>();
      s.depth = j.at("depth").get<uint32_t>();
      s.tasks = j.at("tasks").get<uint64_t>();
      s.peak_task_window = j.at("peak_task_window").get<uint64_t>();
      s.task_window_capacity = j.at("task_window_capacity").get<uint64_t>();
      s.peak_heap_bytes = j.at("peak_heap_bytes").get<uint64_t>();
      s.heap_capacity = j.at("heap_capacity").get<uint64_t>();
      s.peak_dep_pool = j.at("peak_dep_pool").get<uint64_t>();
      s.dep_pool_capacity = j.at("dep_pool_capacity").get<uint64_t>();
      for (int ring = 0; ring < 3; ++ring) {
        s.waits[ring] = j.at("waits").at(ring_key(ring)).get<uint64_t>();
        s.wait_ns[ring] = j.at("wait_ns").at(ring_key(ring)).get<uint64_t>();
      }
      model.scopes.push_back(s);
    } catch (const json::exception& e) {
      fail(path, "line " + std::to_string(number) + ": malformed (" + e.what() + ")");
    }
  }
}

}  // namespace chiprt::diagnostics::artifact
