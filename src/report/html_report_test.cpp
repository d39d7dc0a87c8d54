// html_report_test.cpp — the HTML page: self-contained, escaped, with charts, config fields and
// links to the best kernels; the SVG charts' axes (fraction, speedup, linear), ticks and legend.
#include "report/html_report.h"

#include <gtest/gtest.h>

#include "core/file.h"
#include "report/format.h"
#include "report/run_view.h"
#include "report/svg_chart.h"
#include "report/test_records.h"
#include "sys/tempdir.h"

namespace kevin::report {
namespace {
namespace fs = std::filesystem;
using testing::rows_of;
using testing::trajectory_records;

size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class HtmlReport : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = sys::TempDir::create("kevin-report-html-");
    ASSERT_TRUE(dir.is_ok()) << dir.status().to_string();
    dir_ = std::move(dir).value();
    run_ = dir_.path() / "run";
    ASSERT_TRUE(
        write_file_atomic(run_ / "trajectories.jsonl", testing::jsonl(testing::two_task_records()))
            .is_ok());
  }
  std::string report_at(const fs::path& out_file, const Metrics& metrics) {
    EXPECT_TRUE(write_html_report(run_, metrics, out_file).is_ok());
    return read_file(out_file).value_or("");
  }
  Metrics two_tasks() const { return compute_metrics(rows_of(testing::two_task_records())); }

  sys::TempDir dir_;
  fs::path run_;
};

TEST_F(HtmlReport, SelfContainedPageWithChartsAndTables) {
  const std::string html = report_at(run_ / "report.html", two_tasks());
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("</html>"), std::string::npos);
  EXPECT_EQ(occurrences(html, "<svg"), 4u) << "speedup and correctness vs turns and vs k";
  EXPECT_EQ(occurrences(html, "</svg>"), 4u);
  EXPECT_EQ(occurrences(html, "<table"), occurrences(html, "</table>"));
  for (const char* absent : {"<script", "<link", "src=", "@import", "url("}) {
    EXPECT_EQ(html.find(absent), std::string::npos) << absent;
  }
  for (const char* expected :
       {"Allocation <code>3x3</code>", "Speedup vs turns", "Correctness vs samples k",
        "geometric-mean best speedup <b>1.00x</b>", "<code>lvl/a</code>", "83.3%",
        "No config.json in the folder."}) {
    EXPECT_NE(html.find(expected), std::string::npos) << expected;
  }
}

TEST_F(HtmlReport, RunsWithSpeedOfLightGetItsChartBesideTheEagerBaseline) {
  const std::string html =
      report_at(run_ / "sol.html", compute_metrics(rows_of(testing::speed_of_light_records())));
  EXPECT_EQ(occurrences(html, "<svg"), 5u);
  for (const char* expected :
       {"Speed of light vs turns", "fraction of the roofline bound", "eager PyTorch"}) {
    EXPECT_NE(html.find(expected), std::string::npos) << expected;
  }
  EXPECT_EQ(report_at(run_ / "none.html", two_tasks()).find("Speed of light"), std::string::npos);
}

TEST_F(HtmlReport, EscapesEveryRecordString) {
  std::vector<Json> records =
      trajectory_records("<script>alert(1)</script>", "<b>x</b>", 0, {{"correct", 1.0}});
  records[0]["code"] = "<script>steal()</script>";
  records[0]["feedback"] = "<img src=x>";
  const Json config = {
      {"policy",
       {{"kind", "openai"}, {"model", "<script>evil()</script>"}, {"url", "http://h/<i>"}}},
      {"rollout", {{"temperature", 0.9}}}};
  ASSERT_TRUE(write_file_atomic(run_ / "config.json", dump_json(config)).is_ok());
  ASSERT_TRUE(write_file_atomic(run_ / "trajectories.jsonl", testing::jsonl(records)).is_ok());
  const std::string html = report_at(run_ / "report.html", compute_metrics(rows_of(records)));
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  for (const char* escaped :
       {"&lt;script&gt;alert(1)&lt;/script&gt;", "&lt;script&gt;evil()&lt;/script&gt;",
        "&lt;b&gt;x&lt;/b&gt;", "http://h/&lt;i&gt;", "&lt;script&gt;steal()&lt;/script&gt;",
        "&lt;img src=x&gt;"}) {
    EXPECT_NE(html.find(escaped), std::string::npos) << escaped;
  }
  EXPECT_EQ(html.find("<b>x</b>"), std::string::npos);
}

