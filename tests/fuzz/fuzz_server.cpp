// fuzz_server.cpp — fuzz target: bytes from a network client through kevin serve's protocol
// handlers (an OpenEnv WebSocket frame after a reset, a stateless POST /step body, a
// KernelGYM /evaluate body) over an evaluator that answers at once.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/log.h"
#include "server/kernelgym.h"
#include "server/openenv.h"

namespace {

// Judges nothing: every candidate is a wrong answer, instantly (the target is the protocol).
class InstantEvaluator final : public kevin::env::Evaluator {
 public:
  kevin::Result<std::string> problem(const kevin::tasks::TaskInfo& task) override {
    return "Problem " + task.id;
  }
  kevin::Result<kevin::engine::EvalResult> evaluate(const kevin::tasks::TaskInfo&,
                                                    const std::string&) override {
    kevin::engine::EvalResult r;
    r.verdict = kevin::VerdictKind::kWrongAnswer;
    r.feedback = "wrong";
    return r;
  }
  std::string backend() const override { return "cpu"; }
  std::string device_name() const override { return "CPU"; }
};

kevin::server::EnvService& service() {
  static InstantEvaluator evaluator;
  kevin::log::set_level(kevin::log::Level::off);  // one line per evaluation would flood the replay
  static kevin::server::EnvService s(
      &evaluator, {{"fuzz/vector_add", "fuzz", "unknown", KEVIN_FUZZ_TASK}}, [] {
        kevin::server::ServiceOptions o;
        o.max_sessions = 4;
        o.adhoc_dir = "/nonexistent/kevin-fuzz";  // writes fail: a Status, never a crash
        return o;
      }());
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  auto session = service().open_session();
  if (session.is_ok()) {
    kevin::server::OpenEnvConnection connection(std::move(session).value());
    (void)connection.handle(R"({"type":"reset","data":{"problem_id":"vector_add","max_turns":2}})");
    (void)connection.handle(input);
    (void)connection.handle(input);
  }
  (void)kevin::server::http_step(service(), input);
  kevin::server::KernelGymApi gym(&service());
  (void)gym.evaluate(input);
  return 0;
}
