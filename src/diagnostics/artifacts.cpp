#include "diagnostics/artifacts.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string_view>
#include <type_traits>
#include <unordered_map>

#include "chiprt/ring_sizes.h"
#include "chiprt/status.h"
#include "common/diag_layout.h"
#include "diagnostics/report_html.h"

namespace chiprt::diagnostics {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

[[noreturn]] void fail(const std::string& file, const std::string& what) {
  throw Error(StatusCode::DiagnosticsError, file + ": " + what);
}

// JSON string literal of `text` (invalid UTF-8 replaced rather than thrown on).
std::string quote(const std::string& text) {
  return json(text).dump(-1, ' ', false, json::error_handler_t::replace);
}
std::string dump(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

// Trace-event times are microseconds; three decimals keep the nanoseconds exactly.
struct Micros {
  uint64_t ns;
};
Micros micros(uint64_t ns) {
  return {ns};
}

// A buffered text file writer that formats numbers with std::to_chars: the writers emit a few
// numbers per task, and iostream formatting (locale, facets) made writing a run's files cost
// microseconds per task. The same `<<` syntax as a stream; errors surface at close.
class TextOut {
 public:
  TextOut() : buffer_(std::make_unique_for_overwrite<char[]>(kBufferBytes)) {}
  ~TextOut() { close(); }
  TextOut(const TextOut&) = delete;
  TextOut& operator=(const TextOut&) = delete;

  bool open(const std::string& path) {
    file_ = std::fopen(path.c_str(), "wb");
    ok_ = file_ != nullptr;
    return ok_;
  }
  // Flushes and closes; false when any write failed.
  bool close() {
    if (file_ == nullptr) return ok_;
    flush();
    if (std::fclose(file_) != 0) ok_ = false;
    file_ = nullptr;
    return ok_;
  }
  explicit operator bool() const { return ok_; }

  TextOut& write(const char* data, std::size_t bytes) {
    if (bytes == 0) return *this;  // data may be null (an empty args.bin)
    if (bytes > kBufferBytes - used_) {
      flush();
      if (bytes > kBufferBytes) {
        if (file_ != nullptr && std::fwrite(data, 1, bytes, file_) != bytes) ok_ = false;
        return *this;
      }
    }
    std::memcpy(buffer_.get() + used_, data, bytes);
    used_ += bytes;
    return *this;
  }
  TextOut& operator<<(std::string_view text) { return write(text.data(), text.size()); }
  TextOut& operator<<(const std::string& text) { return write(text.data(), text.size()); }
  TextOut& operator<<(const char* text) { return write(text, std::strlen(text)); }
  TextOut& operator<<(char c) { return write(&c, 1); }
  template <class T>
  requires(std::is_integral_v<T> && !std::is_same_v<T, char> && !std::is_same_v<T, bool>) TextOut&
  operator<<(T value) {
    char text[24];
    const auto result = std::to_chars(text, text + sizeof text, value);
    return write(text, static_cast<std::size_t>(result.ptr - text));
  }
  TextOut& operator<<(bool value) { return *this << (value ? '1' : '0'); }
  TextOut& operator<<(double value) {
    char text[32];
    const auto result = std::to_chars(text, text + sizeof text, value);
    return write(text, static_cast<std::size_t>(result.ptr - text));
  }
  TextOut& operator<<(Micros t) {
    char text[32];
    auto result = std::to_chars(text, text + sizeof text, t.ns / 1000);
    *result.ptr++ = '.';
    const uint64_t frac = t.ns % 1000;
    *result.ptr++ = static_cast<char>('0' + frac / 100);
    *result.ptr++ = static_cast<char>('0' + frac / 10 % 10);
    *result.ptr++ = static_cast<char>('0' + frac % 10);
    return write(text, static_cast<std::size_t>(result.ptr - text));
  }

 private:
  static constexpr std::size_t kBufferBytes = 256 << 10;
  void flush() {
    if (used_ != 0 && file_ != nullptr && std::fwrite(buffer_.get(), 1, used_, file_) != used_) {
      ok_ = false;
    }
    used_ = 0;
  }
  std::unique_ptr<char[]> buffer_;
  std::size_t used_ = 0;
  std::FILE* file_ = nullptr;
  bool ok_ = false;
};
uint64_t from_micros(double us) {
  return static_cast<uint64_t>(std::llround(us * 1000.0));
}

std::string csv_time(uint64_t ns) {
  return ns == kNoTime ? std::string() : std::to_string(ns);
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

// Written to NAME.tmp and renamed on commit, so a reader never sees half a file under the real
// name; a buffered stream, so large files never sit in memory.
class OutFile {
 public:
  OutFile(const std::string& run_dir, const char* name)
      : name_(name), path_((fs::path(run_dir) / name).string()), tmp_(path_ + ".tmp") {
    if (!out_.open(tmp_)) fail(path_, "cannot open for writing");
  }
  ~OutFile() {
    if (!committed_) {
      out_.close();
      std::error_code ec;
      fs::remove(tmp_, ec);
    }
  }
  OutFile(const OutFile&) = delete;
  OutFile& operator=(const OutFile&) = delete;

  TextOut& out() { return out_; }
  // Closes and renames into place; returns the path.
  std::string commit() {
    if (!out_.close()) fail(path_, "write failed (disk full or the directory went away?)");
    std::error_code ec;
    fs::rename(tmp_, path_, ec);
    if (ec) fail(path_, "cannot rename " + tmp_ + " into place: " + ec.message());
    committed_ = true;
    return path_;
  }

 private:
  std::string name_;
  std::string path_;
  std::string tmp_;
  TextOut out_;
  bool committed_ = false;
};

// ", " between the elements of a hand-written JSON array.
class Separator {
 public:
  const char* next() { return first_ ? (first_ = false, "\n") : ",\n"; }

 private:
  bool first_ = true;
};

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

const char* ring_key(int ring) {
  static constexpr const char* kKeys[3] = {"task_window", "heap", "dep_pool"};
  return kKeys[ring];
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

bool parse_core_type(const std::string& name, CoreType* out) {
  for (int i = 0; i < kCoreTypeCount; ++i) {
    if (core_type_name(static_cast<CoreType>(i)) == name) {
      *out = static_cast<CoreType>(i);
      return true;
    }
  }
  return false;
}

bool parse_arg_tag(const std::string& name, ArgTag* out) {
  for (int i = 0; i < kArgTagCount; ++i) {
    if (arg_tag_name(static_cast<ArgTag>(i)) == name) {
      *out = static_cast<ArgTag>(i);
      return true;
    }
  }
  return false;
}

std::string counter_valid_names(uint32_t valid) {
  std::string names;
  auto add = [&](uint32_t bit, const char* name) {
    if ((valid & bit) == 0) return;
    if (!names.empty()) names += ' ';
    names += name;
  };
  add(common::kDiagHaveInstructions, "instructions");
  add(common::kDiagHaveCycles, "cycles");
  add(common::kDiagHaveCpuTime, "cpu_ns");
  return names;
}

// Lookups the writers share, as sorted index arrays over the model's rows (a few bytes per row;
// per-task hash maps of vectors cost a hundred bytes and more per task at a million tasks).
// A run's model comes sorted by task (nodes, blocks, args); a model built otherwise (by hand,
// read back) is indexed through the order arrays.
class Index {
 public:
  Index(const RunModel& model, bool with_edges, bool with_args) : model_(model) {
    nodes_sorted_ =
        std::is_sorted(model.nodes.begin(), model.nodes.end(),
                       [](const TaskNode& a, const TaskNode& b) { return a.task < b.task; });
    if (!nodes_sorted_)
      node_order_ = order_by(model.nodes.size(), [&](size_t i) { return model.nodes[i].task; });
    block_order_ = order_by(model.blocks.size(), [&](size_t i) { return model.blocks[i].task; });
    if (with_edges) {
      by_consumer_ =
          order_by(model.edges.size(), [&](size_t i) { return model.edges[i].consumer; });
      by_producer_ =
          order_by(model.edges.size(), [&](size_t i) { return model.edges[i].producer; });
    }
    if (with_args) {
      args_order_ = order_by(model.args.size(), [&](size_t i) { return model.args[i].task; });
    }
  }

  const TaskNode* node(uint64_t task) const {
    if (nodes_sorted_) {
      auto it = std::lower_bound(model_.nodes.begin(), model_.nodes.end(), task,
                                 [](const TaskNode& n, uint64_t t) { return n.task < t; });
      return it != model_.nodes.end() && it->task == task ? &*it : nullptr;
    }
    auto [first, last] = range(node_order_, task, [&](size_t i) { return model_.nodes[i].task; });
    return first != last ? &model_.nodes[*first] : nullptr;
  }
  // The task's producers (consumers), in the order of the model's edges, to `f`.
  template <class F>
  void for_each_producer(uint64_t task, F&& f) const {
    auto key = [&](size_t i) { return model_.edges[i].consumer; };
    for (auto [it, end] = range(by_consumer_, task, key); it != end; ++it)
      f(model_.edges[*it].producer);
  }
  template <class F>
  void for_each_consumer(uint64_t task, F&& f) const {
    auto key = [&](size_t i) { return model_.edges[i].producer; };
    for (auto [it, end] = range(by_producer_, task, key); it != end; ++it)
      f(model_.edges[*it].consumer);
  }
  // Indices into model.blocks (model.args) of the task's rows, in model order.
  std::pair<const size_t*, const size_t*> blocks(uint64_t task) const {
    auto [first, last] = range(block_order_, task, [&](size_t i) { return model_.blocks[i].task; });
    return {block_order_.data() + (first - block_order_.begin()),
            block_order_.data() + (last - block_order_.begin())};
  }
  std::pair<const size_t*, const size_t*> args(uint64_t task) const {
    auto [first, last] = range(args_order_, task, [&](size_t i) { return model_.args[i].task; });
    return {args_order_.data() + (first - args_order_.begin()),
            args_order_.data() + (last - args_order_.begin())};
  }

 private:
  using Order = std::vector<size_t>;
  // 0..n-1 sorted by (key, position).
  template <class Key>
  static Order order_by(size_t n, Key key) {
    Order order(n);
    for (size_t i = 0; i < n; ++i) order[i] = i;
    bool sorted = true;
    for (size_t i = 1; i < n && sorted; ++i) sorted = key(i - 1) <= key(i);
    if (!sorted) {
      std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        const uint64_t ka = key(a), kb = key(b);
        return ka != kb ? ka < kb : a < b;
      });
    }
    return order;
  }
  template <class Key>
  static std::pair<Order::const_iterator, Order::const_iterator> range(const Order& order,
                                                                       uint64_t task, Key key) {
    auto first = std::lower_bound(order.begin(), order.end(), task,
                                  [&](size_t i, uint64_t t) { return key(i) < t; });
    auto last = std::upper_bound(first, order.end(), task,
                                 [&](uint64_t t, size_t i) { return t < key(i); });
    return {first, last};
  }

  const RunModel& model_;
  bool nodes_sorted_ = true;
  Order node_order_;
  Order block_order_;
  Order by_consumer_, by_producer_;
  Order args_order_;
};

const TaskNode* find_node(const RunModel&, const Index& index, uint64_t task) {
  return index.node(task);
}

// ---------------------------------------------------------------------------------------------
// run.json

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
                  {"cores", s.cores}};
  json kernels = json::array();
  for (const KernelName& k : model.kernels) {
    kernels.push_back({{"func_id", k.func_id},
                       {"symbol", k.symbol},
                       {"core_type", std::string(core_type_name(k.core_type))}});
  }
  run["kernels"] = std::move(kernels);
  run["clock_hz"] = model.clock_hz;
  json anchors = json::array();
  for (const auto& [ns, cycles] : model.anchors) anchors.push_back({ns, cycles});
  run["anchors"] = std::move(anchors);
  run["wall_ns"] = model.wall_ns;
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
  if (model.error) {
    const RunError& e = *model.error;
    run["error"] = {{"code", e.code},
                    {"name", e.name},
                    {"message", e.message},
                    {"hint", e.hint},
                    {"stall", e.stall},
                    {"stuck_task", e.stuck_task},
                    {"stuck_core", e.stuck_core}};
  } else {
    run["error"] = nullptr;
  }
  run["files"] = files;
  return run;
}