TEST_F(HtmlReport, TheRunTableNamesModelEndpointDeviceShapeSamplingTasksAndTimes) {
  const Json config = {
      {"kevin_version", "0.9.0"},
      {"created_at", 1796371200},  // 2026-12-04 08:00:00 UTC
      {"tasks", {{{"id", "lvl/a"}}, {{"id", "lvl/b"}}}},
      {"policy",
       {{"kind", "openai"}, {"model", "qwen-coder"}, {"url", "http://127.0.0.1:8000/v1"}}},
      {"engine", {{"backend", "cuda"}, {"devices", "0,1"}}},
      {"rollout",
       {{"allocations", {"3x3"}},
        {"search", "none"},
        {"temperature", 0.7},
        {"top_p", 0.95},
        {"max_tokens", 4096}}}};
  ASSERT_TRUE(write_file_atomic(run_ / "config.json", dump_json(config)).is_ok());
  std::vector<Json> records = testing::two_task_records();
  for (size_t i = 0; i < records.size(); ++i)
    records[i]["finished_at"] = 1796371200.0 + 60.0 * static_cast<double>(i + 1);
  ASSERT_TRUE(write_file_atomic(run_ / "trajectories.jsonl", testing::jsonl(records)).is_ok());
  const std::string html = report_at(run_ / "report.html", two_tasks());
  for (const char* row :
       {"<td>model</td><td>qwen-coder</td>", "<td>endpoint</td><td>http://127.0.0.1:8000/v1</td>",
        "<td>backend</td><td>cuda, devices 0,1</td>",
        "<td>allocations</td><td>3x3 (trajectories × turns)</td>",
        "<td>sampling</td><td>temperature 0.7, top_p 0.95, max_tokens 4096</td>",
        "<td>tasks</td><td>2: lvl/a, lvl/b</td>",
        "<td>started</td><td>2026-12-04 08:00:00 UTC</td>",
        "<td>last turn</td><td>2026-12-04 08:18:00 UTC</td>", "<td>duration</td><td>18.0 min",
        "<td>kevin</td><td>0.9.0</td>"}) {
    EXPECT_NE(html.find(row), std::string::npos) << row;
  }
}

TEST_F(HtmlReport, VerdictsPerTaskAndEveryTrajectoryTurnByTurn) {
  const std::string html = report_at(run_ / "report.html", two_tasks());
  const size_t verdicts = html.find("<h3>Verdicts per task</h3>");
  ASSERT_NE(verdicts, std::string::npos);
  // lvl/b: 1 parse_error, 1 timeout, 1 correct, 6 wrong answers; no rejected column (none seen).
  EXPECT_NE(html.find("<tr><td><code>lvl/b</code></td><td>9</td>", verdicts), std::string::npos);
  EXPECT_EQ(html.find("<th>rejected</th>", verdicts), std::string::npos);
  const size_t view = html.find("<h2>Trajectories</h2>");
  ASSERT_NE(view, std::string::npos);
  EXPECT_EQ(occurrences(html.substr(view), "<h4>trajectory "), 6u) << "2 tasks x 3 trajectories";
  EXPECT_EQ(occurrences(html.substr(view), "<pre>__global__ void k() {}</pre>"), 18u)
      << "every turn's kernel";
  EXPECT_NE(html.find("<td>1.20x</td>", view), std::string::npos);
  // A small page limit: later kernels are named, not embedded.
  const std::string capped = render_run_view(run_, 100).trajectories;
  EXPECT_EQ(occurrences(capped, "<pre>"), 4u) << "4 kernels of 22 bytes fit in 100";
  EXPECT_EQ(occurrences(capped, "in trajectories.jsonl (page limit reached)"), 14u);
}

// The declarations of the style sheet's rule for exactly `selector` ("" when there is none).
std::string css_rule(const std::string& html, const std::string& selector) {
  const size_t style = html.find("<style>");
  const size_t end = html.find("</style>");
  if (style == std::string::npos || end == std::string::npos) return "";
  const std::string sheet = html.substr(style, end - style);
  for (size_t at = sheet.find(selector + "{"); at != std::string::npos;
       at = sheet.find(selector + "{", at + 1)) {
    const char before = sheet[at - 1];
    if (before != '\n' && before != '}') continue;  // the end of a longer selector
    const size_t open = at + selector.size() + 1;
    return sheet.substr(open, sheet.find('}', open) - open);
  }
  return "";
}

