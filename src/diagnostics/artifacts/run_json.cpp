#include "diagnostics/artifacts/files.h"

namespace chiprt::diagnostics::artifact {

json run_json(const RunModel& model, const std::vector<std::string>& files) {
  json run;
  run["format"] = "chiprt-diagnostics-run";
  run["version"] = 1;
  run["run_number"] = model.run_number;
  run["callable_id"] = model.callable_id;
  run["variant"] = model.variant;
  run["serial"] = model.serial;
  run["isolated"] = model.isolated;
  const DiagnosticsConfig& c = model.config;
  run["config"] = {{"swimlane_level", c.swimlane_level},
                   {"task_timing", c.task_timing},
                   {"dependency_graph", c.dependency_graph},
                   {"scope_stats", c.scope_stats},
                   {"args_dump_level", c.args_dump_level},
                   {"args_dump_budget_bytes", c.args_dump_budget_bytes},
                   {"hardware_counters", c.hardware_counters},
                   {"output_dir", c.output_dir},
                   {"background_write", c.background_write}};
  const ChipShape& s = model.shape;
  run["shape"] = {{"aicpu_threads", s.aicpu_threads},
                  {"orchestrator_threads", s.orchestrator_threads},
                  {"clusters", s.clusters},
                  {"device_clusters", s.device_clusters},
                  {"cores", s.cores},
                  {"kernel_threads", s.kernel_threads},
                  {"host_threads", s.host_threads}};
  json kernels = json::array();
  for (const KernelName& k : model.kernels) {
    kernels.push_back({{"func_id", k.func_id},
                       {"symbol", k.symbol},
                       {"name", k.name},
                       {"core_type", std::string(core_type_name(k.core_type))}});
  }
  run["kernels"] = std::move(kernels);
  run["clock_hz"] = model.clock_hz;
  json anchors = json::array();
  for (const auto& [ns, cycles] : model.anchors) anchors.push_back({ns, cycles});
  run["anchors"] = std::move(anchors);
  run["wall_ns"] = model.wall_ns;
  const HostLoad& load = model.host_load;
  auto known = [](double value) { return value >= 0 ? json(value) : json(nullptr); };
  run["host_load"] = {{"start", known(load.start)},
                      {"end", known(load.end)},
                      {"hardware_threads", load.hardware_threads}};
  json spans = json::array();
  for (const HostSpan& span : model.host_spans) {
    spans.push_back({{"name", span.name}, {"begin_ns", span.begin_ns}, {"end_ns", span.end_ns}});
  }
  run["host_spans"] = std::move(spans);
  run["have_edges"] = model.have_edges;
  run["tasks"] = model.nodes.size();
  run["blocks"] = model.blocks.size();
  run["records_received"] = model.records_received;
  run["records_dropped"] = model.records_dropped;
  run["drop_reason"] = model.drop_reason;
  run["notes"] = model.notes;
  run["counters_note"] = model.counters_note;
  run["error"] = run_error_json(model);
  run["files"] = files;
  return run;
}

json run_error_json(const RunModel& model) {
  if (!model.error) return nullptr;
  const RunError& e = *model.error;
  return {{"code", e.code},
          {"name", e.name},
          {"message", e.message},
          {"hint", e.hint},
          {"stall", e.stall},
          {"stuck_task", e.stuck_task},
          {"stuck_core", e.stuck_core}};
}

void read_run_json(const std::string& path, RunModel& model) {
  const json run = read_json(path);
  try {
    if (!run.is_object()) fail(path, "not a JSON object");
    model.run_number = run.at("run_number").get<uint32_t>();
    model.callable_id = run.at("callable_id").get<int32_t>();
    model.variant = run.at("variant").get<std::string>();
    model.serial = run.at("serial").get<bool>();
    model.isolated = run.at("isolated").get<bool>();
    const json& c = run.at("config");
    model.config.swimlane_level = c.at("swimlane_level").get<int>();
    model.config.task_timing = c.at("task_timing").get<bool>();
    model.config.dependency_graph = c.at("dependency_graph").get<bool>();
    model.config.scope_stats = c.at("scope_stats").get<bool>();
    model.config.args_dump_level = c.at("args_dump_level").get<int>();
    model.config.args_dump_budget_bytes = c.at("args_dump_budget_bytes").get<uint64_t>();
    model.config.hardware_counters = c.at("hardware_counters").get<bool>();
    model.config.output_dir = c.at("output_dir").get<std::string>();
    model.config.background_write = c.at("background_write").get<bool>();
    const json& s = run.at("shape");
    model.shape.aicpu_threads = s.at("aicpu_threads").get<uint32_t>();
    model.shape.orchestrator_threads = s.at("orchestrator_threads").get<uint32_t>();
    model.shape.clusters = s.at("clusters").get<uint32_t>();
    model.shape.device_clusters = s.at("device_clusters").get<uint32_t>();
    model.shape.cores = s.at("cores").get<uint32_t>();
    model.shape.kernel_threads = s.value("kernel_threads", 0u);
    model.shape.host_threads = s.value("host_threads", 0u);
    for (const json& k : run.at("kernels")) {
      KernelName name;
      name.func_id = k.at("func_id").get<int32_t>();
      name.symbol = k.at("symbol").get<std::string>();
      // Absent from the run.json of a chiprt that had no display names: the symbol is shown.
      name.name = k.value("name", std::string());
      if (!parse_core_type(k.at("core_type").get<std::string>(), &name.core_type)) {
        fail(path, "kernels: unknown core_type " + k.at("core_type").dump());
      }
      model.kernels.push_back(std::move(name));
    }
    model.clock_hz = run.at("clock_hz").get<uint64_t>();
    for (const json& a : run.at("anchors")) {
      model.anchors.emplace_back(a.at(0).get<uint64_t>(), a.at(1).get<uint64_t>());
    }
    model.wall_ns = run.at("wall_ns").get<uint64_t>();
    if (const auto load = run.find("host_load"); load != run.end()) {
      auto known = [&](const char* key) {
        const auto value = load->find(key);
        return value == load->end() || value->is_null() ? -1.0 : value->get<double>();
      };
      model.host_load.start = known("start");
      model.host_load.end = known("end");
      model.host_load.hardware_threads = load->value("hardware_threads", 0u);
    }
    for (const json& h : run.at("host_spans")) {
      model.host_spans.push_back({h.at("name").get<std::string>(), h.at("begin_ns").get<uint64_t>(),
                                  h.at("end_ns").get<uint64_t>()});
    }
    model.have_edges = run.at("have_edges").get<bool>();
    model.records_received = run.at("records_received").get<uint64_t>();
    model.records_dropped = run.at("records_dropped").get<uint64_t>();
    model.drop_reason = run.at("drop_reason").get<std::string>();
    model.notes = run.at("notes").get<std::vector<std::string>>();
    model.counters_note = run.at("counters_note").get<std::string>();
    const json& e = run.at("error");
    if (!e.is_null()) {
      RunError error;
      error.code = e.at("code").get<int32_t>();
      error.name = e.at("name").get<std::string>();
      error.message = e.at("message").get<std::string>();
      error.hint = e.at("hint").get<std::string>();
      error.stall = e.at("stall").get<std::string>();
      error.stuck_task = e.at("stuck_task").get<int64_t>();
      error.stuck_core = e.at("stuck_core").get<int32_t>();
      model.error = std::move(error);
    }
  } catch (const json::exception& e) {
    fail(path, std::string("malformed: ") + e.what());
  }
}

}  // namespace chiprt::diagnostics::artifact
