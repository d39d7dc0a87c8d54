// train_log_test.cpp — reading train_log.jsonl: every field of train and holdout lines, nulls
// and absent fields, one error naming the line for each kind of malformed line; the summary
// and the JSON of lines and summaries.
#include "report/train_log.h"

#include <gtest/gtest.h>

#include "core/file.h"
#include "report/test_train_log.h"
#include "sys/tempdir.h"

namespace kevin::report {
namespace {
namespace fs = std::filesystem;
using testing::holdout_line;
using testing::train_line;

class TrainLog : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = sys::TempDir::create("kevin-report-train-log-");
    ASSERT_TRUE(dir.is_ok()) << dir.status().to_string();
    dir_ = std::move(dir).value();
  }
  fs::path write(const std::string& text) {
    const fs::path p = dir_.path() / "train_log.jsonl";
    EXPECT_TRUE(write_file_atomic(p, text).is_ok());
    return p;
  }
  // The error of reading `text`, which must fail with kInvalidArgument.
  std::string error_of(const std::string& text) {
    auto lines = read_train_log(write(text));
    EXPECT_FALSE(lines.is_ok());
    if (lines.is_ok()) return "";
    EXPECT_EQ(lines.status().code(), StatusCode::kInvalidArgument) << lines.status().to_string();
    return lines.status().message();
  }
  static std::string line(const Json& object) { return dump_json(object) + "\n"; }

  sys::TempDir dir_;
};

TEST_F(TrainLog, ReadsEveryFieldOfTrainAndHoldoutLines) {
  auto lines = read_train_log(
      write(line(train_line(7, 0.25)) + "\n  \r\n" + line(holdout_line(8, 0.5, 0.375))));
  ASSERT_TRUE(lines.is_ok()) << lines.status().to_string();
  ASSERT_EQ(lines->size(), 2u);
  const TrainLogLine& t = (*lines)[0];
  EXPECT_EQ(t.kind, TrainLogKind::kTrain);
  EXPECT_EQ(t.step, 7);
  EXPECT_EQ(t.line, 1u);
  EXPECT_EQ(t.turns, 4);
  EXPECT_EQ(t.reward_mean, 0.25);
  EXPECT_EQ(t.correct_rate, 0.5);
  EXPECT_EQ(t.response_tokens_mean, 812.5);
  EXPECT_EQ(t.clip_ratio, 0.125);
  EXPECT_EQ(t.speedup_mean, 1.25);
  EXPECT_EQ(t.not_okay_ratio, 0.0625);
  EXPECT_EQ(t.loss, -0.0215) << "numbers may be negative";
  EXPECT_EQ(t.grad_norm, 0.75);
  EXPECT_EQ(t.clip_fraction, 0.01);
  EXPECT_EQ(t.entropy, 0.45);
  EXPECT_EQ(t.kl, 0.002);
  ASSERT_TRUE(t.lr.has_value());
  EXPECT_DOUBLE_EQ(*t.lr, 8e-6);
  EXPECT_EQ(t.train_tokens_per_s, 5400.0);
  EXPECT_EQ(t.gen_tokens_per_s, 21000.0);
  EXPECT_EQ(t.rollout_s, 120.0);
  EXPECT_EQ(t.sampling_s, 45.0);
  EXPECT_EQ(t.update_s, 30.0);
  EXPECT_EQ(t.samples, 64);
  EXPECT_EQ(t.train_tokens, 52000);
  const TrainLogLine& h = (*lines)[1];
  EXPECT_EQ(h.kind, TrainLogKind::kHoldout);
  EXPECT_EQ(h.step, 8);
  EXPECT_EQ(h.line, 4u) << "blank lines are skipped but counted";
  EXPECT_EQ(h.correct_rate, 0.375);
  EXPECT_FALSE(h.speedup_mean.has_value()) << "null: no correct kernel";
  EXPECT_FALSE(h.not_okay_ratio.has_value()) << "null: unknown";
  EXPECT_FALSE(h.loss.has_value());
}

