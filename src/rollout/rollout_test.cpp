// rollout_test.cpp — the multi-turn loop over a scripted policy and the fake evaluator:
// every turn stored with its fields, histories carried without reasoning, identical kernels
// judged once, resume after a failure, beam search lineage, returns/advantages and best
// kernels in the run outputs.
#include "rollout/rollout.h"

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <map>
#include <set>

#include "core/file.h"
#include "env/fake_evaluator.h"
#include "rollout/progress.h"
#include "rollout/records.h"
#include "sys/tempdir.h"

namespace kevin::rollout {
namespace {

// A policy whose reply is computed from the prompt: fn(last message, number of earlier turns).
class FunctionPolicy final : public policy::Policy {
 public:
  using Fn = std::function<std::string(const std::string& prompt, int turn)>;
  explicit FunctionPolicy(Fn fn, int fail_after = -1)
      : fn_(std::move(fn)), fail_after_(fail_after) {}
  Result<policy::Generation> generate(const std::vector<ChatMessage>& messages,
                                      const policy::GenerationParams&) override {
    const int n = calls_++;
    if (fail_after_ >= 0 && n >= fail_after_) return unavailable("server went away");
    const std::string& last = messages.back().content;
    int turn = 0;
    for (size_t at = last.find("### Attempt "); at != std::string::npos;
         at = last.find("### Attempt ", at + 1))
      ++turn;
    policy::Generation g;
    g.content = fn_(last, turn);
    g.reasoning = "secret chain of thought " + std::to_string(n);
    g.finish_reason = "stop";
    g.prompt_tokens = 100;
    g.completion_tokens = 50;
    g.prompt_token_ids = {1, 2, 3};
    g.completion_token_ids = {4, 5};
    g.completion_logprobs = {-0.5f, -0.25f};
    return g;
  }
  std::string name() const override { return "function"; }
  int calls() const { return calls_.load(); }

 private:
  Fn fn_;
  int fail_after_;
  std::atomic<int> calls_{0};
};

std::string kernel(const std::string& directive, const std::string& body = "") {
  return "Here it is.\n```cuda\n// fake: " + directive + "\n" + body +
         "\n```\nSummary: " + directive + ".";
}

class RolloutTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = sys::TempDir::create("rollout-");
    ASSERT_TRUE(dir.is_ok());
    dir_.emplace(std::move(dir).value());
    for (const char* name : {"a", "b"}) {
      tasks::TaskInfo t{std::string("suite/") + name, "suite", "f",
                        dir_->path() / (std::string(name) + ".py")};
      ASSERT_TRUE(write_file_atomic(t.path, std::string("task ") + name + "\n").is_ok());
      tasks_.push_back(t);
    }
    config_.allocations = {{3, 3}};
    config_.parallel = 4;
    auto store = RunStore::open(dir_->path() / "run.db");
    ASSERT_TRUE(store.is_ok());
    store_.emplace(std::move(store).value());
  }

  // Turn 0: parse error (task a) or compile error (task b); turn 1: wrong answer; turn 2:
  // correct, faster on trajectory-independent content so identical kernels recur.
  static std::string script(const std::string& prompt, int turn) {
    const bool a = prompt.find("task a") != std::string::npos;
    if (turn == 0) return a ? "I could not finish the code." : kernel("compile_error");
    if (turn == 1) return kernel("wrong_answer", a ? "a1" : "b1");
    return kernel(a ? "correct speedup=2.0" : "correct speedup=0.5");
  }

  std::optional<sys::TempDir> dir_;
  std::vector<tasks::TaskInfo> tasks_;
  RolloutConfig config_;
  std::optional<RunStore> store_;
  env::FakeEvaluator fake_;
  Progress progress_;
};

