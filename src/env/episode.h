// episode.h — one episode of the kernel-writing environment (docs/architecture.md): a task, and
// turns in which the model's reply is read into an action (a candidate kernel and its summary,
// or nothing usable) and judged into a verdict, feedback and score, and the next prompt is
// built from the turns so far. The rollout module and the environment server drive episodes.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/verdict.h"
#include "env/evaluator.h"
#include "env/prompt.h"
#include "env/reply.h"
#include "reward/reward.h"

namespace kevin::env {

// One judged turn.
struct TurnOutcome {
  std::string code, summary;
  std::string reasoning;  // the reply's inline reasoning: stored, never shown to the model again
  VerdictKind verdict = VerdictKind::kParseError;
  std::string reason;                      // short cause or rejecting rule
  std::string feedback;                    // the text the model sees next turn
  std::optional<engine::EvalResult> eval;  // absent for parse errors and restored turns
  std::optional<double> speedup;           // when correct
  double score = 0;
  bool correct() const { return verdict == VerdictKind::kCorrect; }
};

// The feedback a model receives for a response without a usable kernel.
std::string parse_error_feedback(const std::string& why);

class Episode {
 public:
  // `evaluator` is borrowed and must outlive the episode.
  Episode(tasks::TaskInfo task, std::string problem, Evaluator* evaluator,
          reward::ScoreConfig score = {})
      : task_(std::move(task)),
        problem_(std::move(problem)),
        evaluator_(evaluator),
        score_(score) {}

  // Judges `action` and appends the turn. An error Status (the harness failed) appends
  // nothing, so the same action can be retried.
  Result<TurnOutcome> step(const Action& action);
  // Reads the model's `reply` under `rules` (read_reply) and judges the action it holds.
  Result<TurnOutcome> step(std::string_view reply, const ReplyRules& rules) {
    return step(read_reply(reply, rules));
  }
  // The prompt for the next turn: the problem, then each turn so far (its code, summary and
  // feedback, never its reasoning), within config's budget.
  Prompt next_prompt(const PromptConfig& config) const;
  // Appends a turn judged earlier (resuming a stored run) without judging it again.
  void restore(TurnOutcome turn) { turns_.push_back(std::move(turn)); }

  const tasks::TaskInfo& task() const { return task_; }
  const std::string& problem() const { return problem_; }
  const std::vector<TurnOutcome>& turns() const { return turns_; }
  // Fastest correct speedup so far (0 when nothing is correct yet).
  double best_speedup() const;

 private:
  tasks::TaskInfo task_;
  std::string problem_;
  Evaluator* evaluator_;
  reward::ScoreConfig score_;
  std::vector<TurnOutcome> turns_;
};

}  // namespace kevin::env
