// judge_feedback.h — the judge's verdicts as the model and the user read them: a Decision
// (verdict, reason, feedback text) for each way a candidate can end that is not a measurement
// of its own (rejection by a rule, compile error, run-time failure, lost runner). The protocol
// that decides when each applies is in judge.cpp. Internal to the engine (judge.cpp's helper).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "core/verdict.h"
#include "engine/build/compiler.h"
#include "engine/gates/gate.h"
#include "engine/judge/judge.h"
#include "engine/build/kernelbench.h"
#include "engine/run/runner_session.h"

namespace kevin::engine::judge_feedback {

// A candidate's fate, decided part-way: the verdict, its reason and the feedback body.
struct Decision {
  VerdictKind kind;
  std::string reason;
  std::string feedback;
};

// v with `digits` significant digits ("0.0123"), as the feedback prints measured values.
std::string fmt_g(double v, int digits);
// v with `decimals` digits after the point ("1.50").
std::string fmt_f(double v, int decimals);

// One sentence on a correct kernel's speed of light: the least the task must move and compute,
// the bound that sets on this device, and the fraction of it the kernel and (when timed) the
// PyTorch reference reach; how much more eager PyTorch moves where that is worth saying.
std::string speed_of_light_sentence(const SpeedOfLight& s);

// A rejection by a rule (the static gates, the symbol gate, the KernelBench checker) before the
// kernel ran: verdict `rejected`, reason the rule's name, the rule and its detail in the text.
Decision rejected(const Rejection& r);
// A rejection by the timing protocol's own checks, once the kernel has run correctly: as
// rejected(), with a text that says the outputs were correct.
Decision rejected_when_timed(const Rejection& r);
// A rejection by what the runner saw the answer do (a KernelBench answer's PyTorch operators):
// as rejected(), with a text that says it happened while the answer ran.
Decision rejected_when_run(const Rejection& r);
// Verdict `runtime_error` with reason `what`; `printed` (what the candidate printed, may be
// empty) is appended to the text.
Decision runtime_error(const std::string& what, const std::string& printed);
// Verdict `wrong_answer` with the given reason and text, unchanged.
Decision wrong_answer(std::string reason, std::string feedback);
// A reply that never came, or came out of protocol, during `stage` (e.g. "loading"): the
// candidate's doing once it is loaded. `timeout` when the reply timed out after `limit`;
// otherwise `runtime_error` naming the malformed message or how the process ended (output
// limit, CPU-time limit, forbidden system call, other signal or exit), with `printed`.
Decision from_lost_runner(const Runner::Reply& r, const std::string& printed,
                          std::chrono::milliseconds limit, const char* stage);

// The build's outcome: copies its compile time and cache hit into `result` (never null), and
// returns the decision that ends the candidate when the build was refused (`rejected`) or
// failed (`compile_error`, the compiler's log in the text); nullopt when it built.
std::optional<Decision> build_outcome(const BuildResult& build, EvalResult* result);
// The static checker's findings (at least one) as the verdict: `rejected` by the first one's
// rule, the first eight of them in the text.
Decision refused_answer(const std::vector<AnswerFinding>& findings);

}  // namespace kevin::engine::judge_feedback