TEST_F(RolloutTest, EveryTurnIsStoredWithItsFieldsAndHistory) {
  FunctionPolicy policy(script);
  Rollout rollout(config_, &policy, &fake_, &*store_, &progress_);
  ASSERT_TRUE(rollout.run(tasks_).is_ok());
  auto turns = store_->turns();
  ASSERT_TRUE(turns.is_ok());
  ASSERT_EQ(turns->size(), 18u);
  EXPECT_EQ(progress_.turns_done.load(), 18u);
  EXPECT_EQ(progress_.turns_total.load(), 18u);
  EXPECT_EQ(progress_.correct.load(), 6u);
  EXPECT_DOUBLE_EQ(progress_.best_speedup.load(), 2.0);
  EXPECT_EQ(progress_.tasks_done.load(), 2u);
  // Identical kernels (3 trajectories write the same ones) are judged once each: 5 distinct.
  EXPECT_EQ(fake_.calls(), 5);
  int cached = 0;
  for (const auto& [key, r] : *turns) {
    EXPECT_EQ(r["allocation"], "3x3");
    EXPECT_EQ(r["task"], key.task);
    EXPECT_TRUE(r["parent"].is_null());
    EXPECT_GE(r["reasoning_chars"].get<size_t>(), std::string("secret chain of thought 0").size());
    const std::string prompt = r["prompt"].back()["content"];
    EXPECT_EQ(prompt.find("secret chain of thought"), std::string::npos)
        << "reasoning must never be carried";
    cached += r["cached_eval"].get<bool>() ? 1 : 0;
    if (key.task == "suite/a" && key.turn == 0) {
      EXPECT_EQ(r["verdict"], "parse_error");
      EXPECT_EQ(r["code"], "");
    }
    if (key.turn == 1) {
      EXPECT_EQ(r["verdict"], "wrong_answer");
      EXPECT_NE(prompt.find(key.task == "suite/a" ? "could not be evaluated"
                                                  : "Fake evaluation verdict: compile_error"),
                std::string::npos);
    }
    if (key.turn == 2) {
      EXPECT_TRUE(r["correct"].get<bool>());
      EXPECT_DOUBLE_EQ(r["score"].get<double>(), key.task == "suite/a" ? 2.3 : 0.8);
      EXPECT_NE(prompt.find("// fake: wrong_answer"), std::string::npos)
          << "earlier kernels are carried";
    }
    EXPECT_EQ(r["prompt_tokens"], 100);
    EXPECT_EQ(r["completion_tokens"], 50);
    EXPECT_EQ(r["prompt_token_ids"], Json({1, 2, 3}));
    EXPECT_EQ(r["completion_token_ids"], Json({4, 5}));
    EXPECT_EQ(r["logprobs"], Json({-0.5, -0.25}));
  }
  EXPECT_EQ(cached, 15 - 5);  // 15 parsed kernels, 5 distinct
}

TEST_F(RolloutTest, ResumeRedoesNoStoredTurn) {
  FunctionPolicy failing(script, 7);
  config_.parallel = 1;
  {
    Rollout rollout(config_, &failing, &fake_, &*store_, &progress_);
    Status st = rollout.run(tasks_);
    EXPECT_FALSE(st.is_ok());
    EXPECT_NE(st.message().find("server went away"), std::string::npos);
  }
  const size_t stored = *store_->turn_count();
  EXPECT_EQ(stored, 7u);
  FunctionPolicy good(script);
  Progress again;
  Rollout rollout(config_, &good, &fake_, &*store_, &again);
  ASSERT_TRUE(rollout.run(tasks_).is_ok());
  EXPECT_EQ(*store_->turn_count(), 18u);
  EXPECT_EQ(static_cast<size_t>(good.calls()), 18u - stored);
  EXPECT_EQ(again.turns_restored.load(), stored);
}

