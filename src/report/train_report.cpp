// train_report.cpp — the training report: one column table shared by the text and HTML
// tables, one chart table for the SVG charts, both over TrainLogLine's fields.
#include "report/train_report.h"

#include <algorithm>
#include <sstream>

#include "core/file.h"
#include "report/format.h"
#include "report/html_page.h"
#include "report/svg_chart.h"

namespace kevin::report {
namespace fs = std::filesystem;

namespace {

using Table = std::vector<std::vector<std::string>>;
using Format = std::string (*)(double);
using Cell = std::string (*)(const TrainLogLine&);

constexpr const char* kAbsent = "-";

std::string three_digits(double v) { return significant(v, 3); }
std::string three_decimals(double v) { return fixed(v, 3); }
std::string whole(double v) { return fixed(v, 0); }

// The cell of an optional field: formatted, or kAbsent.
template <auto Member, Format F>
std::string cell(const TrainLogLine& line) {
  const auto& v = line.*Member;
  return v ? F(static_cast<double>(*v)) : kAbsent;
}

std::string step_cell(const TrainLogLine& line) { return std::to_string(line.step); }

struct Column {
  const char* header;
  Cell cell;
};

// Columns of the recent train steps.
constexpr Column kTrainColumns[] = {
    {"step", step_cell},
    {"reward", cell<&TrainLogLine::reward_mean, three_decimals>},
    {"correct", cell<&TrainLogLine::correct_rate, percent>},
    {"speedup", cell<&TrainLogLine::speedup_mean, times>},
    {"tokens", cell<&TrainLogLine::response_tokens_mean, whole>},
    {"clipped", cell<&TrainLogLine::clip_ratio, percent>},
    {"loss", cell<&TrainLogLine::loss, three_digits>},
    {"grad norm", cell<&TrainLogLine::grad_norm, three_digits>},
    {"kl", cell<&TrainLogLine::kl, three_digits>},
    {"entropy", cell<&TrainLogLine::entropy, three_digits>},
    {"lr", cell<&TrainLogLine::lr, three_digits>},
    {"gen tok/s", cell<&TrainLogLine::gen_tokens_per_s, whole>},
    {"train tok/s", cell<&TrainLogLine::train_tokens_per_s, whole>},
};

// Columns of the holdout evaluations.
constexpr Column kHoldoutColumns[] = {
    {"step", step_cell},
    {"turns", cell<&TrainLogLine::turns, whole>},
    {"reward", cell<&TrainLogLine::reward_mean, three_decimals>},
    {"correct", cell<&TrainLogLine::correct_rate, percent>},
    {"speedup", cell<&TrainLogLine::speedup_mean, times>},
    {"tokens", cell<&TrainLogLine::response_tokens_mean, whole>},
    {"clipped", cell<&TrainLogLine::clip_ratio, percent>},
    {"not okay", cell<&TrainLogLine::not_okay_ratio, percent>},
};

struct RecentLines {
  std::vector<const TrainLogLine*> lines;  // the last kRecentTrainLines of the kind, in log order
  size_t total = 0;                        // lines of the kind in the log
};

RecentLines recent(const std::vector<TrainLogLine>& lines, TrainLogKind kind) {
  RecentLines r;
  for (const TrainLogLine& line : lines) {
    if (line.kind == kind) r.lines.push_back(&line);
  }
  r.total = r.lines.size();
  if (r.total > kRecentTrainLines)
    r.lines.erase(r.lines.begin(), r.lines.end() - static_cast<std::ptrdiff_t>(kRecentTrainLines));
  return r;
}

// The rows of `columns` for `lines`, without the header.
template <size_t N>
Table rows_of(const Column (&columns)[N], const RecentLines& lines) {
  Table rows;
  for (const TrainLogLine* line : lines.lines) {
    std::vector<std::string>& row = rows.emplace_back();
    for (const Column& c : columns) row.push_back(c.cell(*line));
  }
  return rows;
}

template <size_t N>
std::vector<std::string> headers_of(const Column (&columns)[N]) {
  std::vector<std::string> headers;
  for (const Column& c : columns) headers.push_back(c.header);
  return headers;
}

// "train steps (last 10 of 120)" or "train steps (3)".
std::string table_title(const char* what, const RecentLines& r) {
  const std::string total = std::to_string(r.total);
  if (r.lines.size() == r.total) return std::string(what) + " (" + total + ")";
  return std::string(what) + " (last " + std::to_string(r.lines.size()) + " of " + total + ")";
}

std::string step_value(const std::optional<StepValue>& v, Format format) {
  return v ? format(v->value) + " at step " + std::to_string(v->step) : kAbsent;
}

// The summary, one sentence per line.
std::vector<std::string> summary_lines(const TrainLogSummary& s) {
  std::string steps = std::to_string(s.train_steps) + " train steps";
  if (s.last_step) steps += " (last step " + std::to_string(*s.last_step) + ")";
  return {steps + ", " + std::to_string(s.holdout_evals) + " holdout evaluations",
          "train reward_mean: first " + step_value(s.first_reward, three_decimals) + ", last " +
              step_value(s.last_reward, three_decimals),
          "best holdout: reward_mean " + step_value(s.best_holdout_reward, three_decimals) +
              ", correct " + step_value(s.best_holdout_correct, percent),
          "last lr " + (s.last_lr ? three_digits(*s.last_lr) : kAbsent) + "; rollout " +
              duration(1000 * s.rollout_s) + ", update " + duration(1000 * s.update_s) + "; " +
              std::to_string(s.samples) + " samples, " + std::to_string(s.train_tokens) +
              " train tokens"};
}

// ---- charts ----

struct SeriesSpec {
  const char* label;
  TrainLogKind kind;
  std::optional<double> TrainLogLine::*member;
};

struct ChartSpec {
  const char* title;
  const char* y_label;
  YScale scale;
  std::vector<SeriesSpec> series;  // the second one is drawn dashed
};

std::vector<ChartSpec> chart_specs() {
  constexpr TrainLogKind kTrain = TrainLogKind::kTrain, kHoldout = TrainLogKind::kHoldout;
  const auto train_and_holdout = [](std::optional<double> TrainLogLine::*member) {
    return std::vector<SeriesSpec>{{"train", kTrain, member}, {"holdout", kHoldout, member}};
  };
  const auto train = [](const char* label, std::optional<double> TrainLogLine::*member) {
    return std::vector<SeriesSpec>{{label, kTrain, member}};
  };
  return {
      {"Reward", "mean reward", YScale::kLinear, train_and_holdout(&TrainLogLine::reward_mean)},
      {"Correct rate", "correct", YScale::kFraction,
       train_and_holdout(&TrainLogLine::correct_rate)},
      {"Speedup of correct kernels", "mean speedup", YScale::kSpeedup,
       train_and_holdout(&TrainLogLine::speedup_mean)},
      {"Response length", "mean tokens", YScale::kLinear,
       train_and_holdout(&TrainLogLine::response_tokens_mean)},
      {"Clipped and not-okay responses",
       "fraction",
       YScale::kFraction,
       {{"clip ratio", kTrain, &TrainLogLine::clip_ratio},
        {"not-okay ratio", kTrain, &TrainLogLine::not_okay_ratio}}},
      {"Gradient norm", "grad norm", YScale::kLinear, train("train", &TrainLogLine::grad_norm)},
      {"KL divergence", "kl", YScale::kLinear, train("train", &TrainLogLine::kl)},
      {"Entropy", "entropy", YScale::kLinear, train("train", &TrainLogLine::entropy)},
      {"Loss", "loss", YScale::kLinear, train("train", &TrainLogLine::loss)},
      {"Learning rate", "lr", YScale::kLinear, train("train", &TrainLogLine::lr)},
      {"Throughput",
       "tokens/s",
       YScale::kLinear,
       {{"training", kTrain, &TrainLogLine::train_tokens_per_s},
        {"generation", kTrain, &TrainLogLine::gen_tokens_per_s}}},
  };
}

// The lines of the spec's kind that have its field, as (step, value) in increasing step.
ChartSeries series_of(const SeriesSpec& spec, bool dashed, const std::vector<TrainLogLine>& lines) {
  ChartSeries series{spec.label, {}, dashed};
  for (const TrainLogLine& line : lines) {
    const std::optional<double>& v = line.*spec.member;
    if (line.kind == spec.kind && v) series.points.push_back({static_cast<double>(line.step), *v});
  }
  std::stable_sort(series.points.begin(), series.points.end(),
                   [](const ChartPoint& a, const ChartPoint& b) { return a.x < b.x; });
  return series;
}

// The chart of `spec`; series without points are left out (a chart with none keeps its axes).
Chart chart_of(const ChartSpec& spec, const std::vector<TrainLogLine>& lines) {
  Chart chart{spec.title, "step", spec.y_label, spec.scale, {}};
  for (size_t i = 0; i < spec.series.size(); ++i) {
    ChartSeries series = series_of(spec.series[i], i == 1, lines);
    if (!series.points.empty()) chart.series.push_back(std::move(series));
  }
  return chart;
}

// ---- HTML sections ----

std::string summary_section(const TrainLogSummary& s) {
  std::string out = "<h2>Summary</h2>\n<ul>\n";
  for (const std::string& line : summary_lines(s)) out += "<li>" + html_escape(line) + "</li>\n";
  return out + "</ul>\n";
}

std::string charts_section(const std::vector<TrainLogLine>& lines) {
  std::string out =
      "<h2>Charts</h2>\n<p class=\"note\">Train: one point per training step (the rollout it "
      "trained on); "
      "holdout: evaluations on held-out tasks.</p>\n<div class=\"charts\">\n";
  for (const ChartSpec& spec : chart_specs()) out += render_svg_chart(chart_of(spec, lines));
  return out + "</div>\n";
}

template <size_t N>
std::string html_lines_table(const char* what, const Column (&columns)[N], const RecentLines& r) {
  return "<h2>" + html_escape(table_title(what, r)) + "</h2>\n" +
         html_table(headers_of(columns), rows_of(columns, r));
}

template <size_t N>
std::string text_lines_table(const char* what, const Column (&columns)[N], const RecentLines& r) {
  Table table = rows_of(columns, r);
  table.insert(table.begin(), headers_of(columns));
  return "\n" + table_title(what, r) + ":\n" + text_table(table);
}

}  // namespace

std::string render_train_tables(const std::vector<TrainLogLine>& lines) {
  if (lines.empty()) return "no steps logged\n";
  std::string out;
  for (const std::string& line : summary_lines(summarize_train_log(lines))) out += line + "\n";
  out += text_lines_table("train steps", kTrainColumns, recent(lines, TrainLogKind::kTrain));
  return out + text_lines_table("holdout evaluations", kHoldoutColumns,
                                recent(lines, TrainLogKind::kHoldout));
}

std::string render_train_html_report(const fs::path& train_dir,
                                     const std::vector<TrainLogLine>& lines) {
  std::ostringstream body;
  body << "<p class=\"note\">Training folder <code>" << html_escape(train_dir.string())
       << "</code>, read from train_log.jsonl (docs/report.md).</p>\n";
  if (lines.empty()) body << "<p>No steps logged.</p>\n";
  body << summary_section(summarize_train_log(lines)) << "<h2>Settings</h2>\n"
       << config_section(train_dir, "train_config.json") << charts_section(lines)
       << html_lines_table("Train steps", kTrainColumns, recent(lines, TrainLogKind::kTrain))
       << html_lines_table("Holdout evaluations", kHoldoutColumns,
                           recent(lines, TrainLogKind::kHoldout));
  return html_page("kevin training report: " + folder_name(train_dir), body.str());
}

Status write_train_html_report(const fs::path& train_dir, const std::vector<TrainLogLine>& lines,
                               const fs::path& out_file) {
  return write_file_atomic(out_file, render_train_html_report(train_dir, lines));
}

}  // namespace kevin::report