TEST_F(TrainLog, AbsentFieldsAreNulloptAndUnknownKeysAreReadPast) {
  const Json minimal = {{"kind", "train"}, {"step", 0}, {"note", "anything"}};
  // Train-only fields are not read on holdout lines, whatever they hold.
  const Json holdout = {{"kind", "holdout"}, {"step", 3}, {"loss", "n/a"}, {"samples", -1}};
  auto lines = read_train_log(write(line(minimal) + line(holdout)));
  ASSERT_TRUE(lines.is_ok()) << lines.status().to_string();
  for (const TrainLogLine& l : *lines) {
    for (const TrainNumberField& f : kTrainNumberFields)
      EXPECT_FALSE((l.*f.member).has_value()) << f.key;
    for (const TrainCountField& f : kTrainCountFields)
      EXPECT_FALSE((l.*f.member).has_value()) << f.key;
  }
  auto empty = read_train_log(write(""));
  ASSERT_TRUE(empty.is_ok());
  EXPECT_TRUE(empty->empty());
}

TEST_F(TrainLog, MissingFileIsNotFoundAndFolderIsIoError) {
  auto none = read_train_log(dir_.path() / "none.jsonl");
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_NE(none.status().message().find("no such file: " + (dir_.path() / "none.jsonl").string()),
            std::string::npos)
      << none.status().to_string();
  auto folder = read_train_log(dir_.path());
  EXPECT_EQ(folder.status().code(), StatusCode::kIoError);
  EXPECT_NE(folder.status().message().find(dir_.path().string() + " is a directory"),
            std::string::npos)
      << folder.status().to_string();
}

TEST_F(TrainLog, MalformedLinesAreNamedWithTheirLineNumber) {
  const std::string good = line(train_line(0, 0.1));
  const std::string not_json = error_of(good + "{\"kind\": \"train\",\n");
  EXPECT_NE(not_json.find("train_log.jsonl line 2: "), std::string::npos) << not_json;
  const std::string not_object = error_of(good + good + "[1, 2]\n");
  EXPECT_NE(not_object.find("train_log.jsonl line 3: expected a JSON object"), std::string::npos)
      << not_object;
}

TEST_F(TrainLog, BadFieldsAreNamedWithTheirLineNumber) {
  struct Case {
    const char* field;
    Json value;  // null removes the field
    const char* expected;
  };
  const std::vector<Case> cases = {
      {"kind", nullptr, "field \"kind\" is missing"},
      {"kind", "eval", "field \"kind\" must be \"train\" or \"holdout\", not \"eval\""},
      {"kind", 1, "field \"kind\" must be \"train\" or \"holdout\", not 1"},
      {"step", nullptr, "field \"step\" is missing"},
      {"step", "3", "field \"step\" must be an integer"},
      {"step", 2.5, "field \"step\" must be an integer"},
      {"step", -1, "field \"step\" must be an integer >= 0"},
      {"turns", 1.5, "field \"turns\" must be an integer"},
      {"reward_mean", "high", "field \"reward_mean\" must be a number"},
      {"speedup_mean", true, "field \"speedup_mean\" must be a number"},
      {"not_okay_ratio", Json::array({0.1}), "field \"not_okay_ratio\" must be a number"},
      {"lr", "1e-6", "field \"lr\" must be a number"},
      {"samples", -4, "field \"samples\" must be an integer >= 0"},
      {"train_tokens", 1.0, "field \"train_tokens\" must be an integer"},
  };
  for (const Case& c : cases) {
    Json bad = train_line(1, 0.2);
    if (c.value.is_null()) {
      bad.erase(c.field);
    } else {
      bad[c.field] = c.value;
    }
    const std::string e = error_of(line(train_line(0, 0.1)) + "\n" + line(bad));
    EXPECT_NE(e.find(std::string("train_log.jsonl line 3: ") + c.expected), std::string::npos)
        << c.field << ": " << e;
  }
}

