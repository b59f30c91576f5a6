#include "diagnostics/artifacts/files.h"

namespace chiprt::diagnostics::artifact {
namespace {

TaskNode node_from_json(const json& n, const std::string& path) {
  TaskNode node;
  node.task = n.at("task").get<uint64_t>();
  node.func_id = n.at("func_id").get<int32_t>();
  node.block_num = n.at("block_num").get<uint32_t>();
  node.scope_depth = n.at("scope_depth").get<uint32_t>();
  if (!parse_core_type(n.at("core_type").get<std::string>(), &node.core_type)) {
    fail(path, "task " + std::to_string(node.task) + ": unknown core_type");
  }
  node.dependency_only = n.at("dependency_only").get<bool>();
  node.internal = n.at("internal").get<bool>();
  node.submit_begin_ns = n.value("submit_begin_ns", kNoTime);
  node.submit_end_ns = n.value("submit_end_ns", kNoTime);
  node.ready_ns = n.value("ready_ns", kNoTime);
  return node;
}

// The kind bit named `name` (dependency_kind_name); -1 when none is.
int dependency_kind_bit(std::string_view name) {
  for (int bit = 0; bit < kDependencyKindCount; ++bit) {
    if (dependency_kind_name(bit) == name) return bit;
  }
  return -1;
}

// Parses `"RAW","WAW"]` (the kinds of an edge after its '[') at p; the end of it, or null.
const char* kinds_from_text(const char* p, const char* end, DependencyKinds* kinds) {
  if (p < end && *p == ']') return p + 1;
  while (p < end && *p == '"') {
    const char* close = std::find(p + 1, end, '"');
    if (close == end) return nullptr;
    const int bit =
        dependency_kind_bit(std::string_view(p + 1, static_cast<size_t>(close - p - 1)));
    if (bit < 0) return nullptr;
    *kinds |= static_cast<DependencyKinds>(1u << bit);
    p = close + 1;
    if (p < end && *p == ']') return p + 1;
    if (p == end || *p != ',') return nullptr;
    ++p;
  }
  return nullptr;
}

// "[producer,consumer,[kinds]]" (or "[producer,consumer]", without kinds) without a JSON document
// per edge.
Edge edge_from_text(const std::string& text, const std::string& path, size_t line) {
  Edge edge;
  const char* p = text.data() + 1;
  const char* end = text.data() + text.size();
  auto a = std::from_chars(p, end, edge.producer);
  if (a.ec == std::errc() && a.ptr < end && *a.ptr == ',') {
    auto b = std::from_chars(a.ptr + 1, end, edge.consumer);
    if (b.ec == std::errc() && b.ptr + 1 == end && *b.ptr == ']') return edge;
    if (b.ec == std::errc() && b.ptr + 2 < end && b.ptr[0] == ',' && b.ptr[1] == '[') {
      const char* rest = kinds_from_text(b.ptr + 2, end, &edge.kinds);
      if (rest != nullptr && rest + 1 == end && *rest == ']') return edge;
    }
  }
  fail(path, "line " + std::to_string(line) + ": malformed edge \"" + text + "\"");
}

Edge edge_from_json(const json& e, const std::string& path) {
  Edge edge{e.at(0).get<uint64_t>(), e.at(1).get<uint64_t>(), 0};
  if (e.size() > 2) {
    for (const json& name : e.at(2)) {
      const int bit = dependency_kind_bit(name.get<std::string>());
      if (bit < 0) fail(path, "unknown dependency kind " + name.dump());
      edge.kinds |= static_cast<DependencyKinds>(1u << bit);
    }
  }
  return edge;
}

}  // namespace

void write_deps(TextOut& out, const RunModel& model) {
  out << "{\"nodes\":[";
  Separator sep;
  for (const TaskNode& n : model.nodes) {
    out << sep.next() << "{\"task\":" << n.task << ",\"func_id\":" << n.func_id
        << ",\"kernel\":" << quote(model.kernel_label(n.func_id))
        << ",\"block_num\":" << n.block_num << ",\"core_type\":\"" << core_type_name(n.core_type)
        << "\",\"scope_depth\":" << n.scope_depth
        << ",\"dependency_only\":" << (n.dependency_only ? "true" : "false")
        << ",\"internal\":" << (n.internal ? "true" : "false");
    if (n.submit_begin_ns != kNoTime) out << ",\"submit_begin_ns\":" << n.submit_begin_ns;
    if (n.submit_end_ns != kNoTime) out << ",\"submit_end_ns\":" << n.submit_end_ns;
    if (n.ready_ns != kNoTime) out << ",\"ready_ns\":" << n.ready_ns;
    out << "}";
  }
  // The user's edges, then host_build_graph's internal ones, each [producer,consumer,[kinds]].
  for (const bool internal : {false, true}) {
    out << (internal ? "\n],\n\"internal_edges\":[" : "\n],\n\"edges\":[");
    Separator edge_sep;
    for (const Edge& e : model.edges) {
      if (((e.kinds & kInternalDependencies) != 0) != internal) continue;
      out << edge_sep.next() << "[" << e.producer << "," << e.consumer << ",[";
      const char* comma = "";
      for (int bit = 0; bit < kDependencyKindCount; ++bit) {
        if ((e.kinds & (1u << bit)) == 0) continue;
        out << comma << '"' << dependency_kind_name(bit) << '"';
        comma = ",";
      }
      out << "]]";
    }
  }
  out << "\n]}\n";
}

void read_deps(const std::string& path, RunModel& model) {
  size_t current_line = 0;
  try {
    const bool by_line =
        for_each_element_line(path, "{\"nodes\":[", [&](const std::string& text, size_t line) {
          current_line = line;
          if (text[0] == '[') {
            model.edges.push_back(edge_from_text(text, path, line));
          } else {
            model.nodes.push_back(node_from_json(parse_line(text, path, line), path));
          }
        });
    if (by_line) return;
    current_line = 0;
    const json deps = read_json(path);
    for (const json& n : deps.at("nodes")) model.nodes.push_back(node_from_json(n, path));
    for (const json& e : deps.at("edges")) model.edges.push_back(edge_from_json(e, path));
    if (deps.contains("internal_edges")) {
      for (const json& e : deps.at("internal_edges"))
        model.edges.push_back(edge_from_json(e, path));
    }
  } catch (const json::exception& e) {
    fail(path, (current_line ? "line " + std::to_string(current_line) + ": " : std::string()) +
                   "malformed: " + e.what());
  }
}

}  // namespace chiprt::diagnostics::artifact
