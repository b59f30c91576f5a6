#include "diagnostics/artifacts/files.h"

#include "common/diag_layout.h"

namespace chiprt::diagnostics::artifact {
namespace {

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

}  // namespace

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

}  // namespace chiprt::diagnostics::artifact