// ---------------------------------------------------------------------------------------------
// trace.json

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

// ---------------------------------------------------------------------------------------------
// tasks.csv, deps.json

constexpr const char* kTasksHeader =
    "task,block,func_id,kernel,core_type,core,submit_ns,ready_ns,dispatch_ns,start_ns,end_ns,"
    "producers,consumers,submit_begin_ns,complete_ns";

std::string id_list(const Index& index, bool producers, uint64_t task) {
  std::string text;
  auto add = [&](uint64_t id) {
    if (!text.empty()) text += ' ';
    text += std::to_string(id);
  };
  if (producers) {
    index.for_each_producer(task, add);
  } else {
    index.for_each_consumer(task, add);
  }
  return text;
}

void write_tasks(TextOut& out, const RunModel& model, const Index& index) {
  out << kTasksHeader << "\n";
  std::unordered_map<int32_t, std::string> labels;
  auto row = [&](uint64_t task, const std::string& block, const BlockRun* run) {
    const TaskNode* node = find_node(model, index, task);
    const int32_t func_id = node ? node->func_id : -1;
    auto label = labels.find(func_id);
    if (label == labels.end()) label = labels.emplace(func_id, model.kernel_label(func_id)).first;
    out << task << ',' << block << ',' << func_id << ',' << csv_field(label->second) << ','
        << (node ? core_type_name(node->core_type) : "") << ',' << (run ? run->core : -1) << ','
        << csv_time(node ? node->submit_end_ns : kNoTime) << ','
        << csv_time(node ? node->ready_ns : kNoTime) << ','
        << csv_time(run ? run->dispatch_ns : kNoTime) << ','
        << csv_time(run ? run->start_ns : kNoTime) << ',' << csv_time(run ? run->end_ns : kNoTime)
        << ',' << id_list(index, true, task) << ',' << id_list(index, false, task) << ','
        << csv_time(node ? node->submit_begin_ns : kNoTime) << ','
        << csv_time(run ? run->complete_ns : kNoTime) << '\n';
  };
  for (const BlockRun& b : model.blocks) row(b.task, std::to_string(b.block), &b);
  // Tasks without a block record: a row with an empty block (submitted, never dispatched).
  for (const TaskNode& node : model.nodes) {
    if (auto [first, last] = index.blocks(node.task); first == last) row(node.task, "", nullptr);
  }
}

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

