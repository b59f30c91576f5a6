#include "diagnostics/artifacts/files.h"

#include <unordered_map>

#include "common/diag_layout.h"

namespace chiprt::diagnostics::artifact {
namespace {

const char* lane_name(uint32_t lane) {
  static constexpr const char* kNames[3] = {"AIC", "AIV0", "AIV1"};
  return kNames[lane < 3 ? lane : 0];
}

const char* loop_phase_name(uint32_t what) {
  switch (static_cast<common::DiagLoopPhase>(what)) {
    case common::DiagLoopPhase::Completions:
      return "completions";
    case common::DiagLoopPhase::Dispatch:
      return "dispatch";
    case common::DiagLoopPhase::Park:
      return "park";
    case common::DiagLoopPhase::Orchestrate:
      return "orchestrate";
  }
  return "loop phase";
}

const char* thread_span_kind_name(ThreadSpan::Kind kind) {
  switch (kind) {
    case ThreadSpan::Kind::LoopPhase:
      return "loop_phase";
    case ThreadSpan::Kind::Submit:
      return "submit";
    case ThreadSpan::Kind::RingWait:
      return "ring_wait";
  }
  return "loop_phase";
}

std::string tensor_summary(const TensorArgRecord& arg) {
  std::string text =
      std::string(arg_tag_name(arg.tag)) + " " + std::string(dtype_name(arg.dtype)) + "[";
  for (size_t i = 0; i < arg.shape.size(); ++i) {
    text += (i ? "," : "") + std::to_string(arg.shape[i]);
  }
  char addr[40];
  std::snprintf(addr, sizeof addr, "] @0x%llx+%llu",
                static_cast<unsigned long long>(arg.buffer_addr),
                static_cast<unsigned long long>(arg.start_offset));
  return text + addr;
}

}  // namespace

void write_trace(TextOut& out, const RunModel& model, const Index& index) {
  Separator sep;
  out << "{\"displayTimeUnit\":\"ns\",\n\"otherData\":";
  json other;
  json anchors = json::array();
  for (const auto& [ns, cycles] : model.anchors) anchors.push_back({ns, cycles});
  other["anchors"] = std::move(anchors);
  other["clock_hz"] = model.clock_hz;
  other["wall_ns"] = model.wall_ns;
  other["run_number"] = model.run_number;
  other["variant"] = model.variant;
  out << dump(other) << ",\n\"traceEvents\":[";

  auto meta = [&](const char* what, int pid, int tid, const json& args) {
    out << sep.next() << "{\"ph\":\"M\",\"name\":\"" << what << "\",\"pid\":" << pid
        << ",\"tid\":" << tid << ",\"args\":" << dump(args) << "}";
  };
  meta("process_name", 1, 0, {{"name", "host"}});
  meta("process_sort_index", 1, 0, {{"sort_index", 0}});
  meta("thread_name", 1, 0, {{"name", "host"}});
  meta("process_name", 2, 0, {{"name", "AICPU"}});
  meta("process_sort_index", 2, 0, {{"sort_index", 1}});
  uint32_t threads = model.shape.aicpu_threads;
  for (const SchedulerEvent& e : model.scheduler_events) threads = std::max(threads, e.thread + 1);
  for (const ThreadSpan& s : model.thread_spans) threads = std::max(threads, s.thread + 1);
  for (uint32_t t = 0; t < threads; ++t) {
    const bool orchestrator = t < model.shape.orchestrator_threads;
    meta("thread_name", 2, static_cast<int>(t),
         {{"name", (orchestrator ? "orchestrator " : "scheduler ") + std::to_string(t)}});
    meta("thread_sort_index", 2, static_cast<int>(t), {{"sort_index", t}});
  }
  uint32_t clusters = model.shape.clusters;
  for (const BlockRun& b : model.blocks) {
    if (b.core >= 0) {
      clusters =
          std::max(clusters, core_slot(model.shape, static_cast<uint32_t>(b.core)).cluster + 1);
    }
  }
  for (uint32_t c = 0; c < clusters; ++c) {
    const int pid = 3 + static_cast<int>(c);
    meta("process_name", pid, 0, {{"name", "cluster " + std::to_string(c)}});
    meta("process_sort_index", pid, 0, {{"sort_index", 2 + c}});
    const uint32_t cores[3] = {c, model.shape.device_clusters + 2 * c,
                               model.shape.device_clusters + 2 * c + 1};
    for (uint32_t lane = 0; lane < 3; ++lane) {
      meta(
          "thread_name", pid, static_cast<int>(lane),
          {{"name", std::string(lane_name(lane)) + " (core " + std::to_string(cores[lane]) + ")"}});
      meta("thread_sort_index", pid, static_cast<int>(lane), {{"sort_index", lane}});
    }
  }

  for (const HostSpan& span : model.host_spans) {
    out << sep.next() << "{\"ph\":\"X\",\"cat\":\"host\",\"name\":" << quote(span.name)
        << ",\"pid\":1,\"tid\":0,\"ts\":" << micros(span.begin_ns)
        << ",\"dur\":" << micros(span.end_ns > span.begin_ns ? span.end_ns - span.begin_ns : 0)
        << "}";
  }

  // Blocks.
  std::unordered_map<int32_t, std::string> labels;  // func_id -> its quoted label
  for (size_t i = 0; i < model.blocks.size(); ++i) {
    const BlockRun& b = model.blocks[i];
    if (b.core < 0 || b.start_ns == kNoTime) continue;
    const TaskNode* node = find_node(model, index, b.task);
    const int32_t func_id = node ? node->func_id : -1;
    auto label = labels.find(func_id);
    if (label == labels.end()) {
      label = labels.emplace(func_id, quote(model.kernel_label(func_id))).first;
    }
    const CoreSlot slot = core_slot(model.shape, static_cast<uint32_t>(b.core));
    const bool finished = b.end_ns != kNoTime;
    const uint64_t end = finished ? b.end_ns : std::max(model.wall_ns, b.start_ns);
    out << sep.next() << "{\"ph\":\"X\",\"cat\":\"task\",\"name\":" << label->second
        << ",\"pid\":" << 3 + slot.cluster << ",\"tid\":" << slot.lane
        << ",\"ts\":" << micros(b.start_ns) << ",\"dur\":" << micros(end - b.start_ns)
        << ",\"args\":{\"task\":" << b.task << ",\"block\":" << b.block << ",\"core\":" << b.core
        << ",\"func_id\":" << func_id << ",\"scope_depth\":" << (node ? node->scope_depth : 0);
    if (auto [arg, args_end] = index.args(b.task); arg != args_end) {
      out << ",\"tensors\":[";
      for (const size_t* first = arg; arg != args_end; ++arg) {
        // Tag and dtype names, digits and "@0x+": nothing to escape.
        out << (arg != first ? ",\"" : "\"") << tensor_summary(model.args[*arg]) << '"';
      }
      out << "]";
    }
    if (!finished) {
      const bool stuck = model.error && model.error->stuck_task >= 0 &&
                         static_cast<uint64_t>(model.error->stuck_task) == b.task;
      out << ",\"state\":\"" << (stuck ? "stuck" : "running") << "\"";
    }
    out << "}}";
  }

  for (const ThreadSpan& span : model.thread_spans) {
    std::string name;
    switch (span.kind) {
      case ThreadSpan::Kind::LoopPhase:
        name = loop_phase_name(span.what);
        break;
      case ThreadSpan::Kind::Submit:
        name = "submit";
        break;
      case ThreadSpan::Kind::RingWait:
        name = std::string("ring wait: ") + (span.what < 3 ? ring_key(span.what) : "?");
        break;
    }
    out << sep.next() << "{\"ph\":\"X\",\"cat\":\"thread\",\"name\":\"" << name
        << "\",\"pid\":2,\"tid\":" << span.thread << ",\"ts\":" << micros(span.begin_ns)
        << ",\"dur\":" << micros(span.end_ns > span.begin_ns ? span.end_ns - span.begin_ns : 0)
        << ",\"args\":{\"kind\":\"" << thread_span_kind_name(span.kind)
        << "\",\"what\":" << span.what << ",\"task\":" << span.task << "}}";
  }
  for (const SchedulerEvent& e : model.scheduler_events) {
    out << sep.next() << "{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"sched\",\"name\":\""
        << (e.kind == SchedulerEvent::Kind::Dispatch ? "dispatch" : "complete")
        << "\",\"pid\":2,\"tid\":" << e.thread << ",\"ts\":" << micros(e.t_ns)
        << ",\"args\":{\"task\":" << e.task << ",\"block\":" << e.block << ",\"core\":" << e.core
        << "}}";
  }

  // A task's first-starting and last-ending block that ran (in model order, the first of ties).
  auto task_ends = [&](uint64_t task, size_t* first, size_t* last) {
    bool any = false;
    for (auto [it, end] = index.blocks(task); it != end; ++it) {
      const size_t i = *it;
      const BlockRun& b = model.blocks[i];
      if (b.core < 0 || b.start_ns == kNoTime) continue;
      if (!any) {
        *first = *last = i;
        any = true;
        continue;
      }
      if (b.start_ns < model.blocks[*first].start_ns) *first = i;
      if (b.end_ns != kNoTime &&
          (model.blocks[*last].end_ns == kNoTime || b.end_ns > model.blocks[*last].end_ns)) {
        *last = i;
      }
    }
    return any;
  };
  // Flow arrows: producer's last block end to consumer's first block start.
  for (size_t i = 0; i < model.edges.size(); ++i) {
    const Edge& edge = model.edges[i];
    size_t p_first = 0, p_last = 0, c_first = 0, c_last = 0;
    if (!task_ends(edge.producer, &p_first, &p_last) ||
        !task_ends(edge.consumer, &c_first, &c_last)) {
      continue;
    }
    const BlockRun& from = model.blocks[p_last];
    const BlockRun& to = model.blocks[c_first];
    if (from.end_ns == kNoTime) continue;
    const CoreSlot a = core_slot(model.shape, static_cast<uint32_t>(from.core));
    const CoreSlot b = core_slot(model.shape, static_cast<uint32_t>(to.core));
    out << sep.next() << "{\"ph\":\"s\",\"cat\":\"dep\",\"name\":\"dep\",\"id\":" << i
        << ",\"bp\":\"e\",\"pid\":" << 3 + a.cluster << ",\"tid\":" << a.lane
        << ",\"ts\":" << micros(from.end_ns) << ",\"args\":{\"producer\":" << edge.producer
        << ",\"consumer\":" << edge.consumer << "}}";
    out << sep.next() << "{\"ph\":\"f\",\"cat\":\"dep\",\"name\":\"dep\",\"id\":" << i
        << ",\"bp\":\"e\",\"pid\":" << 3 + b.cluster << ",\"tid\":" << b.lane
        << ",\"ts\":" << micros(to.start_ns) << ",\"args\":{\"producer\":" << edge.producer
        << ",\"consumer\":" << edge.consumer << "}}";
  }
  out << "\n]}\n";
}

void read_trace(const std::string& path, RunModel& model, bool blocks_from_trace) {
  std::unordered_map<uint64_t, size_t> node_index;
  for (size_t i = 0; i < model.nodes.size(); ++i) node_index.emplace(model.nodes[i].task, i);
  const bool nodes_from_trace = model.nodes.empty();
  auto on_event = [&](const json& e) {
    const std::string ph = e.at("ph").get<std::string>();
    const std::string cat = e.value("cat", "");
    if (ph == "X" && cat == "task" && blocks_from_trace) {
      const json& args = e.at("args");
      BlockRun block;
      block.task = args.at("task").get<uint64_t>();
      block.block = args.at("block").get<uint32_t>();
      block.core = args.at("core").get<int32_t>();
      block.start_ns = from_micros(e.at("ts").get<double>());
      if (!args.contains("state"))
        block.end_ns = block.start_ns + from_micros(e.at("dur").get<double>());
      model.blocks.push_back(block);
      if (nodes_from_trace && !node_index.count(block.task)) {
        TaskNode node;
        node.task = block.task;
        node.func_id = args.at("func_id").get<int32_t>();
        node.scope_depth = args.value("scope_depth", 0u);
        const KernelName* kernel = model.kernel(node.func_id);
        if (kernel) node.core_type = kernel->core_type;
        node_index.emplace(block.task, model.nodes.size());
        model.nodes.push_back(node);
      }
      if (nodes_from_trace) {
        TaskNode& node = model.nodes[node_index.at(block.task)];
        node.block_num = std::max(node.block_num, block.block + 1);
      }
    } else if (ph == "X" && cat == "thread") {
      const json& args = e.at("args");
      ThreadSpan span;
      const std::string kind = args.at("kind").get<std::string>();
      span.kind = kind == "submit"      ? ThreadSpan::Kind::Submit
                  : kind == "ring_wait" ? ThreadSpan::Kind::RingWait
                                        : ThreadSpan::Kind::LoopPhase;
      span.thread = e.at("tid").get<uint32_t>();
      span.what = args.at("what").get<uint32_t>();
      span.task = args.at("task").get<uint64_t>();
      span.begin_ns = from_micros(e.at("ts").get<double>());
      span.end_ns = span.begin_ns + from_micros(e.at("dur").get<double>());
      model.thread_spans.push_back(span);
    } else if (ph == "i" && cat == "sched") {
      const json& args = e.at("args");
      SchedulerEvent event;
      event.kind = e.at("name").get<std::string>() == "complete" ? SchedulerEvent::Kind::Complete
                                                                 : SchedulerEvent::Kind::Dispatch;
      event.thread = e.at("tid").get<uint32_t>();
      event.task = args.at("task").get<uint64_t>();
      event.block = args.at("block").get<uint32_t>();
      event.core = args.at("core").get<int32_t>();
      event.t_ns = from_micros(e.at("ts").get<double>());
      model.scheduler_events.push_back(event);
    }
  };
  size_t current_line = 0;
  try {
    const bool by_line = for_each_element_line(
        path, "{\"displayTimeUnit\":\"ns\",", [&](const std::string& text, size_t line) {
          // Task slices are the bulk of a trace; tasks.csv has them already.
          if (!blocks_from_trace && text.find("\"cat\":\"task\"") != std::string::npos) return;
          current_line = line;
          on_event(parse_line(text, path, line));
        });
    if (!by_line) {
      current_line = 0;
      const json trace = read_json(path);
      for (const json& e : trace.at("traceEvents")) on_event(e);
    }
  } catch (const json::exception& e) {
    fail(path, (current_line ? "line " + std::to_string(current_line) + ": " : std::string()) +
                   "malformed: " + e.what());
  }
  if (nodes_from_trace) {
    std::stable_sort(model.nodes.begin(), model.nodes.end(),
                     [](const TaskNode& a, const TaskNode& b) { return a.task < b.task; });
  }
}

}  // namespace chiprt::diagnostics::artifact
