// episode_test.cpp — Episode over the fake evaluator: verdicts, scores, parse errors,
// harness failures and restored turns.
#include "env/episode.h"

#include <gtest/gtest.h>

#include "core/file.h"
#include "env/fake_evaluator.h"
#include "sys/tempdir.h"

namespace kevin::env {
namespace {

class EpisodeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = sys::TempDir::create("episode-");
    ASSERT_TRUE(dir.is_ok());
    dir_.emplace(std::move(dir).value());
    task_ = {"suite/add", "suite", "elementwise", dir_->path() / "add.py"};
    ASSERT_TRUE(write_file_atomic(task_.path, "class Model: pass\n").is_ok());
  }
  Action kernel(const std::string& directive) {
    Action a;
    a.parsed = true;
    a.code = "// fake: " + directive + "\n";
    a.summary = "summary";
    return a;
  }

  std::optional<sys::TempDir> dir_;
  tasks::TaskInfo task_;
  FakeEvaluator fake_;
};

TEST_F(EpisodeTest, ScoresFollowTheVerdicts) {
  Episode e(task_, "problem", &fake_);
  auto wrong = e.step(kernel("wrong_answer"));
  ASSERT_TRUE(wrong.is_ok());
  EXPECT_EQ(wrong->verdict, VerdictKind::kWrongAnswer);
  EXPECT_EQ(wrong->score, 0);
  auto fast = e.step(kernel("correct speedup=2.5"));
  ASSERT_TRUE(fast.is_ok());
  EXPECT_TRUE(fast->correct());
  EXPECT_DOUBLE_EQ(fast->score, 0.3 + 2.5);
  auto slow = e.step(kernel("correct speedup=0.5"));
  ASSERT_TRUE(slow.is_ok());
  EXPECT_DOUBLE_EQ(slow->score, 0.8);
  EXPECT_DOUBLE_EQ(e.best_speedup(), 2.5);
  EXPECT_EQ(e.turns().size(), 3u);
  EXPECT_EQ(e.turns()[1].summary, "summary");
}

TEST_F(EpisodeTest, ParseErrorsAreTurnsWithHelpfulFeedbackAndNoEvaluation) {
  Episode e(task_, "problem", &fake_);
  auto t = e.step("<think>It is hard.</think>\nI could not write it.", ReplyRules{});
  ASSERT_TRUE(t.is_ok());
  EXPECT_EQ(t->reasoning, "It is hard.");
  EXPECT_EQ(t->verdict, VerdictKind::kParseError);
  EXPECT_NE(t->feedback.find("no fenced code block"), std::string::npos);
  EXPECT_NE(t->feedback.find("```cuda"), std::string::npos);
  EXPECT_FALSE(t->eval.has_value());
  EXPECT_EQ(fake_.calls(), 0);
}

TEST_F(EpisodeTest, AReplyIsReadJudgedAndShownInTheNextPromptWithoutItsReasoning) {
  Episode e(task_, "Write the add.", &fake_);
  const Prompt first = e.next_prompt(PromptConfig{});
  EXPECT_EQ(first.turns_included, 0u);
  auto t = e.step(
      "<think>secret plan</think>\n```cuda\n// fake: wrong_answer\n```\nI tried a grid loop.",
      ReplyRules{});
  ASSERT_TRUE(t.is_ok());
  EXPECT_EQ(t->verdict, VerdictKind::kWrongAnswer);
  EXPECT_EQ(t->code, "// fake: wrong_answer\n");
  EXPECT_EQ(t->summary, "I tried a grid loop.");
  const Prompt second = e.next_prompt(PromptConfig{});
  EXPECT_EQ(second.turns_included, 1u);
  std::string text;
  for (const ChatMessage& m : second.messages) text += m.content;
  EXPECT_NE(text.find("Write the add."), std::string::npos);
  EXPECT_NE(text.find("// fake: wrong_answer"), std::string::npos);
  EXPECT_NE(text.find("I tried a grid loop."), std::string::npos);
  EXPECT_NE(text.find(t->feedback), std::string::npos);
  EXPECT_EQ(text.find("secret plan"), std::string::npos) << "reasoning is never shown again";
}

TEST_F(EpisodeTest, HarnessFailuresAppendNothing) {
  Episode e(task_, "problem", &fake_);
  auto t = e.step(kernel("harness_error"));
  ASSERT_FALSE(t.is_ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInternal);
  EXPECT_NE(t.status().message().find("fake harness failure for suite/add"), std::string::npos)
      << t.status().to_string();
  EXPECT_TRUE(e.turns().empty());
}

TEST_F(EpisodeTest, RestoredTurnsCountWithoutEvaluation) {
  Episode e(task_, "problem", &fake_);
  TurnOutcome done;
  done.verdict = VerdictKind::kCorrect;
  done.speedup = 1.7;
  e.restore(done);
  EXPECT_DOUBLE_EQ(e.best_speedup(), 1.7);
  EXPECT_EQ(fake_.calls(), 0);
}

TEST(FakeEvaluator, ProblemNamesTheTaskAndMissingFilesAndUnknownVerdictsAreErrors) {
  FakeEvaluator fake;
  auto dir = sys::TempDir::create("fake-evaluator-");
  ASSERT_TRUE(dir.is_ok());
  const tasks::TaskInfo task{"s/add", "s", "f", dir->path() / "add.py"};
  ASSERT_TRUE(write_file_atomic(task.path, "class Model: pass\n").is_ok());
  auto problem = fake.problem(task);
  ASSERT_TRUE(problem.is_ok()) << problem.status().to_string();
  EXPECT_EQ(*problem, "Problem s/add:\nclass Model: pass\n");
  tasks::TaskInfo missing{"s/x", "s", "f", "/nonexistent/x.py"};
  auto none = fake.problem(missing);
  ASSERT_FALSE(none.is_ok());
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_NE(none.status().message().find("no such file: /nonexistent/x.py"), std::string::npos)
      << none.status().to_string();
  auto r = fake.evaluate(missing, "// fake: no_such_verdict\n");
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("unknown verdict 'no_such_verdict'"), std::string::npos)
      << r.status().to_string();
}

}  // namespace
}  // namespace kevin::env
