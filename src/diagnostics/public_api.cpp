// The user-facing diagnostics functions of chiprt/diagnostics.h that work on files alone.
#include <filesystem>
#include <fstream>

#include "chiprt/diagnostics.h"
#include "chiprt/status.h"
#include "diagnostics/analysis.h"
#include "diagnostics/artifacts.h"
#include "diagnostics/report_html.h"

namespace chiprt {

std::string latest_diagnostics_run(const std::string& output_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (output_dir.empty() || !fs::is_directory(output_dir, ec)) return "";
  uint32_t highest = 0;
  std::string latest;
  for (fs::directory_iterator it(output_dir, ec), end; !ec && it != end; it.increment(ec)) {
    uint32_t number = 0;
    std::error_code type_ec;
    if (diagnostics::parse_run_directory_name(it->path().filename().string(), &number) &&
        it->is_directory(type_ec) && (latest.empty() || number > highest)) {
      highest = number;
      latest = it->path().string();
    }
  }
  return latest;
}

std::string diagnostics_summary(const std::string& run_dir) {
  const diagnostics::RunModel model = diagnostics::read_run_directory(run_dir);
  return diagnostics::format_summary(model, diagnostics::analyze(model), run_dir);
}

std::string rewrite_diagnostics_report(const std::string& run_dir) {
  namespace fs = std::filesystem;
  const diagnostics::RunModel model = diagnostics::read_run_directory(run_dir);
  const std::string page = diagnostics::render_report_html(model, diagnostics::analyze(model));
  const std::string path = (fs::path(run_dir) / diagnostics::kReportFile).string();
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error(StatusCode::DiagnosticsError, path + ": cannot open for writing");
    out << page;
    out.close();
    if (!out) throw Error(StatusCode::DiagnosticsError, path + ": write failed");
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw Error(StatusCode::DiagnosticsError, path + ": cannot rename the new page into place");
  }
  return path;
}

}  // namespace chiprt