// ---------------------------------------------------------------------------------------------
// critical_path.md / .json

// A Markdown table cell: a '|' in a kernel's name would end the cell.
std::string cell(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '|') out += '\\';
    out += c == '\n' ? ' ' : c;
  }
  return out;
}

json waits_json(const uint64_t* waited) {
  json waits;
  for (int k = 0; k < kWaitKinds; ++k) waits[wait_kind_name(static_cast<WaitKind>(k))] = waited[k];
  return waits;
}

void write_critical_path_md(TextOut& out, const RunModel& model, const Analysis& a) {
  char line[512];
  out << "# Critical path of run " << model.run_number << "\n\n";
  out << "**Verdict:** " << a.verdict << "\n\n";
  std::snprintf(line, sizeof line,
                "Path: %zu step(s), %s of kernel time, %s with waits; chip span %s; wall %s; "
                "task time %s; average parallelism %.2f.\n\n",
                a.path.size(), format_duration_ns(a.path_ns).c_str(),
                format_duration_ns(a.path_with_waits_ns).c_str(),
                format_duration_ns(a.chip_span_ns).c_str(), format_duration_ns(a.wall_ns).c_str(),
                format_duration_ns(a.task_time_ns).c_str(), a.average_parallelism);
  out << line;
  out << "## Steps\n\n| # | task | kernel | core | start | end | span | waited | main wait |";
  for (int k = 0; k < kWaitKinds; ++k)
    out << ' ' << wait_kind_name(static_cast<WaitKind>(k)) << " |";
  out << "\n|---|---|---|---|---|---|---|---|---|";
  for (int k = 0; k < kWaitKinds; ++k) out << "---|";
  out << "\n";
  for (size_t i = 0; i < a.path.size(); ++i) {
    const PathStep& s = a.path[i];
    out << "| " << i + 1 << " | " << s.task << " | " << cell(model.kernel_label(s.func_id)) << " | "
        << (s.core >= 0 ? core_label(model.shape, static_cast<uint32_t>(s.core)) : "-") << " | "
        << s.start_ns << " | " << s.end_ns << " | " << format_duration_ns(s.end_ns - s.start_ns)
        << " | " << format_duration_ns(s.gap_ns) << " | "
        << (s.gap_ns ? wait_kind_name(s.main_wait) : "-") << " |";
    for (int k = 0; k < kWaitKinds; ++k) out << ' ' << s.waited_ns[k] << " |";
    out << "\n";
  }
  out << "\nTimes in ns from the run start.\n\n## Waits along the path\n\n| cause | time | share "
         "|\n"
         "|---|---|---|\n";
  for (int k = 0; k < kWaitKinds; ++k) {
    const double share = a.path_with_waits_ns == 0 ? 0.0
                                                   : 100.0 * static_cast<double>(a.waited_ns[k]) /
                                                         static_cast<double>(a.path_with_waits_ns);
    std::snprintf(line, sizeof line, "| %s | %s | %.1f%% |\n",
                  wait_kind_name(static_cast<WaitKind>(k)),
                  format_duration_ns(a.waited_ns[k]).c_str(), share);
    out << line;
  }
  out << "\n## Per-core utilisation\n\n| core | blocks | busy | utilisation |\n|---|---|---|---|\n";
  for (const CoreUse& c : a.cores) {
    std::snprintf(line, sizeof line, "| %s | %llu | %s | %.1f%% |\n", cell(c.label).c_str(),
                  static_cast<unsigned long long>(c.blocks), format_duration_ns(c.busy_ns).c_str(),
                  100.0 * c.utilisation);
    out << line;
  }
  out << "\n## Kernels\n\n| kernel | blocks | total | mean | p50 | p99 | max |\n"
         "|---|---|---|---|---|---|---|\n";
  for (const KernelStat& k : a.kernels) {
    out << "| " << cell(k.label) << " | " << k.count << " | " << format_duration_ns(k.total_ns)
        << " | " << format_duration_ns(k.mean_ns) << " | " << format_duration_ns(k.p50_ns) << " | "
        << format_duration_ns(k.p99_ns) << " | " << format_duration_ns(k.max_ns) << " |\n";
  }
  if (!a.caveats.empty()) {
    out << "\n## Caveats\n\n";
    for (const std::string& c : a.caveats) out << "- " << c << "\n";
  }
}

