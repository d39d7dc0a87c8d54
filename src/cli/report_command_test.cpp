// report_command_test.cpp — `kevin report`: tables or JSON on stdout, report.html written, for
// run folders and training folders; one-line errors with exit 2 for a missing run or log and
// exit 1 for malformed records or log lines.
#include "cli/app.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "core/file.h"
#include "core/json.h"
#include "report/test_train_log.h"
#include "rollout/rollout.h"
#include "rollout/run_store.h"
#include "sys/tempdir.h"

namespace kevin::cli {
namespace {
namespace fs = std::filesystem;

struct Outcome {
  int code;
  std::string out;
  std::string err;
};

Outcome run(std::vector<std::string> args) {
  args.insert(args.begin(), "kevin");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  const int code = run_cli(static_cast<int>(argv.size()), argv.data(), out, err);
  return {code, out.str(), err.str()};
}

size_t line_count(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += (c == '\n');
  return n;
}

std::string record(int trajectory, int turn, bool correct, double speedup) {
  Json r = {{"task", "level1/001_x"}, {"trajectory", trajectory},
            {"turn", turn},           {"allocation", "2x2"},
            {"parent", nullptr},      {"verdict", correct ? "correct" : "wrong_answer"},
            {"correct", correct},     {"speedup", correct ? Json(speedup) : Json(nullptr)},
            {"generation_ms", 10.0}};
  return dump_json(r) + "\n";
}

class ReportCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = sys::TempDir::create("kevin-report-cli-");
    ASSERT_TRUE(dir.is_ok()) << dir.status().to_string();
    dir_ = std::move(dir).value();
    run_ = dir_.path() / "run";
    const std::string records = record(0, 0, false, 0) + record(0, 1, true, 1.5) +
                                record(1, 0, true, 0.5) + record(1, 1, false, 0);
    ASSERT_TRUE(write_file_atomic(run_ / "trajectories.jsonl", records).is_ok());
  }
  sys::TempDir dir_;
  fs::path run_;
};

TEST_F(ReportCommand, ARunStoppedBeforeWritingItsRecordsIsReadFromItsDatabase) {
  // What a second Ctrl-C leaves: config.json and run.db, no trajectories.jsonl.
  const fs::path stopped = dir_.path() / "stopped";
  Json config = {{"rollout", rollout::to_json(rollout::RolloutConfig{})},
                 {"engine", {{"backend", "cpu"}}}};
  ASSERT_TRUE(write_file_atomic(stopped / "config.json", dump_json(config)).is_ok());
  {
    auto store = rollout::RunStore::open(stopped / "run.db");
    ASSERT_TRUE(store.is_ok()) << store.status().to_string();
    for (int turn = 0; turn < 2; ++turn) {
      Json r = parse_json(record(0, turn, turn == 1, 1.5)).value();
      r["score"] = turn == 1 ? 1.8 : 0.0;
      ASSERT_TRUE(store->put_turn({"2x2", "level1/001_x", 0, turn}, r).is_ok());
    }
  }
  const auto result = run({"report", stopped.string()});
  ASSERT_EQ(result.code, 0) << result.err;
  EXPECT_NE(result.err.find("stopped before writing its records; 2 finished turns read from "
                            "run.db (resume with: kevin run --resume"),
            std::string::npos)
      << result.err;
  EXPECT_TRUE(fs::exists(stopped / "trajectories.jsonl"));
  EXPECT_TRUE(fs::exists(stopped / "report.html"));
  // A database that cannot be read is a one-line failure, not a crash.
  const fs::path broken = dir_.path() / "broken";
  ASSERT_TRUE(write_file_atomic(broken / "config.json", "{}").is_ok());
  ASSERT_TRUE(write_file_atomic(broken / "run.db", "not a database").is_ok());
  const auto bad = run({"report", broken.string()});
  EXPECT_EQ(bad.code, 1) << bad.err;
  EXPECT_NE(bad.err.find("has run.db but no trajectories.jsonl"), std::string::npos) << bad.err;
}

TEST_F(ReportCommand, PrintsTablesAndWritesReport) {
  const Outcome r = run({"report", run_.string()});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.out.find("allocation 2x2: 1 task, 2 trajectories"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("wrote " + (run_ / "report.html").string()), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(run_ / "report.html"));
}

TEST_F(ReportCommand, JsonOnStdoutAndOutFlag) {
  const fs::path out_file = dir_.path() / "elsewhere" / "r.html";
  const Outcome r = run({"report", run_.string(), "--json", "--out", out_file.string()});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  auto j = parse_json(r.out);
  ASSERT_TRUE(j.is_ok()) << "stdout must be exactly one JSON document: " << r.out;
  EXPECT_DOUBLE_EQ((*j)["groups"][0]["overall"]["speedup"]["best"].get<double>(), 1.5);
  EXPECT_NE(r.err.find("wrote " + out_file.string()), std::string::npos) << r.err;
  EXPECT_TRUE(fs::exists(out_file));
  EXPECT_FALSE(fs::exists(run_ / "report.html"));
}

