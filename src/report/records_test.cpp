// records_test.cpp — reading trajectories.jsonl: every field of a full record, the record the
// rollout writes read back field for field, defaults for optional fields, and one clear error
// naming the line for each kind of malformed input.
#include "report/records.h"

#include <gtest/gtest.h>

#include "core/file.h"
#include "report/test_records.h"
#include "rollout/records.h"
#include "sys/tempdir.h"

namespace kevin::report {
namespace {
namespace fs = std::filesystem;
using testing::KernelSpec;
using testing::turn_record;

class ReportRecords : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = sys::TempDir::create("kevin-report-records-");
    ASSERT_TRUE(dir.is_ok()) << dir.status().to_string();
    dir_ = std::move(dir).value();
  }
  fs::path write(const std::string& text) {
    const fs::path p = dir_.path() / "trajectories.jsonl";
    EXPECT_TRUE(write_file_atomic(p, text).is_ok());
    return p;
  }
  // The error of reading `text`, which must fail with kInvalidArgument.
  std::string error_of(const std::string& text) {
    auto rows = read_trajectories(write(text));
    EXPECT_FALSE(rows.is_ok());
    if (rows.is_ok()) return "";
    EXPECT_EQ(rows.status().code(), StatusCode::kInvalidArgument) << rows.status().to_string();
    return rows.status().message();
  }
  static std::string line(Json record) { return dump_json(record) + "\n"; }
  static Json good() { return turn_record("lvl/a", "2x2", 0, 0, {"correct", 1.5}); }

  sys::TempDir dir_;
};

TEST_F(ReportRecords, ReadsFullContractRecords) {
  Json truncated = turn_record("level1/001_square_matmul", "16x8", 3, 1, {"wrong_answer"}, 2);
  truncated["finish_reason"] = "length";
  truncated["cached_eval"] = true;
  truncated["generation_ms"] = 1234.5;
  const Json parent = turn_record("level1/001_square_matmul", "16x8", 2, 0, {"compile_error"});
  auto rows = read_trajectories(write(line(good()) + line(truncated) + line(parent)));
  ASSERT_TRUE(rows.is_ok()) << rows.status().to_string();
  ASSERT_EQ(rows->size(), 3u);
  const TurnRow& a = (*rows)[0];
  EXPECT_EQ(a.task, "lvl/a");
  EXPECT_EQ(a.allocation, "2x2");
  EXPECT_EQ(a.verdict, VerdictKind::kCorrect);
  EXPECT_TRUE(a.correct);
  EXPECT_EQ(a.speedup, 1.5);
  EXPECT_FALSE(a.parent.has_value());
  EXPECT_EQ(a.line, 1u);
  const TurnRow& b = (*rows)[1];
  EXPECT_EQ(b.task, "level1/001_square_matmul");
  EXPECT_EQ(b.trajectory, 3);
  EXPECT_EQ(b.turn, 1);
  EXPECT_EQ(b.parent, 2);
  EXPECT_EQ(b.verdict, VerdictKind::kWrongAnswer);
  EXPECT_FALSE(b.correct);
  EXPECT_TRUE(b.truncated);
  EXPECT_TRUE(b.cached_eval);
  EXPECT_DOUBLE_EQ(b.generation_ms, 1234.5);
  EXPECT_DOUBLE_EQ(b.compile_ms, 100.0);
  EXPECT_DOUBLE_EQ(b.eval_ms, 50.0);
  EXPECT_EQ(b.line, 2u);
}

