// A hand-built run for the browser test of report.html: 3 clusters, 40 tasks of 3 kernels (SPMD
// blocks among them) placed by a small list scheduler, edges, host spans, AICPU thread spans and
// scheduler events, scope stats, counters, a 5-step critical path and a stuck last task. Writes
// the page to argv[1] and prints the number of block slices the page must hold.
//
// Everything is built from the struct fields (no analyze()), so the test needs only
// report_html.cpp of the diagnostics room.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "diagnostics/analysis.h"
#include "diagnostics/report_html.h"
#include "diagnostics/run_model.h"

using namespace chiprt;
using namespace chiprt::diagnostics;

int main(int argc, char** argv) {
  if (argc != 2 && argc != 3) {
    std::fprintf(stderr, "usage: %s OUT.html [TASKS|empty]\n", argv[0]);
    return 2;
  }
  // "empty": a run that recorded nothing (every section must say so, without script errors).
  if (argc == 3 && std::string(argv[2]) == "empty") {
    std::ofstream out(argv[1], std::ios::binary);
    out << render_report_html(RunModel{}, Analysis{});
    std::printf("0\n");
    return out ? 0 : 1;
  }
  // TASKS (default 40) scales the same graph up: 400000 gives about a million blocks, the size
  // the page must stay usable at.
  const uint64_t tasks = argc == 3 ? std::stoull(argv[2]) : 40;
  if (tasks < 40) {
    std::fprintf(stderr, "TASKS must be at least 40\n");
    return 2;
  }
  RunModel m;
  m.run_number = 7;
  m.callable_id = 1;
  m.variant = "tensormap_ringbuffer";
  m.config.swimlane_level = 4;  // set by hand: DiagnosticsConfig::all may not be linked here
  m.config.task_timing = m.config.dependency_graph = m.config.scope_stats = true;
  m.config.args_dump_level = 1;
  m.config.hardware_counters = true;
  m.shape = {4, 1, 3, 3, 9};  // 4 AICPU threads (t0 orchestrates), 3 clusters, 9 cores
  m.clock_hz = 1'000'000'000;
  // Symbols with markup in them: the page must show them as text.
  m.kernels = {{0, "gemm_tile<float>", CoreType::AIC, ""},
               {1, "softmax_rows", CoreType::AIV, ""},
               {2, "add_bias</script><b>x</b>", CoreType::AIV, ""}};
  const uint64_t kDur[3] = {9000, 4000, 2500};
  const uint32_t kBlocks[3] = {1, 2, 4};
  const uint64_t chip0 = 200'000;  // host prepare and upload come first

  // Core numbering: AIC c = core c, AIV 3 + 2c and 4 + 2c.
  std::vector<uint64_t> core_free(9, chip0);
  std::vector<uint64_t> task_end(tasks, 0);
  uint64_t chip_end = 0;
  for (uint64_t t = 0; t < tasks; ++t) {
    const int k = static_cast<int>(t % 3);
    TaskNode n;
    n.task = t;
    n.func_id = k;
    n.block_num = kBlocks[k];
    n.core_type = k == 0 ? CoreType::AIC : CoreType::AIV;
    n.submit_begin_ns = chip0 + t * 600;
    n.submit_end_ns = n.submit_begin_ns + 450;
    uint64_t ready = n.submit_end_ns;
    for (uint64_t p : {t >= 8 ? t - 8 : t, t >= 1 && t % 4 == 1 ? t - 1 : t}) {
      if (p == t) continue;
      m.edges.push_back({p, t});
      ready = std::max(ready, task_end[p]);
    }
    n.ready_ns = ready;
    m.nodes.push_back(n);
    for (uint32_t b = 0; b < n.block_num; ++b) {
      // The eligible core that frees first.
      int best = -1;
      for (int c = k == 0 ? 0 : 3; c < (k == 0 ? 3 : 9); ++c)
        if (best < 0 || core_free[c] < core_free[best]) best = c;
      BlockRun r;
      r.task = t;
      r.block = b;
      r.core = best;
      r.dispatch_ns = std::max(ready, core_free[best]) + 150;
      r.start_ns = r.dispatch_ns + 300;
      r.end_ns = r.start_ns + kDur[k] + (t * 37 + b * 101) % 900;
      r.complete_ns = r.end_ns + 120;
      if (t == tasks - 1 && b == 0) r.end_ns = r.complete_ns = kNoTime;  // the stuck block
      core_free[best] = r.end_ns == kNoTime ? r.start_ns : r.complete_ns;
      if (r.end_ns != kNoTime) task_end[t] = std::max(task_end[t], r.end_ns);
      chip_end = std::max(chip_end, r.start_ns);
      chip_end = std::max(chip_end, r.end_ns == kNoTime ? 0 : r.end_ns);
      m.blocks.push_back(r);
      const uint32_t thread = 1 + static_cast<uint32_t>(best % 3);
      m.scheduler_events.push_back(
          {SchedulerEvent::Kind::Dispatch, thread, best, t, b, r.dispatch_ns});
      if (r.end_ns != kNoTime)
        m.scheduler_events.push_back(
            {SchedulerEvent::Kind::Complete, thread, best, t, b, r.complete_ns});
    }
  }
  // One block that never ran (its core -1): no slice on the timeline.
  m.blocks.push_back({tasks - 1, 1, -1, kNoTime, kNoTime, kNoTime, kNoTime});
  m.have_edges = true;
  const uint64_t chip_stop = chip_end + 20'000;
  m.wall_ns = chip_stop + 60'000;
  m.host_spans = {{"prepare", 0, 80'000},       {"graph_build", 80'000, 150'000},
                  {"upload", 150'000, 190'000}, {"launch", 190'000, 200'000},
                  {"wait", 200'000, chip_stop}, {"read_back", chip_stop, m.wall_ns}};
  // Orchestrator submits on thread 0, with one ring wait; loop phases on threads 1-3.
  for (const TaskNode& n : m.nodes)
    m.thread_spans.push_back(
        {ThreadSpan::Kind::Submit, 0, 0, n.task, n.submit_begin_ns, n.submit_end_ns});
  m.thread_spans.push_back({ThreadSpan::Kind::RingWait, 0, 0, 20, 211'600, 212'000});
  for (uint32_t th = 1; th <= 3; ++th)
    for (uint64_t t0 = chip0; t0 + 3000 < chip_stop; t0 += 3000) {
      m.thread_spans.push_back({ThreadSpan::Kind::LoopPhase, th, 0, 0, t0, t0 + 700});
      m.thread_spans.push_back({ThreadSpan::Kind::LoopPhase, th, 1, 0, t0 + 700, t0 + 1500});
      m.thread_spans.push_back({ThreadSpan::Kind::LoopPhase, th, 2, 0, t0 + 1500, t0 + 3000});
    }
  m.scopes = {{0, 0, 40, 24, 1 << 20, 90, 64, 4 << 20, 256, {1, 0, 0}, {400, 0, 0}},
              {1, 1, 16, 12, 300'000, 40, 64, 4 << 20, 256, {0, 0, 0}, {0, 0, 0}}};
  for (const BlockRun& b : m.blocks) {
    if (b.end_ns == kNoTime) continue;
    m.counters.push_back(
        {b.task, b.block, b.core, 4, 0, 0, b.end_ns - b.start_ns - 100});  // CPU time only
  }
  m.counters_note = "perf_event_open not permitted (perf_event_paranoid 3): CPU time only";
  m.records_received = 1234;
  m.records_dropped = 3;
  m.drop_reason = "trace ring full on thread 2";
  m.notes = {"args dump: metadata only (level 1)"};
  m.error = RunError{27,
                     "SchedulerTimeout",
                     "the scheduler made no progress within the watchdog timeout",
                     "a kernel never returned: see the stuck task",
                     "running_task_stalled",
                     static_cast<int64_t>(tasks - 1),
                     m.blocks[m.blocks.size() - 2].core};

  Analysis a;
  a.wall_ns = m.wall_ns;
  a.chip_span_ns = chip_end - chip0;
  uint64_t first = kNoTime;
  for (const BlockRun& b : m.blocks) {
    if (b.start_ns == kNoTime || b.end_ns == kNoTime) continue;
    a.task_time_ns += b.end_ns - b.start_ns;
    first = std::min(first, b.start_ns);
  }
  // The path: 4 -> 12 -> 20 -> 28 -> 36 (edges t-8 -> t).
  uint64_t prev_end = first;
  for (uint64_t t : {4, 12, 20, 28, 36}) {
    PathStep p;
    p.task = t;
    p.func_id = m.nodes[t].func_id;
    p.start_ns = kNoTime;
    for (const BlockRun& b : m.blocks) {
      if (b.task != t) continue;
      if (p.start_ns == kNoTime || b.start_ns < p.start_ns) {
        p.start_ns = b.start_ns;
        p.core = b.core;
      }
      p.end_ns = std::max(p.end_ns, b.end_ns);
    }
    p.gap_ns = p.start_ns > prev_end ? p.start_ns - prev_end : 0;
    const uint64_t launch = std::min<uint64_t>(p.gap_ns, 300);
    const uint64_t sched = std::min<uint64_t>(p.gap_ns - launch, 150);
    p.waited_ns[static_cast<int>(WaitKind::Launch)] = launch;
    p.waited_ns[static_cast<int>(WaitKind::Scheduler)] = sched;
    p.waited_ns[static_cast<int>(WaitKind::Data)] = p.gap_ns - launch - sched;
    p.main_wait = p.gap_ns == 0                        ? WaitKind::Unmeasured
                  : p.gap_ns - launch - sched > launch ? WaitKind::Data
                                                       : WaitKind::Launch;
    for (int w = 0; w < kWaitKinds; ++w) a.waited_ns[w] += p.waited_ns[w];
    a.path_ns += p.end_ns - p.start_ns;
    prev_end = p.end_ns;
    a.path.push_back(p);
  }
  a.path_with_waits_ns = a.path.back().end_ns - a.path.front().start_ns;
  a.parallelism = 1.5;
  const char* labels[3] = {"gemm_tile<float> (func 0)", "softmax_rows (func 1)",
                           "add_bias</script><b>x</b> (func 2)"};
  for (int k = 0; k < 3; ++k) {
    KernelStat s;
    s.func_id = k;
    s.label = labels[k];
    std::vector<uint64_t> d;
    for (const BlockRun& b : m.blocks)
      if (b.end_ns != kNoTime && b.start_ns != kNoTime && m.nodes[b.task].func_id == k)
        d.push_back(b.end_ns - b.start_ns);
    std::sort(d.begin(), d.end());
    s.count = d.size();
    for (uint64_t x : d) s.total_ns += x;
    s.mean_ns = s.total_ns / s.count;
    s.p50_ns = d[d.size() / 2];
    s.p99_ns = d[(d.size() * 99) / 100];
    s.max_ns = d.back();
    a.kernels.push_back(s);
  }
  std::sort(a.kernels.begin(), a.kernels.end(),
            [](const KernelStat& x, const KernelStat& y) { return x.total_ns > y.total_ns; });
  for (uint32_t c = 0; c < 9; ++c) {
    CoreUse u;
    u.core = c;
    u.label = (c < 3 ? "AIC c" + std::to_string(c)
                     : "AIV" + std::to_string((c - 3) % 2) + " c" + std::to_string((c - 3) / 2)) +
              " (core " + std::to_string(c) + ")";
    for (const BlockRun& b : m.blocks)
      if (b.core == static_cast<int32_t>(c) && b.end_ns != kNoTime) {
        ++u.blocks;
        u.busy_ns += b.end_ns - b.start_ns;
      }
    u.utilisation = static_cast<double>(u.busy_ns) / static_cast<double>(a.chip_span_ns);
    a.cores.push_back(u);
  }
  a.bound = Bound::Kernels;
  a.verdict = "kernels: the critical path is mostly kernel time; more parallel work would help";
  a.caveats = {"the run failed: times after the stall are missing"};

  std::ofstream out(argv[1], std::ios::binary);
  out << render_report_html(m, a);
  if (!out) {
    std::fprintf(stderr, "cannot write %s\n", argv[1]);
    return 1;
  }
  // The slices the page holds: blocks that ran (a core and a start), the stuck one included; a
  // large run's timeline sampled (every k-th beyond 200000, a block still running always).
  const uint64_t marks = report_timeline_blocks(m);
  uint64_t ran = 0;
  for (const BlockRun& b : m.blocks) ran += b.core >= 0 && b.start_ns != kNoTime;
  // The rule, independently: everything up to the limit, about a k-th of a larger run.
  if ((ran <= 200000 && marks != ran) || (ran > 200000 && (marks > 200001 || marks < ran / 3))) {
    std::fprintf(stderr, "report_timeline_blocks gives %llu of %llu blocks\n",
                 static_cast<unsigned long long>(marks), static_cast<unsigned long long>(ran));
    return 1;
  }
  std::printf("%llu\n", static_cast<unsigned long long>(marks));
  return 0;
}