void write_critical_path_json(TextOut& out, const RunModel& model, const Analysis& a) {
  json head;
  head["verdict"] = a.verdict;
  head["bound"] = bound_name(a.bound);
  head["path_ns"] = a.path_ns;
  head["path_with_waits_ns"] = a.path_with_waits_ns;
  head["chip_span_ns"] = a.chip_span_ns;
  head["wall_ns"] = a.wall_ns;
  head["task_time_ns"] = a.task_time_ns;
  head["average_parallelism"] = a.average_parallelism;
  head["waited_ns"] = waits_json(a.waited_ns);
  json kernels = json::array();
  for (const KernelStat& k : a.kernels) {
    kernels.push_back({{"func_id", k.func_id},
                       {"label", k.label},
                       {"count", k.count},
                       {"total_ns", k.total_ns},
                       {"mean_ns", k.mean_ns},
                       {"p50_ns", k.p50_ns},
                       {"p99_ns", k.p99_ns},
                       {"max_ns", k.max_ns}});
  }
  head["kernels"] = std::move(kernels);
  json cores = json::array();
  for (const CoreUse& c : a.cores) {
    cores.push_back({{"core", c.core},
                     {"label", c.label},
                     {"blocks", c.blocks},
                     {"busy_ns", c.busy_ns},
                     {"utilisation", c.utilisation}});
  }
  head["cores"] = std::move(cores);
  head["caveats"] = a.caveats;
  std::string text = dump(head);
  text.pop_back();  // the closing brace: the steps follow, streamed
  out << text << ",\"steps\":[";
  Separator sep;
  for (const PathStep& s : a.path) {
    json step = {{"task", s.task},
                 {"func_id", s.func_id},
                 {"kernel", model.kernel_label(s.func_id)},
                 {"core", s.core},
                 {"start_ns", s.start_ns},
                 {"end_ns", s.end_ns},
                 {"gap_ns", s.gap_ns},
                 {"waited_ns", waits_json(s.waited_ns)},
                 {"main_wait", wait_kind_name(s.main_wait)}};
    out << sep.next() << dump(step);
  }
  out << "\n]}\n";
}

