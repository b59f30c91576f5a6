#include "diagnostics/analysis.h"

#include <algorithm>
#include <cstdio>
#include <unordered_map>

#include "chiprt/ring_sizes.h"

namespace chiprt::diagnostics {
namespace {

// What the analysis needs of one task: its node's times and its blocks folded into one span.
struct TaskTiming {
  uint64_t task = 0;
  int32_t func_id = -1;
  CoreType core_type = CoreType::AIV;
  uint64_t submit_end_ns = kNoTime;
  uint64_t ready_ns = kNoTime;
  uint64_t first_start_ns = kNoTime;
  uint64_t last_end_ns = 0;
  uint64_t first_dispatch_ns = kNoTime;
  int32_t first_core = -1;
  uint32_t blocks = 0;
  uint32_t finished_blocks = 0;
  bool dependency_only = false;  // never runs on a core (submit_dummy, allocate, scope fences)
  // Every block it has ran to its end (a task with a block that never ran or still runs did not
  // finish).
  bool finished() const { return blocks > 0 && finished_blocks == blocks; }
};

struct Interval {
  uint64_t begin = 0;
  uint64_t end = 0;
};

// The tasks in table order: the nodes' order, then tasks only blocks name, in block order. The
// lookup by task id is a sorted array (16 bytes per task; a hash map costs several times that at
// a million tasks).
struct TaskTable {
  std::vector<TaskTiming> tasks;
  std::vector<std::pair<uint64_t, size_t>> by_task;  // (task, index in tasks), sorted

