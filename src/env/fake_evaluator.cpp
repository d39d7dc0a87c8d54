// fake_evaluator.cpp — directive parsing and the feedback texts of FakeEvaluator.
#include "env/fake_evaluator.h"

#include <chrono>
#include <cstdlib>
#include <sstream>
#include <thread>

#include "core/file.h"

namespace kevin::env {

namespace {

struct Directive {
  std::string verdict = "wrong_answer";
  double speedup = 1.0;
  int delay_ms = 0;
};

Directive read_directive(const std::string& source) {
  Directive d;
  const auto at = source.find("// fake:");
  if (at == std::string::npos) return d;
  std::istringstream words(source.substr(at + 8, source.find('\n', at) - at - 8));
  for (std::string w; words >> w;) {
    if (w.rfind("speedup=", 0) == 0) {
      d.speedup = std::strtod(w.c_str() + 8, nullptr);
    } else if (w.rfind("delay_ms=", 0) == 0) {
      d.delay_ms = std::atoi(w.c_str() + 9);
    } else {
      d.verdict = w;
    }
  }
  return d;
}

}  // namespace

Result<std::string> FakeEvaluator::problem(const tasks::TaskInfo& task) {
  KEVIN_ASSIGN_OR_RETURN(std::string source, read_file(task.path));
  return "Problem " + task.id + ":\n" + source;
}

Result<engine::EvalResult> FakeEvaluator::evaluate(const tasks::TaskInfo& task,
                                                   const std::string& source) {
  ++calls_;
  const Directive d = read_directive(source);
  if (d.delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(d.delay_ms));
  if (d.verdict == "harness_error") return internal_error("fake harness failure for " + task.id);
  if (d.verdict == "process_exit") std::_Exit(137);
  const auto kind = verdict_from_name(d.verdict);
  if (!kind) return invalid_argument("fake: unknown verdict '" + d.verdict + "'");
  engine::EvalResult r;
  r.verdict = *kind;
  r.device_name = device_name_;
  r.compile_ms = 1;
  r.total_ms = 2 + d.delay_ms;
  if (r.correct()) {
    r.baseline_ms = 1.0;
    r.speedup = d.speedup;
    r.candidate_ms = 1.0 / d.speedup;
    r.feedback =
        "Your kernel is correct (fake evaluation): speedup " + std::to_string(d.speedup) + "x.";
  } else {
    r.reason = d.verdict;
    r.feedback = "Fake evaluation verdict: " + d.verdict + ".";
  }
  return r;
}

}  // namespace kevin::env