TEST_F(RolloutTest, AnInterruptStopsNewTurnsAbandonsGenerationsAndKeepsFinishedTurns) {
  config_.parallel = 1;
  std::atomic<bool> interrupt{false};
  std::atomic<int> calls{0};
  // The fifth generation is in progress when Ctrl-C arrives; like a server client it then
  // gives up on its reply.
  class Interrupted final : public policy::Policy {
   public:
    Interrupted(std::atomic<bool>* interrupt, std::atomic<int>* calls)
        : interrupt_(interrupt), calls_(calls) {}
    Result<policy::Generation> generate(const std::vector<ChatMessage>& messages,
                                        const policy::GenerationParams& params) override {
      if (++*calls_ == 5) interrupt_->store(true);
      if (params.cancel != nullptr && params.cancel->load())
        return cancelled("cancelled mid-generation");
      policy::Generation g;
      g.content = script(messages.back().content, 0);
      g.finish_reason = "stop";
      return g;
    }
    std::string name() const override { return "interrupted"; }

   private:
    std::atomic<bool>* interrupt_;
    std::atomic<int>* calls_;
  } policy(&interrupt, &calls);
  Rollout rollout(config_, &policy, &fake_, &*store_, &progress_);
  const Status st = rollout.run(tasks_, &interrupt);
  EXPECT_EQ(st.code(), StatusCode::kCancelled) << st.to_string();
  EXPECT_EQ(calls.load(), 5) << "no generation may start after the interrupt";
  EXPECT_EQ(*store_->turn_count(), 4u)
      << "finished turns are kept, the abandoned one is not stored";
  EXPECT_EQ(progress_.turns_total.load(), 18u);
}

TEST_F(RolloutTest, AGenerationThatEndsAfterAnInterruptIsNotJudged) {
  // A policy that does not notice the interrupt (a local model finishing its batch) still
  // returns its answer; judging it would start reference preparation for its task, which can
  // take minutes after the user asked to stop.
  config_.parallel = 1;
  std::atomic<bool> interrupt{false};
  std::atomic<int> calls{0};
  FunctionPolicy policy([&](const std::string& prompt, int turn) {
    if (++calls == 3) interrupt.store(true);
    return script(prompt, turn);
  });
  Rollout rollout(config_, &policy, &fake_, &*store_, &progress_);
  const Status st = rollout.run(tasks_, &interrupt);
  EXPECT_EQ(st.code(), StatusCode::kCancelled) << st.to_string();
  EXPECT_EQ(*store_->turn_count(), 2u) << "the third answer arrived after the interrupt";
}

TEST_F(RolloutTest, AnEvaluationCancelledByTheInterruptIsNoVerdict) {
  // Ctrl-C while the engine prepares task b's reference data: the preparation is abandoned and
  // the evaluation fails with kCancelled, which says nothing of the candidate.
  config_.parallel = 1;  // task a's trajectories run first
  std::atomic<bool> interrupt{false};
  class Cancelling final : public env::Evaluator {
   public:
    Cancelling(env::Evaluator* inner, std::atomic<bool>* interrupt)
        : inner_(inner), interrupt_(interrupt) {}
    Result<std::string> problem(const tasks::TaskInfo& task) override {
      return inner_->problem(task);
    }
    Result<engine::EvalResult> evaluate(const tasks::TaskInfo& task,
                                        const std::string& source) override {
      if (task.id != "suite/b") return inner_->evaluate(task, source);
      interrupt_->store(true);
      return cancelled("reference data for b.py: not prepared, the run was interrupted");
    }
    std::string backend() const override { return inner_->backend(); }
    std::string device_name() const override { return inner_->device_name(); }

   private:
    env::Evaluator* inner_;
    std::atomic<bool>* interrupt_;
  } evaluator(&fake_, &interrupt);
  FunctionPolicy policy(script);
  Rollout rollout(config_, &policy, &evaluator, &*store_, &progress_);
  const Status st = rollout.run(tasks_, &interrupt);
  EXPECT_EQ(st.code(), StatusCode::kCancelled) << st.to_string();
  EXPECT_EQ(st.message(), "interrupted") << "not an evaluation failure";
  auto turns = store_->turns();
  ASSERT_TRUE(turns.is_ok());
  EXPECT_EQ(turns->size(), 9u) << "task a's turns are kept";
  for (const auto& [key, record] : *turns)
    EXPECT_EQ(key.task, "suite/a") << "task b has no verdict";
}