  static constexpr size_t kNone = static_cast<size_t>(-1);
  size_t find(uint64_t task) const {
    auto it = std::lower_bound(by_task.begin(), by_task.end(), task,
                               [](const auto& entry, uint64_t t) { return entry.first < t; });
    return it != by_task.end() && it->first == task ? it->second : kNone;
  }
  // Appends the tasks of `ids` (in order, each once) not in the table yet.
  template <class Ids>
  void add(size_t count, Ids ids) {
    const size_t first_new = tasks.size();
    for (size_t i = 0; i < count; ++i) {
      const uint64_t task = ids(i);
      if (find(task) != kNone) continue;
      tasks.emplace_back();
      tasks.back().task = task;
    }
    if (tasks.size() == first_new) return;
    // Later duplicates of a new task are dropped (the first keeps its place).
    std::vector<std::pair<uint64_t, size_t>> added;
    added.reserve(tasks.size() - first_new);
    for (size_t i = first_new; i < tasks.size(); ++i) added.emplace_back(tasks[i].task, i);
    std::sort(added.begin(), added.end());
    std::vector<bool> keep(tasks.size() - first_new, false);
    for (size_t i = 0; i < added.size(); ++i) {
      if (i == 0 || added[i].first != added[i - 1].first) keep[added[i].second - first_new] = true;
    }
    size_t out = first_new;
    for (size_t i = first_new; i < tasks.size(); ++i) {
      if (keep[i - first_new]) tasks[out++] = tasks[i];
    }
    tasks.resize(out);
    by_task.clear();
    by_task.reserve(tasks.size());
    for (size_t i = 0; i < tasks.size(); ++i) by_task.emplace_back(tasks[i].task, i);
    std::sort(by_task.begin(), by_task.end());
  }
  TaskTiming& at(uint64_t task) { return tasks[find(task)]; }
};

TaskTable build_tasks(const RunModel& model) {
  TaskTable table;
  table.tasks.reserve(model.nodes.size());
  table.add(model.nodes.size(), [&](size_t i) { return model.nodes[i].task; });
  // A task named by several nodes takes the last one's fields.
  for (const TaskNode& node : model.nodes) {
    TaskTiming& timing = table.at(node.task);
    timing.func_id = node.func_id;
    timing.core_type = node.core_type;
    timing.submit_end_ns = node.submit_end_ns;
    timing.ready_ns = node.ready_ns;
    timing.dependency_only = node.dependency_only;
  }
  table.add(model.blocks.size(), [&](size_t i) { return model.blocks[i].task; });
  for (const BlockRun& block : model.blocks) {
    TaskTiming& timing = table.at(block.task);
    ++timing.blocks;
    if (block.start_ns == kNoTime) continue;
    if (block.start_ns < timing.first_start_ns) {
      timing.first_start_ns = block.start_ns;
      timing.first_core = block.core;
    }
    if (block.dispatch_ns != kNoTime) {
      timing.first_dispatch_ns = std::min(timing.first_dispatch_ns, block.dispatch_ns);
    }
    if (block.end_ns != kNoTime) {
      ++timing.finished_blocks;
      timing.last_end_ns = std::max(timing.last_end_ns, block.end_ns);
    }
  }
  return table;
}

// Per core, its busy spans (dispatch, or start, to end; a still-running block to the run's end),
// sorted and merged, so that "every eligible core was busy" is a sweep over few intervals.
// `from_dispatch` false: execution only (start to end), which is what a block handed to a busy
// core's pending slot waits for between its dispatch and its start.
std::unordered_map<int32_t, std::vector<Interval>> busy_spans(const RunModel& model,
                                                              bool from_dispatch = true) {
  std::unordered_map<int32_t, std::vector<Interval>> spans;
  for (const BlockRun& block : model.blocks) {
    if (block.core < 0 || block.start_ns == kNoTime) continue;
    const uint64_t begin = from_dispatch && block.dispatch_ns != kNoTime
                               ? std::min(block.dispatch_ns, block.start_ns)
                               : block.start_ns;
    const uint64_t end =
        block.end_ns != kNoTime ? block.end_ns : std::max(model.wall_ns, block.start_ns);
    spans[block.core].push_back({begin, end});
  }
  for (auto& [core, list] : spans) {
    std::sort(list.begin(), list.end(),
              [](const Interval& a, const Interval& b) { return a.begin < b.begin; });
    std::vector<Interval> merged;
    for (const Interval& span : list) {
      if (!merged.empty() && span.begin <= merged.back().end) {
        merged.back().end = std::max(merged.back().end, span.end);
      } else {
        merged.push_back(span);
      }
    }
    list = std::move(merged);
  }
  return spans;
}

std::vector<int32_t> eligible_cores(const ChipShape& shape, CoreType type) {
  const uint32_t clusters = shape.clusters != 0 ? shape.clusters : shape.device_clusters;
  std::vector<int32_t> cores;
  for (uint32_t cluster = 0; cluster < clusters; ++cluster) {
    if (type != CoreType::AIV) cores.push_back(static_cast<int32_t>(cluster));
    if (type != CoreType::AIC) {
      cores.push_back(static_cast<int32_t>(shape.device_clusters + 2 * cluster));
      cores.push_back(static_cast<int32_t>(shape.device_clusters + 2 * cluster + 1));
    }
  }
  return cores;
}

// Time within [begin, end) during which every core of `cores` was busy (0 without cores: the
// shape was not recorded, so no wait can be blamed on them).
uint64_t all_busy_ns(const std::unordered_map<int32_t, std::vector<Interval>>& spans,
                     const std::vector<int32_t>& cores, uint64_t begin, uint64_t end) {
  if (cores.empty() || begin >= end) return 0;
  std::vector<std::pair<uint64_t, int>> events;
  for (int32_t core : cores) {
    auto it = spans.find(core);
    if (it == spans.end()) return 0;
    const std::vector<Interval>& list = it->second;
    auto first = std::upper_bound(list.begin(), list.end(), begin,
                                  [](uint64_t t, const Interval& span) { return t < span.end; });
    bool any = false;
    for (; first != list.end() && first->begin < end; ++first) {
      events.emplace_back(std::max(first->begin, begin), 1);
      events.emplace_back(std::min(first->end, end), -1);
      any = true;
    }
    if (!any) return 0;
  }
  std::sort(events.begin(), events.end());  // ends (-1) before begins (+1) at the same time
  const int all = static_cast<int>(cores.size());
  int busy = 0;
  uint64_t total = 0;
  uint64_t since = 0;
  for (const auto& [time, delta] : events) {
    if (busy == all) total += time - since;
    busy += delta;
    since = time;
  }
  return total;
}

uint64_t nearest_rank(const std::vector<uint64_t>& sorted, double percentile) {
  if (sorted.empty()) return 0;
  const double rank = percentile / 100.0 * static_cast<double>(sorted.size());
  size_t index = static_cast<size_t>(rank);
  if (static_cast<double>(index) < rank) ++index;  // ceil
  if (index == 0) index = 1;
  return sorted[std::min(index, sorted.size()) - 1];
}

std::string percent(uint64_t part, uint64_t whole) {
  char text[32];
  std::snprintf(text, sizeof text, "%.0f%%",
                whole == 0 ? 0.0 : 100.0 * static_cast<double>(part) / static_cast<double>(whole));
  return text;
}

// "; the host was loaded (...)": said whenever the load reached the hardware threads, whatever
// the cause, since every time of the run then includes waiting for a CPU.
std::string host_load_clause(const HostLoad& load) {
  if (!load.loaded()) return {};
  char text[200];
  std::snprintf(text, sizeof text,
                "; the host was loaded (1-minute load average %.2f at the start, %.2f at the end, "
                "at least its %u hardware threads): the run's threads waited for CPUs, which "
                "inflates every time here",
                load.start, load.end, load.hardware_threads);
  return text;
}

// The verdict: a failed run's failure; otherwise the cause with the largest share of the critical
// path (with waits) when that share reaches kDominantShare, else "no dominant cause". Each names
// its evidence (its share, as time of the path) and the threshold.
std::string decide_verdict(const RunModel& model, Analysis& analysis) {
  if (model.error) {
    const RunError& e = *model.error;
    analysis.bound = Bound::Failed;
    return "failed: " + e.name + (e.stall.empty() ? "" : " (" + e.stall + ")") + ": " + e.message;
  }
  const std::string host = host_load_clause(model.host_load);
  if (analysis.path.empty()) {
    analysis.bound = Bound::Unknown;
    return "unknown: no task finished, so there is no critical path" + host;
  }
  const uint64_t whole = analysis.path_with_waits_ns;
  const std::string threshold = percent(static_cast<uint64_t>(kDominantShare * 100), 100);
  auto share = [&](uint64_t part) {
    return percent(part, whole) + " of the critical path (" + format_duration_ns(part) + " of " +
           format_duration_ns(whole) + ", at least the " + threshold + " that names a cause)";
  };
  const uint64_t kernels = analysis.path_ns;
  const uint64_t orchestration = analysis.waited_ns[static_cast<int>(WaitKind::Orchestrator)];
  const uint64_t scheduling = analysis.waited_ns[static_cast<int>(WaitKind::Data)] +
                              analysis.waited_ns[static_cast<int>(WaitKind::Scheduler)] +
                              analysis.waited_ns[static_cast<int>(WaitKind::Launch)];
  const uint64_t cores = analysis.waited_ns[static_cast<int>(WaitKind::Core)];
  const uint64_t unmeasured = analysis.waited_ns[static_cast<int>(WaitKind::Unmeasured)];

  // Ring back-pressure: the scopes' counts, else the orchestrator's ring-wait spans.
  uint64_t ring_wait_ns[3] = {};
  for (const ScopeStat& scope : model.scopes) {
    for (int ring = 0; ring < 3; ++ring) ring_wait_ns[ring] += scope.wait_ns[ring];
  }
  if (ring_wait_ns[0] + ring_wait_ns[1] + ring_wait_ns[2] == 0) {
    for (const ThreadSpan& span : model.thread_spans) {
      if (span.kind == ThreadSpan::Kind::RingWait && span.what < 3 && span.end_ns > span.begin_ns) {
        ring_wait_ns[span.what] += span.end_ns - span.begin_ns;
      }
    }
  }
  const uint64_t ring_total = ring_wait_ns[0] + ring_wait_ns[1] + ring_wait_ns[2];

  // The largest share wins; ties go to the earlier cause in this order.
  const std::pair<Bound, uint64_t> candidates[] = {{Bound::Kernels, kernels},
                                                   {Bound::Orchestration, orchestration},
                                                   {Bound::Scheduling, scheduling},
                                                   {Bound::TooFewCores, cores},
                                                   {Bound::Unknown, unmeasured}};
  std::pair<Bound, uint64_t> best = candidates[0];
  for (const auto& candidate : candidates) {
    if (candidate.second > best.second) best = candidate;
  }
  if (static_cast<double>(best.second) < kDominantShare * static_cast<double>(whole)) {
    analysis.bound = Bound::NoDominantCause;
    return "no dominant cause: no part of the critical path reaches " + threshold + " (kernels " +
           percent(kernels, whole) + ", orchestration " + percent(orchestration, whole) +
           ", scheduling " + percent(scheduling, whole) + ", busy cores " + percent(cores, whole) +
           ", unmeasured " + percent(unmeasured, whole) + ")" + host;
  }
  // The orchestrator was late because it blocked on full rings for at least kRingShare of it.
  if (best.first == Bound::Orchestration && ring_total > 0 &&
      static_cast<double>(ring_total) >= kRingShare * static_cast<double>(orchestration)) {
    best.first = Bound::Ring;
  }
  analysis.bound = best.first;
  switch (best.first) {
    case Bound::Kernels: {
      // The kernel with the most time on the path.
      std::unordered_map<int32_t, uint64_t> by_kernel;
      for (const PathStep& step : analysis.path)
        by_kernel[step.func_id] += step.end_ns - step.start_ns;
      int32_t top = -1;
      uint64_t top_ns = 0;
      for (const auto& [func_id, ns] : by_kernel) {
        if (ns > top_ns || (ns == top_ns && func_id < top)) {
          top = func_id;
          top_ns = ns;
        }
      }
      return "kernels: " + share(kernels) + " is kernel time, most of it " +
             model.kernel_label(top) + " (" + format_duration_ns(top_ns) +
             "); speed up those kernels or shorten the dependency chain" + host;
    }
    case Bound::Orchestration:
      return "orchestration: " + share(orchestration) +
             " waited for the orchestrator to submit tasks; submit fewer, larger tasks or make "
             "the orchestration function faster" +
             host;
    case Bound::Ring: {
      int ring = 0;
      for (int i = 1; i < 3; ++i) {
        if (ring_wait_ns[i] > ring_wait_ns[ring]) ring = i;
      }
      const std::string field(ring_field_config_name(static_cast<RingField>(ring)));
      return "ring: " + share(orchestration) + " waited for the orchestrator, which blocked " +
             format_duration_ns(ring_total) + " on full rings (" +
             percent(ring_total, orchestration) + " of that wait, at least the " +
             percent(static_cast<uint64_t>(kRingShare * 100), 100) +
             " that names the rings; mostly " + field + "); raise " + field +
             " or end scopes sooner" + host;
    }
    case Bound::Scheduling: {
      // More scheduler threads help only where the host has CPUs to run them.
      const uint32_t threads = model.shape.chip_host_threads();
      const uint32_t hardware = model.host_load.hardware_threads;
      const bool cpus_full = model.host_load.loaded() || (hardware > 0 && threads >= hardware);
      std::string advice = "use fewer, larger tasks or more scheduler threads (aicpu_thread_num)";
      if (cpus_full) {
        advice =
            "the run's " + std::to_string(threads) +
            " host threads (AICPU threads and the threads that ran kernels) " +
            (model.host_load.loaded() ? "shared a loaded host's " : "already reach the host's ") +
            std::to_string(hardware) +
            " hardware threads, so more scheduler threads would not help: use fewer, larger "
            "tasks, or run on a host with more free CPUs";
      }
      return "scheduling: " + share(scheduling) +
             " is scheduler latency (completion to ready, ready to dispatch, dispatch to start); " +
             advice + host;
    }
    case Bound::TooFewCores:
      return "too_few_cores: " + share(cores) +
             " waited ready while every eligible core was busy; use more clusters "
             "(cluster_count) or split the work differently" +
             host;
    case Bound::Unknown:
    case Bound::Failed:
    case Bound::NoDominantCause:
      break;
  }
  return "unknown: " + share(unmeasured) +
         " is waiting whose cause was not measured; switch on task_timing to split it" + host;
}

}  // namespace

const char* wait_kind_name(WaitKind kind) {
  switch (kind) {
    case WaitKind::Orchestrator:
      return "orchestrator";
    case WaitKind::Data:
      return "data";
    case WaitKind::Scheduler:
      return "scheduler";
    case WaitKind::Core:
      return "core";
    case WaitKind::Launch:
      return "launch";
    case WaitKind::Unmeasured:
      return "unmeasured";
  }
  return "unmeasured";
}

const char* bound_name(Bound bound) {
  switch (bound) {
    case Bound::Orchestration:
      return "orchestration";
    case Bound::Scheduling:
      return "scheduling";
    case Bound::Kernels:
      return "kernels";
    case Bound::Ring:
      return "ring";
    case Bound::TooFewCores:
      return "too_few_cores";
    case Bound::Unknown:
      return "unknown";
    case Bound::Failed:
      return "failed";
    case Bound::NoDominantCause:
      return "no_dominant_cause";
  }
  return "unknown";
}

std::string format_duration_ns(uint64_t ns) {
  char text[48];
  if (ns < 1000) {
    std::snprintf(text, sizeof text, "%llu ns", static_cast<unsigned long long>(ns));
  } else if (ns < 1000000) {
    std::snprintf(text, sizeof text, "%.1f us", static_cast<double>(ns) / 1e3);
  } else if (ns < 1000000000) {
    std::snprintf(text, sizeof text, "%.3f ms", static_cast<double>(ns) / 1e6);
  } else {
    std::snprintf(text, sizeof text, "%.3f s", static_cast<double>(ns) / 1e9);
  }
  return text;
}

namespace {

// The chip-wide figures: first block start, last block end, the blocks' task time, and what did
// not run to its end.
struct ChipTotals {
  uint64_t first_start_ns = kNoTime;
  uint64_t last_end_ns = 0;
  uint64_t still_running = 0;  // blocks started and never ended
  uint64_t never_ran = 0;      // tasks (not dependency-only) without a started block
};

ChipTotals chip_totals(const RunModel& model, const std::vector<TaskTiming>& tasks,
                       Analysis& analysis) {
  ChipTotals totals;
  for (const BlockRun& block : model.blocks) {
    if (block.start_ns == kNoTime) continue;
    totals.first_start_ns = std::min(totals.first_start_ns, block.start_ns);
    if (block.end_ns == kNoTime) {
      ++totals.still_running;
      continue;
    }
    totals.last_end_ns = std::max(totals.last_end_ns, block.end_ns);
    analysis.task_time_ns += block.end_ns - block.start_ns;
  }
  for (const TaskTiming& task : tasks) {
    if (task.first_start_ns == kNoTime && !task.dependency_only) ++totals.never_ran;
  }
  if (totals.first_start_ns != kNoTime && totals.last_end_ns > totals.first_start_ns) {
    analysis.chip_span_ns = totals.last_end_ns - totals.first_start_ns;
  }
  return totals;
}

// The path's last step: the task that finished last (ties: the earliest in table order);
// tasks.size() when none finished.
size_t last_finished(const std::vector<TaskTiming>& tasks) {
  size_t last = tasks.size();
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (!tasks[i].finished()) continue;
    if (last == tasks.size() || tasks[i].last_end_ns > tasks[last].last_end_ns) last = i;
  }
  return last;
}

// Where each step of the path may go back to. With edges: each task's producers (dependency-only
// ones looked through), as ranges of one pool: a task's list is pool[begin[c], begin[c] +
// count[c]). Timing only: the finished tasks by end (ties: earliest first).
struct Predecessors {
  std::vector<size_t> producer_pool;
  std::vector<size_t> producer_begin;
  std::vector<uint32_t> producer_count;
  std::vector<size_t> by_end;
};

Predecessors producers_of(const RunModel& model, const TaskTable& table) {
  const std::vector<TaskTiming>& tasks = table.tasks;
  Predecessors out;
  std::vector<size_t>& producer_pool = out.producer_pool;
  std::vector<size_t>& producer_begin = out.producer_begin;
  std::vector<uint32_t>& producer_count = out.producer_count;
  if (!model.have_edges) {
    for (size_t i = 0; i < tasks.size(); ++i) {
      if (tasks[i].finished()) out.by_end.push_back(i);
    }
    std::stable_sort(out.by_end.begin(), out.by_end.end(), [&](size_t a, size_t b) {
      return tasks[a].last_end_ns < tasks[b].last_end_ns;
    });
    return out;
  }
  // The direct producers, by consumer (in edge order), as offsets into one array.
  std::vector<size_t> direct_begin(tasks.size() + 1, 0);
  std::vector<size_t> direct;
  {
    std::vector<std::pair<size_t, size_t>> found;  // (producer, consumer) of each edge
    found.reserve(model.edges.size());
    for (const Edge& edge : model.edges) {
      const size_t p = table.find(edge.producer);
      const size_t c = table.find(edge.consumer);
      if (p != TaskTable::kNone && c != TaskTable::kNone) found.emplace_back(p, c);
    }
    for (const auto& [p, c] : found) ++direct_begin[c + 1];
    for (size_t i = 0; i < tasks.size(); ++i) direct_begin[i + 1] += direct_begin[i];
    direct.resize(found.size());
    std::vector<size_t> fill(direct_begin.begin(), direct_begin.end() - 1);
    for (const auto& [p, c] : found) direct[fill[c]++] = p;
  }
  auto direct_of = [&](size_t c) {
    return std::pair{direct.begin() + static_cast<std::ptrdiff_t>(direct_begin[c]),
                     direct.begin() + static_cast<std::ptrdiff_t>(direct_begin[c + 1])};
  };
  // A dependency-only task never runs: its consumers wait for its producers, so the path
  // looks through it (memoised; the graph is acyclic, so the expansion ends).
  std::vector<int8_t> expanded(tasks.size(), 0);
  producer_begin.assign(tasks.size(), 0);
  producer_count.assign(tasks.size(), 0);
  producer_pool.reserve(direct.size());
  std::vector<size_t> stack;
  for (size_t root = 0; root < tasks.size(); ++root) {
    if (expanded[root] != 0) continue;
    stack.push_back(root);
    while (!stack.empty()) {
      const size_t c = stack.back();
      if (expanded[c] == 0) {
        expanded[c] = 1;  // in progress: expand its dependency-only producers first
        for (auto [it, end] = direct_of(c); it != end; ++it) {
          if (tasks[*it].dependency_only && expanded[*it] == 0) stack.push_back(*it);
        }
        continue;
      }
      stack.pop_back();
      if (expanded[c] == 2) continue;
      const size_t begin = producer_pool.size();
      for (auto [it, end] = direct_of(c); it != end; ++it) {
        const size_t p = *it;
        if (!tasks[p].dependency_only) {
          producer_pool.push_back(p);
        } else if (expanded[p] == 2) {
          for (size_t k = 0; k < producer_count[p]; ++k) {
            const size_t q = producer_pool[producer_begin[p] + k];
            producer_pool.push_back(q);
          }
        }
      }
      const auto first = producer_pool.begin() + static_cast<std::ptrdiff_t>(begin);
      std::sort(first, producer_pool.end());
      producer_pool.erase(std::unique(first, producer_pool.end()), producer_pool.end());
      producer_begin[c] = begin;
      producer_count[c] = static_cast<uint32_t>(producer_pool.size() - begin);
      expanded[c] = 2;
    }
  }
  return out;
}

// The critical path as task indices, first step first, ending at `last`.
std::vector<size_t> critical_chain(const RunModel& model, const std::vector<TaskTiming>& tasks,
                                   size_t last, const Predecessors& before) {
  std::vector<size_t> chain;
  if (last == tasks.size()) return chain;
  const std::vector<size_t>& by_end = before.by_end;
  std::vector<bool> on_path(tasks.size(), false);
  size_t current = last;
  while (true) {
    chain.push_back(current);
    on_path[current] = true;
    const TaskTiming& step = tasks[current];
    size_t best = tasks.size();
    if (model.have_edges) {
      // The producer that finished last before the task became ready.
      const uint64_t bound = step.ready_ns != kNoTime ? step.ready_ns : step.first_start_ns;
      for (size_t k = 0; k < before.producer_count[current]; ++k) {
        const size_t p = before.producer_pool[before.producer_begin[current] + k];
        const TaskTiming& producer = tasks[p];
        if (on_path[p] || !producer.finished() || producer.last_end_ns > bound) continue;
        if (best == tasks.size() || producer.last_end_ns > tasks[best].last_end_ns ||
            (producer.last_end_ns == tasks[best].last_end_ns && p < best)) {
          best = p;
        }
      }
    } else {
      // Timing only: the task that finished last at or before this one started.
      auto it = std::upper_bound(by_end.begin(), by_end.end(), step.first_start_ns,
                                 [&](uint64_t t, size_t i) { return t < tasks[i].last_end_ns; });
      while (it != by_end.begin()) {
        --it;
        if (!on_path[*it]) {
          // The earliest of the tasks that share this end time.
          const uint64_t end = tasks[*it].last_end_ns;
          while (it != by_end.begin() && tasks[*(it - 1)].last_end_ns == end &&
                 !on_path[*(it - 1)]) {
            --it;
          }
          best = *it;
          break;
        }
      }
    }
    if (best == tasks.size()) break;
    current = best;
  }
  std::reverse(chain.begin(), chain.end());
  return chain;
}

// The path's steps, each gap split by cause, and the path's sums.
void split_waits(const RunModel& model, const std::vector<TaskTiming>& tasks,
                 const std::vector<size_t>& chain, uint64_t chip_first_start, Analysis& analysis) {
  const auto spans = busy_spans(model);
  const auto running = busy_spans(model, false);
  uint64_t predecessor_end = chip_first_start;
  for (size_t i : chain) {
    const TaskTiming& task = tasks[i];
    PathStep step;
    step.task = task.task;
    step.func_id = task.func_id;
    step.core = task.first_core;
    step.start_ns = task.first_start_ns;
    step.end_ns = task.last_end_ns;
    const uint64_t start = task.first_start_ns;
    uint64_t cursor = std::min(predecessor_end, start);
    step.gap_ns = start - cursor;
    auto take = [&](uint64_t until) {
      const uint64_t to = std::clamp(until, cursor, start);
      const uint64_t part = to - cursor;
      cursor = to;
      return part;
    };
    auto add = [&](WaitKind kind, uint64_t ns) { step.waited_ns[static_cast<int>(kind)] += ns; };
    const bool have_submit = task.submit_end_ns != kNoTime;
    const bool have_ready = task.ready_ns != kNoTime;
    const bool have_dispatch = task.first_dispatch_ns != kNoTime;
    if (have_submit) add(WaitKind::Orchestrator, take(task.submit_end_ns));
    if (have_ready) add(have_submit ? WaitKind::Data : WaitKind::Unmeasured, take(task.ready_ns));
    if (have_dispatch) {
      const uint64_t from = cursor;
      const uint64_t part = take(task.first_dispatch_ns);
      if (have_ready) {
        const uint64_t core_wait = std::min(
            part,
            all_busy_ns(spans, eligible_cores(model.shape, task.core_type), from, from + part));
        add(WaitKind::Core, core_wait);
        add(WaitKind::Scheduler, part - core_wait);
      } else {
        add(WaitKind::Unmeasured, part);
      }
    }
    if (have_dispatch) {
      // Dispatched to a core still running another block (its pending slot): that part is the
      // core's, the rest the hand-off to the core.
      const uint64_t from = cursor;
      const uint64_t part = take(start);
      const uint64_t core_busy =
          task.first_core >= 0
              ? std::min(part, all_busy_ns(running, {task.first_core}, from, from + part))
              : 0;
      add(WaitKind::Core, core_busy);
      add(WaitKind::Launch, part - core_busy);
    } else {
      add(WaitKind::Unmeasured, take(start));
    }
    if (step.gap_ns > 0) {
      int largest = 0;
      for (int kind = 1; kind < kWaitKinds; ++kind) {
        if (step.waited_ns[kind] > step.waited_ns[largest]) largest = kind;
      }
      step.main_wait = static_cast<WaitKind>(largest);
    }
    for (int kind = 0; kind < kWaitKinds; ++kind) analysis.waited_ns[kind] += step.waited_ns[kind];
    analysis.path_ns += step.end_ns - step.start_ns;
    predecessor_end = task.last_end_ns;
    analysis.path.push_back(step);
  }
  if (!analysis.path.empty()) {
    // Run's first start to the path's end: the path's spans plus all its waits.
    analysis.path_with_waits_ns = analysis.path.back().end_ns - chip_first_start;
  }
}

// Per kernel (blocks that finished), by total time; per core, its blocks and busy time.
void kernels_and_cores(const RunModel& model, const TaskTable& table, Analysis& analysis) {
  std::unordered_map<int32_t, std::vector<uint64_t>> durations;
  std::unordered_map<int32_t, CoreUse> cores;
  std::unordered_map<int32_t, std::vector<Interval>> ran;  // per core, its blocks' executions
  for (const BlockRun& block : model.blocks) {
    if (block.start_ns == kNoTime || block.end_ns == kNoTime) continue;
    const uint64_t ns = block.end_ns - block.start_ns;
    durations[table.tasks[table.find(block.task)].func_id].push_back(ns);
    if (block.core >= 0) {
      ++cores[block.core].blocks;
      ran[block.core].push_back({block.start_ns, block.end_ns});
    }
  }
  // A core's busy time is the union of its blocks' executions: a core runs one block at a time,
  // and the union keeps it so where records overlap.
  for (auto& [core, list] : ran) {
    std::sort(list.begin(), list.end(),
              [](const Interval& a, const Interval& b) { return a.begin < b.begin; });
    uint64_t busy = 0, until = 0;
    for (const Interval& span : list) {
      const uint64_t from = std::max(span.begin, until);
      if (span.end > from) busy += span.end - from;
      until = std::max(until, span.end);
    }
    cores[core].busy_ns = busy;
  }
  for (auto& [func_id, list] : durations) {
    std::sort(list.begin(), list.end());
    KernelStat stat;
    stat.func_id = func_id;
    stat.label = model.kernel_label(func_id);
    stat.count = list.size();
    for (uint64_t ns : list) stat.total_ns += ns;
    stat.mean_ns = stat.total_ns / stat.count;
    stat.p50_ns = nearest_rank(list, 50);
    stat.p99_ns = nearest_rank(list, 99);
    stat.max_ns = list.back();
    analysis.kernels.push_back(std::move(stat));
  }
  std::sort(analysis.kernels.begin(), analysis.kernels.end(),
            [](const KernelStat& a, const KernelStat& b) {
              return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.func_id < b.func_id;
            });
  for (auto& [core, use] : cores) {
    use.core = static_cast<uint32_t>(core);
    use.label = core_label(model.shape, use.core);
    use.utilisation = analysis.chip_span_ns == 0 ? 0.0
                                                 : static_cast<double>(use.busy_ns) /
                                                       static_cast<double>(analysis.chip_span_ns);
    analysis.cores.push_back(use);
  }
  std::sort(analysis.cores.begin(), analysis.cores.end(),
            [](const CoreUse& a, const CoreUse& b) { return a.core < b.core; });
}

void add_caveats(const RunModel& model, const ChipTotals& totals, Analysis& analysis) {
  if (!model.have_edges && !analysis.path.empty()) {
    analysis.caveats.push_back(
        "no dependency graph collected: the path follows timing only (each step goes back to the "
        "task that finished last before it started), so it may link independent tasks");
  }
  if (analysis.waited_ns[static_cast<int>(WaitKind::Unmeasured)] > 0) {
    analysis.caveats.push_back(
        "part of the path's waiting was not measured (switch on task_timing for submit, ready and "
        "dispatch times)");
  }
  if (model.records_dropped > 0) {
    analysis.caveats.push_back(std::to_string(model.records_dropped) + " of " +
                               std::to_string(model.records_received + model.records_dropped) +
                               " records were dropped" +
                               (model.drop_reason.empty() ? "" : " (" + model.drop_reason + ")") +
                               ": the path and statistics may miss tasks");
  }
  if (totals.never_ran > 0) {
    analysis.caveats.push_back(std::to_string(totals.never_ran) + " task(s) never ran");
  }
  if (totals.still_running > 0) {
    analysis.caveats.push_back(std::to_string(totals.still_running) +
                               " block(s) were still running when the run ended");
  }
  if (model.error) {
    analysis.caveats.push_back("the run failed (" + model.error->name +
                               "): the analysis covers what ran before the failure");
  }
}

}  // namespace