TEST_F(TrainLog, LineJsonHoldsThePresentFieldsAndReadsBack) {
  auto parsed = train_log_line_from_json(train_line(5, 0.5));
  ASSERT_TRUE(parsed.is_ok()) << parsed.status().to_string();
  const Json j = to_json(*parsed);
  EXPECT_EQ(j, train_line(5, 0.5)) << dump_json(j);
  auto holdout = train_log_line_from_json(holdout_line(6, 0.5, 0.25));
  ASSERT_TRUE(holdout.is_ok()) << holdout.status().to_string();
  const Json h = to_json(*holdout);
  EXPECT_EQ(h["kind"], "holdout");
  EXPECT_FALSE(h.contains("speedup_mean")) << "absent values are left out";
  EXPECT_FALSE(h.contains("loss"));
}

TEST(TrainLogSummary, FollowsTheLog) {
  std::vector<TrainLogLine> lines;
  for (const Json& j : testing::train_log_lines(12))
    lines.push_back(train_log_line_from_json(j).value());
  const TrainLogSummary s = summarize_train_log(lines);
  EXPECT_EQ(s.train_steps, 12);
  EXPECT_EQ(s.holdout_evals, 4);
  EXPECT_EQ(s.last_step, 11);
  ASSERT_TRUE(s.first_reward && s.last_reward);
  EXPECT_EQ(s.first_reward->step, 0);
  EXPECT_DOUBLE_EQ(s.first_reward->value, 0.0);
  EXPECT_EQ(s.last_reward->step, 11);
  EXPECT_DOUBLE_EQ(s.last_reward->value, 1.1);
  ASSERT_TRUE(s.best_holdout_reward && s.best_holdout_correct);
  EXPECT_EQ(s.best_holdout_reward->step, 4) << "the earliest of equal holdout rewards";
  EXPECT_DOUBLE_EQ(s.best_holdout_reward->value, 0.6);
  EXPECT_EQ(s.best_holdout_correct->step, 12);
  EXPECT_DOUBLE_EQ(s.best_holdout_correct->value, 0.7);
  ASSERT_TRUE(s.last_lr.has_value());
  EXPECT_DOUBLE_EQ(*s.last_lr, 12e-6);
  EXPECT_DOUBLE_EQ(s.rollout_s, 12 * 120.0);
  EXPECT_DOUBLE_EQ(s.update_s, 12 * 30.0);
  EXPECT_EQ(s.samples, 12 * 64);
  EXPECT_EQ(s.train_tokens, 12 * 52000);
  ASSERT_TRUE(s.last_train && s.last_holdout);
  EXPECT_EQ(s.last_train->step, 11);
  EXPECT_EQ(s.last_holdout->step, 12);

  const Json j = to_json(s);
  EXPECT_EQ(j["schema"], "kevin.train_summary.v1");
  EXPECT_EQ(j["last_step"], 11);
  EXPECT_EQ(j["best_holdout"]["reward_mean"]["step"], 4);
  EXPECT_DOUBLE_EQ(j["reward_mean"]["last"]["value"].get<double>(), 1.1);
  EXPECT_EQ(j["last_holdout"]["step"], 12);
  EXPECT_EQ(j["train_tokens"], 12 * 52000);
}

TEST(TrainLogSummary, EmptyLogHasNullsAndZeros) {
  const Json j = to_json(summarize_train_log({}));
  EXPECT_EQ(j["train_steps"], 0);
  for (const char* key : {"last_step", "last_lr", "last_train", "last_holdout"})
    EXPECT_TRUE(j[key].is_null()) << key;
  EXPECT_TRUE(j["reward_mean"]["first"].is_null());
  EXPECT_TRUE(j["best_holdout"]["correct_rate"].is_null());
}

}  // namespace
}  // namespace kevin::report