// Issue 35, item 8: an expanded kernel was a right-aligned <pre> in the table's last column,
// which widened the table past the page and squeezed the feedback column to a word a line.
TEST_F(HtmlReport, ExpandedKernelsAndFeedbackSpanTheTurnTable) {
  std::vector<Json> records = trajectory_records("lvl/a", "1x1", 0, {{"compile_error"}});
  records[0]["code"] = "__global__ void k(float* out) { out[threadIdx.x] = 1.0f; }" +
                       std::string(300, ' ') + "// a long line";
  records[0]["feedback"] = "candidate.cu:1:7: error: expected ';'\n  1 | __global__ void k(";
  ASSERT_TRUE(write_file_atomic(run_ / "trajectories.jsonl", testing::jsonl(records)).is_ok());
  const std::string html = report_at(run_ / "report.html", compute_metrics(rows_of(records)));
  const size_t view = html.find("<h2>Trajectories</h2>");
  ASSERT_NE(view, std::string::npos);
  const std::string trajectories = html.substr(view);
  // The turn table: three narrow columns, laid out to the page's width whatever it holds.
  EXPECT_NE(trajectories.find("<table class=\"turns\"><tr><th class=\"turn\">turn</th><th>verdict"
                              "</th><th class=\"speedup\">speedup</th></tr>"),
            std::string::npos);
  const std::string table = css_rule(html, ".turns");
  EXPECT_NE(table.find("width:100%"), std::string::npos) << table;
  EXPECT_NE(table.find("table-layout:fixed"), std::string::npos) << table;
  // Feedback and kernel in a row of their own, spanning every column.
  const size_t detail = trajectories.find("<tr class=\"detail\"><td colspan=\"3\">");
  ASSERT_NE(detail, std::string::npos) << trajectories;
  const size_t feedback = trajectories.find(
      "<div class=\"feedback\">candidate.cu:1:7: error: expected &#39;;&#39;\n  1 |", detail);
  const size_t kernel = trajectories.find("<details><summary>kernel, ", detail);
  const size_t row_end = trajectories.find("</tr>", detail);
  EXPECT_LT(feedback, kernel);
  EXPECT_LT(kernel, row_end);
  EXPECT_EQ(trajectories.find("<td><details>"), std::string::npos) << "no kernel column";
  const std::string wrapping = css_rule(html, ".feedback");
  EXPECT_NE(wrapping.find("white-space:pre-wrap"), std::string::npos) << wrapping;
  EXPECT_NE(wrapping.find("overflow-wrap:anywhere"), std::string::npos) << wrapping;
  // Code left-aligned in a box of its own that scrolls sideways instead of widening the page.
  const std::string code = css_rule(html, "pre");
  for (const char* declaration : {"text-align:left", "overflow-x:auto", "max-width:100%"})
    EXPECT_NE(code.find(declaration), std::string::npos) << declaration << " in " << code;
  EXPECT_NE(html.find("<meta name=\"viewport\" content=\"width=device-width"), std::string::npos)
      << "phones lay the page out at their own width";
  // Wider tables (tasks, verdicts) scroll in a box of their own on a phone's screen.
  EXPECT_NE(html.find("<div class=\"scroll\"><table><tr><th>task</th>"), std::string::npos);
  EXPECT_NE(css_rule(html, ".scroll").find("overflow-x:auto"), std::string::npos);
}

TEST(SvgChart, ASeriesHiddenUnderAnotherSaysSo) {
  Chart c{"c",
          "turns",
          "speedup",
          YScale::kSpeedup,
          {{"best@k", {{1, 1.5}, {2, 2.0}}, false},
           {"avg@k", {{1, 1.5}, {2, 2.0}}, true},
           {"other", {{1, 1.0}, {2, 1.0}}, true}}};
  const std::string svg = render_svg_chart(c);
  EXPECT_NE(svg.find(">avg@k (= best@k)</text>"), std::string::npos) << svg;
  EXPECT_NE(svg.find(">other</text>"), std::string::npos);
  EXPECT_NE(svg.find("fill=\"none\" stroke="), std::string::npos)
      << "later series' points are rings";
}

TEST_F(HtmlReport, MalformedConfigIsNotedNotFatal) {
  ASSERT_TRUE(write_file_atomic(run_ / "config.json", "{\"model\": ").is_ok());
  EXPECT_NE(
      report_at(run_ / "report.html", two_tasks()).find("config.json is unusable: malformed JSON"),
      std::string::npos);
  ASSERT_TRUE(write_file_atomic(run_ / "config.json", "[1, 2]").is_ok());
  EXPECT_NE(report_at(run_ / "report.html", two_tasks())
                .find("config.json is unusable: not a JSON object"),
            std::string::npos);
}

