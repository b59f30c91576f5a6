// PLACEHOLDER, replaced by the report engineer's file on merge: a minimal page (the verdict and
// the kernel table as text) so that the diagnostics room links and writes report.html before the
// real page (timeline, tables, embedded model) lands.
#include "diagnostics/report_html.h"

namespace chiprt::diagnostics {
namespace {

std::string escape_html(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace

std::string render_report_html(const RunModel& model, const Analysis& analysis) {
  std::string page = "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>chiprt run " +
                     std::to_string(model.run_number) +
                     "</title></head><body data-task-marks=\"0\" "
                     "data-ready=\"1\"><h1>chiprt run " +
                     std::to_string(model.run_number) + "</h1><p>" + escape_html(analysis.verdict) +
                     "</p><ul>";
  for (const KernelStat& kernel : analysis.kernels) {
    page += "<li>" + escape_html(kernel.label) + ": " + std::to_string(kernel.count) +
            " block(s), " + format_duration_ns(kernel.total_ns) + "</li>";
  }
  page += "</ul></body></html>\n";
  return page;
}

}  // namespace chiprt::diagnostics