// ---------------------------------------------------------------------------------------------
// scope_stats.jsonl, args.json, counters.csv

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

// Written with TextOut rather than a json value per record: a json object per tensor made
// args.json the slowest file of a run (bgemm, 1536 arguments: 5.5 ms of a 27 ms run).
void write_u64_list(TextOut& out, const std::vector<uint64_t>& values) {
  out << '[';
  for (size_t i = 0; i < values.size(); ++i) out << (i ? "," : "") << values[i];
  out << ']';
}

void write_data(TextOut& out, const TensorArgRecord::Data& d) {
  out << "{\"present\":" << (d.present ? "true" : "false") << ",\"offset\":" << d.offset
      << ",\"bytes\":" << d.bytes << ",\"wanted_bytes\":" << d.wanted_bytes << '}';
}

void write_args(TextOut& out, const RunModel& model, const ArgsData& data) {
  out << "{\"bin_file\":\"" << kArgsBinFile << "\",\"bin_bytes\":" << data.bytes.size()
      << ",\n\"records\":[";
  Separator sep;
  // Tag and dtype names are identifiers: no escaping needed.
  for (const TensorArgRecord& a : model.args) {
    out << sep.next() << "{\"task\":" << a.task << ",\"index\":" << a.index << ",\"tag\":\""
        << arg_tag_name(a.tag) << "\",\"buffer_addr\":" << a.buffer_addr
        << ",\"start_offset\":" << a.start_offset << ",\"dtype\":\"" << dtype_name(a.dtype)
        << "\",\"shape\":";
    write_u64_list(out, a.shape);
    out << ",\"strides\":";
    write_u64_list(out, a.strides);
    out << ",\"before\":";
    write_data(out, a.before);
    out << ",\"after\":";
    write_data(out, a.after);
    out << '}';
  }
  out << "\n],\n\"left_out\":[";
  Separator left_sep;
  for (const TensorArgRecord& a : model.args) {
    for (const auto& [phase, d] : {std::pair{"before", &a.before}, std::pair{"after", &a.after}}) {
      if (d->bytes == 0 && d->wanted_bytes > 0) {
        out << left_sep.next() << "{\"task\":" << a.task << ",\"index\":" << a.index
            << ",\"phase\":\"" << phase << "\",\"wanted_bytes\":" << d->wanted_bytes << '}';
      }
    }
  }
  out << "]}\n";
}

void write_counters(TextOut& out, const RunModel& model) {
  out << "# valid: which of instructions, cycles, cpu_ns were measured for the row (the others "
         "are 0)\n";
  if (!model.counters_note.empty()) out << "# note: " << model.counters_note << "\n";
  out << "task,block,core,instructions,cycles,cpu_ns,valid\n";
  for (const TaskCounters& c : model.counters) {
    out << c.task << ',' << c.block << ',' << c.core << ',' << c.instructions << ',' << c.cycles
        << ',' << c.cpu_ns << ',' << counter_valid_names(c.valid) << '\n';
  }
}

