// episode.cpp — judging one action into a turn, and the prompt for the next.
#include "env/episode.h"

#include <algorithm>

namespace kevin::env {

std::string parse_error_feedback(const std::string& why) {
  return "Your response could not be evaluated: " + why +
         " Reply with the complete kernel in one fenced ```cuda code block, followed by a short "
         "summary.";
}

Result<TurnOutcome> Episode::step(const Action& action) {
  TurnOutcome turn;
  turn.code = action.code;
  turn.summary = action.summary;
  turn.reasoning = action.reasoning;
  if (!action.parsed) {
    turn.verdict = VerdictKind::kParseError;
    turn.reason = "no kernel in the response";
    turn.feedback = parse_error_feedback(action.parse_error);
  } else {
    KEVIN_ASSIGN_OR_RETURN(engine::EvalResult r, evaluator_->evaluate(task_, action.code));
    turn.verdict = r.verdict;
    turn.reason = r.reason;
    turn.feedback = r.feedback;
    if (r.correct()) turn.speedup = r.speedup;
    turn.eval = std::move(r);
  }
  const auto interval = turn.eval ? turn.eval->speedup_ci : std::nullopt;
  turn.score = reward::kernel_score(turn.correct(),
                                    reward::scored_speedup(turn.speedup, interval, score_), score_);
  turns_.push_back(turn);
  return turn;
}

Prompt Episode::next_prompt(const PromptConfig& config) const {
  std::vector<TurnRecord> history;
  for (const auto& t : turns_) history.push_back({t.code, t.summary, t.feedback});
  return build_prompt(problem_, history, config);
}

double Episode::best_speedup() const {
  double best = 0;
  for (const auto& t : turns_) {
    if (t.correct()) best = std::max(best, t.speedup.value_or(0));
  }
  return best;
}

}  // namespace kevin::env
