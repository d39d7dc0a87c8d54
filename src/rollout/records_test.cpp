// records_test.cpp — the typed turn record (every field round-trips with its presence rule, and
// every field is the one docs/run.md lists), and a stored turn read back once (read_turn): every
// field the trainer and the run's outputs use, the defaults of a missing or ill-typed field, and
// a speedup that only a correct turn keeps.
#include "rollout/records.h"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

namespace kevin::rollout {
namespace {

const TurnKey kKey{"4x4", "suite/a", 2, 1};

// A record with every field set to something other than its default.
TurnRecord full_record() {
  TurnRecord r;
  r.task = "suite/a";
  r.allocation = "4x4";
  r.trajectory = 2;
  r.turn = 1;
  r.parent = 0;
  r.prompt = {{"system", "be fast"}, {"user", "write it"}};
  r.prompt_estimated_tokens = 40;
  r.turns_dropped = 1;
  r.response = "```cuda\nk\n```";
  r.reasoning_chars = 12;
  r.finish_reason = "stop";
  r.code = "k";
  r.summary = "tiled";
  r.verdict = "correct";
  r.reason = "ok";
  r.feedback = "1.5x";
  r.correct = true;
  r.speedup = 1.5;
  r.score = 0.7;
  r.prompt_tokens = 40;
  r.completion_tokens = 9;
  r.candidate_ms = 2.0;
  r.baseline_ms = 3.0;
  r.compile_ms = 800;
  r.eval_ms = 1200;
  r.cache_hit.value = true;
  r.roofline_fraction.value = 0.25;
  r.baseline_roofline_fraction.value = 0.125;
  r.prompt_token_ids.value = std::vector<int32_t>{1, 2};
  r.completion_token_ids.value = std::vector<int32_t>{3};
  r.logprobs.value = std::vector<float>{-0.5f};
  return r;
}

TEST(TurnRecord, EveryFieldRoundTrips) {
  const Json written = to_json(full_record());
  EXPECT_EQ(to_json(parse_turn_record(written)), written);
  const TurnRecord back = parse_turn_record(written);
  EXPECT_EQ(back.prompt.size(), 2u);
  EXPECT_EQ(back.prompt[1].content, "write it");
  EXPECT_EQ(back.parent, 0);
  EXPECT_EQ(back.roofline_fraction.value, std::optional<double>(0.25));
  EXPECT_EQ(back.logprobs.value, std::vector<float>{-0.5f});
}

TEST(TurnRecord, AnEmptyOptionalIsNullAndAnEmptyOmittedIsAbsent) {
  TurnRecord r;
  Json j = to_json(r);
  EXPECT_TRUE(j.at("parent").is_null());
  EXPECT_TRUE(j.at("speedup").is_null());
  EXPECT_TRUE(j.at("candidate_ms").is_null());
  for (const char* absent : {"cache_hit", "roofline_fraction", "prompt_token_ids", "logprobs"}) {
    EXPECT_FALSE(j.contains(absent)) << absent;
  }
  // A speed-of-light bound without the candidate's side: the key is there, null.
  r.roofline_fraction.value.emplace();
  j = to_json(r);
  ASSERT_TRUE(j.contains("roofline_fraction"));
  EXPECT_TRUE(j["roofline_fraction"].is_null());
  EXPECT_EQ(to_json(parse_turn_record(j)), j);
}

TEST(TurnRecord, ItsFieldsAreTheOnesDocsRunMdLists) {
  // The fields the run adds after judging (rollout.cpp) and when scoring (scored_turns).
  const std::set<std::string> added_later = {"generation_ms", "cached_eval", "finished_at",
                                             "return", "advantage"};
  std::ifstream doc(KEVIN_RUN_DOC);
  ASSERT_TRUE(doc) << KEVIN_RUN_DOC;
  std::stringstream text;
  text << doc.rdbuf();
  const std::string all = text.str();
  const auto from = all.find("Fields of a `trajectories.jsonl` record:");
  ASSERT_NE(from, std::string::npos);
  const std::string paragraph = all.substr(from, all.find("\n\n", from) - from);
  std::set<std::string> documented;
  const std::regex name("`([a-z_]+)`");
  for (auto it = std::sregex_iterator(paragraph.begin(), paragraph.end(), name);
       it != std::sregex_iterator(); ++it) {
    documented.insert((*it)[1]);
  }
  std::set<std::string> written = added_later;
  const Json full = to_json(full_record());
  for (const auto& [key, value] : full.items()) written.insert(key);
  documented.erase("trajectories");  // the file's name in the paragraph's first line
  EXPECT_EQ(written, documented);
}

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
