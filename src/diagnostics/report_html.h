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

#include <functional>
#include <string>
#include <string_view>

#include "diagnostics/analysis.h"
#include "diagnostics/run_model.h"

namespace chiprt::diagnostics {

// Receives the page in pieces, in order.
using ReportSink = std::function<void(std::string_view)>;

// Writes the page to `sink` in pieces of a few hundred KB: the timeline's arrays are formatted
// straight into them, so the page costs no memory per task. A large run's timeline is sampled
// (at most 200000 blocks, AICPU spans and scheduler events each, and 10000 critical-path steps:
// every k-th, a block still running always); the tables and the verdict cover the whole run.
void write_report_html(const RunModel& model, const Analysis& analysis, const ReportSink& sink);
// The same page as one string.
std::string render_report_html(const RunModel& model, const Analysis& analysis);
// How many block slices the page's timeline holds (after sampling): the blocks that ran.
uint64_t report_timeline_blocks(const RunModel& model);

}  // namespace chiprt::diagnostics
