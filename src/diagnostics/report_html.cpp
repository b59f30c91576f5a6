// report.html: the model and its analysis as one JSON document embedded in a page whose own
// script (below, kScript) draws the timeline and fills the tables. Nothing is fetched: style and
// script are inline, so the file works opened from disk or mailed around.
//
// Only the RunModel/Analysis fields are read here (no helper of the other diagnostics files), so
// the page can be rendered from a model built by hand or read back from a run directory.
#include "diagnostics/report_html.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "chiprt/run_report.h"
#include "diagnostics/artifacts/files.h"

namespace chiprt::diagnostics {
namespace {

// What the page embeds at most of each timeline kind (blocks, AICPU spans, scheduler events), and
// of the critical path's steps: beyond, it samples (build_json).
constexpr uint64_t kReportTimelineItems = 200000;
constexpr uint64_t kReportPathSteps = 10000;

using nlohmann::json;

const char* core_type_str(CoreType type) {
  switch (type) {
    case CoreType::AIC:
      return "AIC";
    case CoreType::AIV:
      return "AIV";
    case CoreType::MIX:
      return "MIX";
  }
  return "?";
}

// Every `stride`-th of n items (the first included), so that at most `limit` remain.
uint64_t sample_stride(uint64_t n, uint64_t limit) {
  return n <= limit ? 1 : (n + limit - 1) / limit;
}

// The page, written to a sink in pieces of about kChunkBytes: the timeline's arrays are formatted
// straight into it, never held whole (as a JSON document they cost tens of bytes per number).
class Chunks {
 public:
  explicit Chunks(const ReportSink& sink) : sink_(sink) { buffer_.reserve(kChunkBytes + 64); }
  ~Chunks() = default;
  Chunks(const Chunks&) = delete;
  Chunks& operator=(const Chunks&) = delete;
  Chunks& operator<<(std::string_view text) {
    buffer_.append(text);
    if (buffer_.size() >= kChunkBytes) flush();
    return *this;
  }
  Chunks& operator<<(char c) { return *this << std::string_view(&c, 1); }
  template <class T>
  requires std::is_integral_v<T> Chunks& number(T value) {
    char text[24];
    const auto result = std::to_chars(text, text + sizeof text, value);
    return *this << std::string_view(text, static_cast<size_t>(result.ptr - text));
  }
  // A time as the page reads it: null when not recorded.
  Chunks& time(uint64_t ns) { return ns == kNoTime ? *this << "null" : number(ns); }
  void flush() {
    if (!buffer_.empty()) sink_(buffer_);
    buffer_.clear();
  }

