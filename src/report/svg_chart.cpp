// svg_chart.cpp — layout (plot area, nice tick steps) and SVG text for one line chart.
#include "report/svg_chart.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <sstream>

#include "report/format.h"

namespace kevin::report {
namespace {

constexpr double kWidth = 440, kHeight = 280;
constexpr double kLeft = 60, kRight = 16, kTop = 50, kBottom = 44;  // margins around the plot area
constexpr double kPlotWidth = kWidth - kLeft - kRight, kPlotHeight = kHeight - kTop - kBottom;
constexpr double kLegendSpacing = 150;
constexpr int kMaxXTicks = 10;
constexpr size_t kMaxMarkedPoints = 64;  // beyond this, markers would hide the line
constexpr std::array<const char*, 4> kColors = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd"};

struct Axis {
  double lo = 0, hi = 1;
  std::vector<double> ticks;
};

// The smallest of 1, 2, 2.5, 5 × 10^e that is >= raw.
double nice_step(double raw) {
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 2.5, 5.0}) {
    if (raw <= m * magnitude * (1 + 1e-9)) return m * magnitude;
  }
  return 10 * magnitude;
}

// Ticks every nice step of about a quarter of [lo, hi], from a multiple at or below lo to one
// at or above hi. lo <= 0 <= hi.
Axis stepped_axis(double lo, double hi) {
  if (hi - lo <= 0) hi = 1;
  const double step = nice_step((hi - lo) / 4);
  const long first = std::lround(std::floor(lo / step + 1e-9));
  const long last = std::lround(std::ceil(hi / step - 1e-9));
  Axis axis{static_cast<double>(first) * step, static_cast<double>(last) * step, {}};
  for (long i = first; i <= last; ++i) axis.ticks.push_back(static_cast<double>(i) * step);
  return axis;
}

Axis y_axis(const Chart& chart) {
  if (chart.y_scale == YScale::kFraction) return {0, 1, {0, 0.25, 0.5, 0.75, 1}};
  double bottom = 0, top = 0;
  for (const ChartSeries& s : chart.series) {
    for (const ChartPoint& p : s.points) {
      bottom = std::min(bottom, p.y);
      top = std::max(top, p.y);
    }
  }
  // Speedups are never negative: their axis starts at 0 whatever the points.
  return stepped_axis(chart.y_scale == YScale::kLinear ? bottom : 0, top);
}

// Whole-number ticks: the first x, then multiples of a 1-2-5 step, at most about kMaxXTicks.
Axis x_axis(const Chart& chart) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const ChartSeries& s : chart.series) {
    for (const ChartPoint& p : s.points) {
      lo = std::min(lo, p.x);
      hi = std::max(hi, p.x);
    }
  }
  if (lo > hi) return {0, 1, {0, 1}};
  if (lo == hi) return {lo - 1, hi + 1, {lo}};
  double step = 1;
  for (double magnitude = 1; (hi - lo) / step > kMaxXTicks; magnitude *= 10) {
    for (double m : {1.0, 2.0, 5.0}) {
      step = m * magnitude;
      if ((hi - lo) / step <= kMaxXTicks) break;
    }
  }
  Axis axis{lo, hi, {lo}};
  for (double v = std::floor(lo / step + 1) * step; v <= hi; v += step) axis.ticks.push_back(v);
  return axis;
}

std::string num(double v) { return fixed(v, 1); }

double px(const Axis& x, double v) { return kLeft + (v - x.lo) / (x.hi - x.lo) * kPlotWidth; }
double py(const Axis& y, double v) {
  return kTop + kPlotHeight - (v - y.lo) / (y.hi - y.lo) * kPlotHeight;
}

std::string y_label(YScale scale, double v) {
  switch (scale) {
    case YScale::kFraction:
      return trimmed(100 * v, 0) + "%";
    case YScale::kSpeedup:
      return trimmed(v) + "x";
    case YScale::kLinear:
      break;
  }
  return significant(v, 3);
}

std::string y_value(YScale scale, double v) {
  switch (scale) {
    case YScale::kFraction:
      return percent(v);
    case YScale::kSpeedup:
      return times(v);
    case YScale::kLinear:
      break;
  }
  return significant(v, 4);
}

const char* color(size_t i) { return kColors[i % kColors.size()]; }
std::string dash(const ChartSeries& s) { return s.dashed ? " stroke-dasharray=\"6 4\"" : ""; }