Analysis analyze(const RunModel& model) {
  Analysis analysis;
  analysis.wall_ns = model.wall_ns;
  const TaskTable table = build_tasks(model);
  const ChipTotals totals = chip_totals(model, table.tasks, analysis);
  const std::vector<size_t> chain =
      critical_chain(model, table.tasks, last_finished(table.tasks), producers_of(model, table));
  split_waits(model, table.tasks, chain, totals.first_start_ns, analysis);
  kernels_and_cores(model, table, analysis);
  if (analysis.chip_span_ns > 0) {
    uint64_t busy = 0;
    for (const CoreUse& use : analysis.cores) busy += use.busy_ns;
    analysis.parallelism = static_cast<double>(busy) / static_cast<double>(analysis.chip_span_ns);
  }
  analysis.verdict = decide_verdict(model, analysis);
  add_caveats(model, totals, analysis);
  return analysis;
}

uint32_t run_cores(const ChipShape& shape) {
  return shape.clusters != 0 ? shape.clusters * 3 : shape.cores;
}

std::string parallelism_text(const RunModel& model, const Analysis& analysis) {
  char text[160];
  std::snprintf(text, sizeof text, "parallelism %.2f of %u cores", analysis.parallelism,
                run_cores(model.shape));
  std::string out = text;
  if (model.shape.kernel_threads > 0) {
    out += " (" + std::to_string(model.shape.kernel_threads) + " host thread" +
           (model.shape.kernel_threads == 1 ? "" : "s") + " ran kernels)";
  }
  return out;
}