TEST_F(ReportCommand, MissingRunOrRecordsIsUsageError) {
  const Outcome no_dir = run({"report", (dir_.path() / "nope").string()});
  EXPECT_EQ(no_dir.code, kExitUsage);
  EXPECT_EQ(line_count(no_dir.err), 1u) << no_dir.err;
  EXPECT_NE(no_dir.err.find("kevin report: no run folder"), std::string::npos) << no_dir.err;
  const Outcome no_records = run({"report", dir_.path().string()});
  EXPECT_EQ(no_records.code, kExitUsage);
  EXPECT_EQ(line_count(no_records.err), 1u) << no_records.err;
  EXPECT_NE(no_records.err.find("trajectories.jsonl"), std::string::npos) << no_records.err;
  EXPECT_EQ(run({"report"}).code, kExitUsage) << "RUN_DIR is required";
}

TEST_F(ReportCommand, MalformedRecordsFailNamingTheLine) {
  ASSERT_TRUE(
      write_file_atomic(run_ / "trajectories.jsonl", record(0, 0, true, 1.0) + "{\"task\": 3}\n")
          .is_ok());
  const Outcome r = run({"report", run_.string()});
  EXPECT_EQ(r.code, kExitFailure);
  EXPECT_EQ(line_count(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("trajectories.jsonl line 2: field \"task\""), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(run_ / "report.html"));
}

size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class TrainReportCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = sys::TempDir::create("kevin-report-train-cli-");
    ASSERT_TRUE(dir.is_ok()) << dir.status().to_string();
    dir_ = std::move(dir).value();
    train_ = dir_.path() / "train";
    write_log(report::testing::jsonl_of(report::testing::train_log_lines(12)));
  }
  void write_log(const std::string& text) {
    ASSERT_TRUE(write_file_atomic(train_ / "train_log.jsonl", text).is_ok());
  }
  sys::TempDir dir_;
  fs::path train_;
};

TEST_F(TrainReportCommand, PrintsTablesAndWritesReport) {
  const Outcome r = run({"report", train_.string()});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  for (const char* expected :
       {"12 train steps (last step 11), 4 holdout evaluations",
        "train steps (last 10 of 12):", "holdout evaluations (4):", "grad norm"}) {
    EXPECT_NE(r.out.find(expected), std::string::npos) << expected << "\n" << r.out;
  }
  EXPECT_NE(r.out.find("wrote " + (train_ / "report.html").string()), std::string::npos) << r.out;
  const std::string html = read_file(train_ / "report.html").value_or("");
  EXPECT_NE(html.find("kevin training report: train"), std::string::npos);
  EXPECT_EQ(occurrences(html, "<svg"), 11u);
}

TEST_F(TrainReportCommand, JsonSummaryOnStdoutAndOutFlag) {
  const fs::path out_file = dir_.path() / "elsewhere" / "t.html";
  const Outcome r = run({"report", train_.string(), "--json", "--out", out_file.string()});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  auto j = parse_json(r.out);
  ASSERT_TRUE(j.is_ok()) << "stdout must be exactly one JSON document: " << r.out;
  EXPECT_EQ((*j)["schema"], "kevin.train_summary.v1");
  EXPECT_EQ((*j)["train_steps"], 12);
  EXPECT_EQ((*j)["best_holdout"]["correct_rate"]["step"], 12);
  EXPECT_NE(r.err.find("wrote " + out_file.string()), std::string::npos) << r.err;
  EXPECT_TRUE(fs::exists(out_file));
  EXPECT_FALSE(fs::exists(train_ / "report.html"));
}

TEST_F(TrainReportCommand, MalformedLineFailsNamingTheLine) {
  write_log(dump_json(report::testing::train_line(0, 0.1)) +
            "\n{\"kind\": \"train\", \"step\": \"one\"}\n");
  const Outcome r = run({"report", train_.string()});
  EXPECT_EQ(r.code, kExitFailure);
  EXPECT_EQ(line_count(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("train_log.jsonl line 2: field \"step\" must be an integer"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(train_ / "report.html"));
}

TEST_F(TrainReportCommand, RecordsTakePrecedenceAndAnEmptyFolderIsUsageError) {
  ASSERT_TRUE(write_file_atomic(train_ / "trajectories.jsonl", record(0, 0, true, 1.5)).is_ok());
  const Outcome both = run({"report", train_.string()});
  EXPECT_EQ(both.code, kExitOk) << both.err;
  EXPECT_NE(both.out.find("allocation 2x2: 1 task"), std::string::npos) << both.out;
  const Outcome empty = run({"report", dir_.path().string()});
  EXPECT_EQ(empty.code, kExitUsage);
  EXPECT_EQ(line_count(empty.err), 1u) << empty.err;
  EXPECT_NE(empty.err.find("holds neither trajectories.jsonl nor train_log.jsonl"),
            std::string::npos)
      << empty.err;
}

}  // namespace
}  // namespace kevin::cli
