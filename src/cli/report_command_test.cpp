// report_command_test.cpp — `kevin report`: tables or JSON on stdout, report.html written,
// one-line errors with exit 2 for a missing run and exit 1 for malformed records.
#include "cli/app.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "core/file.h"
#include "core/json.h"
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
  Json r = {{"task", "level1/001_x"}, {"trajectory", trajectory}, {"turn", turn}, {"allocation", "2x2"},
            {"parent", nullptr}, {"verdict", correct ? "correct" : "wrong_answer"}, {"correct", correct},
            {"speedup", correct ? Json(speedup) : Json(nullptr)}, {"generation_ms", 10.0}};
  return dump_json(r) + "\n";
}

class ReportCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = sys::TempDir::create("kevin-report-cli-");
    ASSERT_TRUE(dir.is_ok()) << dir.status().to_string();
    dir_ = std::move(dir).value();
    run_ = dir_.path() / "run";
    const std::string records = record(0, 0, false, 0) + record(0, 1, true, 1.5) + record(1, 0, true, 0.5) + record(1, 1, false, 0);
    ASSERT_TRUE(write_file_atomic(run_ / "trajectories.jsonl", records).is_ok());
  }
  sys::TempDir dir_;
  fs::path run_;
};

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
  ASSERT_TRUE(write_file_atomic(run_ / "trajectories.jsonl", record(0, 0, true, 1.0) + "{\"task\": 3}\n").is_ok());
  const Outcome r = run({"report", run_.string()});
  EXPECT_EQ(r.code, kExitFailure);
  EXPECT_EQ(line_count(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("trajectories.jsonl line 2: field \"task\""), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(run_ / "report.html"));
}

}  // namespace
}  // namespace kevin::cli