TEST_F(HtmlReport, LinksBestKernelsRelativeToTheReport) {
  ASSERT_TRUE(write_file_atomic(run_ / "best" / "lvl" / "a.cu", "__global__ void k() {}").is_ok());
  ASSERT_TRUE(write_file_atomic(run_ / "best" / "lvl" / "b.cpp", "void k() {}").is_ok());
  const std::string beside = report_at(run_ / "report.html", two_tasks());
  EXPECT_NE(beside.find("<a href=\"best/lvl/a.cu\">kernel</a>"), std::string::npos);
  EXPECT_NE(beside.find("<a href=\"best/lvl/b.cpp\">kernel</a>"), std::string::npos);
  const std::string elsewhere = report_at(dir_.path() / "reports" / "r.html", two_tasks());
  EXPECT_NE(elsewhere.find("<a href=\"../run/best/lvl/a.cu\">kernel</a>"), std::string::npos);
}

TEST_F(HtmlReport, MissingKernelAndUnsafeTaskIdsGetNoLink) {
  ASSERT_TRUE(write_file_atomic(dir_.path() / "secret.cu", "x").is_ok());
  const std::string html = report_at(
      run_ / "report.html",
      compute_metrics(rows_of(trajectory_records("../../secret", "1x1", 0, {{"correct", 1.0}}))));
  EXPECT_EQ(html.find("<a href"), std::string::npos);
  EXPECT_NE(html.find("<td>—</td>"), std::string::npos);
}

TEST_F(HtmlReport, EmptyRunSaysSo) {
  EXPECT_NE(report_at(run_ / "report.html", Metrics{}).find("No turns recorded."),
            std::string::npos);
}

TEST_F(HtmlReport, UnwritableOutputIsAnError) {
  ASSERT_TRUE(write_file_atomic(dir_.path() / "file", "x").is_ok());
  const Status st = write_html_report(run_, two_tasks(), dir_.path() / "file" / "report.html");
  EXPECT_EQ(st.code(), StatusCode::kIoError);
  EXPECT_NE(st.message().find("cannot create " + (dir_.path() / "file").string()),
            std::string::npos)
      << st.to_string();
}

TEST(HtmlChart, AxesTicksLabelsAndLegend) {
  Chart chart{"Speedup <vs> turns",
              "turns",
              "mean speedup",
              YScale::kSpeedup,
              {{"best@k", {{1, 0.5}, {2, 1.7}, {3, 2.3}}, false},
               {"avg&k", {{1, 0.2}, {2, 0.4}, {3, 0.9}}, true}}};
  const std::string svg = render_svg_chart(chart);
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_NE(svg.find("Speedup &lt;vs&gt; turns"), std::string::npos);
  EXPECT_NE(svg.find(">avg&amp;k</text>"), std::string::npos);
  EXPECT_NE(svg.find(">turns</text>"), std::string::npos);
  EXPECT_NE(svg.find("rotate(-90)\" text-anchor=\"middle\">mean speedup</text>"),
            std::string::npos);
  // Largest value 2.3: step 2.3/4 → 0.625 → nice 1, so y ticks 0x, 1x, 2x, 3x.
  for (const char* tick : {">0x</text>", ">1x</text>", ">2x</text>", ">3x</text>"})
    EXPECT_NE(svg.find(tick), std::string::npos) << tick;
  EXPECT_EQ(svg.find(">4x</text>"), std::string::npos);
  for (const char* tick : {">1</text>", ">2</text>", ">3</text>"})
    EXPECT_NE(svg.find(tick), std::string::npos) << tick;
  EXPECT_EQ(occurrences(svg, "<polyline"), 2u);
  EXPECT_EQ(occurrences(svg, "stroke-dasharray"), 2u) << "the dashed series and its legend sample";
  EXPECT_EQ(occurrences(svg, "<circle"), 6u);
  EXPECT_NE(svg.find("<title>best@k at 2: 1.70x</title>"), std::string::npos);
}

TEST(HtmlChart, FractionScaleAndManyPoints) {
  ChartSeries s{"best@k", {}, false};
  for (int k = 1; k <= 100; ++k) s.points.push_back({static_cast<double>(k), k / 100.0});
  const std::string svg = render_svg_chart({"Correctness", "k", "correct", YScale::kFraction, {s}});
  for (const char* tick :
       {">0%</text>", ">50%</text>", ">100%</text>", ">1</text>", ">10</text>", ">100</text>"}) {
    EXPECT_NE(svg.find(tick), std::string::npos) << tick;
  }
  EXPECT_EQ(svg.find(">5</text>"), std::string::npos) << "x ticks thinned to a 10 step";
  EXPECT_EQ(svg.find("<circle"), std::string::npos) << "no markers on dense series";
}

