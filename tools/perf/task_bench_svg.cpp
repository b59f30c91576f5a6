// The efficiency curves of `chiprt bench --task-bench` (task_bench.h) as a hand-written SVG: one
// panel per pattern and width, task duration (log scale) against efficiency, one polyline per
// column, the 50% line dashed, a shared legend on top.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "task_bench.h"

namespace chiprt::perf {

namespace {

constexpr const char* kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                   "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
constexpr int kPanelW = 300;
constexpr int kPanelH = 200;
constexpr int kMarginL = 45;
constexpr int kMarginB = 35;
constexpr int kMarginT = 25;
constexpr int kPanelsPerRow = 3;
constexpr int kLegendH = 30;
constexpr double kMaxEfficiency = 1.2;

std::string escape(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c == '&')
      out += "&amp;";
    else if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else
      out += c;
  }
  return out;
}

std::string num(double v) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f", v);
  return text;
}

}  // namespace

std::string task_bench_svg(const TaskBenchResult& result) {
  const std::size_t panels = result.results.size();
  const int rows = static_cast<int>((panels + kPanelsPerRow - 1) / kPanelsPerRow);
  const int cell_w = kMarginL + kPanelW + 15;
  const int cell_h = kMarginT + kPanelH + kMarginB;
  const int width = cell_w * kPanelsPerRow;
  const int height = kLegendH + std::max(rows, 1) * cell_h;

  double lo = 1e300;
  double hi = 0;
  for (const TbPatternResult& r : result.results) {
    for (const TbCurve& c : r.curves) {
      for (const TbPoint& p : c.points) {
        if (!p.measured) continue;
        lo = std::min(lo, p.task_ns / 1e3);
        hi = std::max(hi, p.task_ns / 1e3);
      }
    }
  }
  if (hi <= 0) {
    lo = 1;
    hi = 1000;
  }
  const double log_lo = std::floor(std::log10(lo));
  const double log_hi = std::max(std::ceil(std::log10(hi)), log_lo + 1);

  std::string svg =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
      "width=\"" +
      std::to_string(width) + "\" height=\"" + std::to_string(height) +
      "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  // Legend.
  int x = 10;
  for (std::size_t c = 0; c < result.columns.size(); ++c) {
    if (!result.columns[c].available) continue;
    const char* color = kColors[c % std::size(kColors)];
    svg += "<line x1=\"" + std::to_string(x) + "\" y1=\"15\" x2=\"" + std::to_string(x + 20) +
           "\" y2=\"15\" stroke=\"" + color + "\" stroke-width=\"2\"/>";
    svg += "<text x=\"" + std::to_string(x + 24) + "\" y=\"19\">" +
           escape(result.columns[c].label) + "</text>\n";
    x += 30 + static_cast<int>(result.columns[c].label.size()) * 7 + 10;
  }

  for (std::size_t i = 0; i < panels; ++i) {
    const TbPatternResult& r = result.results[i];
    const int ox = static_cast<int>(i % kPanelsPerRow) * cell_w + kMarginL;
    const int oy = kLegendH + static_cast<int>(i / kPanelsPerRow) * cell_h + kMarginT;
    const auto px = [&](double us) {
      return ox + (std::log10(us) - log_lo) / (log_hi - log_lo) * kPanelW;
    };
    const auto py = [&](double e) {
      return oy + kPanelH - std::clamp(e, 0.0, kMaxEfficiency) / kMaxEfficiency * kPanelH;
    };
    svg += "<g>\n<text x=\"" + std::to_string(ox) + "\" y=\"" + std::to_string(oy - 8) +
           "\" font-weight=\"bold\">" + escape(std::string(tb_pattern_name(r.pattern))) +
           " (width " + std::to_string(r.width) + ")</text>\n";
    svg += "<rect x=\"" + std::to_string(ox) + "\" y=\"" + std::to_string(oy) + "\" width=\"" +
           std::to_string(kPanelW) + "\" height=\"" + std::to_string(kPanelH) +
           "\" fill=\"none\" stroke=\"black\"/>\n";
    for (double d = log_lo; d <= log_hi + 1e-9; d += 1) {
      const double at = px(std::pow(10.0, d));
      svg += "<line x1=\"" + num(at) + "\" y1=\"" + std::to_string(oy) + "\" x2=\"" + num(at) +
             "\" y2=\"" + std::to_string(oy + kPanelH) + "\" stroke=\"#ddd\"/>";
      char label[32];
      std::snprintf(label, sizeof(label), "%g", std::pow(10.0, d));
      svg += "<text x=\"" + num(at) + "\" y=\"" + std::to_string(oy + kPanelH + 14) +
             "\" text-anchor=\"middle\">" + label + "</text>\n";
    }
    for (const double e : {0.0, 0.5, 1.0}) {
      svg += "<text x=\"" + std::to_string(ox - 4) + "\" y=\"" + num(py(e) + 4) +
             "\" text-anchor=\"end\">" + std::to_string(static_cast<int>(e * 100)) + "%</text>";
    }
    svg += "<line x1=\"" + std::to_string(ox) + "\" y1=\"" + num(py(0.5)) + "\" x2=\"" +
           std::to_string(ox + kPanelW) + "\" y2=\"" + num(py(0.5)) +
           "\" stroke=\"#888\" stroke-dasharray=\"4,3\"/>\n";
    svg += "<text x=\"" + std::to_string(ox + kPanelW / 2) + "\" y=\"" +
           std::to_string(oy + kPanelH + 28) +
           "\" text-anchor=\"middle\">task duration (us)</text>\n";
    for (std::size_t c = 0; c < r.curves.size(); ++c) {
      std::string points;
      for (const TbPoint& p : r.curves[c].points) {
        if (!p.measured) continue;
        points +=
            (points.empty() ? "" : " ") + num(px(p.task_ns / 1e3)) + "," + num(py(p.efficiency));
      }
      if (points.empty()) continue;
      svg += "<polyline fill=\"none\" stroke=\"" + std::string(kColors[c % std::size(kColors)]) +
             "\" stroke-width=\"1.5\" points=\"" + points + "\"><title>" +
             escape(result.columns[c].label) + "</title></polyline>\n";
    }
    svg += "</g>\n";
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace chiprt::perf