// The report validates the file by key; the rollout writes it from its typed record
// (rollout::TurnRecord): every field the report reads must come back with the value written.
TEST_F(ReportRecords, ReadsEveryFieldTheRolloutWritesWithItsValue) {
  rollout::TurnRecord r;
  r.task = "level1/019_relu";
  r.allocation = "beam";
  r.trajectory = 7;
  r.turn = 3;
  r.parent = 4;
  r.finish_reason = "length";
  r.verdict = "correct";
  r.correct = true;
  r.speedup = 2.5;
  r.compile_ms = 812.0;
  r.eval_ms = 96.5;
  r.roofline_fraction.value = 0.375;
  r.baseline_roofline_fraction.value = 0.125;
  Json record = rollout::to_json(r);
  record["generation_ms"] = 4321.0;  // added by the run after judging (docs/run.md)
  record["cached_eval"] = true;
  const auto row = turn_row_from_json(record);
  ASSERT_TRUE(row.is_ok()) << row.status().to_string();
  EXPECT_EQ(row->task, r.task);
  EXPECT_EQ(row->allocation, r.allocation);
  EXPECT_EQ(row->trajectory, r.trajectory);
  EXPECT_EQ(row->turn, r.turn);
  EXPECT_EQ(row->parent, r.parent);
  EXPECT_EQ(row->verdict, VerdictKind::kCorrect);
  EXPECT_TRUE(row->correct);
  EXPECT_EQ(row->speedup, r.speedup);
  EXPECT_EQ(row->roofline_fraction, *r.roofline_fraction.value);
  EXPECT_EQ(row->baseline_roofline_fraction, *r.baseline_roofline_fraction.value);
  EXPECT_DOUBLE_EQ(row->compile_ms, r.compile_ms);
  EXPECT_DOUBLE_EQ(row->eval_ms, r.eval_ms);
  EXPECT_TRUE(row->truncated);
  EXPECT_DOUBLE_EQ(row->generation_ms, 4321.0);
  EXPECT_TRUE(row->cached_eval);
}

TEST_F(ReportRecords, OptionalFieldsDefaultAndIncorrectSpeedupIsDropped) {
  const Json minimal = {{"task", "t"},         {"trajectory", 0},      {"turn", 0},
                        {"allocation", "1x1"}, {"verdict", "correct"}, {"correct", true}};
  Json wrong = {{"task", "t"},         {"trajectory", 1},           {"turn", 0},
                {"allocation", "1x1"}, {"verdict", "wrong_answer"}, {"correct", false},
                {"speedup", 3.0}};
  auto rows = read_trajectories(write(line(minimal) + line(wrong)));
  ASSERT_TRUE(rows.is_ok()) << rows.status().to_string();
  EXPECT_FALSE((*rows)[0].speedup.has_value()) << "a correct kernel without a measured speedup";
  EXPECT_DOUBLE_EQ((*rows)[0].generation_ms, 0.0);
  EXPECT_FALSE((*rows)[0].truncated);
  EXPECT_FALSE((*rows)[1].speedup.has_value()) << "speedup of an incorrect kernel is meaningless";
}

TEST_F(ReportRecords, BlankLinesAreSkippedAndLinesStillCounted) {
  auto rows = read_trajectories(write("\n  \r\n" + line(good()) + "\n"));
  ASSERT_TRUE(rows.is_ok()) << rows.status().to_string();
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].line, 3u);
  auto empty = read_trajectories(write(""));
  ASSERT_TRUE(empty.is_ok());
  EXPECT_TRUE(empty->empty());
}

TEST_F(ReportRecords, MissingFileIsNotFoundAndFolderIsIoError) {
  auto none = read_trajectories(dir_.path() / "none.jsonl");
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_NE(none.status().message().find("no such file: " + (dir_.path() / "none.jsonl").string()),
            std::string::npos)
      << none.status().to_string();
  auto folder = read_trajectories(dir_.path());
  EXPECT_EQ(folder.status().code(), StatusCode::kIoError);
  EXPECT_NE(folder.status().message().find(dir_.path().string() + " is a directory"),
            std::string::npos)
      << folder.status().to_string();
}

TEST_F(ReportRecords, MalformedLineIsNamed) {
  const std::string e = error_of(line(good()) + "{\"task\": \"t\", \n");
  EXPECT_NE(e.find("trajectories.jsonl line 2:"), std::string::npos) << e;
  EXPECT_NE(error_of("[1, 2]\n").find("line 1: expected a JSON object"), std::string::npos);
}