TEST_F(RolloutTest, BeamKeepsTheBestTrajectoriesAndContinuesCopies) {
  config_.beam = true;
  config_.beam_config = {2, 2};
  config_.allocations = {{4, 1}};
  std::atomic<int> first_round{0};
  FunctionPolicy policy([&](const std::string& prompt, int turn) {
    if (turn == 0) {
      const int i = first_round++;
      return kernel("correct speedup=" + std::to_string(1 + i % 4),
                    "variant " + std::to_string(i) + " " + prompt.substr(0, 6));
    }
    return kernel("correct speedup=9",
                  prompt.find("speedup=4") != std::string::npos ? "child of 4" : "child of 3");
  });
  Rollout rollout(config_, &policy, &fake_, &*store_, &progress_);
  ASSERT_TRUE(rollout.run({tasks_[0]}).is_ok());
  auto turns = store_->turns();
  ASSERT_TRUE(turns.is_ok());
  ASSERT_EQ(turns->size(), 8u);
  std::map<int, double> first_speedup;
  for (const auto& [key, r] : *turns) {
    EXPECT_EQ(key.allocation, "beam");
    if (key.turn == 0) first_speedup[key.trajectory] = r["speedup"];
  }
  int children_of_best = 0;
  for (const auto& [key, r] : *turns) {
    if (key.turn != 1) continue;
    EXPECT_GE(key.trajectory, 4);
    ASSERT_TRUE(r["parent"].is_number_integer());
    const double parent_speedup = first_speedup.at(r["parent"].get<int>());
    EXPECT_GE(parent_speedup, 3.0) << "only the two fastest trajectories are continued";
    children_of_best += parent_speedup == 4.0 ? 1 : 0;
    const std::string prompt = r["prompt"].back()["content"];
    EXPECT_NE(prompt.find("speedup=" + std::to_string(static_cast<int>(parent_speedup))),
              std::string::npos);
  }
  EXPECT_EQ(children_of_best, 2);
}

TEST_F(RolloutTest, OutputsCarryReturnsAdvantagesAndTheBestKernel) {
  FunctionPolicy policy(script);
  Rollout rollout(config_, &policy, &fake_, &*store_, &progress_);
  ASSERT_TRUE(rollout.run(tasks_).is_ok());
  auto scored = scored_turns(*store_, config_);
  ASSERT_TRUE(scored.is_ok()) << scored.status().to_string();
  ASSERT_TRUE(write_run_outputs(*scored, dir_->path(), "cu").is_ok());
  EXPECT_EQ(scored->size(), 18u);
  auto text = read_file(dir_->path() / "trajectories.jsonl");
  ASSERT_TRUE(text.is_ok());
  auto lines = parse_json_lines(*text);
  ASSERT_TRUE(lines.is_ok());
  ASSERT_EQ(lines->size(), 18u);
  for (const auto& r : *lines) {
    // Scores per turn are [0, 0, 2.3] (task a) or [0, 0, 0.8] (task b); γ = 0.4.
    const double last = r["task"] == "suite/a" ? 2.3 : 0.8;
    const int turn = r["turn"];
    const double expected = last * (turn == 0 ? 0.16 : turn == 1 ? 0.4 : 1.0);
    EXPECT_NEAR(r["return"].get<double>(), expected, 1e-12);
    ASSERT_TRUE(r.contains("advantage"));
  }
  // Within a task every trajectory is identical, so advantages follow the returns' order.
  EXPECT_LT((*lines)[0]["advantage"].get<double>(), (*lines)[2]["advantage"].get<double>());
  auto best = read_file(dir_->path() / "best" / "suite" / "a.cu");
  ASSERT_TRUE(best.is_ok());
  EXPECT_NE(best->find("speedup=2.0"), std::string::npos);
  EXPECT_TRUE(std::filesystem::exists(dir_->path() / "best" / "suite" / "b.cu"));
}

TEST_F(RolloutTest, TaskOutcomesNameTheBestCorrectSpeedupPerTask) {
  FunctionPolicy policy(script);
  Rollout rollout(config_, &policy, &fake_, &*store_, &progress_);
  ASSERT_TRUE(rollout.run({tasks_[0]}).is_ok());
  auto turns = scored_turns(*store_, config_);
  ASSERT_TRUE(turns.is_ok());
  const auto outcomes = task_outcomes(*turns, {"suite/a", "suite/b"});
  ASSERT_EQ(outcomes.size(), 2u);
  EXPECT_EQ(outcomes[0].task, "suite/a");
  EXPECT_EQ(outcomes[0].turns, 9u);
  EXPECT_EQ(outcomes[0].best_speedup, 2.0);
  EXPECT_EQ(outcomes[1].task, "suite/b");
  EXPECT_EQ(outcomes[1].turns, 0u) << "a task without stored turns is still named";
  EXPECT_FALSE(outcomes[1].best_speedup.has_value());
}

