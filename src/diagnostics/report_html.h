// report.html: one self-contained page (inline script and style, no network) of a run: a
// zoomable timeline of the cores (and the AICPU and host tracks) with the critical path
// highlighted, the per-kernel table, per-core utilisation, scope stats, counters, the error.
//
// The page embeds the model as JSON and draws it on a canvas with its own script. It marks its
// <body> with data-task-marks="N" (the number of task slices it drew) and data-ready="1" once
// drawn, for the headless-browser test.
//
// Threading: pure.
#pragma once

#include <string>

#include "diagnostics/analysis.h"
#include "diagnostics/run_model.h"

namespace chiprt::diagnostics {

std::string render_report_html(const RunModel& model, const Analysis& analysis);

}  // namespace chiprt::diagnostics