TEST_F(ReportRecords, MissingRequiredFieldIsNamedWithItsLine) {
  for (const char* field : {"task", "allocation", "trajectory", "turn", "verdict", "correct"}) {
    Json record = good();
    record.erase(field);
    const std::string e = error_of(line(good()) + line(record));
    EXPECT_NE(e.find("line 2: field \"" + std::string(field) + "\" is missing"), std::string::npos)
        << e;
  }
}

TEST_F(ReportRecords, BadFieldValuesAreNamed) {
  struct Case {
    const char* field;
    Json value;
    const char* expected;
  };
  const std::vector<Case> cases = {
      {"task", "", "\"task\" must be a non-empty string"},
      {"task", 7, "\"task\" must be a non-empty string"},
      {"turn", "1", "\"turn\" must be an integer"},
      {"turn", 1.5, "\"turn\" must be an integer"},
      {"turn", -1, "\"turn\" must be between 0 and 9999"},
      {"turn", 10000, "\"turn\" must be between 0 and 9999"},
      {"trajectory", -3, "\"trajectory\" must be between"},
      {"parent", "0", "\"parent\" must be an integer"},
      {"parent", 0, "\"parent\" names the trajectory itself"},
      {"verdict", "great", "\"verdict\" is not a verdict name: \"great\""},
      {"correct", "yes", "\"correct\" must be true or false"},
      {"correct", false, "\"correct\" is false but verdict is correct"},
      {"speedup", -1.0, "\"speedup\" must be a finite number >= 0"},
      {"speedup", "fast", "\"speedup\" must be a number"},
      {"eval_ms", true, "\"eval_ms\" must be a number"},
      {"finish_reason", 3, "\"finish_reason\" must be a string"},
      {"cached_eval", 1, "\"cached_eval\" must be true or false"},
  };
  for (const Case& c : cases) {
    Json record = good();
    record[c.field] = c.value;
    const std::string e = error_of(line(record));
    EXPECT_NE(e.find(std::string("line 1: field ") + c.expected), std::string::npos)
        << c.field << ": " << e;
  }
}

TEST_F(ReportRecords, RepeatedTurnIsNamed) {
  const std::string e = error_of(
      line(good()) + line(turn_record("lvl/b", "2x2", 0, 0, {"wrong_answer"})) + line(good()));
  EXPECT_NE(e.find("line 3: turn 0 of trajectory 0 repeats line 1"), std::string::npos) << e;
  // The same ids under another task or allocation are different trajectories.
  EXPECT_TRUE(read_trajectories(
                  write(line(good()) + line(turn_record("lvl/a", "beam", 0, 0, {"correct", 1}))))
                  .is_ok());
}

TEST_F(ReportRecords, LineageErrorsAreNamed) {
  const Json root = turn_record("t", "beam", 0, 0, {"wrong_answer"});
  const std::string inconsistent =
      error_of(line(root) + line(turn_record("t", "beam", 1, 1, {"wrong_answer"}, 0)) +
               line(turn_record("t", "beam", 1, 2, {"wrong_answer"})));
  EXPECT_NE(inconsistent.find("line 3: parent differs from line 2"), std::string::npos)
      << inconsistent;
  const std::string missing =
      error_of(line(root) + line(turn_record("t", "beam", 1, 1, {"wrong_answer"}, 5)));
  EXPECT_NE(missing.find("line 2: parent 5 is not a trajectory of this task and allocation"),
            std::string::npos)
      << missing;
  const std::string other_task =
      error_of(line(root) + line(turn_record("u", "beam", 1, 1, {"wrong_answer"}, 0)));
  EXPECT_NE(other_task.find("line 2: parent 0 is not a trajectory"), std::string::npos)
      << other_task;
  const std::string cycle = error_of(line(turn_record("t", "beam", 0, 0, {"wrong_answer"}, 2)) +
                                     line(turn_record("t", "beam", 1, 1, {"wrong_answer"}, 0)) +
                                     line(turn_record("t", "beam", 2, 2, {"wrong_answer"}, 1)));
  EXPECT_NE(cycle.find("has a parent cycle"), std::string::npos) << cycle;
}

}  // namespace
}  // namespace kevin::report
