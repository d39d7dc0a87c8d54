// records_test.cpp — a stored turn read back once, typed (read_turn): every field the trainer and
// the run's outputs use, the defaults of a missing or ill-typed field, and a speedup that only
// a correct turn keeps.
#include "rollout/records.h"

#include <gtest/gtest.h>

namespace kevin::rollout {
namespace {

const TurnKey kKey{"4x4", "suite/a", 2, 1};

TEST(ReadTurn, EveryFieldTheTrainerReadsIsTyped) {
  const Json record = {{"parent", 0},
                       {"code", "kernel"},
                       {"finish_reason", "length"},
                       {"correct", true},
                       {"speedup", 1.5},
                       {"score", 0.7},
                       {"completion_tokens", 12},
                       {"prompt_token_ids", {1, 2}},
                       {"completion_token_ids", {3}},
                       {"logprobs", {-0.5}}};
  const ScoredTurn t = read_turn(kKey, record);
  EXPECT_EQ(t.key.task, "suite/a");
  EXPECT_EQ(t.parent, 0);
  EXPECT_EQ(t.code, "kernel");
  EXPECT_EQ(t.finish_reason, "length");
  EXPECT_TRUE(t.correct);
  EXPECT_EQ(t.speedup, 1.5);
  EXPECT_DOUBLE_EQ(t.score, 0.7);
  EXPECT_EQ(t.completion_tokens, 12);
  ASSERT_TRUE(t.has_tokens);
  EXPECT_EQ(t.prompt_token_ids, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(t.completion_token_ids, std::vector<int32_t>{3});
  EXPECT_EQ(t.logprobs, std::vector<float>{-0.5f});
  EXPECT_EQ(t.record, record);
}

TEST(ReadTurn, MissingOrIllTypedFieldsTakeTheirDefaults) {
  const ScoredTurn t = read_turn(kKey, {{"parent", nullptr},
                                        {"code", 7},
                                        {"score", "high"},
                                        {"completion_tokens", 3.5},
                                        {"prompt_token_ids", {1}},
                                        {"completion_token_ids", "x"},
                                        {"logprobs", {0.0}}});
  EXPECT_FALSE(t.parent.has_value());
  EXPECT_EQ(t.code, "");
  EXPECT_EQ(t.score, 0.0);
  EXPECT_FALSE(t.correct);
  EXPECT_FALSE(t.has_tokens) << "an ill-typed token list leaves the turn without tokens";
  EXPECT_TRUE(t.prompt_token_ids.empty());
}

TEST(ReadTurn, OnlyACorrectTurnKeepsItsSpeedup) {
  EXPECT_FALSE(read_turn(kKey, {{"correct", false}, {"speedup", 3.0}}).speedup.has_value());
  EXPECT_FALSE(read_turn(kKey, {{"correct", true}, {"speedup", nullptr}}).speedup.has_value());
  EXPECT_EQ(read_turn(kKey, {{"correct", true}, {"speedup", 3.0}}).speedup, 3.0);
}

TEST(OutcomeFromRecord, AnIllTypedFieldIsItsDefaultNotAnException) {
  const env::TurnOutcome t =
      outcome_from_record({{"code", 1}, {"verdict", "correct"}, {"speedup", "fast"}});
  EXPECT_EQ(t.code, "");
  EXPECT_EQ(t.verdict, VerdictKind::kCorrect);
  EXPECT_FALSE(t.speedup.has_value());
}

}  // namespace
}  // namespace kevin::rollout