 private:
  static constexpr size_t kChunkBytes = 256 << 10;
  const ReportSink& sink_;
  std::string buffer_;
};

// Writes the timeline's arrays and the critical path into `out` as the first members of the data
// object ("{" and the members, no closing brace) and returns the rest of the data as a document.
json build_json(const RunModel& m, const Analysis& a, Chunks& out) {
  json d;
  // Kernels by func_id, plus any func_id a task names that the table lacks: the index into
  // this list is a block's colour, so the same kernel keeps its colour across runs.
  std::map<int32_t, const KernelName*> by_func;
  for (const KernelName& k : m.kernels) by_func.emplace(k.func_id, &k);
  for (const TaskNode& n : m.nodes)
    if (!n.dependency_only) by_func.emplace(n.func_id, nullptr);
  std::unordered_map<int32_t, int> kernel_index;
  json kernels = json::array();
  for (const auto& [func, k] : by_func) {
    kernel_index[func] = static_cast<int>(kernels.size());
    kernels.push_back({func, m.kernel_label(func), k ? core_type_str(k->core_type) : ""});
  }
  d["kernels"] = std::move(kernels);
  // Each task's func_id, by task (16 bytes per task; the model's nodes are usually sorted
  // already, but a hand-built model need not be).
  std::vector<std::pair<uint64_t, int32_t>> func_of;
  func_of.reserve(m.nodes.size());
  uint64_t dep_only = 0, internal = 0;  // the user's dependency-only tasks; the runtime's own
  for (const TaskNode& n : m.nodes) {
    func_of.emplace_back(n.task, n.func_id);
    dep_only += n.dependency_only && !n.internal;
    internal += n.internal;
  }
  if (!std::is_sorted(func_of.begin(), func_of.end())) {
    std::stable_sort(func_of.begin(), func_of.end(),
                     [](const auto& x, const auto& y) { return x.first < y.first; });
  }
  auto kidx = [&](uint64_t task) {
    auto f = std::lower_bound(func_of.begin(), func_of.end(), task,
                              [](const auto& x, uint64_t t) { return x.first < t; });
    if (f == func_of.end() || f->first != task) return -1;
    auto k = kernel_index.find(f->second);
    return k == kernel_index.end() ? -1 : k->second;
  };

  // Executed blocks as flat tuples [task, block, core, kernel index, start, duration]: a million
  // blocks stay a few tens of MB and parse fast. Starts (and span begins, event times) are
  // deltas from the previous row's, durations null when not recorded: short numbers, about half
  // the page of absolute times. The script decodes them once.
  auto delta = [&](uint64_t v, uint64_t& prev) {
    out.number(static_cast<int64_t>(v - prev));
    prev = v;
  };
  auto dur = [&](uint64_t begin, uint64_t end) {
    if (end == kNoTime) {
      out << "null";
    } else {
      out.number(static_cast<int64_t>(end - begin));
    }
  };
  //
  // A large run's timeline is sampled: beyond kReportTimelineItems blocks (thread spans,
  // scheduler events), every k-th is embedded (k the smallest that keeps the limit; blocks still
  // running when the run ended always), so the page stays a few tens of MB however long the run.
  // The tables (kernels, cores, counters, scopes) and the verdict cover every block.
  uint64_t unrun = 0, ran = 0;
  for (const BlockRun& b : m.blocks) {
    if (b.core < 0 || b.start_ns == kNoTime) ++unrun;
  }
  ran = m.blocks.size() - unrun;
  const uint64_t block_stride = sample_stride(ran, kReportTimelineItems);
  const uint64_t span_stride = sample_stride(m.thread_spans.size(), kReportTimelineItems);
  const uint64_t sched_stride = sample_stride(m.scheduler_events.size(), kReportTimelineItems);
  const uint64_t path_stride = sample_stride(a.path.size(), kReportPathSteps);
  json notes = m.notes;
  if (block_stride > 1 || span_stride > 1 || sched_stride > 1) {
    notes.push_back("report: the timeline is sampled (every " + std::to_string(block_stride) +
                    "th block, " + std::to_string(span_stride) + "th AICPU span, " +
                    std::to_string(sched_stride) +
                    "th scheduler event); trace.json and tasks.csv hold every one");
  }
  uint64_t prev = 0, seen = 0, embedded = 0;
  const char* sep = "";
  out << "{\"blocks\":[";
  for (const BlockRun& b : m.blocks) {
    if (b.core < 0 || b.start_ns == kNoTime) continue;
    if (seen++ % block_stride != 0 && b.end_ns != kNoTime) continue;
    ++embedded;
    out << sep;
    sep = ",";
    out.number(b.task) << ',';
    out.number(b.block) << ',';
    out.number(b.core) << ',';
    out.number(kidx(b.task)) << ',';
    delta(b.start_ns, prev);
    out << ',';
    dur(b.start_ns, b.end_ns);
  }
  out << "],\n\"spans\":[";  // [thread, kind, what, task, begin, duration]
  prev = 0;
  sep = "";
  for (size_t i = 0; i < m.thread_spans.size(); i += span_stride) {
    const ThreadSpan& s = m.thread_spans[i];
    out << sep;
    sep = ",";
    out.number(s.thread) << ',';
    out.number(static_cast<int>(s.kind)) << ',';
    out.number(s.what) << ',';
    out.number(s.task) << ',';
    delta(s.begin_ns, prev);
    out << ',';
    dur(s.begin_ns, s.end_ns);
  }
  out << "],\n\"sched\":[";  // [thread, kind (0 dispatch, 1 complete), t]
  prev = 0;
  sep = "";
  for (size_t i = 0; i < m.scheduler_events.size(); i += sched_stride) {
    const SchedulerEvent& e = m.scheduler_events[i];
    out << sep;
    sep = ",";
    out.number(e.thread) << ',';
    out.number(static_cast<int>(e.kind)) << ',';
    delta(e.t_ns, prev);
  }
  // The critical path: [task, kernel index, core, start, end, gap, waits x6, main, step number];
  // a long path sampled like the timeline (its first and last step always). The page reads it
  // as the analysis' path.
  out << "],\n\"path\":[";
  sep = "";
  for (size_t i = 0; i < a.path.size(); ++i) {
    if (i % path_stride != 0 && i + 1 != a.path.size()) continue;
    const PathStep& p = a.path[i];
    out << sep << '[';
    sep = ",";
    out.number(p.task) << ',';
    out.number(kidx(p.task)) << ',';
    out.number(p.core) << ',';
    out.time(p.start_ns) << ',';
    out.time(p.end_ns) << ',';
    out.number(p.gap_ns);
    for (uint64_t w : p.waited_ns) {
      out << ',';
      out.number(w);
    }
    out << ',';
    out.number(static_cast<int>(p.main_wait)) << ',';
    out.number(i + 1) << ']';
  }
  out << "]";
  json host = json::array();
  for (const HostSpan& h : m.host_spans) host.push_back({h.name, h.begin_ns, h.end_ns});
  d["host"] = std::move(host);

  const DiagnosticsConfig& c = m.config;
  d["run"] = {{"run_number", m.run_number},
              {"callable_id", m.callable_id},
              {"variant", m.variant},
              {"serial", m.serial},
              {"isolated", m.isolated},
              {"clock_hz", m.clock_hz},
              {"wall_ns", m.wall_ns},
              {"tasks", m.nodes.size()},
              {"tasks_text", format_task_count(m.nodes.size() - internal - dep_only, dep_only)},
              {"dependency_only", dep_only},
              {"internal", internal},
              {"host_load",
               {{"start", m.host_load.start},
                {"end", m.host_load.end},
                {"hardware_threads", m.host_load.hardware_threads},
                {"loaded", m.host_load.loaded()}}},
              {"edges", m.edges.size()},
              {"have_edges", m.have_edges},
              {"blocks_total", m.blocks.size()},
              {"blocks_unrun", unrun},
              {"blocks_run", ran},
              {"path_steps", a.path.size()},
              {"sampled",
               {{"blocks", block_stride},
                {"blocks_embedded", embedded},
                {"spans", span_stride},
                {"spans_total", m.thread_spans.size()},
                {"sched", sched_stride},
                {"sched_total", m.scheduler_events.size()},
                {"path", path_stride}}},
              {"records_received", m.records_received},
              {"records_dropped", m.records_dropped},
              {"drop_reason", m.drop_reason},
              {"notes", std::move(notes)},
              {"config",
               {{"swimlane_level", c.swimlane_level},
                {"task_timing", c.task_timing},
                {"dependency_graph", c.dependency_graph},
                {"scope_stats", c.scope_stats},
                {"args_dump_level", c.args_dump_level},
                {"hardware_counters", c.hardware_counters}}}};
  d["shape"] = {{"aicpu_threads", m.shape.aicpu_threads},
                {"orchestrator_threads", m.shape.orchestrator_threads},
                {"clusters", m.shape.clusters},
                {"device_clusters", m.shape.device_clusters},
                {"cores", m.shape.cores},
                {"run_cores", run_cores(m.shape)},
                {"kernel_threads", m.shape.kernel_threads}};

  json scopes = json::array();
  for (const ScopeStat& s : m.scopes) {
    scopes.push_back({s.scope, s.depth, s.tasks, s.peak_task_window, s.task_window_capacity,
                      s.peak_heap_bytes, s.heap_capacity, s.peak_dep_pool, s.dep_pool_capacity,
                      json::array({s.waits[0], s.waits[1], s.waits[2]}),
                      json::array({s.wait_ns[0], s.wait_ns[1], s.wait_ns[2]})});
  }
  d["scopes"] = std::move(scopes);

  // Counters summarised here (a row per block would double the page for little use).
  // Valid bits (common::DiagCounterValid): 1 instructions, 2 cycles, 4 CPU time.
  uint64_t have[3] = {}, sums[3] = {};
  std::map<int, std::array<uint64_t, 4>> per_kernel;  // kernel -> blocks, instr, cycles, cpu
  for (const TaskCounters& tc : m.counters) {
    const uint64_t value[3] = {tc.instructions, tc.cycles, tc.cpu_ns};
    auto& row = per_kernel[kidx(tc.task)];
    row[0] += 1;
    for (int i = 0; i < 3; ++i) {
      if (!(tc.valid & (1u << i))) continue;
      have[i] += 1;
      sums[i] += value[i];
      row[1 + i] += value[i];
    }
  }
  json ck = json::array();
  for (const auto& [k, row] : per_kernel) ck.push_back({k, row[0], row[1], row[2], row[3]});
  d["counters"] = {{"records", m.counters.size()},
                   {"have", {have[0], have[1], have[2]}},
                   {"sums", {sums[0], sums[1], sums[2]}},
                   {"per_kernel", std::move(ck)},
                   {"note", m.counters_note}};

  d["error"] = artifact::run_error_json(m);

  json ks = json::array();
  for (const KernelStat& k : a.kernels) {
    ks.push_back({k.func_id, k.label.empty() ? m.kernel_label(k.func_id) : k.label, k.count,
                  k.total_ns, k.mean_ns, k.p50_ns, k.p99_ns, k.max_ns});
  }
  json cores = json::array();
  for (const CoreUse& u : a.cores)
    cores.push_back({u.core, u.label, u.blocks, u.busy_ns, u.utilisation});
  json waited = json::array();
  for (uint64_t w : a.waited_ns) waited.push_back(w);
  d["a"] = {{"path_ns", a.path_ns},           {"path_with_waits_ns", a.path_with_waits_ns},
            {"chip_span_ns", a.chip_span_ns}, {"wall_ns", a.wall_ns},
            {"task_time_ns", a.task_time_ns}, {"parallelism", a.parallelism},
            {"waited", std::move(waited)},    {"kernels", std::move(ks)},
            {"cores", std::move(cores)},      {"bound", bound_name(a.bound)},
            {"verdict", a.verdict},           {"caveats", a.caveats}};
  json wait_names = json::array();
  for (int k = 0; k < kWaitKinds; ++k)
    wait_names.push_back(wait_kind_name(static_cast<WaitKind>(k)));
  d["wait_names"] = std::move(wait_names);
  return d;
}

constexpr const char* kHead = R"HTML(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>chiprt run report</title>
<style>
body{font:13px/1.4 system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:0;color:#222;background:#fafafa}
header{background:#263238;color:#fff;padding:10px 16px}
header h1{font-size:18px;margin:0}
header .sub{color:#b0bec5;margin-top:2px}
main{padding:8px 16px 40px}
section{background:#fff;border:1px solid #ddd;border-radius:4px;margin:10px 0;padding:8px 12px}
h2{font-size:15px;margin:2px 0 8px}
table{border-collapse:collapse;font-variant-numeric:tabular-nums}
th,td{padding:2px 8px;border-bottom:1px solid #eee;text-align:right;white-space:nowrap}
th{background:#f0f0f0;position:sticky;top:0}
td.l,th.l{text-align:left}
.scroll{max-height:420px;overflow:auto}
.empty{color:#888;font-style:italic}
.err{border-color:#d32f2f;background:#fff5f5}
.err h2{color:#c62828}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;background:#37474f;color:#fff;font-weight:600;margin-right:8px}
.bar{display:inline-block;height:10px;background:#4e79a7;vertical-align:middle}
.barbg{display:inline-block;width:160px;height:10px;background:#eceff1;vertical-align:middle;margin-right:6px}
#tlbar{margin-bottom:6px;display:flex;gap:10px;align-items:center;flex-wrap:wrap}
#tlbar button{font:inherit;padding:1px 10px}
#tlwrap{position:relative;overflow:hidden;border:1px solid #ccc}
#tl{display:block;cursor:crosshair}
#tip{position:fixed;display:none;pointer-events:none;background:rgba(33,33,33,.94);color:#fff;padding:5px 8px;border-radius:3px;white-space:pre;font-size:12px;z-index:10}
#legend span.sw{display:inline-block;width:11px;height:11px;margin:0 4px 0 10px;vertical-align:-1px;border:1px solid rgba(0,0,0,.2)}
.facts{display:flex;flex-wrap:wrap;gap:2px 18px;margin-top:6px}
.facts b{font-weight:normal;color:#666}
.kv td{text-align:left}
.kv td:first-child{color:#555}
ul{margin:4px 0;padding-left:20px}
</style></head>
<body data-task-marks="0" data-ready="0" data-errors="0">
<header><h1 id="title">chiprt run report</h1><div class="sub" id="subtitle"></div></header>
<main id="main"><noscript>This report draws with JavaScript.</noscript></main>
<div id="tip"></div>
<script type="application/json" id="chiprt-data">)HTML";

constexpr const char* kScript = R"JS(</script>
<script>
(function () {
'use strict';
var BODY = document.body, nerr = 0;
BODY.dataset.errors = '0';
window.onerror = function () { nerr++; BODY.dataset.errors = String(nerr); };
var D = JSON.parse(document.getElementById('chiprt-data').textContent);
D.a.path = D.path;
var R = D.run, SH = D.shape, A = D.a, E = D.error, K = D.kernels, SAMPLED = R.sampled;
var WN = D.wait_names;

// ---- helpers -------------------------------------------------------------------------------
function el(tag, cls, text) {
  var e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}
var UNITS = [[1e9, 's'], [1e6, 'ms'], [1e3, '\u00b5s'], [1, 'ns']];
function fmt(ns) {
  if (ns === null || ns === undefined) return '\u2014';
  var a = Math.abs(ns);
  for (var i = 0; i < UNITS.length; i++) {
    if (a >= UNITS[i][0] || i === UNITS.length - 1) {
      var v = ns / UNITS[i][0], av = Math.abs(v);
      return v.toFixed(i === 3 ? 0 : av < 10 ? 2 : av < 100 ? 1 : 0) + ' ' + UNITS[i][1];
    }
  }
}
function num(v) { return v === null || v === undefined ? '\u2014' : Number(v).toLocaleString('en-US'); }
function pct(v) { return (100 * v).toFixed(1) + '%'; }
function section(title, cls) {
  var s = el('section', cls);
  s.appendChild(el('h2', null, title));
  document.getElementById('main').appendChild(s);
  return s;
}
function empty(s, text) { s.appendChild(el('div', 'empty', text)); }
// What every figure on the page means, shown as its tooltip (docs/report.md says the same).
var DEF = {
  'wall time': 'Worker::run entry to the end of the read-back, on the host clock',
  'chip span': 'first block start to last block end on the chip',
  'task time (all blocks)': 'the sum of every finished block\'s execution time (start to end on its core)',
  'critical path (tasks)': 'the execution time of the tasks on the critical path, waits left out',
  'critical path (with waits)': 'the run\'s first block start to the end of the critical path: its tasks and every wait between them',
  'parallelism': 'the cores\' busy time (their blocks\' executions) over the chip span: how many cores ran a block at an average instant; never more than the cores',
  'cores': 'the cores of the clusters the run used (1 AIC + 2 AIV per cluster)',
  'host threads that ran kernels': 'host threads the simulated chip ran its cores\' kernels on (1 serial; the AICPU threads when kicks run kernels; else the executor pool); parallelism above it or above the hardware threads means blocks shared CPUs',
  'host': 'the host\'s hardware threads and its 1-minute load average when the chip started and stopped; loaded when the load reached the hardware threads',
  'tasks': 'the tasks the orchestration submitted: kernel tasks run on cores, dependency-only tasks (submit_dummy, allocate) only order others',
  'runtime scope fences': 'host_build_graph\'s own dependency-only tasks, one per ended scope that owned runtime outputs (not counted in tasks)',
  'edges': 'dependencies between tasks (RAW, WAW, WAR, after(), and the runtime\'s own)',
  'blocks run': 'blocks (a task\'s parts, one per core it ran on) that started on a core',
  'chip': 'clusters the run used of the device\'s, and the AICPU scheduler threads',
  'message': 'the error\'s message', 'hint': 'what to change', 'stall': 'the scheduler timeout\'s sub-class',
  'stuck task': 'the task that was running when the run stopped', 'stuck core': 'the core it ran on',
  'status code': 'the chiprt::StatusCode number',
  '#': 'the step\'s place on the path', 'task': 'the public task id', 'kernel': 'the kernel (symbol and func_id)',
  'core': 'the core of the task\'s first block', 'start': 'first block start, from the run start',
  'duration': 'first block start to last block end', 'gap': 'from the previous step\'s end (or the run\'s first start) to this start',
  'main wait': 'the largest part of the gap',
  'wait orchestrator': 'not yet submitted: the orchestrator submitted the task after its predecessor ended',
  'wait data': 'submitted, a producer not yet finished (up to the ready time)',
  'wait scheduler': 'ready and a core free, not yet dispatched',
  'wait core': 'ready, but every eligible core was busy (or dispatched to a core still running another block)',
  'wait launch': 'dispatched, not yet started on the core (the handshake)',
  'wait unmeasured': 'waiting whose cause was not recorded (switch on task timing)',
  'blocks': 'finished blocks counted in this row', 'total': 'the sum of the blocks\' execution times',
  'share': 'this kernel\'s total over the task time', 'mean': 'total over blocks',
  'p50': 'median block time (nearest rank)', 'p99': '99th percentile block time (nearest rank)', 'max': 'the longest block',
  'busy': 'the time the core ran a block', 'utilisation of the chip span': 'busy time over the chip span',
  'scope': 'the scope\'s number, in the order scopes opened', 'depth': 'its nesting depth',
  'task window peak': 'the most task-window slots in use / its capacity',
  'heap peak (bytes)': 'the most ring-heap bytes in use / its capacity', 'dep pool peak': 'the most dependency-pool entries in use / its capacity',
  'waits (window, heap, pool)': 'times the orchestrator blocked on each full ring', 'wait time': 'how long it blocked on each',
  'instructions': 'retired instructions (hardware counter) summed over the blocks that measured them',
  'cycles': 'CPU cycles (hardware counter) summed over the blocks that measured them',
  'CPU time': 'the kernels\' thread CPU time', 'instructions per cycle': 'instructions over cycles',
  'records received': 'diagnostics records the host read from the chip', 'records dropped': 'records lost to a full stream',
  'clock': 'the chip clock the times were converted from', 'switches': 'the diagnostics switches of the run'
};
var BOUNDS = {
  kernels: 'kernel time is at least 50% of the critical path (with waits)',
  orchestration: 'waiting for the orchestrator to submit is at least 50% of the critical path',
  ring: 'waiting for the orchestrator is at least 50% of the critical path and at least half of it was blocked on full rings',
  scheduling: 'scheduler latency (completion to ready, ready to dispatch, dispatch to start) is at least 50% of the critical path',
  too_few_cores: 'waiting with every eligible core busy is at least 50% of the critical path',
  unknown: 'unmeasured waiting is at least 50% of the critical path, or no task finished',
  failed: 'the run failed: the verdict is its error',
  no_dominant_cause: 'no cause reaches 50% of the critical path'
};
// Sets el's tooltip to the definition of `label` (or `given`); a figure without one has none,
// which the browser test catches.
function define(e, label, given) {
  var d = given !== undefined ? given : DEF[label];
  if (d) e.title = d;
}
// rows: arrays of cells; a cell is text, or a Node. left: indices of left-aligned columns.
function table(parent, heads, rows, left, cap) {
  var wrap = el('div', 'scroll'), tb = el('table'), tr = el('tr');
  left = left || [0];
  heads.forEach(function (h, i) {  // a head is its text, or [text, definition]
    var th = el('th', left.indexOf(i) >= 0 ? 'l' : null, Array.isArray(h) ? h[0] : h);
    define(th, Array.isArray(h) ? h[0] : h, Array.isArray(h) ? h[1] : undefined);
    tr.appendChild(th);
  });
  tb.appendChild(tr);
  var n = cap ? Math.min(rows.length, cap) : rows.length;
  for (var r = 0; r < n; r++) {
    tr = el('tr');
    for (var i = 0; i < rows[r].length; i++) {
      var c = rows[r][i], td = el('td', left.indexOf(i) >= 0 ? 'l' : null);
      if (c instanceof Node) td.appendChild(c); else td.textContent = String(c);
      tr.appendChild(td);
    }
    tb.appendChild(tr);
  }
  wrap.appendChild(tb);
  parent.appendChild(wrap);
  if (n < rows.length) parent.appendChild(el('div', 'empty', (rows.length - n) + ' more rows not shown'));
}
function kv(parent, pairs) {
  var tb = el('table', 'kv');
  pairs.forEach(function (p) {
    var tr = el('tr'), label = el('td', null, p[0]);
    define(label, p[0]);
    tr.appendChild(label);
    tr.appendChild(el('td', null, p[1]));
    tb.appendChild(tr);
  });
  parent.appendChild(tb);
}
function facts(parent, pairs) {  // label: value pairs on wrapping lines
  var d = el('div', 'facts');
  pairs.forEach(function (p) {
    var f = el('span'); f.appendChild(el('b', null, p[0] + ' ')); f.appendChild(document.createTextNode(p[1]));
    define(f, p[0]);
    d.appendChild(f);
  });
  parent.appendChild(d);
}
function bar(frac) {
  var bg = el('span', 'barbg'), b = el('span', 'bar'), w = el('span');
  b.style.width = Math.max(0, Math.min(1, frac)) * 100 + '%';
  bg.appendChild(b); w.appendChild(bg); w.appendChild(document.createTextNode(pct(frac)));
  return w;
}
// Core numbering: [0, device_clusters) AIC, then AIV 2k, 2k+1 of cluster k.
var DC = SH.device_clusters || 0;
function slot(core) {
  if (core < DC) return [core, 0];
  var k = core - DC;
  return [Math.floor(k / 2), 1 + (k % 2)];
}
var LANES = ['AIC', 'AIV0', 'AIV1'];
function coreLabel(core) {
  if (core < 0) return 'core ?';
  var s = slot(core);
  return LANES[s[1]] + ' c' + s[0] + ' (core ' + core + ')';
}
function kname(k) { return k >= 0 && k < K.length ? K[k][1] : 'unknown kernel'; }

// ---- colours -------------------------------------------------------------------------------
// No reds in the kernel palette: red marks the stuck task.
var PAL = ['#4e79a7', '#f28e2b', '#59a14f', '#b07aa1', '#76b7b2', '#edc948', '#9c755f', '#a0cbe8',
  '#8cd17d', '#ffbe7d', '#499894', '#d4a6c8', '#bab0ac', '#86bcb6', '#f1ce63', '#79706e'];
var COL = [];
for (var i = 0; i < K.length; i++)
  COL.push(i < PAL.length ? PAL[i] : 'hsl(' + (40 + (i * 137.5) % 280) + ',50%,58%)');
var C_UNKNOWN = COL.length; COL.push('#999');
var PHASES = ['completions', 'dispatch', 'park', 'orchestrate'];
var C_PHASE = COL.length; COL.push('#90caf9', '#a5d6a7', '#e0e0e0', '#ce93d8');
var C_SUBMIT = COL.length; COL.push('#5c6bc0');
var C_RING = COL.length; COL.push('#8d6e63');
var C_HOST = COL.length; COL.push('#78909c', '#4db6ac', '#9575cd', '#aed581', '#ffb74d', '#64b5f6', '#f06292');
var STUCK = '#d32f2f', PATH = '#111';
var RINGS = ['task window', 'heap', 'dep pool'];

// ---- timeline rows -------------------------------------------------------------------------
// A row holds its items sorted by start in typed arrays; flags: 1 critical path, 2 stuck;
// band (flags >> 2): 0 full height, 1 upper, 2 lower part of the row.
var BL = D.blocks, NB = BL.length / 6, SP = D.spans, SC = D.sched, HS = D.host;
// Undo the delta and duration coding (see build_json) in place: absolute ns from here on.
function undelta(a, stride, at, hasDur) {
  for (var j = at, acc = 0; j < a.length; j += stride) {
    acc += a[j]; a[j] = acc;
    if (hasDur && a[j + 1] !== null) a[j + 1] += acc;
  }
}
undelta(BL, 6, 4, true); undelta(SP, 6, 4, true); undelta(SC, 3, 2, false);
var tMin = Infinity, tMax = 0;
function see(v) { if (v !== null) { if (v < tMin) tMin = v; if (v > tMax) tMax = v; } }
for (i = 0; i < NB; i++) { see(BL[i * 6 + 4]); see(BL[i * 6 + 5]); }
for (i = 0; i < SP.length; i += 6) { see(SP[i + 4]); see(SP[i + 5]); }
for (i = 0; i < SC.length; i += 3) see(SC[i + 2]);
HS.forEach(function (h) { see(h[1]); see(h[2]); });
if (R.wall_ns > tMax) tMax = R.wall_ns;
if (!(tMin < Infinity)) tMin = 0;
if (tMin > 0) tMin = 0;
if (tMax <= tMin) tMax = tMin + 1000;
var tEnd = tMax;  // a stuck block is drawn to here

var pathStep = new Map();
A.path.forEach(function (p, j) { if (!pathStep.has(p[0])) pathStep.set(p[0], j); });
var stuckTask = E && E.stuck_task >= 0 ? E.stuck_task : -1;

function mkRow(label, grp, type) {
  return { label: label, grp: grp, type: type, tmp: [], ticks: [] };
}
var rows = [];
var hostRow = null, threadRows = new Map(), coreRows = new Map();
if (HS.length) { hostRow = mkRow('host', 'host', 2); rows.push(hostRow); }
function threadRow(t) {
  if (!threadRows.has(t)) threadRows.set(t, mkRow('AICPU t' + t + (t < SH.orchestrator_threads ? ' (orch)' : ''), 'aicpu', 1));
  return threadRows.get(t);
}
for (i = 0; i < SP.length; i += 6) threadRow(SP[i]).tmp.push(i);
for (i = 0; i < SC.length; i += 3) threadRow(SC[i]).ticks.push(i);
Array.from(threadRows.keys()).sort(function (a, b) { return a - b; })
  .forEach(function (t) { rows.push(threadRows.get(t)); });
for (i = 0; i < NB; i++) {
  var core = BL[i * 6 + 2];
  if (!coreRows.has(core)) {
    var sl = slot(core);
    coreRows.set(core, mkRow(LANES[sl[1]] + ' c' + sl[0] + '  #' + core, 'c' + sl[0], 0));
    coreRows.get(core).core = core;
  }
  coreRows.get(core).tmp.push(i);
}
Array.from(coreRows.keys()).sort(function (a, b) {
  var x = slot(a), y = slot(b);
  return x[0] - y[0] || x[1] - y[1];
}).forEach(function (c) { rows.push(coreRows.get(c)); });

function finish(r, n, get) {
  // get(j, out) fills out = [start, end, colour, flags] for the j-th source item; then the
  // items are sorted by start (an index sort: a million small arrays would not do).
  var s = new Float64Array(n), e = new Float64Array(n), c = new Uint16Array(n), f = new Uint8Array(n);
  var o = [0, 0, 0, 0], ord = new Array(n), j;
  for (j = 0; j < n; j++) { get(j, o); s[j] = o[0]; e[j] = o[1]; c[j] = o[2]; f[j] = o[3]; ord[j] = j; }
  ord.sort(function (a, b) { return s[a] - s[b]; });
  r.s = new Float64Array(n); r.e = new Float64Array(n); r.c = new Uint16Array(n);
  r.f = new Uint8Array(n); r.src = new Uint32Array(n); r.maxd = 0;
  for (j = 0; j < n; j++) {
    var q = ord[j];
    r.s[j] = s[q]; r.e[j] = e[q]; r.c[j] = c[q]; r.f[j] = f[q]; r.src[j] = r.tmp[q];
    if (e[q] - s[q] > r.maxd) r.maxd = e[q] - s[q];
  }
  r.tmp = null;
}
var hostNames = [];
rows.forEach(function (r) {
  if (r.type === 0) {
    finish(r, r.tmp.length, function (j, o) {
      var b = r.tmp[j] * 6, end = BL[b + 5], task = BL[b];
      o[0] = BL[b + 4]; o[1] = end === null ? tEnd : end;
      o[2] = BL[b + 3] >= 0 ? BL[b + 3] : C_UNKNOWN;
      o[3] = (pathStep.has(task) ? 1 : 0) | (end === null || task === stuckTask ? 2 : 0);
    });
  } else if (r.type === 1) {
    finish(r, r.tmp.length, function (j, o) {
      var b = r.tmp[j], kind = SP[b + 1];
      o[0] = SP[b + 4]; o[1] = SP[b + 5];
      o[2] = kind === 0 ? C_PHASE + (SP[b + 2] & 3) : kind === 1 ? C_SUBMIT : C_RING;
      o[3] = (kind === 0 ? 2 : 1) << 2;  // loop phases below, submits and ring waits above
    });
    var tk = r.ticks;
    tk.sort(function (a, b) { return SC[a + 2] - SC[b + 2]; });
    r.tt = new Float64Array(tk.length); r.tk = new Uint8Array(tk.length);
    tk.forEach(function (b, j) { r.tt[j] = SC[b + 2]; r.tk[j] = SC[b + 1]; });
  } else {
    r.tmp = HS.map(function (h, j) { return j; });
    finish(r, HS.length, function (j, o) {
      var h = HS[j], k = hostNames.indexOf(h[0]);
      if (k < 0) { k = hostNames.length; hostNames.push(h[0]); }
      o[0] = h[1]; o[1] = h[2]; o[2] = C_HOST + (k % 7); o[3] = 0;
    });
  }
});
BODY.dataset.taskMarks = String(NB);
)JS";
constexpr const char* kScript2 = R"JS(
// ---- page head, error, verdict -------------------------------------------------------------
document.getElementById('title').textContent = 'chiprt run ' + String(R.run_number).padStart(4, '0');
document.getElementById('subtitle').textContent = (R.variant || 'unknown variant') + ' \u00b7 callable ' +
  R.callable_id + ' \u00b7 ' + (R.serial ? 'serial' : 'threaded') + ' \u00b7 ' +
  (R.isolated ? 'isolated device' : 'in-process device') + ' \u00b7 wall ' + fmt(R.wall_ns);
if (E) {
  var es = section('Error: ' + (E.name || 'code ' + E.code), 'err');
  var ep = [['message', E.message || '\u2014']];
  if (E.hint) ep.push(['hint', E.hint]);
  if (E.stall) ep.push(['stall', E.stall]);
  if (E.stuck_task >= 0) ep.push(['stuck task', 'task ' + E.stuck_task + ' (red on the timeline)']);
  if (E.stuck_core >= 0) ep.push(['stuck core', coreLabel(E.stuck_core)]);
  ep.push(['status code', String(E.code)]);
  kv(es, ep);
}
function hostText() {
  var L = R.host_load, load = function (v) { return v >= 0 ? v.toFixed(2) : 'unknown'; };
  if (!L || !L.hardware_threads) return 'not recorded';
  return L.hardware_threads + ' hardware threads, load ' + load(L.start) + ' \u2192 ' + load(L.end) +
    (L.loaded ? ' (loaded)' : '');
}
var vs = section('Verdict');
if (A.verdict) {
  var vl = el('div');
  var badge = el('span', 'badge', A.bound);
  define(badge, A.bound, BOUNDS[A.bound]);
  vl.appendChild(badge);
  vl.appendChild(el('span', null, A.verdict));
  vs.appendChild(vl);
} else empty(vs, 'No verdict (no analysis of this run).');
facts(vs, [['wall time', fmt(R.wall_ns)], ['chip span', fmt(A.chip_span_ns)],
  ['task time (all blocks)', fmt(A.task_time_ns)], ['critical path (tasks)', fmt(A.path_ns)],
  ['critical path (with waits)', fmt(A.path_with_waits_ns)],
  ['parallelism', A.chip_span_ns ? A.parallelism.toFixed(2) : '\u2014'],
  ['cores', num(SH.run_cores)],
  ['host threads that ran kernels', SH.kernel_threads ? num(SH.kernel_threads) : '\u2014'],
  ['host', hostText()],
  ['tasks', R.tasks_text]].concat(R.internal ? [['runtime scope fences', num(R.internal)]] : [], [
  ['edges', R.have_edges ? num(R.edges) : 'not collected'],
  ['blocks run', num(R.blocks_run) + (R.blocks_unrun ? ' (' + num(R.blocks_unrun) + ' never ran)' : '')],
  ['chip', SH.clusters + ' of ' + SH.device_clusters + ' clusters, ' + SH.aicpu_threads + ' AICPU threads']]));
if (A.caveats && A.caveats.length) {
  var ul = el('ul');
  A.caveats.forEach(function (c) { ul.appendChild(el('li', null, c)); });
  vs.appendChild(ul);
}

// ---- timeline ------------------------------------------------------------------------------
var ts = section('Timeline');
if (SAMPLED.blocks > 1 || SAMPLED.spans > 1 || SAMPLED.sched > 1) {
  ts.appendChild(el('div', 'empty', 'Sampled: a large run draws every ' + SAMPLED.blocks +
    'th block (' + num(SAMPLED.blocks_embedded) + ' of ' + num(R.blocks_run) + ', every running one), every ' +
    SAMPLED.spans + 'th AICPU span and every ' + SAMPLED.sched + 'th scheduler event; ' +
    'the tables and the verdict cover every block.'));
}
var tbar = el('div'); tbar.id = 'tlbar';
var bReset = el('button', null, 'reset: whole run'), bChip = el('button', null, 'chip'), bIn = el('button', null, '+'), bOut = el('button', null, '\u2212');
var vinfo = el('span');
tbar.appendChild(bReset); tbar.appendChild(bChip); tbar.appendChild(bIn); tbar.appendChild(bOut); tbar.appendChild(vinfo);
tbar.appendChild(el('span', 'empty', 'wheel: zoom \u00b7 drag: pan \u00b7 keys + \u2212 \u2190 \u2192, 0 whole run, c chip'));
ts.appendChild(tbar);
var legend = el('div'); legend.id = 'legend';
function sw(colour, text, outline) {
  var s = el('span', 'sw'); s.style.background = colour;
  if (outline) s.style.border = '2px solid ' + PATH;
  legend.appendChild(s); legend.appendChild(document.createTextNode(text));
}
K.forEach(function (k, j) { sw(COL[j], k[1]); });
if (A.path.length) sw('#fff', 'critical path', true);
if (stuckTask >= 0 || rows.some(function (r) { return r.type === 0 && r.f.some(function (f) { return f & 2; }); }))
  sw(STUCK, 'stuck / still running');
if (threadRows.size) {
  PHASES.forEach(function (p, j) { sw(COL[C_PHASE + j], p); });
  sw(COL[C_SUBMIT], 'submit'); sw(COL[C_RING], 'ring wait');
}
ts.appendChild(legend);
var wrap = el('div'); wrap.id = 'tlwrap';
var cv = el('canvas'); cv.id = 'tl'; cv.tabIndex = 0;
wrap.appendChild(cv); ts.appendChild(wrap);
if (!rows.length) { empty(ts, 'Nothing was recorded on the timeline (swimlane off?).'); wrap.style.display = 'none'; }
var tip = document.getElementById('tip');
var ctx = cv.getContext('2d');
var GUT = 150, RH = 18, AX = 24, W = 800, H = 100, DPR = 1;
// The first view: the chip's work (blocks and AICPU spans) when there is some, else the run.
var c0 = Infinity, c1 = -Infinity;
rows.forEach(function (r) {
  if (r.type === 2 || !r.s.length) return;
  c0 = Math.min(c0, r.s[0]);
  for (var j = 0; j < r.e.length; j++) if (r.e[j] > c1 && !(r.f[j] & 2)) c1 = r.e[j];
});
if (!(c1 > c0)) { c0 = tMin; c1 = tMax; }
var pad = (c1 - c0) * 0.02;
c0 = Math.max(tMin, c0 - pad); c1 = Math.min(tMax, c1 + pad);
var v0 = c0, v1 = c1;
var BANDY = [2, 2, 10], BANDH = [RH - 4, 7, 6];
function resize() {
  W = Math.max(400, wrap.clientWidth || 1200); H = AX + rows.length * RH + 4;
  DPR = window.devicePixelRatio || 1;
  cv.width = Math.round(W * DPR); cv.height = Math.round(H * DPR);
  cv.style.width = W + 'px'; cv.style.height = H + 'px';
}
function lb(a, v) {  // first index with a[i] >= v
  var lo = 0, hi = a.length;
  while (lo < hi) { var mid = (lo + hi) >> 1; if (a[mid] < v) lo = mid + 1; else hi = mid; }
  return lo;
}
function niceStep(span, n) {
  var raw = span / n, p = Math.pow(10, Math.floor(Math.log10(raw))), m = raw / p;
  return p * (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10);
}
function axisLabel(t, step) {
  var u = step >= 1e9 ? 0 : step >= 1e6 ? 1 : step >= 1e3 ? 2 : 3, v = t / UNITS[u][0];
  var dec = Math.max(0, -Math.floor(Math.log10(step / UNITS[u][0]) + 1e-9));
  return v.toFixed(dec) + ' ' + UNITS[u][1];
}
var ACC = new Float64Array(COL.length), touched = [];  // a pixel column's time per colour
function drawRow(r, y, k, hl) {
  var n = r.s.length, i = lb(r.s, v0 - r.maxd), bx = -1, bb = -1, busy = 0;
  function flush() {
    if (bx < 0) return;
    var bc = touched[0];
    for (var q = 0; q < touched.length; q++) {
      if (ACC[touched[q]] > ACC[bc]) bc = touched[q];
    }
    for (q = 0; q < touched.length; q++) ACC[touched[q]] = 0;
    touched.length = 0;
    ctx.globalAlpha = Math.max(0.35, Math.min(1, busy));
    ctx.fillStyle = COL[bc]; ctx.fillRect(bx, y + BANDY[bb], 1, BANDH[bb]);
    ctx.globalAlpha = 1; bx = -1; busy = 0;
  }
  for (; i < n; i++) {
    var s = r.s[i];
    if (s > v1) break;
    var e = r.e[i];
    if (e < v0) continue;
    var x0 = GUT + (s - v0) * k, x1 = GUT + (e - v0) * k, f = r.f[i], band = f >> 2;
    if (x0 < GUT) x0 = GUT;
    if (x1 > W) x1 = W;
    var w = x1 - x0;
    if (w >= 1.5 || (f & 3)) {
      // Wide enough, or marked (path, stuck): drawn on its own (a stuck one kept in view).
      flush();
      if (f & 2 && x0 > W - 3) x0 = W - 3;
      ctx.fillStyle = f & 2 ? STUCK : COL[r.c[i]];
      ctx.fillRect(x0, y + BANDY[band], Math.max(w, f & 2 ? 3 : 1), BANDH[band]);
      if (w >= 4 && r.type === 0 && !(f & 2)) {
        ctx.fillStyle = 'rgba(255,255,255,.55)'; ctx.fillRect(x1 - 1, y + 2, 1, RH - 4);
      }
      if (f & 1) hl.push(x0, y + 1, Math.max(w, 2), RH - 2);
    } else {
      // Narrower than a pixel: aggregated per pixel column (coverage as opacity, the kernel
      // with the most time in the column as colour), so a million blocks cost a pass, not a mess.
      var col = Math.floor(x0), c = r.c[i];
      if (col !== bx || band !== bb) { flush(); bx = col; bb = band; }
      busy += w;
      if (ACC[c] === 0) touched.push(c);
      ACC[c] += w;
    }
  }
  flush();
  if (r.tt) {  // scheduler events: ticks, dispatch at the top, completion at the bottom
    var lastx = [-1, -1];
    for (i = lb(r.tt, v0); i < r.tt.length && r.tt[i] <= v1; i++) {
      var x = Math.floor(GUT + (r.tt[i] - v0) * k), kd = r.tk[i] & 1;
      if (x === lastx[kd]) continue;
      lastx[kd] = x;
      ctx.fillStyle = kd ? '#1b5e20' : '#0d47a1';
      ctx.fillRect(x, kd ? y + RH - 5 : y, 1, 4);
    }
  }
}
var rowIndex = new Map(); rows.forEach(function (r, j) { rowIndex.set(r, j); });
function rowOfCore(c) { var r = coreRows.get(c); return r ? rowIndex.get(r) : -1; }
function draw() {
  ctx.setTransform(DPR, 0, 0, DPR, 0, 0);
  ctx.fillStyle = '#fff'; ctx.fillRect(0, 0, W, H);
  var k = (W - GUT) / (v1 - v0), j, y;
  // Cluster groups on alternating backgrounds.
  var shade = false, prev = null;
  for (j = 0; j < rows.length; j++) {
    if (rows[j].grp !== prev) { shade = !shade; prev = rows[j].grp; }
    ctx.fillStyle = shade ? '#f7f9fa' : '#fff'; ctx.fillRect(0, AX + j * RH, W, RH);
  }
  var step = niceStep(v1 - v0, Math.max(2, (W - GUT) / 110));
  ctx.font = '11px system-ui,sans-serif'; ctx.textBaseline = 'middle';
  for (var tt = Math.ceil(v0 / step) * step; tt <= v1; tt += step) {
    var x = GUT + (tt - v0) * k;
    ctx.fillStyle = '#e3e6e8'; ctx.fillRect(x, AX, 1, H - AX);
    ctx.fillStyle = '#555'; ctx.fillRect(x, AX - 5, 1, 5);
  }
  ctx.save(); ctx.beginPath(); ctx.rect(GUT, AX, W - GUT, H - AX); ctx.clip();
  var hl = [];
  for (j = 0; j < rows.length; j++) drawRow(rows[j], AX + j * RH, k, hl);
  // The critical path: outlined slices, joined step to step.
  ctx.strokeStyle = PATH; ctx.lineWidth = 2;
  for (j = 0; j < hl.length; j += 4) ctx.strokeRect(hl[j], hl[j + 1], hl[j + 2], hl[j + 3]);
  ctx.lineWidth = 1.5; ctx.beginPath();
  var P = A.path, pi = 0;
  while (pi < P.length && P[pi][4] !== null && P[pi][4] < v0) pi++;
  for (pi = Math.max(1, pi); pi < P.length; pi++) {
    var a = P[pi - 1], b = P[pi];
    if (a[4] === null || b[3] === null) continue;
    if (a[4] > v1) break;
    var ra = rowOfCore(a[2]), rb = rowOfCore(b[2]);
    if (ra < 0 || rb < 0) continue;
    ctx.moveTo(GUT + (a[4] - v0) * k, AX + ra * RH + RH / 2);
    ctx.lineTo(GUT + (b[3] - v0) * k, AX + rb * RH + RH / 2);
  }
  ctx.stroke(); ctx.restore();
  // The gutter: row labels, cluster separators.
  ctx.fillStyle = '#eceff1'; ctx.fillRect(0, 0, GUT, H);
  ctx.textAlign = 'left'; prev = null;
  for (j = 0; j < rows.length; j++) {
    y = AX + j * RH;
    if (rows[j].grp !== prev) { ctx.fillStyle = '#b0bec5'; ctx.fillRect(0, y, W, 1); prev = rows[j].grp; }
    ctx.fillStyle = '#263238'; ctx.fillText(rows[j].label, 6, y + RH / 2);
  }
  ctx.fillStyle = '#90a4ae'; ctx.fillRect(GUT - 1, 0, 1, H); ctx.fillRect(0, AX - 1, W, 1);
  ctx.fillStyle = '#333'; ctx.textAlign = 'center';
  for (tt = Math.ceil(v0 / step) * step; tt <= v1; tt += step) {
    var lab = axisLabel(tt, step), lw = ctx.measureText(lab).width;
    ctx.fillText(lab, Math.min(W - lw / 2 - 2, Math.max(GUT + lw / 2 + 2, GUT + (tt - v0) * k)), AX / 2 - 1);
  }
  ctx.textAlign = 'left'; ctx.fillStyle = '#555';
  ctx.fillText(fmt(v1 - v0) + ' shown', 6, AX / 2 - 1);
  vinfo.textContent = 'view ' + fmt(v0) + ' \u2013 ' + fmt(v1) + ' (span ' + fmt(v1 - v0) + ')';
}
var pending = false;
function redraw() {  // one draw per frame; the timer where frames do not come (headless, hidden)
  if (pending) return;
  pending = true;
  var go = function () { if (pending) { pending = false; draw(); } };
  requestAnimationFrame(go); setTimeout(go, 50);
}
var FULL = tMax - tMin, MINSPAN = 20;
function setView(a, b) {
  var span = Math.min(Math.max(b - a, MINSPAN), FULL * 1.2);
  if (a < tMin - FULL * 0.1) a = tMin - FULL * 0.1;
  if (a + span > tMax + FULL * 0.1) a = tMax + FULL * 0.1 - span;
  v0 = a; v1 = a + span; redraw();
}
function zoomAt(x, factor) {
  var f = Math.max(0, Math.min(1, (x - GUT) / (W - GUT))), tc = v0 + f * (v1 - v0);
  var span = Math.min(Math.max((v1 - v0) * factor, MINSPAN), FULL * 1.2);
  setView(tc - f * span, tc - f * span + span);
}
cv.addEventListener('wheel', function (ev) {
  ev.preventDefault();
  zoomAt(ev.offsetX, Math.exp(Math.max(-300, Math.min(300, ev.deltaY)) * 0.002));
}, { passive: false });
var drag = null;
cv.addEventListener('mousedown', function (ev) { drag = { x: ev.clientX, a: v0, b: v1 }; cv.focus(); });
window.addEventListener('mouseup', function () { drag = null; });
window.addEventListener('mousemove', function (ev) {
  if (!drag) return;
  var dt = (drag.x - ev.clientX) * (drag.b - drag.a) / (W - GUT);
  setView(drag.a + dt, drag.b + dt);
  tip.style.display = 'none';
});
function reset() { v0 = tMin; v1 = tMax; redraw(); }
bReset.onclick = reset;
bChip.onclick = function () { v0 = c0; v1 = c1; redraw(); };
bIn.onclick = function () { zoomAt(GUT + (W - GUT) / 2, 1 / 1.5); };
bOut.onclick = function () { zoomAt(GUT + (W - GUT) / 2, 1.5); };
document.addEventListener('keydown', function (ev) {
  if (ev.target && /INPUT|TEXTAREA/.test(ev.target.tagName)) return;
  var span = v1 - v0, c = GUT + (W - GUT) / 2;
  if (ev.key === '+' || ev.key === '=') zoomAt(c, 1 / 1.5);
  else if (ev.key === '-' || ev.key === '_') zoomAt(c, 1.5);
  else if (ev.key === '0') reset();
  else if (ev.key === 'c') bChip.onclick();
  else if (ev.key === 'ArrowLeft') setView(v0 - span * 0.15, v1 - span * 0.15);
  else if (ev.key === 'ArrowRight') setView(v0 + span * 0.15, v1 + span * 0.15);
  else return;
  ev.preventDefault();
});
function hit(r, t, tol, band) {
  var i = lb(r.s, t - tol - r.maxd), best = -1, bd = Infinity;
  for (var n = 0; i < r.s.length && r.s[i] <= t + tol && n < 50000; i++, n++) {
    var d = t < r.s[i] ? r.s[i] - t : t > r.e[i] ? t - r.e[i] : 0;
    if (band >= 0 && (r.f[i] >> 2) !== band) d += tol / 2;
    if (d <= tol && d < bd) { bd = d; best = i; }
  }
  return best;
}
function tipText(r, i) {
  var s = r.s[i], e = r.e[i], q = r.src[i], L;
  if (r.type === 0) {
    var b = q * 6, end = BL[b + 5], task = BL[b];
    L = [kname(BL[b + 3]), 'task ' + task + '  block ' + BL[b + 1], coreLabel(BL[b + 2]),
      'start ' + fmt(s), end === null ? 'no end: still running when the run ended' : 'end   ' + fmt(e),
      'duration ' + (end === null ? '\u2265 ' : '') + fmt(e - s)];
    if (pathStep.has(task)) L.push('critical path step ' + A.path[pathStep.get(task)][13] + ' of ' + R.path_steps);
    if (task === stuckTask) L.push('the stuck task');
  } else if (r.type === 1) {
    var kind = SP[q + 1], what = SP[q + 2];
    L = [kind === 0 ? 'loop phase: ' + (PHASES[what] || what) : kind === 1 ? 'submit task ' + SP[q + 3] :
      'ring wait (' + (RINGS[what] || what) + ') for task ' + SP[q + 3], r.label];
    L.push('start ' + fmt(s), 'end   ' + fmt(e), 'duration ' + fmt(e - s));
  } else {
    L = ['host: ' + HS[q][0], 'start ' + fmt(s), 'end   ' + fmt(e), 'duration ' + fmt(e - s)];
  }
  return L.join('\n');
}
cv.addEventListener('mousemove', function (ev) {
  if (drag) return;
  var j = Math.floor((ev.offsetY - AX) / RH), x = ev.offsetX;
  if (x < GUT || j < 0 || j >= rows.length) { tip.style.display = 'none'; return; }
  var k = (W - GUT) / (v1 - v0), t = v0 + (x - GUT) / k, r = rows[j];
  var yr = ev.offsetY - AX - j * RH, band = r.type === 1 ? (yr < 9 ? 1 : 2) : -1;
  var i = hit(r, t, 3 / k, band);
  if (i < 0 && band > 0) i = hit(r, t, 3 / k, 0);
  if (i < 0) { tip.style.display = 'none'; return; }
  tip.textContent = tipText(r, i);
  tip.style.display = 'block';
  var tx = ev.clientX + 14, ty = ev.clientY + 14;
  if (tx + tip.offsetWidth > window.innerWidth) tx = ev.clientX - tip.offsetWidth - 10;
  if (ty + tip.offsetHeight > window.innerHeight) ty = ev.clientY - tip.offsetHeight - 10;
  tip.style.left = tx + 'px'; tip.style.top = ty + 'px';
});
cv.addEventListener('mouseleave', function () { tip.style.display = 'none'; });
window.addEventListener('resize', function () { resize(); redraw(); });
)JS";
constexpr const char* kScript3 = R"JS(
// ---- tables --------------------------------------------------------------------------------
var ps = section('Critical path');
if (A.path.length) {
  var wt = A.waited, wsum = wt.reduce(function (x, y) { return x + y; }, 0);
  ps.appendChild(el('div', null, num(R.path_steps) + ' steps' +
    (SAMPLED.path > 1 ? ' (every ' + SAMPLED.path + 'th listed)' : '') + ', ' + fmt(A.path_ns) + ' in tasks, ' +
    fmt(A.path_with_waits_ns) + ' with waits; waited ' + fmt(wsum) + ': ' +
    WN.map(function (n, j) { return n + ' ' + fmt(wt[j]); }).join(', ')));
  table(ps, ['#', 'task', 'kernel', 'core', 'start', 'duration', 'gap'].concat(
    WN.map(function (n) { return [n, DEF['wait ' + n]]; }), ['main wait']),
    A.path.map(function (p, j) {
      return [p[13], p[0], kname(p[1]), coreLabel(p[2]), fmt(p[3]),
        p[3] === null || p[4] === null ? '\u2014' : fmt(p[4] - p[3]), fmt(p[5])]
        .concat(p.slice(6, 12).map(fmt), [p[5] ? WN[p[12]] : '\u2014']);
    }), [2, 3, 14], 2000);
} else empty(ps, 'No critical path (no dependency graph or no timing collected).');

var kst = section('Kernels');
if (A.kernels.length) {
  table(kst, ['kernel', 'blocks', 'total', 'share', 'mean', 'p50', 'p99', 'max'], A.kernels.map(function (k) {
    return [k[1], num(k[2]), fmt(k[3]), A.task_time_ns ? pct(k[3] / A.task_time_ns) : '\u2014',
      fmt(k[4]), fmt(k[5]), fmt(k[6]), fmt(k[7])];
  }));
} else empty(kst, 'No per-kernel statistics (no task timing).');

var cs = section('Core utilisation');
if (A.cores.length) {
  table(cs, ['core', 'blocks', 'busy', 'utilisation of the chip span'], A.cores.map(function (c) {
    return [c[1] || coreLabel(c[0]), num(c[2]), fmt(c[3]), bar(c[4])];
  }), [0, 3]);
} else empty(cs, 'No per-core utilisation (nothing ran, or no timing).');

var ss = section('Scopes');
if (D.scopes.length) {
  function occ(p, c) { return num(p) + ' / ' + num(c) + (c ? ' (' + pct(p / c) + ')' : ''); }
  table(ss, ['scope', 'depth', ['tasks', 'tasks submitted inside the scope'], 'task window peak', 'heap peak (bytes)', 'dep pool peak',
    'waits (window, heap, pool)', 'wait time'], D.scopes.map(function (s) {
    return [s[0], s[1], num(s[2]), occ(s[3], s[4]), occ(s[5], s[6]), occ(s[7], s[8]),
      s[9].join(', '), s[10].map(fmt).join(', ')];
  }), [0], 2000);
} else empty(ss, 'No scope statistics (tensormap_ringbuffer with scope_stats only).');

var ct = section('Counters'), CT = D.counters;
if (CT.records) {
  var kinds = ['instructions', 'cycles', 'CPU time'];
  kv(ct, kinds.map(function (n, j) {
    return [n, CT.have[j] ? (j === 2 ? fmt(CT.sums[j]) : num(CT.sums[j])) + ' over ' + num(CT.have[j]) +
      ' of ' + num(CT.records) + ' blocks' : 'not measured'];
  }).concat(CT.sums[1] ? [['instructions per cycle', (CT.sums[0] / CT.sums[1]).toFixed(3)]] : []));
  table(ct, ['kernel', 'blocks', 'instructions', 'cycles', 'CPU time'], CT.per_kernel.map(function (r) {
    var h = CT.have, dash = '\u2014';  // a column no block measured: a dash, not zeros
    return [kname(r[0]), num(r[1]), h[0] ? num(r[2]) : dash, h[1] ? num(r[3]) : dash, h[2] ? fmt(r[4]) : dash];
  }));
} else empty(ct, 'No counters collected.');
if (CT.note) ct.appendChild(el('div', 'empty', CT.note));

var ns = section('Records and notes');
kv(ns, [['records received', num(R.records_received)],
  ['records dropped', num(R.records_dropped) + (R.records_dropped ? ' (' + (R.drop_reason || 'no reason given') + ')' : '')],
  ['clock', R.clock_hz ? (R.clock_hz / 1e6).toFixed(1) + ' MHz' : '\u2014'],
  ['switches', 'swimlane ' + R.config.swimlane_level + ', tasks ' + R.config.task_timing + ', deps ' +
    R.config.dependency_graph + ', scopes ' + R.config.scope_stats + ', args ' + R.config.args_dump_level +
    ', counters ' + R.config.hardware_counters]]);
if (R.notes.length) {
  var nl = el('ul');
  R.notes.forEach(function (n) { nl.appendChild(el('li', null, n)); });
  ns.appendChild(nl);
} else empty(ns, 'No notes.');

// The first draw runs now, not in a frame callback, so a headless dump sees it finished.
resize();
draw();
BODY.dataset.ready = '1';
})();
</script>
</body></html>
)JS";

}  // namespace

void write_report_html(const RunModel& model, const Analysis& analysis, const ReportSink& sink) {
  Chunks out(sink);
  out << kHead;
  const std::string rest =
      build_json(model, analysis, out).dump(-1, ' ', false, json::error_handler_t::replace);
  // The rest of the data object after the members already written ("{" dropped). '<' only
  // occurs inside JSON strings; as \u003c no "</script>" or "<!--" in a symbol or a message can
  // end the data block early.
  out << ',';
  size_t from = 1;
  for (size_t at = rest.find('<', from); at != std::string::npos; at = rest.find('<', from)) {
    out << std::string_view(rest).substr(from, at - from) << "\\u003c";
    from = at + 1;
  }
  out << std::string_view(rest).substr(from);
  out << kScript << kScript2 << kScript3;
  out.flush();
}

uint64_t report_timeline_blocks(const RunModel& model) {
  uint64_t ran = 0;
  for (const BlockRun& b : model.blocks) ran += b.core >= 0 && b.start_ns != kNoTime;
  const uint64_t stride = sample_stride(ran, kReportTimelineItems);
  uint64_t seen = 0, kept = 0;
  for (const BlockRun& b : model.blocks) {
    if (b.core < 0 || b.start_ns == kNoTime) continue;
    kept += seen++ % stride == 0 || b.end_ns == kNoTime;
  }
  return kept;
}

std::string render_report_html(const RunModel& model, const Analysis& analysis) {
  std::string html;
  write_report_html(model, analysis, [&](std::string_view piece) { html.append(piece); });
  return html;
}

}  // namespace chiprt::diagnostics
