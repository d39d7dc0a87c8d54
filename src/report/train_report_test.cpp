// train_report_test.cpp — the training report: text tables (summary, last train steps,
// holdout lines), the self-contained HTML page with one SVG per chart, and its escaping.
#include "report/train_report.h"

#include <gtest/gtest.h>

#include "core/file.h"
#include "report/test_train_log.h"
#include "sys/tempdir.h"

namespace kevin::report {
namespace {
namespace fs = std::filesystem;

constexpr size_t kCharts = 11;

size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::vector<TrainLogLine> log_of(int steps) {
  std::vector<TrainLogLine> lines;
  for (const Json& j : testing::train_log_lines(steps)) {
    auto line = train_log_line_from_json(j);
    EXPECT_TRUE(line.is_ok()) << line.status().to_string();
    if (line.is_ok()) lines.push_back(*line);
  }
  return lines;
}

TEST(TrainTables, SummaryRecentStepsAndHoldouts) {
  const std::string text = render_train_tables(log_of(12));
  for (const char* expected :
       {"12 train steps (last step 11), 4 holdout evaluations\n",
        "train reward_mean: first 0.000 at step 0, last 1.100 at step 11\n",
        "best holdout: reward_mean 0.600 at step 4, correct 70.0% at step 12\n",
        "last lr 1.2e-5; rollout 24.0 min, update 6.0 min; 768 samples, 624000 train tokens\n",
        "train steps (last 10 of 12):\n", "holdout evaluations (4):\n", "grad norm", "train tok/s",
        "not okay"}) {
    EXPECT_NE(text.find(expected), std::string::npos) << expected << "\n" << text;
  }
  // Steps 2..11 only: the reward column goes 0.200 .. 1.100.
  EXPECT_NE(text.find("0.200"), std::string::npos) << text;
  EXPECT_EQ(text.find("0.100"), std::string::npos) << "step 1 is not among the last 10";
  EXPECT_NE(text.find("-0.0215"), std::string::npos) << "loss to 3 significant digits";
  // Holdout speedups are null: printed as "-".
  EXPECT_NE(text.find("12        4   0.600    70.0%        -     700     0.0%         -\n"),
            std::string::npos)
      << text;
}

TEST(TrainTables, EmptyLogSaysSo) { EXPECT_EQ(render_train_tables({}), "no steps logged\n"); }

class TrainHtml : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = sys::TempDir::create("kevin-report-train-html-");
    ASSERT_TRUE(dir.is_ok()) << dir.status().to_string();
    dir_ = std::move(dir).value();
  }
  sys::TempDir dir_;
};

TEST_F(TrainHtml, SelfContainedPageWithOneSvgPerChart) {
  const fs::path out = dir_.path() / "train" / "report.html";
  ASSERT_TRUE(write_train_html_report(dir_.path() / "train", log_of(12), out).is_ok());
  const std::string html = read_file(out).value_or("");
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("</html>"), std::string::npos);
  EXPECT_EQ(occurrences(html, "<svg"), kCharts);
  EXPECT_EQ(occurrences(html, "</svg>"), kCharts);
  EXPECT_EQ(occurrences(html, "<table"), occurrences(html, "</table>"));
  for (const char* absent : {"<script", "<link", "src=", "@import", "url("}) {
    EXPECT_EQ(html.find(absent), std::string::npos) << absent;
  }
  for (const char* expected :
       {"<title>kevin training report: train</title>", "aria-label=\"Reward\"",
        "aria-label=\"Correct rate\"", "aria-label=\"Speedup of correct kernels\"",
        "aria-label=\"Response length\"", "aria-label=\"Clipped and not-okay responses\"",
        "aria-label=\"Gradient norm\"", "aria-label=\"KL divergence\"", "aria-label=\"Entropy\"",
        "aria-label=\"Loss\"", "aria-label=\"Learning rate\"", "aria-label=\"Throughput\"",
        ">holdout</text>", ">generation</text>", "<h2>Train steps (last 10 of 12)</h2>",
        "<h2>Holdout evaluations (4)</h2>", "No train_config.json in the folder.",
        "<li>12 train steps (last step 11), 4 holdout evaluations</li>"}) {
    EXPECT_NE(html.find(expected), std::string::npos) << expected;
  }
}

TEST_F(TrainHtml, HoldoutSeriesWithoutValuesIsLeftOut) {
  // Holdout speedups are all null: the speedup chart has the train series only.
  const std::string html = render_train_html_report(dir_.path(), log_of(4));
  const size_t chart = html.find("aria-label=\"Speedup of correct kernels\"");
  ASSERT_NE(chart, std::string::npos);
  const std::string svg = html.substr(chart, html.find("</svg>", chart) - chart);
  EXPECT_NE(svg.find(">train</text>"), std::string::npos);
  EXPECT_EQ(svg.find(">holdout</text>"), std::string::npos);
}

TEST_F(TrainHtml, EscapesFolderAndConfigText) {
  const fs::path train_dir = dir_.path() / "run<b>&'";
  ASSERT_TRUE(write_file_atomic(train_dir / "train_config.json",
                                dump_json(Json{{"model_dir", "<script>evil()</script>"}}))
                  .is_ok());
  const std::string html = render_train_html_report(train_dir, log_of(2));
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<b>&"), std::string::npos);
  EXPECT_NE(html.find("<code>model_dir</code>"), std::string::npos)
      << "the training folder's train_config.json is shown";
  EXPECT_NE(html.find("&lt;script&gt;evil()&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("kevin training report: run&lt;b&gt;&amp;&#39;</h1>"), std::string::npos);
}

TEST_F(TrainHtml, EmptyLogStillRendersAndBadOutputIsAnError) {
  const std::string html = render_train_html_report(dir_.path(), {});
  EXPECT_NE(html.find("<p>No steps logged.</p>"), std::string::npos);
  EXPECT_EQ(occurrences(html, "<svg"), kCharts);
  EXPECT_EQ(html.find("nan"), std::string::npos);
  ASSERT_TRUE(write_file_atomic(dir_.path() / "file", "x").is_ok());
  const Status st = write_train_html_report(dir_.path(), {}, dir_.path() / "file" / "report.html");
  EXPECT_EQ(st.code(), StatusCode::kIoError);
  EXPECT_NE(st.message().find("cannot create " + (dir_.path() / "file").string()),
            std::string::npos)
      << st.to_string();
}

}  // namespace
}  // namespace kevin::report
