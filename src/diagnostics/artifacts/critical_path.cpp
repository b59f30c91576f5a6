#include "diagnostics/artifacts/files.h"

namespace chiprt::diagnostics::artifact {
namespace {

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

}  // namespace

void write_critical_path_md(TextOut& out, const RunModel& model, const Analysis& a) {
  char line[512];
  out << "# Critical path of run " << model.run_number << "\n\n";
  out << "**Verdict:** " << a.verdict << "\n\n";
  std::snprintf(line, sizeof line,
                "Path: %zu step(s), %s of kernel time, %s with waits; chip span %s; wall %s; "
                "task time %s; %s.\n\n",
                a.path.size(), format_duration_ns(a.path_ns).c_str(),
                format_duration_ns(a.path_with_waits_ns).c_str(),
                format_duration_ns(a.chip_span_ns).c_str(), format_duration_ns(a.wall_ns).c_str(),
                format_duration_ns(a.task_time_ns).c_str(), parallelism_text(model, a).c_str());
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
  head["parallelism"] = a.parallelism;
  head["run_cores"] = run_cores(model.shape);
  head["kernel_threads"] = model.shape.kernel_threads;
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

}  // namespace chiprt::diagnostics::artifact