// ---------------------------------------------------------------------------------------------
// Reading

std::string file_path(const std::string& run_dir, const char* name) {
  return (fs::path(run_dir) / name).string();
}

bool exists(const std::string& run_dir, const char* name) {
  std::error_code ec;
  return fs::is_regular_file(fs::path(run_dir) / name, ec);
}

json read_json(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "missing or unreadable");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    const size_t upto = std::min<size_t>(e.byte, text.size());
    const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<long>(upto), '\n');
    fail(path, "line " + std::to_string(line) + ": malformed JSON (" + e.what() + ")");
  }
}

template <typename T>
T number(const std::string& text, const std::string& path, size_t line, const char* column) {
  T value{};
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end) {
    fail(path, "line " + std::to_string(line) + ": column " + column + ": not a number: \"" + text +
                   "\"");
  }
  return value;
}

uint64_t time_field(const std::string& text, const std::string& path, size_t line,
                    const char* column) {
  return text.empty() ? kNoTime : number<uint64_t>(text, path, line, column);
}

std::vector<std::string> split_csv(const std::string& line, const std::string& path,
                                   size_t line_number) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"') {
        if (i + 1 < line.size() && line[i + 1] == '"') {
          fields.back() += '"';
          ++i;
        } else {
          quoted = false;
        }
      } else {
        fields.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  if (quoted) fail(path, "line " + std::to_string(line_number) + ": unterminated quote");
  return fields;
}

template <typename Row>
void read_csv(const std::string& path, const std::string& header, size_t columns, Row&& row) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "missing or unreadable");
  std::string line;
  size_t number = 0;
  bool have_header = false;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    if (!have_header) {
      if (line.rfind(header, 0) != 0) {
        fail(path, "line " + std::to_string(number) + ": expected the header \"" + header + "\"");
      }
      have_header = true;
      continue;
    }
    std::vector<std::string> fields = split_csv(line, path, number);
    if (fields.size() < columns) {
      fail(path, "line " + std::to_string(number) + ": " + std::to_string(fields.size()) +
                     " field(s), expected " + std::to_string(columns));
    }
    row(fields, number);
  }
  if (!have_header) fail(path, "empty (no header line)");
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
    for (const json& k : run.at("kernels")) {
      KernelName name;
      name.func_id = k.at("func_id").get<int32_t>();
      name.symbol = k.at("symbol").get<std::string>();
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

// Our writers put one array element per line, so a million-task file is read a line at a time
// instead of as one document. Calls on_element(text, line) for each line that holds an element
// ('{' or '[' first, its trailing comma dropped); false when the file does not start with
// `first_line` (not in that layout: the caller parses it whole).
template <typename OnElement>
bool for_each_element_line(const std::string& path, const char* first_line,
                           OnElement&& on_element) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "missing or unreadable");
  std::string line;
  if (!std::getline(in, line) || line != first_line) return false;
  size_t number = 1;
  std::string last;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    last = line;
    if (line[0] != '{' && line[0] != '[') continue;
    if (line.back() == ',') line.pop_back();
    on_element(line, number);
  }
  if (last != "]}") fail(path, "line " + std::to_string(number) + ": truncated (no closing ]})");
  return true;
}

json parse_line(const std::string& text, const std::string& path, size_t line) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    fail(path, "line " + std::to_string(line) + ": malformed JSON (" + e.what() + ")");
  }
}

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