std::string format_summary(const RunModel& model, const Analysis& analysis,
                           const std::string& run_dir) {
  std::string text = "diagnostics: " + run_dir + "\n";
  char line[256];
  if (analysis.path.empty()) {
    text += "  critical path: none (no task finished)\n";
  } else {
    std::snprintf(line, sizeof line,
                  "  critical path: %zu task(s), %s of kernels, %s with waits; chip span %s, "
                  "wall %s; %s\n",
                  analysis.path.size(), format_duration_ns(analysis.path_ns).c_str(),
                  format_duration_ns(analysis.path_with_waits_ns).c_str(),
                  format_duration_ns(analysis.chip_span_ns).c_str(),
                  format_duration_ns(analysis.wall_ns).c_str(),
                  parallelism_text(model, analysis).c_str());
    text += line;
    text += "  path waits:";
    for (int kind = 0; kind < kWaitKinds; ++kind) {
      text += std::string(kind == 0 ? " " : ", ") + wait_kind_name(static_cast<WaitKind>(kind)) +
              " " + format_duration_ns(analysis.waited_ns[kind]);
    }
    text += "\n";
  }
  if (!analysis.kernels.empty()) {
    text += "  top kernels:\n";
    for (size_t i = 0; i < analysis.kernels.size() && i < 5; ++i) {
      const KernelStat& k = analysis.kernels[i];
      // Built by concatenation: a kernel's symbol may be long (a mangled C++ name).
      text += "    " + k.label + ": " + std::to_string(k.count) + " block(s), total " +
              format_duration_ns(k.total_ns) + ", mean " + format_duration_ns(k.mean_ns) +
              ", p50 " + format_duration_ns(k.p50_ns) + ", p99 " + format_duration_ns(k.p99_ns) +
              ", max " + format_duration_ns(k.max_ns) + "\n";
    }
  }
  if (!analysis.cores.empty()) {
    double sum = 0;
    const CoreUse* lowest = &analysis.cores.front();
    const CoreUse* highest = &analysis.cores.front();
    for (const CoreUse& use : analysis.cores) {
      sum += use.utilisation;
      if (use.utilisation < lowest->utilisation) lowest = &use;
      if (use.utilisation > highest->utilisation) highest = &use;
    }
    auto pct = [](double share) {
      char number[16];
      std::snprintf(number, sizeof number, "%.0f%%", 100.0 * share);
      return std::string(number);
    };
    text += "  cores: " + std::to_string(analysis.cores.size()) + " used, mean utilisation " +
            pct(sum / static_cast<double>(analysis.cores.size())) + ", lowest " + lowest->label +
            " " + pct(lowest->utilisation) + ", highest " + highest->label + " " +
            pct(highest->utilisation) + "\n";
  }
  text += "  verdict: " + analysis.verdict + "\n";
  for (const std::string& caveat : analysis.caveats) text += "  note: " + caveat + "\n";
  if (model.error) {
    text += "  error: " + model.error->name + ": " + model.error->message + "\n";
  }
  return text;
}

}  // namespace chiprt::diagnostics