TEST_F(RolloutTest, BudgetAllocationsAreSeparateGroups) {
  config_.allocations = {{2, 2}, {4, 1}};
  FunctionPolicy policy(script);
  Rollout rollout(config_, &policy, &fake_, &*store_, &progress_);
  ASSERT_TRUE(rollout.run({tasks_[1]}).is_ok());
  auto turns = store_->turns();
  ASSERT_TRUE(turns.is_ok());
  std::map<std::string, int> per_allocation;
  std::set<int> single_turn;
  for (const auto& [key, r] : *turns) {
    ++per_allocation[key.allocation];
    EXPECT_EQ(r["allocation"], key.allocation);
    if (key.allocation == "4x1") single_turn.insert(key.turn);
  }
  EXPECT_EQ(per_allocation["2x2"], 4);
  EXPECT_EQ(per_allocation["4x1"], 4);
  EXPECT_EQ(single_turn, std::set<int>{0});
  EXPECT_EQ(progress_.tasks_total.load(), 2u);
  EXPECT_EQ(progress_.turns_total.load(), 8u);
}

TEST_F(RolloutTest, HarnessFailuresStopTheRunAndAreReported) {
  FunctionPolicy policy([](const std::string&, int) { return kernel("harness_error"); });
  Rollout rollout(config_, &policy, &fake_, &*store_, &progress_);
  Status st = rollout.run(tasks_);
  EXPECT_EQ(st.code(), StatusCode::kInternal) << "the evaluator's own code is kept";
  EXPECT_NE(st.message().find("evaluation failed: fake harness failure"), std::string::npos)
      << st.to_string();
  EXPECT_EQ(*store_->turn_count(), 0u);
}