void draw_frame(const Chart& chart, const Axis& x, const Axis& y, std::ostringstream& svg) {
  svg << "<text x=\"" << num(kWidth / 2)
      << "\" y=\"18\" text-anchor=\"middle\" font-size=\"13\" font-weight=\"bold\">"
      << html_escape(chart.title) << "</text>\n";
  for (double t : y.ticks) {
    svg << "<line x1=\"" << num(kLeft) << "\" x2=\"" << num(kWidth - kRight) << "\" y1=\""
        << num(py(y, t)) << "\" y2=\"" << num(py(y, t)) << "\" stroke=\"#e3e3e3\"/><text x=\""
        << num(kLeft - 6) << "\" y=\"" << num(py(y, t) + 4) << "\" text-anchor=\"end\">"
        << y_label(chart.y_scale, t) << "</text>\n";
  }
  const double bottom = kTop + kPlotHeight;
  for (double t : x.ticks) {
    svg << "<line x1=\"" << num(px(x, t)) << "\" x2=\"" << num(px(x, t)) << "\" y1=\""
        << num(bottom) << "\" y2=\"" << num(bottom + 4) << "\" stroke=\"#333\"/><text x=\""
        << num(px(x, t)) << "\" y=\"" << num(bottom + 16) << "\" text-anchor=\"middle\">"
        << trimmed(t) << "</text>\n";
  }
  svg << "<path d=\"M" << num(kLeft) << " " << num(kTop) << "V" << num(bottom) << "H"
      << num(kWidth - kRight) << "\" fill=\"none\" stroke=\"#333\"/>\n"
      << "<text x=\"" << num(kLeft + kPlotWidth / 2) << "\" y=\"" << num(kHeight - 6)
      << "\" text-anchor=\"middle\">" << html_escape(chart.x_label) << "</text>\n"
      << "<text transform=\"translate(14 " << num(kTop + kPlotHeight / 2)
      << ") rotate(-90)\" text-anchor=\"middle\">" << html_escape(chart.y_label) << "</text>\n";
}

// The label of an earlier series whose line `s` would hide (the same points), or "".
std::string hidden_under(const Chart& chart, size_t i) {
  const ChartSeries& s = chart.series[i];
  for (size_t j = 0; j < i; ++j) {
    const ChartSeries& t = chart.series[j];
    const bool same = t.points.size() == s.points.size() &&
                      std::equal(s.points.begin(), s.points.end(), t.points.begin(),
                                 [](const ChartPoint& a, const ChartPoint& b) {
                                   return std::abs(a.x - b.x) < 1e-9 && std::abs(a.y - b.y) < 1e-9;
                                 });
    if (same && !s.points.empty()) return t.label;
  }
  return "";
}

void draw_legend(const Chart& chart, std::ostringstream& svg) {
  for (size_t i = 0; i < chart.series.size(); ++i) {
    const double left = kLeft + static_cast<double>(i) * kLegendSpacing;
    const std::string under = hidden_under(chart, i);
    svg << "<line x1=\"" << num(left) << "\" x2=\"" << num(left + 22)
        << "\" y1=\"34\" y2=\"34\" stroke=\"" << color(i) << "\" stroke-width=\"2\""
        << dash(chart.series[i]) << "/><text x=\"" << num(left + 28) << "\" y=\"38\">"
        << html_escape(chart.series[i].label + (under.empty() ? "" : " (= " + under + ")"))
        << "</text>\n";
  }
}

void draw_series(const Chart& chart, const Axis& x, const Axis& y, std::ostringstream& svg) {
  for (size_t i = 0; i < chart.series.size(); ++i) {
    const ChartSeries& s = chart.series[i];
    svg << "<polyline fill=\"none\" stroke=\"" << color(i) << "\" stroke-width=\"2\"" << dash(s)
        << " points=\"";
    for (const ChartPoint& p : s.points) svg << num(px(x, p.x)) << "," << num(py(y, p.y)) << " ";
    svg << "\"/>\n";
    if (s.points.size() > kMaxMarkedPoints) continue;
    // Later series get rings around the dots, so a point two series share shows both.
    const std::string look = i == 0
                                 ? "r=\"2.5\" fill=\"" + std::string(color(i)) + "\""
                                 : "r=\"" + num(2.5 + 2.0 * static_cast<double>(i)) +
                                       "\" fill=\"none\" stroke=\"" + std::string(color(i)) + "\"";
    for (const ChartPoint& p : s.points) {
      svg << "<circle cx=\"" << num(px(x, p.x)) << "\" cy=\"" << num(py(y, p.y)) << "\" " << look
          << "><title>" << html_escape(s.label) << " at " << trimmed(p.x) << ": "
          << y_value(chart.y_scale, p.y) << "</title></circle>\n";
    }
  }
}

}  // namespace

std::string render_svg_chart(const Chart& chart) {
  const Axis x = x_axis(chart), y = y_axis(chart);
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth << "\" height=\"" << kHeight
      << "\" viewBox=\"0 0 " << kWidth << " " << kHeight
      << "\" font-family=\"sans-serif\" font-size=\"11\" role=\"img\" aria-label=\""
      << html_escape(chart.title) << "\">\n";
  draw_frame(chart, x, y, svg);
  draw_legend(chart, svg);
  draw_series(chart, x, y, svg);
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace kevin::report