TEST(HtmlChart, DegenerateChartsStillRender) {
  const std::string empty = render_svg_chart({"Nothing", "k", "speedup", YScale::kSpeedup, {}});
  EXPECT_NE(empty.find("</svg>"), std::string::npos);
  EXPECT_EQ(empty.find("nan"), std::string::npos);
  const std::string single =
      render_svg_chart({"One", "k", "speedup", YScale::kSpeedup, {{"s", {{1, 0}}, false}}});
  EXPECT_EQ(single.find("nan"), std::string::npos);
  EXPECT_EQ(single.find("inf"), std::string::npos);
  EXPECT_NE(single.find(">1</text>"), std::string::npos);
}

// The markup of a y tick label (x tick labels are centred, y ones end-anchored).
std::string y_tick(const std::string& label) { return "text-anchor=\"end\">" + label; }

TEST(HtmlChart, LinearScaleAllowsNegativeValues) {
  const std::string svg = render_svg_chart({"Loss",
                                            "step",
                                            "loss",
                                            YScale::kLinear,
                                            {{"train", {{0, -0.3}, {1, 0.4}, {2, 1.2}}, false}}});
  // Range [-0.3, 1.2]: step 1.5/4 → 0.375 → nice 0.5, from -0.5 up to 1.5; plain numbers.
  for (const char* label : {"-0.5", "0", "0.5", "1", "1.5"}) {
    const std::string tick = y_tick(std::string(label) + "</text>");
    EXPECT_NE(svg.find(tick), std::string::npos) << tick;
  }
  EXPECT_EQ(svg.find(y_tick("-1</text>")), std::string::npos);
  EXPECT_EQ(svg.find(y_tick("2</text>")), std::string::npos);
  EXPECT_EQ(svg.find("x</text>"), std::string::npos) << "no speedup suffix";
  EXPECT_EQ(svg.find("%</text>"), std::string::npos) << "no percent suffix";
  EXPECT_NE(svg.find("<title>train at 1: 0.4</title>"), std::string::npos);
}

TEST(HtmlChart, LinearScaleTicksAtEveryMagnitude) {
  const auto ticks_of = [](std::vector<ChartPoint> points) {
    return render_svg_chart({"c", "step", "y", YScale::kLinear, {{"s", std::move(points), false}}});
  };
  const std::string lr = ticks_of({{0, 1e-6}, {1, 2.9e-6}});
  for (const char* label : {"0", "1e-6", "2e-6", "3e-6"}) {
    EXPECT_NE(lr.find(y_tick(std::string(label) + "</text>")), std::string::npos) << label;
  }
  const std::string tokens = ticks_of({{0, 21000}, {1, 45000}});
  for (const char* label : {"0", "20000", "40000", "60000"}) {
    EXPECT_NE(tokens.find(y_tick(std::string(label) + "</text>")), std::string::npos) << label;
  }
  const std::string negative = ticks_of({{0, -3}, {1, -1}});
  for (const char* label : {"-3", "-2", "-1", "0"}) {
    EXPECT_NE(negative.find(y_tick(std::string(label) + "</text>")), std::string::npos) << label;
  }
  EXPECT_EQ(negative.find(y_tick("1</text>")), std::string::npos) << "the axis stops at 0";
  const std::string flat = ticks_of({{0, 0}, {1, 0}});
  EXPECT_NE(flat.find(y_tick("1</text>")), std::string::npos)
      << "an all-zero series gets a 0..1 axis";
  EXPECT_EQ(flat.find("nan"), std::string::npos);
}

TEST(Format, SignificantDigits) {
  EXPECT_EQ(significant(0, 3), "0");
  EXPECT_EQ(significant(0.000123456, 3), "0.000123");
  EXPECT_EQ(significant(0.1 + 0.2, 3), "0.3");
  EXPECT_EQ(significant(-2.5, 3), "-2.5");
  EXPECT_EQ(significant(1234.5, 3), "1230");
  EXPECT_EQ(significant(123456, 3), "123000");
  EXPECT_EQ(significant(45000, 3), "45000");
  EXPECT_EQ(significant(1e-6, 3), "1e-6");
  EXPECT_EQ(significant(-1.25e-5, 3), "-1.25e-5");
  EXPECT_EQ(significant(9.9996e-7, 3), "1e-6");
  EXPECT_EQ(significant(1.25e7, 3), "1.25e7");
}

TEST(HtmlEscape, EscapesMarkupCharacters) {
  EXPECT_EQ(html_escape("<a href=\"x\">'&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
  EXPECT_EQ(html_escape("plain"), "plain");
}

}  // namespace
}  // namespace kevin::report