TEST(TurnRecord, CarriesTheRooflineFractionsOfAJudgedTurn) {
  env::TurnOutcome t;
  t.verdict = VerdictKind::kCorrect;
  t.eval.emplace();
  t.eval->verdict = VerdictKind::kCorrect;
  t.eval->speed_of_light = engine::speed_of_light(
      engine::TaskWork{0, {}, 4e6, 4e6, 1},
      engine::DevicePeaks{"gpu", "", 4000, {{"float32", 1}}, 0}, 0.004, 0.008);
  const Json j = turn_record(std::nullopt, TurnKey{"1x1", "lvl/a", 0, 0}, env::Prompt{},
                             policy::Generation{}, t);
  EXPECT_DOUBLE_EQ(j["roofline_fraction"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(j["baseline_roofline_fraction"].get<double>(), 0.125);
  t.eval->speed_of_light.reset();
  const Json without = turn_record(std::nullopt, TurnKey{"1x1", "lvl/a", 0, 0}, env::Prompt{},
                                   policy::Generation{}, t);
  EXPECT_FALSE(without.contains("roofline_fraction"));
}

TEST(Allocation, ParsesAndSplitsBudgets) {
  auto a = parse_allocation("16x8");
  ASSERT_TRUE(a.is_ok());
  EXPECT_EQ(a->trajectories, 16);
  EXPECT_EQ(a->turns, 8);
  const auto expect_refused = [](const std::string& bad, const std::string& why) {
    auto r = parse_allocation(bad);
    ASSERT_FALSE(r.is_ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(r.status().message().find("allocation '" + bad + "': " + why), std::string::npos)
        << r.status().to_string();
  };
  for (const char* bad : {"16", "x8", "16x", "16x8x", "ax8"})
    expect_refused(bad, "expected TRAJECTORIESxTURNS");
  for (const char* bad : {"0x8", "16x-1"}) expect_refused(bad, "both numbers must be >= 1");
  const auto b = budget_allocations(128);
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0].label(), "16x8");
  EXPECT_EQ(b[1].label(), "32x4");
  EXPECT_EQ(b[2].label(), "128x1");
  EXPECT_EQ(budget_allocations(6).size(), 1u);  // only 6x1
}

TEST(RolloutConfig, RoundTripsThroughJson) {
  RolloutConfig c;
  c.allocations = {{4, 2}, {8, 1}};
  c.beam = true;
  c.score.speedup_cap = 5;
  c.advantage_mode = reward::AdvantageMode::kLeaveOneOut;
  auto back = rollout_config_from_json(to_json(c));
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_EQ(to_json(*back), to_json(c));
  auto none = rollout_config_from_json(Json{{"allocations", Json::array()}});
  EXPECT_EQ(none.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(none.status().message().find("config: no allocations"), std::string::npos)
      << none.status().to_string();
}

TEST(Progress, LineNamesEveryCounterWithRateAndEta) {
  Progress p;
  p.turns_total = 144;
  p.turns_done = 37;
  p.turns_restored = 12;
  p.tasks_total = 2;
  p.tasks_done = 1;
  p.generating = 3;
  p.evaluating = 2;
  p.correct = 12;
  p.best_speedup = 2.314;
  // 25 turns of this process in 5 minutes: 5 turns/min, 107 left → 21m24s.
  EXPECT_EQ(
      progress_line(p, std::chrono::seconds(300), 1),
      "turns 37/144 (12 resumed) · tasks 1/2 · 5.0 turns/min · 5m00s, ETA 21m24s · generating 3 · "
      "evaluating 2 (1 running, 1 queued) · correct 12 · best 2.31x");
}

TEST(Progress, NoEtaBeforeTheFirstTurnOfThisProcess) {
  Progress p;
  p.turns_total = 8;
  p.turns_done = 4;
  p.turns_restored = 4;
  const std::string line = progress_line(p, std::chrono::seconds(4000));
  EXPECT_NE(line.find("0.0 turns/min · 1h06m, ETA - ·"), std::string::npos) << line;
  EXPECT_EQ(line.find("running"), std::string::npos) << "no split without a running count";
}

TEST(Progress, LineNamesTheLongWaitsWithTheLastTimeOnlyWhereMeasured) {
  Progress p;
  p.turns_total = 4;
  p.tasks_total = 1;
  p.evaluating = 2;
  const std::vector<WaitInfo> waits = {
      {"preparing reference data for level1/028_gelu", std::chrono::seconds(12),
       std::chrono::seconds(38)},
      {"building the precompiled PyTorch header for KernelBench answers", std::chrono::seconds(75),
       std::nullopt}};
  EXPECT_EQ(progress_line(p, std::chrono::seconds(20), 0, waits),
            "turns 0/4 · tasks 0/1 · 0.0 turns/min · 20s, ETA - · generating 0 · evaluating 2 "
            "(0 running, 2 queued) · preparing reference data for level1/028_gelu (12s so far, "
            "last time 38s) · building the precompiled PyTorch header for KernelBench answers "
            "(1m15s so far) · correct 0 · best 0.00x");
}

TEST(Progress, LineNamesTheWaitsInProgressWithTheirRecordedTimes) {
  auto dir = sys::TempDir::create("progress-wait-");
  ASSERT_TRUE(dir.is_ok());
  const auto file = dir->path() / "prepare_seconds";
  ASSERT_TRUE(record_duration(file, std::chrono::seconds(38)).is_ok());
  Progress p;
  {
    const LongWait wait("preparing reference data for level1/028_gelu", file);
    const std::string line = progress_line(p, std::chrono::seconds(1), 0, current_waits());
    EXPECT_NE(line.find(" · preparing reference data for level1/028_gelu (0s so far, last time "
                        "38s) · "),
              std::string::npos)
        << line;
  }
  EXPECT_EQ(progress_line(p, std::chrono::seconds(1), 0, current_waits()).find("preparing"),
            std::string::npos)
      << "a wait that ended is not named";
}

TEST(Progress, DurationsReadAsHoursMinutesSeconds) {
  EXPECT_EQ(format_duration(std::chrono::seconds(42)), "42s");
  EXPECT_EQ(format_duration(std::chrono::seconds(362)), "6m02s");
  EXPECT_EQ(format_duration(std::chrono::seconds(3720)), "1h02m");
}

}  // namespace
}  // namespace kevin::rollout
