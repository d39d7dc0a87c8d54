// fake_runner.h — test support for the judge's unit tests (linked into tests only): a Runner
// that answers as kevin-runner with an honest candidate of the sum task (judge_test_support.h)
// would, unless a script changes an answer (wrong outputs, death, silence, malformed replies,
// chosen clocks), and a build that succeeds without a compiler.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.h"
#include "engine/judge/judge.h"
#include "engine/run/runner_session.h"
#include "sys/process.h"

namespace kevin::engine {

// The clocks a fake reports unless a script changes them: a harness-only (calibration) call
// costs the judge 0.1 ms beyond its event window; a timed call of the loaded candidate runs
// 1 ms inside its window and takes the judge that plus the same overhead, on its wall clock
// and in CPU time alike. The judge's verdict on them: correct, at 1 ms a call.
struct FakeTimes {
  double calibration_event_ms = 0.2;
  double calibration_judge_ms = 0.3;
  double event_ms = 1.0;
  double judge_ms = 1.1;
  double call_judge_ms = 1.1;  // a correctness call, on the judge's clock
};

// The protocol step of a command: "setup", "calibration" (a time_call before the load),
// "load", "call", "warmup" (a time_call on a correctness set) or "timed" (one on the slot).
std::string fake_step(const runner_protocol::Command& cmd, bool loaded);

// One command as a fake is about to answer it — honestly, until a script changes it.
struct FakeExchange {
  const Json* cmd = nullptr;  // the judge's command as its frame (runner_protocol::encode)
  std::string step;           // its protocol step (fake_step)
  int index = 0;              // commands of that step this fake answered before this one
  int runner = 0;             // which fake of the factory answers (0: the first started)
  // The reply. It reaches the judge as a frame would: as text, through parse_runner_reply.
  Json body;
  std::optional<std::string> frame;   // set: this text is the reply instead of `body`
  std::optional<sys::ExitInfo> dies;  // set: the runner ends this way instead of answering
  bool hangs = false;                 // it never answers: the deadline passes, it is killed
  double judge_ms = 0;                // the judge's clock from the command to the reply
  std::optional<double> cpu_ms;       // CPU time the exchange cost the runner (nullopt: unknown)
  // A call's output set in the staging area, holding the honest outputs (null for other
  // commands), and the word it was filled with before the call.
  uint8_t* outputs = nullptr;
  uint32_t poison = 0;
  std::string printed;  // what the candidate prints during the exchange
};

// Changes one exchange before the judge sees it.
using FakeScript = std::function<void(FakeExchange& exchange)>;

// How a runner ends, for FakeExchange::dies: killed by `signal`, or exited with `code`.
sys::ExitInfo killed_by(int signal);
sys::ExitInfo exited_with(int code);

// What the fakes of one factory were asked, for a test's assertions.
struct FakeRunnerLog {
  struct Request {
    Json cmd;          // as its frame (runner_protocol::encode)
    std::string step;  // fake_step
    bool spin = false, measure_cpu = false;
    double deadline_ms = 0;     // how far off the request's deadline was when it was made
    uint64_t slot_hash = 0;     // runner::host_hash of the timing-set slot (calibration, timed)
    size_t slot_set_bytes = 0;  // the set the request handed over for the slot (0: none)
  };
  // A candidate placed in a fake (Runner::stage), and how many requests (of all fakes) had
  // been made by then.
  struct Staged {
    int runner = 0;  // which fake (0: the first started)
    std::filesystem::path object;
    std::string answer;
    size_t after_requests = 0;
  };
  std::vector<Runner::Start> starts;  // each fake's start, in order
  std::vector<Staged> staged;         // each stage() call, in order
  std::vector<Request> requests;      // every fake's requests, in order
  int finished = 0;                   // finish() calls

  // The requests of protocol step `step`.
  std::vector<Request> of_step(std::string_view step) const;
};

// Starts fakes that answer honestly at `times`, each exchange then changed by `script` (if
// set), recording into `log`, which must outlive them. Starting fails as read_file does when
// the start's inputs file cannot be read.
RunnerFactory fake_runners(FakeRunnerLog* log, FakeScript script = {}, FakeTimes times = {});

// A successful build made without a compiler: its object is a shared object the build tree
// already holds (libkevin-runner-support.so), which the judge reads for data symbols and a
// fake never loads.
BuildResult fake_build();

}  // namespace kevin::engine