void read_tasks(const std::string& path, RunModel& model) {
  std::unordered_map<uint64_t, size_t> node_index;
  for (size_t i = 0; i < model.nodes.size(); ++i) node_index.emplace(model.nodes[i].task, i);
  const bool had_nodes = !model.nodes.empty();
  read_csv(path, kTasksHeader, 15, [&](const std::vector<std::string>& f, size_t line) {
    const uint64_t task = number<uint64_t>(f[0], path, line, "task");
    auto it = node_index.find(task);
    if (it == node_index.end()) {
      // No deps.json: the node comes from the rows.
      TaskNode node;
      node.task = task;
      node.func_id = number<int32_t>(f[2], path, line, "func_id");
      if (!f[4].empty() && !parse_core_type(f[4], &node.core_type)) {
        fail(path, "line " + std::to_string(line) + ": unknown core_type \"" + f[4] + "\"");
      }
      node.submit_end_ns = time_field(f[6], path, line, "submit_ns");
      node.ready_ns = time_field(f[7], path, line, "ready_ns");
      node.submit_begin_ns = time_field(f[13], path, line, "submit_begin_ns");
      node.block_num = 0;
      it = node_index.emplace(task, model.nodes.size()).first;
      model.nodes.push_back(node);
    } else if (had_nodes) {
      TaskNode& node = model.nodes[it->second];
      if (node.submit_end_ns == kNoTime)
        node.submit_end_ns = time_field(f[6], path, line, "submit_ns");
      if (node.ready_ns == kNoTime) node.ready_ns = time_field(f[7], path, line, "ready_ns");
      if (node.submit_begin_ns == kNoTime) {
        node.submit_begin_ns = time_field(f[13], path, line, "submit_begin_ns");
      }
    }
    if (f[1].empty()) return;  // a task without a block record
    BlockRun block;
    block.task = task;
    block.block = number<uint32_t>(f[1], path, line, "block");
    block.core = number<int32_t>(f[5], path, line, "core");
    block.dispatch_ns = time_field(f[8], path, line, "dispatch_ns");
    block.start_ns = time_field(f[9], path, line, "start_ns");
    block.end_ns = time_field(f[10], path, line, "end_ns");
    block.complete_ns = time_field(f[14], path, line, "complete_ns");
    model.blocks.push_back(block);
    if (!had_nodes) {
      TaskNode& node = model.nodes[it->second];
      node.block_num = std::max(node.block_num, block.block + 1);
    }
  });
  if (!had_nodes) {
    for (TaskNode& node : model.nodes) node.block_num = std::max(node.block_num, 1u);
    std::stable_sort(model.nodes.begin(), model.nodes.end(),
                     [](const TaskNode& a, const TaskNode& b) { return a.task < b.task; });
  }
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

TensorArgRecord::Data read_data(const json& j) {
  return {j.at("present").get<bool>(), j.at("offset").get<uint64_t>(),
          j.at("bytes").get<uint64_t>(), j.at("wanted_bytes").get<uint64_t>()};
}

void read_args(const std::string& path, RunModel& model) {
  const json args = read_json(path);
  try {
    for (const json& r : args.at("records")) {
      TensorArgRecord a;
      a.task = r.at("task").get<uint64_t>();
      a.index = r.at("index").get<uint32_t>();
      if (!parse_arg_tag(r.at("tag").get<std::string>(), &a.tag)) {
        fail(path, "task " + std::to_string(a.task) + ": unknown tag " + r.at("tag").dump());
      }
      a.buffer_addr = r.at("buffer_addr").get<uint64_t>();
      a.start_offset = r.at("start_offset").get<uint64_t>();
      if (!parse_dtype(r.at("dtype").get<std::string>(), &a.dtype)) {
        fail(path, "task " + std::to_string(a.task) + ": unknown dtype " + r.at("dtype").dump());
      }
      a.shape = r.at("shape").get<std::vector<uint64_t>>();
      a.strides = r.at("strides").get<std::vector<uint64_t>>();
      a.before = read_data(r.at("before"));
      a.after = read_data(r.at("after"));
      model.args.push_back(std::move(a));
    }
  } catch (const json::exception& e) {
    fail(path, std::string("malformed: ") + e.what());
  }
}

void read_counters(const std::string& path, RunModel& model) {
  read_csv(path, "task,block,core,instructions,cycles,cpu_ns,valid", 7,
           [&](const std::vector<std::string>& f, size_t line) {
             TaskCounters c;
             c.task = number<uint64_t>(f[0], path, line, "task");
             c.block = number<uint32_t>(f[1], path, line, "block");
             c.core = number<int32_t>(f[2], path, line, "core");
             c.instructions = number<uint64_t>(f[3], path, line, "instructions");
             c.cycles = number<uint64_t>(f[4], path, line, "cycles");
             c.cpu_ns = number<uint64_t>(f[5], path, line, "cpu_ns");
             size_t begin = 0;
             const std::string& names = f[6];
             while (begin < names.size()) {
               size_t end = names.find(' ', begin);
               if (end == std::string::npos) end = names.size();
               const std::string name = names.substr(begin, end - begin);
               if (name == "instructions") {
                 c.valid |= common::kDiagHaveInstructions;
               } else if (name == "cycles") {
                 c.valid |= common::kDiagHaveCycles;
               } else if (name == "cpu_ns") {
                 c.valid |= common::kDiagHaveCpuTime;
               } else if (!name.empty()) {
                 fail(path, "line " + std::to_string(line) + ": unknown counter \"" + name + "\"");
               }
               begin = end + 1;
             }
             model.counters.push_back(c);
           });
}

}  // namespace

bool parse_run_directory_name(const std::string& name, uint32_t* number) {
  if (name.size() <= 4 || name.compare(0, 4, "run-") != 0) return false;
  uint32_t value = 0;
  const char* end = name.data() + name.size();
  auto [ptr, ec] = std::from_chars(name.data() + 4, end, value);
  if (ec != std::errc() || ptr != end || name[4] == '+' || name[4] == '-') return false;
  *number = value;
  return true;
}

