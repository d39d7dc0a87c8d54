// svg_chart.h — small self-contained SVG line charts for the HTML report: axes with ticks and
// labels, grid lines, a legend and point tooltips; no scripts, fonts or styles from outside.
#pragma once

#include <string>
#include <vector>

namespace kevin::report {

struct ChartPoint {
  double x = 0;  // a count (turns, samples): ticks are whole numbers
  double y = 0;
};

struct ChartSeries {
  std::string label;
  std::vector<ChartPoint> points;  // in increasing x
  bool dashed = false;
};

enum class YScale {
  kFraction,  // 0 to 100 %
  kSpeedup,   // 0 to a round number above the largest value, labelled "1.5x"
  kLinear,    // a round number at or below min(0, smallest) to one at or above max(0, largest),
              // labelled with up to 3 significant digits ("-0.5", "2e-6", "40000")
};

struct Chart {
  std::string title;
  std::string x_label;
  std::string y_label;
  YScale y_scale = YScale::kSpeedup;
  std::vector<ChartSeries> series;
};

// The chart as one <svg> element (fixed size, 440 x 280). Every text is HTML-escaped. A chart
// without points still gets its axes. Pure.
std::string render_svg_chart(const Chart& chart);

}  // namespace kevin::report