std::string create_run_directory(const std::string& output_dir, uint32_t* number) {
  if (output_dir.empty()) fail("output_dir", "empty: name the directory the runs go into");
  const fs::path dir(output_dir);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) fail(output_dir, "cannot create the directory: " + ec.message());
  if (!fs::is_directory(dir, ec)) fail(output_dir, "exists and is not a directory");
  uint32_t highest = 0;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    uint32_t n = 0;
    if (parse_run_directory_name(it->path().filename().string(), &n))
      highest = std::max(highest, n);
  }
  if (ec) fail(output_dir, "cannot list the directory: " + ec.message());
  // Exclusive: mkdir fails on an existing name, so a concurrent run takes the next number.
  for (uint64_t candidate = uint64_t{highest} + 1; candidate <= UINT32_MAX; ++candidate) {
    char name[24];
    std::snprintf(name, sizeof name, "run-%04llu", static_cast<unsigned long long>(candidate));
    const fs::path run = dir / name;
    if (fs::create_directory(run, ec)) {
      if (number) *number = static_cast<uint32_t>(candidate);
      return run.string();
    }
    if (ec) fail(run.string(), "cannot create the run directory: " + ec.message());
    if (candidate > uint64_t{highest} + 1000) break;
  }
  fail(output_dir, "no free run-NNNN name");
}

std::vector<std::string> write_run_directory(const std::string& run_dir, const RunModel& model,
                                             const ArgsData& data) {
  const DiagnosticsConfig& c = model.config;
  const Analysis analysis = analyze(model);
  const Index index(model, true, c.args_dump_level > 0);
  std::vector<std::string> paths;
  std::vector<std::string> names;
  auto done = [&](OutFile& file, const char* name) {
    paths.push_back(file.commit());
    names.push_back(name);
  };
  if (c.swimlane_level > 0) {
    OutFile file(run_dir, kTraceFile);
    write_trace(file.out(), model, index);
    done(file, kTraceFile);
  }
  if (c.task_timing) {
    OutFile file(run_dir, kTasksFile);
    write_tasks(file.out(), model, index);
    done(file, kTasksFile);
  }
  if (c.dependency_graph) {
    {
      OutFile file(run_dir, kDepsFile);
      write_deps(file.out(), model);
      done(file, kDepsFile);
    }
    {
      OutFile file(run_dir, kCriticalPathMdFile);
      write_critical_path_md(file.out(), model, analysis);
      done(file, kCriticalPathMdFile);
    }
    OutFile file(run_dir, kCriticalPathJsonFile);
    write_critical_path_json(file.out(), model, analysis);
    done(file, kCriticalPathJsonFile);
  }
  if (c.scope_stats && (!model.scopes.empty() || model.variant == "tensormap_ringbuffer")) {
    OutFile file(run_dir, kScopeStatsFile);
    write_scope_stats(file.out(), model);
    done(file, kScopeStatsFile);
  }
  if (c.args_dump_level > 0) {
    {
      OutFile file(run_dir, kArgsJsonFile);
      write_args(file.out(), model, data);
      done(file, kArgsJsonFile);
    }
    OutFile file(run_dir, kArgsBinFile);
    file.out().write(reinterpret_cast<const char*>(data.bytes.data()), data.bytes.size());
    done(file, kArgsBinFile);
  }
  if (c.hardware_counters) {
    OutFile file(run_dir, kCountersFile);
    write_counters(file.out(), model);
    done(file, kCountersFile);
  }
  {
    OutFile file(run_dir, kReportFile);
    write_report_html(model, analysis, [&](std::string_view piece) { file.out() << piece; });
    done(file, kReportFile);
  }
  names.push_back(kRunFile);
  OutFile file(run_dir, kRunFile);
  file.out() << run_json(model, names).dump(2, ' ', false, json::error_handler_t::replace) << "\n";
  paths.push_back(file.commit());
  return paths;
}

RunModel read_run_directory(const std::string& run_dir) {
  RunModel model;
  read_run_json(file_path(run_dir, kRunFile), model);
  const DiagnosticsConfig& c = model.config;
  if (c.dependency_graph) read_deps(file_path(run_dir, kDepsFile), model);
  const bool have_tasks = c.task_timing;
  if (have_tasks) read_tasks(file_path(run_dir, kTasksFile), model);
  if (c.swimlane_level > 0) read_trace(file_path(run_dir, kTraceFile), model, !have_tasks);
  if (exists(run_dir, kScopeStatsFile))
    read_scope_stats(file_path(run_dir, kScopeStatsFile), model);
  if (c.args_dump_level > 0) read_args(file_path(run_dir, kArgsJsonFile), model);
  if (c.hardware_counters) read_counters(file_path(run_dir, kCountersFile), model);
  return model;
}

}  // namespace chiprt::diagnostics
