// judge_fake_runner_test.cpp — the judge alone, in milliseconds: every verdict, every timing
// check and every protocol fault, on hand-made reference data (judge_test_support.h) with
// canned builds and a scripted runner (fake_runner.h): no compiler, runner process, Python
// or GPU.
#include "engine/judge/judge.h"

#include <gtest/gtest.h>

#include <cmath>
#include <csignal>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <atomic>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/file.h"
#include "core/device_gate.h"
#include "engine/judge/fake_runner.h"
#include "engine/judge/judge_test_support.h"
#include "engine/runner/exit_codes.h"
#include "engine/runner/host_kernels.h"
#include "sys/tempdir.h"

namespace kevin::engine {
namespace {

using std::chrono::milliseconds;

// A candidate the text gate lets through; the fake runner does its work.
constexpr std::string_view kSource = R"(#include "kevin_abi.h"
extern "C" int kevin_forward(const kevin_args* args) { return args == nullptr; }
)";
constexpr int64_t kElements = 1024;
constexpr size_t kSets = 3;
constexpr size_t kTimingSets = 12;
constexpr int kEvery = -1;

// Changes the `index`-th exchange of protocol step `step` (fake_step), or each with kEvery.
FakeScript at(const std::string& step, int index,
              const std::function<void(FakeExchange&)>& change) {
  return [step, index, change](FakeExchange& x) {
    if (x.step == step && (index == kEvery || x.index == index)) change(x);
  };
}

// Both scripts, in order.
FakeScript both(FakeScript first, FakeScript second) {
  return [first, second](FakeExchange& x) {
    first(x);
    second(x);
  };
}

// The exchange took `ms` on the judge's clock, and as much CPU time.
void took(FakeExchange& x, double ms) {
  x.judge_ms = ms;
  x.cpu_ms = ms;
}

// A timed call whose event window is `event_ms` and whose exchange took `judge_ms`.
std::function<void(FakeExchange&)> timed_at(double event_ms, double judge_ms) {
  return [event_ms, judge_ms](FakeExchange& x) {
    x.body["event_ms"] = event_ms;
    took(x, judge_ms);
  };
}

float* outputs_of(FakeExchange& x) { return reinterpret_cast<float*>(x.outputs); }

bool contains(const std::string& text, std::string_view part) {
  return text.find(part) != std::string::npos;
}

class JudgeWithFakeRunner : public ::testing::Test {
 protected:
  // The usual reference data is written once (with an fsync per file) for every test.
  static void SetUpTestSuite() {
    auto dir = sys::TempDir::create("kevin-judge-fake-suite-");
    ASSERT_TRUE(dir.is_ok()) << dir.status().to_string();
    auto ref =
        write_sum_reference(dir->path() / "sums", kElements, kSets, kTimingSets, std::nullopt);
    ASSERT_TRUE(ref.is_ok()) << ref.status().to_string();
    suite_dir_.emplace(std::move(dir).value());
    suite_ref_ = std::move(ref).value();
  }
  static void TearDownTestSuite() { suite_dir_.reset(); }

  void SetUp() override {
    auto dir = sys::TempDir::create("kevin-judge-fake-");
    ASSERT_TRUE(dir.is_ok()) << dir.status().to_string();
    data_ = std::move(dir).value();
    config_.backend = Backend::kCpu;
    config_.restart_pause = milliseconds(0);
    ref_ = suite_ref_;
    ref_.baseline = baseline_of(2.0);
  }

  static TimingStats baseline_of(double median_ms) {
    TimingStats t;
    t.median_ms = t.p90_ms = median_ms;
    return t;
  }

  // Fresh reference data of the sum task with `timing_sets` timing sets; out = f(a, b).
  ReferenceSet sums(
      size_t timing_sets,
      const std::function<float(float, float)>& f = [](float a, float b) { return a + b; }) {
    auto ref = write_sum_reference(data_.path() / std::to_string(next_++), kElements, kSets,
                                   timing_sets, std::nullopt, f);
    EXPECT_TRUE(ref.is_ok()) << ref.status().to_string();
    return ref.is_ok() ? *ref : ReferenceSet{};
  }

  Result<EvalResult> evaluate(FakeScript script = {}, const EvalHooks& hooks = {}) {
    Judge judge(build_, fake_runners(&log_, std::move(script), times_), config_);
    return judge.evaluate(source_, ref_, hooks, format_);
  }

  // An evaluation that must complete with a verdict.
  EvalResult judged(FakeScript script = {}, const EvalHooks& hooks = {}) {
    auto r = evaluate(std::move(script), hooks);
    EXPECT_TRUE(r.is_ok()) << r.status().to_string();
    return r.is_ok() ? *r : EvalResult{};
  }

  // An evaluation that must end in the harness's error.
  Status failed(FakeScript script = {}, const EvalHooks& hooks = {}) {
    auto r = evaluate(std::move(script), hooks);
    EXPECT_FALSE(r.is_ok()) << "verdict " << (r.is_ok() ? verdict_name(r->verdict) : "");
    return r.status();
  }

  // Judges KernelBench answers from here on, with a checker that finds `check`.
  void judge_kernelbench(AnswerCheck check) {
    format_ = CandidateFormat::kKernelBench;
    source_ = "class ModelNew(torch.nn.Module): pass\n";
    ref_.init_inputs = Json::array();
    KernelBenchSupport kb;
    kb.build = [this](const std::vector<ExtensionUnits>& extensions) -> Result<BuildResult> {
      built_.push_back(extensions);
      return fake_build();
    };
    kb.python = "python3";
    kb.runner_script = "kernelbench_runner.py";
    kb.support_library = "libkevin-runner-support.so";
    kb.check = [check](std::string_view) -> Result<AnswerCheck> { return check; };
    config_.kernelbench = kb;
  }

  // Another evaluation's correctness call holds the device for `held` (a shared hold). Called
  // from an exchange's hook, it shares the device with that exchange, taking half of it.
  void a_neighbour_uses_the_device(milliseconds held = milliseconds(0)) {
    std::thread([this, held] {
      SharedDeviceLock call(&gate_);
      std::this_thread::sleep_for(held);
    }).join();
  }

  // Judges a candidate whose first runner hangs in exchange `index` of `step` while a
  // neighbour holds the device for 100 ms of it: over a tenth of the 400 ms limits set here.
  EvalResult judged_hanging_once_beside_a_neighbour(const char* step, int index) {
    config_.gate = &gate_;
    config_.call_timeout = config_.init_timeout = milliseconds(400);
    return judged(at(step, index, [this](FakeExchange& x) {
      x.hangs = log_.starts.size() == 1;
      if (x.hangs) a_neighbour_uses_the_device(milliseconds(100));
    }));
  }

  // For a candidate whose build decided its fate: the runner started ahead of the build was
  // never given it, and was finished.
  void expect_runner_started_ahead_and_finished_unused() const {
    EXPECT_EQ(log_.starts.size(), 1u);
    EXPECT_TRUE(log_.staged.empty());
    EXPECT_TRUE(log_.of_step("load").empty());
    EXPECT_EQ(log_.finished, 1);
  }

  static AnswerCheck one_extension(std::string cuda_sources = "") {
    AnswerCheck check;
    check.extensions.push_back(
        {"sum_ext", "int forty_two() { return 42; }", std::move(cuda_sources), {"forty_two"}});
    return check;
  }

  std::vector<std::vector<ExtensionUnits>> built_;  // what each KernelBench build was given
  static inline std::optional<sys::TempDir> suite_dir_;
  static inline ReferenceSet suite_ref_;
  sys::TempDir data_;
  int next_ = 0;
  ReferenceSet ref_;
  EvalConfig config_;
  FakeTimes times_;
  FakeRunnerLog log_;
  DeviceGate gate_;
  std::string source_{kSource};
  CandidateFormat format_ = CandidateFormat::kKevin;
  int builds_ = 0;
  BuildFunction build_ = [this](std::string_view) -> Result<BuildResult> {
    ++builds_;
    return fake_build();
  };
};

// --- Before the runner: gates, builds, degenerate data, KernelBench answers ----------------

TEST_F(JudgeWithFakeRunner, SourceTheTextGateRefusesIsRejectedWithItsRuleAndNeverBuilt) {
  source_ = "int main() { return 0; }\n";
  const EvalResult r = judged();
  EXPECT_EQ(r.verdict, VerdictKind::kRejected);
  EXPECT_EQ(r.reason, "missing_entry_point");
  EXPECT_TRUE(contains(r.feedback, "rejected before it ran (rule missing_entry_point)"))
      << r.feedback;
  EXPECT_EQ(builds_, 0);
  EXPECT_TRUE(log_.starts.empty());
}

TEST_F(JudgeWithFakeRunner, BuildAGateRefusedIsRejectedWithTheGatesRuleAndNeverRun) {
  build_ = [](std::string_view) -> Result<BuildResult> {
    BuildResult b;
    b.rejection = Rejection{"load_time_code", "a constructor runs at load time"};
    return b;
  };
  const EvalResult r = judged();
  EXPECT_EQ(r.verdict, VerdictKind::kRejected);
  EXPECT_EQ(r.reason, "load_time_code");
  EXPECT_TRUE(contains(r.feedback, "a constructor runs at load time")) << r.feedback;
  expect_runner_started_ahead_and_finished_unused();
}

TEST_F(JudgeWithFakeRunner, FailedBuildIsACompileErrorCarryingTheCompilerLogAndTimes) {
  build_ = [](std::string_view) -> Result<BuildResult> {
    BuildResult b;
    b.log = "candidate.cpp:2:7: error: expected ';'";
    b.compile_ms = 12.5;
    b.cache_hit = true;
    return b;
  };
  const EvalResult r = judged();
  EXPECT_EQ(r.verdict, VerdictKind::kCompileError);
  EXPECT_EQ(r.reason, "compilation failed");
  EXPECT_TRUE(contains(r.feedback, "candidate.cpp:2:7: error: expected ';'")) << r.feedback;
  EXPECT_DOUBLE_EQ(r.compile_ms, 12.5);
  EXPECT_TRUE(r.cache_hit);
  expect_runner_started_ahead_and_finished_unused();
}

TEST_F(JudgeWithFakeRunner, RunnerIsStartedAndSetUpWhileTheCandidateBuilds) {
  // The build waits for the runner's setup: it would wait in vain (and say so) were the
  // runner started only after the build.
  std::promise<void> set_up;
  std::future<void> set_up_seen = set_up.get_future();
  bool seen_during_build = false;
  build_ = [&](std::string_view) -> Result<BuildResult> {
    seen_during_build = set_up_seen.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
    return fake_build();
  };
  const EvalResult r = judged(at("setup", 0, [&](FakeExchange&) { set_up.set_value(); }));
  EXPECT_TRUE(seen_during_build) << "the build ended before the runner was set up";
  ASSERT_EQ(r.verdict, VerdictKind::kCorrect) << r.feedback;
  ASSERT_EQ(log_.starts.size(), 1u) << "one runner, started ahead and used for the candidate";
  // The candidate reached that runner once its build was done, after the setup and the
  // harness-only calibration, just before the load.
  ASSERT_EQ(log_.staged.size(), 1u);
  EXPECT_EQ(log_.staged[0].runner, 0);
  EXPECT_EQ(log_.staged[0].object, fake_build().object);
  EXPECT_EQ(log_.staged[0].answer, "") << "kevin's ABI stages no answer.py";
  const size_t before_load = 1 + static_cast<size_t>(config_.calibration_calls);
  EXPECT_EQ(log_.staged[0].after_requests, before_load);
  EXPECT_EQ(log_.requests.at(before_load).step, "load");
  EXPECT_GT(r.phases.start_ms, 0);
}

TEST_F(JudgeWithFakeRunner, RunnerStartedAfterTheBuildWhenNotAhead) {
  config_.start_runner_ahead = false;
  size_t requests_during_build = 0;
  build_ = [&](std::string_view) -> Result<BuildResult> {
    requests_during_build = log_.requests.size();  // no other thread is running now
    return fake_build();
  };
  const EvalResult r = judged();
  ASSERT_EQ(r.verdict, VerdictKind::kCorrect) << r.feedback;
  EXPECT_EQ(requests_during_build, 0u);
  ASSERT_EQ(log_.starts.size(), 1u);
  ASSERT_EQ(log_.staged.size(), 1u);
}

TEST_F(JudgeWithFakeRunner, RunnerThatFailsToStartAheadIsTheHarnessErrorOnceBuilt) {
  const Status s = failed(at("setup", kEvery, [](FakeExchange& x) { x.dies = exited_with(1); }));
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_TRUE(contains(s.message(), "the runner failed to start (exit code 1)")) << s.message();
  EXPECT_EQ(builds_, 1) << "the build went on while the runner was started and started again";
  EXPECT_TRUE(log_.staged.empty());
}

TEST_F(JudgeWithFakeRunner, BuiltObjectThatIsNotASharedObjectIsTheHarnessError) {
  const auto text = data_.path() / "not-elf.so";
  ASSERT_TRUE(write_file_atomic(text, "plain text").is_ok());
  build_ = [text](std::string_view) -> Result<BuildResult> {
    BuildResult b = fake_build();
    b.object = text;
    return b;
  };
  const Status s = failed();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(contains(s.message(), "not an ELF file")) << s.message();
}

TEST_F(JudgeWithFakeRunner, DegenerateReferenceDataIsAnErrorBeforeAnyBuildUnlessAllowed) {
  ref_ = sums(kTimingSets, [](float a, float b) { return (a + b) * 1e-7f; });
  const Status s = failed();
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(contains(s.message(), "degenerate")) << s.message();
  EXPECT_EQ(builds_, 0);
  config_.allow_degenerate_tasks = true;
  EXPECT_EQ(judged().verdict, VerdictKind::kWrongAnswer) << "the sum is not the tiny output";
}

TEST_F(JudgeWithFakeRunner, KernelBenchAnswerMeetingAJudgeWithoutSupportIsAnError) {
  judge_kernelbench(one_extension());
  config_.kernelbench.reset();
  const Status s = failed();
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(contains(s.message(), "judges kevin's ABI only")) << s.message();
}

TEST_F(JudgeWithFakeRunner, KernelBenchAnswerOnATaskWhoseInitInputsAreNotJsonIsAnError) {
  judge_kernelbench(one_extension());
  ref_.init_inputs = Json();
  const Status s = failed();
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(contains(s.message(), "not JSON")) << s.message();
}

TEST_F(JudgeWithFakeRunner, KernelBenchAnswerTheCheckerRefusesIsRejectedWithTheFirstFindingsRule) {
  AnswerCheck check;
  check.findings = {{"import_not_allowed", "import os", 3}, {"banned_construct", "exec()", 9}};
  judge_kernelbench(check);
  const EvalResult r = judged();
  EXPECT_EQ(r.verdict, VerdictKind::kRejected);
  EXPECT_EQ(r.reason, "import_not_allowed");
  EXPECT_TRUE(contains(r.feedback, "import os (line 3); also banned_construct: exec()"))
      << r.feedback;
  EXPECT_TRUE(log_.starts.empty());
}

TEST_F(JudgeWithFakeRunner, KernelBenchAnswerWithSeveralExtensionsBuildsThemAllAndLoadsEach) {
  AnswerCheck check = one_extension();
  check.extensions.push_back({"scale_ext", "int seven() { return 7; }", "", {"seven"}});
  judge_kernelbench(check);
  const EvalResult r = judged();
  EXPECT_EQ(r.verdict, VerdictKind::kCorrect) << r.feedback;
  ASSERT_EQ(built_.size(), 1u) << "one build of every extension";
  ASSERT_EQ(built_[0].size(), 2u);
  EXPECT_EQ(built_[0][0].name, "sum_ext");
  EXPECT_EQ(built_[0][1].name, "scale_ext");
  EXPECT_TRUE(contains(built_[0][1].host, "int seven()"));
  const auto loads = log_.of_step("load");
  ASSERT_EQ(loads.size(), 1u);
  EXPECT_EQ(loads[0].cmd.at("extensions"), Json::parse(R"(["sum_ext","scale_ext"])"));
}

TEST_F(JudgeWithFakeRunner, KernelBenchRunnerEndedByItsAuditHookIsRejectedAsIntrospection) {
  judge_kernelbench(one_extension());
  const EvalResult r = judged(at("call", 0, [](FakeExchange& x) {
    x.printed = "kevin-runner: the answer reached into the interpreter (sys._getframe)\n";
    x.dies = exited_with(runner::kIntrospectionExit);
  }));
  EXPECT_EQ(r.verdict, VerdictKind::kRejected);
  EXPECT_EQ(r.reason, "introspection");
  EXPECT_TRUE(contains(r.feedback, "the answer reached into the interpreter (sys._getframe)"))
      << r.feedback;
}

TEST_F(JudgeWithFakeRunner, KevinCandidateExitingWithTheAuditCodeIsARuntimeError) {
  // Only the Python runner has the hook: a C candidate that exits so is an ordinary failure.
  const EvalResult r = judged(
      at("call", 0, [](FakeExchange& x) { x.dies = exited_with(runner::kIntrospectionExit); }));
  EXPECT_EQ(r.verdict, VerdictKind::kRuntimeError);
}

TEST_F(JudgeWithFakeRunner, KernelBenchPyTorchComputingInATimedCallIsRejected) {
  judge_kernelbench(one_extension());
  const EvalResult r = judged(at("timed", 3, [](FakeExchange& x) {
    x.body = {{"ok", false},
              {"stage", "call"},
              {"error", "pytorch_compute: PyTorch computed part of the answer (aten::index)"}};
  }));
  EXPECT_EQ(r.verdict, VerdictKind::kRejected);
  EXPECT_EQ(r.reason, "pytorch_compute");
  EXPECT_TRUE(contains(r.feedback, "aten::index")) << r.feedback;
}

TEST_F(JudgeWithFakeRunner, KernelBenchRunnerIsToldOfTheOperatorLog) {
  judge_kernelbench(one_extension());
  config_.kernelbench->op_log_library = "/opt/kevin/libkevin-op-log.so";
  config_.kernelbench->op_log_torch_version = "2.11.0";
  const EvalResult r = judged();
  ASSERT_EQ(r.verdict, VerdictKind::kCorrect) << r.feedback;
  const auto setup = log_.of_step("setup").front().cmd;
  EXPECT_EQ(setup.at("op_log_library"), "/opt/kevin/libkevin-op-log.so");
  EXPECT_EQ(setup.at("op_log_torch"), "2.11.0");
}

TEST_F(JudgeWithFakeRunner, KernelBenchAnswerWithMoreExtensionsThanTheCapIsRejected) {
  AnswerCheck check;
  for (size_t i = 0; i <= kMaxExtensions; ++i)
    check.extensions.push_back({"e" + std::to_string(i), "int f();", "", {"f"}});
  judge_kernelbench(check);
  const EvalResult r = judged();
  EXPECT_EQ(r.verdict, VerdictKind::kRejected);
  EXPECT_EQ(r.reason, "extension_count");
  EXPECT_TRUE(contains(r.feedback, "this one builds 9")) << r.feedback;
  EXPECT_TRUE(built_.empty());
  EXPECT_TRUE(log_.starts.empty());
}

TEST_F(JudgeWithFakeRunner, KernelBenchAnswerWithCudaSourcesOnTheCpuIsACompileError) {
  judge_kernelbench(one_extension("__global__ void k() {}"));
  const EvalResult r = judged();
  EXPECT_EQ(r.verdict, VerdictKind::kCompileError);
  EXPECT_EQ(r.reason, "cuda sources on the cpu backend");
}

TEST_F(JudgeWithFakeRunner, KernelBenchUnitTheTextGateRefusesIsRejectedWithItsRule) {
  AnswerCheck check = one_extension();
  check.extensions.front().cpp_sources =
      "#pragma GCC optimize(\"O0\")\nint forty_two() { return 42; }";
  judge_kernelbench(check);
  const EvalResult r = judged();
  EXPECT_EQ(r.verdict, VerdictKind::kRejected);
  EXPECT_EQ(r.reason, "compiler_flag_override");
  EXPECT_TRUE(log_.starts.empty());
}

TEST_F(JudgeWithFakeRunner, KernelBenchAnswerRunsInThePythonRunnerWithItsExtensionAndArguments) {
  judge_kernelbench(one_extension());
  const EvalResult r = judged();
  EXPECT_EQ(r.verdict, VerdictKind::kCorrect) << r.feedback;
  ASSERT_EQ(log_.starts.size(), 1u);
  EXPECT_EQ(log_.starts[0].python, "python3");
  ASSERT_EQ(log_.staged.size(), 1u);
  EXPECT_EQ(log_.staged[0].answer, source_);
  const auto loads = log_.of_step("load");
  ASSERT_EQ(loads.size(), 1u);
  const Json& load = loads[0].cmd;
  EXPECT_EQ(load.at("extensions"), Json::parse(R"(["sum_ext"])"));
  EXPECT_EQ(load.at("args"),
            Json::parse(R"([{"name":"a","role":"input"},{"name":"b","role":"input"}])"));
  EXPECT_EQ(load.at("init_inputs"), Json::array());
}

TEST_F(JudgeWithFakeRunner, PyTorchComputeSeenWhileAKernelBenchAnswerRunsIsRejected) {
  judge_kernelbench(one_extension());
  const EvalResult r = judged(at("call", 0, [](FakeExchange& x) {
    x.body = {{"ok", false}, {"error", "pytorch_compute: aten::add called by forward"}};
  }));
  EXPECT_EQ(r.verdict, VerdictKind::kRejected);
  EXPECT_EQ(r.reason, "pytorch_compute");
  EXPECT_TRUE(contains(r.feedback,
                       "rejected while it ran (rule pytorch_compute): aten::add called by forward"))
      << r.feedback;
}

TEST_F(JudgeWithFakeRunner, PyTorchComputeClaimFromAKevinCandidateIsOnlyARuntimeError) {
  const EvalResult r = judged(at("call", 0, [](FakeExchange& x) {
    x.body = {{"ok", false}, {"error", "pytorch_compute: aten::add"}};
  }));
  EXPECT_EQ(r.verdict, VerdictKind::kRuntimeError);
  EXPECT_EQ(r.reason, "pytorch_compute: aten::add");
}

TEST_F(JudgeWithFakeRunner, KernelBenchAnswerThatModifiesItsInputsIsToldToReturnNewTensors) {
  judge_kernelbench(one_extension());
  const EvalResult r =
      judged(at("call", 0, [](FakeExchange& x) { x.body["input_hashes"][0] = 1; }));
  EXPECT_EQ(r.verdict, VerdictKind::kWrongAnswer);
  EXPECT_EQ(r.reason, "inputs modified");
  EXPECT_TRUE(contains(r.feedback, "return new tensors from forward")) << r.feedback;
}

// --- Starting the runner: failures before candidate code runs are the harness's ----------

TEST_F(JudgeWithFakeRunner, RunnerThatCannotBeStartedIsTheHarnessErrorWithoutRetry) {
  int starts = 0;
  Judge judge(
      build_,
      [&starts](const Runner::Start&) -> Result<std::unique_ptr<Runner>> {
        ++starts;
        return not_found("no kevin-runner here");
      },
      config_);
  auto r = judge.evaluate(source_, ref_);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("no kevin-runner here"), std::string::npos)
      << r.status().to_string();
  EXPECT_EQ(starts, 1);
}

TEST_F(JudgeWithFakeRunner, RunnerThatDiesDuringSetupIsStartedThreeTimesThenTheHarnessError) {
  const Status s = failed(at("setup", 0, [](FakeExchange& x) { x.dies = exited_with(1); }));
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_TRUE(contains(s.message(), "the runner failed to start (exit code 1)")) << s.message();
  EXPECT_EQ(log_.starts.size(), 3u);
}

TEST_F(JudgeWithFakeRunner, RunnerWhoseSetupFailsOnceIsStartedAgainAndTheCandidateJudged) {
  const EvalResult r = judged(at("setup", 0, [this](FakeExchange& x) {
    if (log_.starts.size() == 1) x.body = {{"ok", false}, {"error", "device busy"}};
  }));
  EXPECT_EQ(r.verdict, VerdictKind::kCorrect) << r.feedback;
  EXPECT_EQ(log_.starts.size(), 2u);
}

TEST_F(JudgeWithFakeRunner, SetupThatKeepsFailingIsTheHarnessErrorWithTheRunnersReason) {
  const Status s = failed(at("setup", 0, [](FakeExchange& x) {
    x.body = {{"ok", false}, {"stage", "device"}, {"error", "device busy"}};
  }));
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_EQ(s.message(), "runner setup failed: device busy");
  EXPECT_EQ(log_.starts.size(), 3u);
}

TEST_F(JudgeWithFakeRunner, SandboxThatCannotBeAppliedIsAnErrorWithoutRetry) {
  const Status s = failed(at("setup", 0, [](FakeExchange& x) {
    x.body = {{"ok", false}, {"stage", "sandbox"}, {"error", "unshare: Operation not permitted"}};
  }));
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(
      contains(s.message(), "the sandbox could not be applied: unshare: Operation not permitted"))
      << s.message();
  EXPECT_EQ(log_.starts.size(), 1u);
}

TEST_F(JudgeWithFakeRunner, GpuThatRefusesAPidNamespaceMakesThisAndLaterRunnersGoWithoutOne) {
  config_.backend = Backend::kCuda;
  Judge judge(
      build_,
      fake_runners(&log_, at("setup", 0,
                             [this](FakeExchange& x) {
                               if (log_.starts.size() == 1)
                                 x.body = {{"ok", false}, {"error", "cudaErrorOperatingSystem"}};
                             })),
      config_);
  auto first = judge.evaluate(source_, ref_);
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  EXPECT_EQ(first->verdict, VerdictKind::kCorrect) << first->feedback;
  const std::vector<std::string> skipped = {"pidns (the GPU driver does not work inside one here)"};
  EXPECT_EQ(first->sandbox_skipped, skipped);
  auto second = judge.evaluate(source_, ref_);
  ASSERT_TRUE(second.is_ok()) << second.status().to_string();
  ASSERT_EQ(log_.starts.size(), 3u);
  EXPECT_TRUE(log_.starts[0].pid_namespace);
  EXPECT_FALSE(log_.starts[1].pid_namespace);
  EXPECT_FALSE(log_.starts[2].pid_namespace) << "the judge remembers";
}

TEST_F(JudgeWithFakeRunner, RunnerWhoseInputSetsDifferFromTheReferenceIsTheHarnessError) {
  const Status s = failed(at("setup", 0, [](FakeExchange& x) {
    x.body["input_hashes"] = {1, 2, 3};
  }));
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_TRUE(contains(s.message(), "differs from the reference data")) << s.message();
}

TEST_F(JudgeWithFakeRunner, CalibrationCallThatFailsIsTheHarnessError) {
  const Status s = failed(at("calibration", 4, [](FakeExchange& x) {
    x.body = {{"ok", false}, {"error", "cudaErrorLaunchFailure"}};
  }));
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_TRUE(contains(s.message(), "the runner failed while calibrating: cudaErrorLaunchFailure"))
      << s.message();
  EXPECT_EQ(log_.starts.size(), 1u);
}

TEST_F(JudgeWithFakeRunner, RunnerThatDiesWhileCalibratingIsTheHarnessErrorSayingHow) {
  const Status s =
      failed(at("calibration", 0, [](FakeExchange& x) { x.dies = killed_by(SIGSEGV); }));
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_TRUE(contains(s.message(), "the runner failed while calibrating: killed by signal 11"))
      << s.message();
}

TEST_F(JudgeWithFakeRunner,
       ResultNamesTheRunnersDeviceAndSandboxWithTheSeccompAllowlistOnceLoaded) {
  const EvalResult r = judged();
  EXPECT_EQ(r.device_name, "fake");
  EXPECT_EQ(r.sandbox_enforced, (std::vector<std::string>{"fake", "seccomp allowlist"}));
  EXPECT_EQ(r.device_ordinal, -1) << "the CPU has no ordinal";
}

// --- Loading --------------------------------------------------------------------------------

TEST_F(JudgeWithFakeRunner, LoadTheRunnerReportsFailedIsARuntimeErrorWithItsMessage) {
  const EvalResult r = judged(at("load", 0, [](FakeExchange& x) {
    x.body = {{"ok", false}, {"stage", "load"}, {"error", "kevin_forward is not exported"}};
  }));
  EXPECT_EQ(r.verdict, VerdictKind::kRuntimeError);
  EXPECT_EQ(r.reason, "kevin_forward is not exported");
  EXPECT_TRUE(log_.of_step("call").empty());
}

TEST_F(JudgeWithFakeRunner, RunnerSilentWhileLoadingIsATimeoutOfLoadingWithinTheInitTimeout) {
  config_.init_timeout = milliseconds(5000);
  const EvalResult r = judged(at("load", 0, [](FakeExchange& x) { x.hangs = true; }));
  EXPECT_EQ(r.verdict, VerdictKind::kTimeout);
  EXPECT_EQ(r.reason, "loading did not finish");
  EXPECT_TRUE(contains(r.feedback, "within 5.0 s during loading")) << r.feedback;
  const auto loads = log_.of_step("load");
  ASSERT_EQ(loads.size(), 1u);
  EXPECT_GT(loads[0].deadline_ms, 4000);
  EXPECT_LE(loads[0].deadline_ms, 5000);
}

// --- A runner lost during a call: always the candidate's verdict ---------------------------

TEST_F(JudgeWithFakeRunner, RunnerKilledByASignalIsARuntimeErrorNamingTheSignalAndTheStage) {
  const EvalResult r = judged(at("call", 1, [](FakeExchange& x) { x.dies = killed_by(SIGSEGV); }));
  EXPECT_EQ(r.verdict, VerdictKind::kRuntimeError);
  EXPECT_EQ(
      r.reason,
      "the process running it ended unexpectedly during the correctness check (killed by signal 11 "
      "(Segmentation fault))");
}

TEST_F(JudgeWithFakeRunner, SignalsOfTheRunnersLimitsAreNamedForWhatTheyMean) {
  for (const auto& [number, meaning] :
       {std::pair{SIGXFSZ, "(it printed more output than allowed (1 MiB))"},
        std::pair{SIGXCPU, "(it exceeded its CPU-time limit)"},
        std::pair{SIGSYS, "(it made a forbidden system call)"}}) {
    SCOPED_TRACE(meaning);
    const int sig = number;
    const EvalResult r = judged(at("call", 0, [sig](FakeExchange& x) { x.dies = killed_by(sig); }));
    EXPECT_EQ(r.verdict, VerdictKind::kRuntimeError);
    EXPECT_TRUE(contains(r.reason, meaning)) << r.reason;
  }
}

TEST_F(JudgeWithFakeRunner, RunnerThatExitsMidCallIsARuntimeErrorWithItsExitCode) {
  const EvalResult r = judged(at("call", 0, [](FakeExchange& x) { x.dies = exited_with(3); }));
  EXPECT_EQ(r.verdict, VerdictKind::kRuntimeError);
  EXPECT_TRUE(contains(r.reason, "during the correctness check (exit code 3)")) << r.reason;
}

TEST_F(JudgeWithFakeRunner, RunnerThatDiesInTheDeterminismCallNamesThatStage) {
  const EvalResult r =
      judged(at("call", kSets, [](FakeExchange& x) { x.dies = killed_by(SIGABRT); }));
  EXPECT_EQ(r.verdict, VerdictKind::kRuntimeError);
  EXPECT_TRUE(contains(r.reason, "ended unexpectedly during the determinism check")) << r.reason;
}

TEST_F(JudgeWithFakeRunner, WhatTheCandidatePrintedBeforeItStoppedIsInTheFeedbackAndTheResult) {
  const EvalResult r = judged(at("call", 0, [](FakeExchange& x) {
    x.printed = "about to crash\n";
    x.dies = killed_by(SIGSEGV);
  }));
  EXPECT_EQ(r.verdict, VerdictKind::kRuntimeError);
  EXPECT_TRUE(
      r.feedback.ends_with("Output printed by the kernel before it stopped:\nabout to crash\n"))
      << r.feedback;
  EXPECT_EQ(r.runner_output, "about to crash\n");
}

TEST_F(JudgeWithFakeRunner, ReplyThatIsNotJsonIsARuntimeError) {
  const EvalResult r = judged(at("call", 0, [](FakeExchange& x) { x.frame = "ok!"; }));
  EXPECT_EQ(r.verdict, VerdictKind::kRuntimeError);
  EXPECT_TRUE(r.reason.starts_with("the process running it sent malformed JSON")) << r.reason;
  EXPECT_TRUE(contains(r.reason,
                       "during the correctness check (the kernel overwrote the harness's memory?)"))
      << r.reason;
}

TEST_F(JudgeWithFakeRunner, ReplyThatIsNotAJsonObjectIsARuntimeError) {
  const EvalResult r = judged(at("call", 0, [](FakeExchange& x) { x.frame = "[true, 0]"; }));
  EXPECT_EQ(r.verdict, VerdictKind::kRuntimeError);
  EXPECT_TRUE(
      contains(r.reason, "sent a reply that is not a JSON object during the correctness check"))
      << r.reason;
}

TEST_F(JudgeWithFakeRunner, ReplyWithAFieldOfTheWrongTypeIsARuntimeError) {
  for (const char* frame :
       {R"({"ok": "yes"})", R"({"ok": true, "rc": 0.5})", R"({"ok": true, "input_hashes": [-1]})",
        R"({"ok": false, "error": 7})", R"({"ok": true, "input_hashes": 5})"}) {
    SCOPED_TRACE(frame);
    const EvalResult r = judged(at("call", 0, [frame](FakeExchange& x) { x.frame = frame; }));
    EXPECT_EQ(r.verdict, VerdictKind::kRuntimeError);
    EXPECT_TRUE(contains(r.reason,
                         "sent a reply with fields of the wrong type during the correctness check"))
        << r.reason;
  }
}

TEST_F(JudgeWithFakeRunner, ReplyNestedTooDeeplyIsARuntimeError) {
  const EvalResult r = judged(at("call", 0, [](FakeExchange& x) {
    x.frame = R"({"ok": true, "deep": [[[[[[[[[[1]]]]]]]]]]})";
  }));
  EXPECT_EQ(r.verdict, VerdictKind::kRuntimeError);
  EXPECT_TRUE(contains(r.reason, "sent JSON nested deeper than 8 levels")) << r.reason;
}

TEST_F(JudgeWithFakeRunner, ReplyOverOneMebibyteIsARuntimeError) {
  const EvalResult r = judged(at("call", 0, [](FakeExchange& x) {
    x.frame = R"({"ok": true, "pad": ")" + std::string(RunnerSession::kMaxReplyBytes, 'x') + "\"}";
  }));
  EXPECT_EQ(r.verdict, VerdictKind::kRuntimeError);
  EXPECT_TRUE(contains(r.reason, "exceeds the limit of 1048576")) << r.reason;
}

// --- The correctness check ------------------------------------------------------------------

TEST_F(JudgeWithFakeRunner, HonestCandidateIsCorrectAtOneMillisecondAgainstTheCachedBaseline) {
  const EvalResult r = judged();
  ASSERT_EQ(r.verdict, VerdictKind::kCorrect) << r.feedback;
  EXPECT_EQ(r.reason, "");
  EXPECT_EQ(r.feedback,
            "Your kernel is correct. It ran in 1 ms (median of 12 timed runs, each on inputs it "
            "had not seen) "
            "against 2 ms for the PyTorch reference: a speedup of 2.00x. See whether it can be "
            "made faster still.");
  EXPECT_DOUBLE_EQ(*r.candidate_ms, 1.0);
  EXPECT_DOUBLE_EQ(*r.speedup, 2.0);
  EXPECT_EQ(r.baseline_source, "cached");
  EXPECT_EQ(*r.max_abs_error, 0.0);
  EXPECT_EQ(log_.finished, 1);
}

TEST_F(JudgeWithFakeRunner, CorrectCandidateIsToldItsSpeedOfLightWhenWorkAndPeaksAreKnown) {
  // 4 MB to move at 4000 GB/s: a bound of 0.001 ms against the candidate's 1 ms and the
  // baseline's 2 ms; eager PyTorch moves 3x the minimum.
  ref_.work = TaskWork{1e6, {}, 4e6, 12e6, 3};
  ref_.peaks = DevicePeaks{"test GPU", "none", 4000, {{"float32", 50}}, 0};
  const EvalResult r = judged();
  ASSERT_EQ(r.verdict, VerdictKind::kCorrect) << r.feedback;
  ASSERT_TRUE(r.speed_of_light.has_value());
  EXPECT_EQ(r.speed_of_light->limit, "memory");
  EXPECT_DOUBLE_EQ(r.speed_of_light->bound_ms, 0.001);
  EXPECT_DOUBLE_EQ(r.speed_of_light->candidate->fraction, 0.001);
  EXPECT_DOUBLE_EQ(r.speed_of_light->baseline->fraction, 0.0005);
  EXPECT_TRUE(contains(r.feedback,
                       "Speed of light on this device: the task must move at least 4 MB and do "
                       "1 MFLOP, so no kernel can take less than 0.001 ms (memory-bound at 4000 "
                       "GB/s); yours reaches 0.1% of that bound (4 GB/s, 0.001 TFLOP/s), the "
                       "PyTorch reference 0.05% (its 3 operators move 3x the minimum)."))
      << r.feedback;
  const auto back = eval_result_from_json(to_json(r));
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  ASSERT_TRUE(back->speed_of_light.has_value());
  EXPECT_EQ(to_json(*back->speed_of_light), to_json(*r.speed_of_light));
}

TEST_F(JudgeWithFakeRunner, AKernelPastTheMeasuredPeaksIsToldSo) {
  ref_.work = TaskWork{1e12, {{"float32", 1e12}}, 4e6, 4e6, 1};  // 20 ms at 50 TFLOP/s
  ref_.peaks = DevicePeaks{"test GPU", "none", 4000, {{"float32", 50}}, 0};
  const EvalResult r = judged();  // 1 ms
  ASSERT_TRUE(r.speed_of_light.has_value()) << r.feedback;
  EXPECT_EQ(r.speed_of_light->limit, "compute");
  EXPECT_DOUBLE_EQ(r.speed_of_light->candidate->fraction, 20);
  EXPECT_TRUE(contains(r.feedback,
                       "(compute-bound at 50 TFLOP/s); yours reaches 2000% of that "
                       "bound (4 GB/s, 1000 TFLOP/s, past the float32 peaks measured "
                       "here)"))
      << r.feedback;
}

TEST_F(JudgeWithFakeRunner, NoSpeedOfLightWithoutTheDevicesPeaks) {
  ref_.work = TaskWork{1e6, {}, 4e6, 4e6, 1};
  const EvalResult r = judged();
  ASSERT_EQ(r.verdict, VerdictKind::kCorrect) << r.feedback;
  EXPECT_FALSE(r.speed_of_light.has_value());
  EXPECT_FALSE(contains(r.feedback, "Speed of light"));
  EXPECT_FALSE(to_json(r).contains("speed_of_light"));
}

TEST_F(JudgeWithFakeRunner, DamagedInputHashCacheIsComputedAgainNeverThrownOn) {
  for (const char* damaged :
       {R"(["a", "b", "c"])", R"({"input_hashes": [1e300, 1, 2]})", R"({"input_hashes": [1, 2]})",
        R"({"input_hashes": "x"})", "not json"}) {
    ref_ = sums(kTimingSets);
    ASSERT_TRUE(write_file_atomic(ref_.dir / "input_hashes.json", damaged).is_ok());
    const EvalResult r = judged();
    EXPECT_EQ(r.verdict, VerdictKind::kCorrect) << damaged << ": " << r.feedback;
    auto again = read_file(ref_.dir / "input_hashes.json");
    ASSERT_TRUE(again.is_ok());
    auto hashes = json_get<std::vector<uint64_t>>(*parse_json(*again), "input_hashes");
    ASSERT_TRUE(hashes.is_ok()) << *again;
    EXPECT_EQ(hashes->size(), kSets) << damaged;
  }
}

TEST_F(JudgeWithFakeRunner, CallReturningNonZeroIsARuntimeErrorWithTheCode) {
  const EvalResult r = judged(at("call", 2, [](FakeExchange& x) { x.body["rc"] = 7; }));
  EXPECT_EQ(r.verdict, VerdictKind::kRuntimeError);
  EXPECT_EQ(r.reason, "kevin_forward returned 7 (0 means success)");
}

TEST_F(JudgeWithFakeRunner, CallTheRunnerReportsFailedIsARuntimeErrorWithItsError) {
  const EvalResult r = judged(at("call", 0, [](FakeExchange& x) {
    x.body = {{"ok", false},
              {"stage", "call"},
              {"error", "CUDA error: an illegal memory access was encountered"}};
  }));
  EXPECT_EQ(r.verdict, VerdictKind::kRuntimeError);
  EXPECT_EQ(r.reason, "CUDA error: an illegal memory access was encountered");
}

TEST_F(JudgeWithFakeRunner, WrongElementIsAnOutputMismatchNamingItsIndex) {
  const EvalResult r = judged(at("call", 1, [](FakeExchange& x) { outputs_of(x)[5] += 1.0f; }));
  EXPECT_EQ(r.verdict, VerdictKind::kWrongAnswer);
  EXPECT_EQ(r.reason, "output mismatch");
  EXPECT_TRUE(r.mismatch.starts_with("correctness check: output 0")) << r.mismatch;
  EXPECT_TRUE(contains(r.mismatch, "in 1 of 1024 elements")) << r.mismatch;
  EXPECT_TRUE(contains(r.mismatch, "first mismatch at index [5]")) << r.mismatch;
  EXPECT_NEAR(*r.max_abs_error, 1.0, 1e-5);
}

TEST_F(JudgeWithFakeRunner, NaNOutputIsAMismatchCountedAsNaN) {
  const EvalResult r =
      judged(at("call", 0, [](FakeExchange& x) { outputs_of(x)[0] = std::nanf(""); }));
  EXPECT_EQ(r.verdict, VerdictKind::kWrongAnswer);
  EXPECT_EQ(r.reason, "output mismatch");
  EXPECT_TRUE(contains(r.mismatch, "in 1 of 1024 elements, 1 of them NaN/Inf")) << r.mismatch;
}

TEST_F(JudgeWithFakeRunner, AnAllNanOutputHasNoErrorSizeRatherThanZero) {
  const EvalResult r = judged(at("call", 0, [](FakeExchange& x) {
    for (int64_t i = 0; i < kElements; ++i) outputs_of(x)[i] = std::nanf("");
  }));
  EXPECT_EQ(r.verdict, VerdictKind::kWrongAnswer);
  EXPECT_FALSE(r.max_abs_error.has_value()) << *r.max_abs_error;
  EXPECT_FALSE(r.max_rel_error.has_value());
  EXPECT_TRUE(contains(r.mismatch, "1024 of them NaN/Inf; no element of it is finite"))
      << r.mismatch;
  EXPECT_FALSE(contains(r.mismatch, "max abs error 0")) << r.mismatch;
}

TEST_F(JudgeWithFakeRunner, OutputsTheCandidateNeverWroteStayPoisonedAndMismatch) {
  const EvalResult r = judged(at("call", 0, [](FakeExchange& x) {
    runner::host_fill32(x.outputs, x.poison, static_cast<size_t>(kElements) * sizeof(float));
  }));
  EXPECT_EQ(r.verdict, VerdictKind::kWrongAnswer);
  EXPECT_EQ(r.reason, "output mismatch");
}

TEST_F(JudgeWithFakeRunner, ModifiedInputsAreAWrongAnswer) {
  const EvalResult r =
      judged(at("call", 1, [](FakeExchange& x) { x.body["input_hashes"][1] = 1; }));
  EXPECT_EQ(r.verdict, VerdictKind::kWrongAnswer);
  EXPECT_EQ(r.reason, "inputs modified");
  EXPECT_TRUE(contains(r.feedback, "modified its input tensors, which are read-only"))
      << r.feedback;
}

TEST_F(JudgeWithFakeRunner, CallReplyWithoutInputHashesCountsAsModifiedInputs) {
  const EvalResult r = judged(at("call", 0, [](FakeExchange& x) { x.body.erase("input_hashes"); }));
  EXPECT_EQ(r.verdict, VerdictKind::kWrongAnswer);
  EXPECT_EQ(r.reason, "inputs modified");
}

TEST_F(JudgeWithFakeRunner, TwoRunsOfSetZeroThatDisagreeBeyondToleranceAreNondeterministic) {
  // Each run within tolerance of the expected output, the two apart by 1.8 tolerances.
  const auto shift = [](float sign) {
    return [sign](FakeExchange& x) {
      float& v = outputs_of(x)[0];
      v += sign * 0.9f * (1e-4f + 1e-4f * std::abs(v));
    };
  };
  const EvalResult r = judged(both(at("call", 0, shift(1.0f)), at("call", kSets, shift(-1.0f))));
  EXPECT_EQ(r.verdict, VerdictKind::kWrongAnswer);
  EXPECT_EQ(r.reason, "nondeterministic");
  EXPECT_TRUE(contains(r.feedback, "(1 elements of output 0 differ)")) << r.feedback;
}

TEST_F(JudgeWithFakeRunner, RunnerSilentInACorrectnessCallIsATimeoutWithinTheCallTimeout) {
  config_.call_timeout = milliseconds(3000);
  const EvalResult r = judged(at("call", 1, [](FakeExchange& x) { x.hangs = true; }));
  EXPECT_EQ(r.verdict, VerdictKind::kTimeout);
  EXPECT_EQ(r.reason, "the correctness check did not finish");
  EXPECT_TRUE(contains(r.feedback, "within 3.0 s during the correctness check")) << r.feedback;
  const auto calls = log_.of_step("call");
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_GT(calls[1].deadline_ms, 2000);
  EXPECT_LE(calls[1].deadline_ms, 3000);
}

// --- Timed calls ----------------------------------------------------------------------------

TEST_F(JudgeWithFakeRunner, WrongOutputOfOneTimedRunIsATimedOutputMismatch) {
  const EvalResult r = judged(at("timed", 4, [](FakeExchange& x) { outputs_of(x)[3] -= 1.0f; }));
  EXPECT_EQ(r.verdict, VerdictKind::kWrongAnswer);
  EXPECT_EQ(r.reason, "timed output mismatch");
  EXPECT_TRUE(r.mismatch.starts_with("a timed run: ")) << r.mismatch;
  EXPECT_TRUE(contains(r.feedback, "its output is incorrect in a timed run")) << r.feedback;
}

TEST_F(JudgeWithFakeRunner, TimedOutputsAreComparedAfterThePhaseAndTheFirstWrongOneDecides) {
  // The second timed output is wrong and the runner dies in the fourth call: the calls went on
  // past the wrong output (compared only once the phase was over), and it still decides.
  const EvalResult r =
      judged(both(at("timed", 1, [](FakeExchange& x) { outputs_of(x)[3] -= 1.0f; }),
                  at("timed", 3, [](FakeExchange& x) { x.dies = killed_by(SIGSEGV); })));
  EXPECT_EQ(r.verdict, VerdictKind::kWrongAnswer) << r.feedback;
  EXPECT_EQ(r.reason, "timed output mismatch");
  EXPECT_EQ(log_.of_step("timed").size(), 4u);
}

TEST_F(JudgeWithFakeRunner, TimedOutputsPastTheirMemoryBoundAreComparedAtOnce) {
  config_.unchecked_output_bytes = 0;
  const EvalResult r = judged(at("timed", 1, [](FakeExchange& x) { outputs_of(x)[3] -= 1.0f; }));
  EXPECT_EQ(r.verdict, VerdictKind::kWrongAnswer) << r.feedback;
  EXPECT_EQ(r.reason, "timed output mismatch");
  EXPECT_EQ(log_.of_step("timed").size(), 2u) << "no timed call after the wrong output";
}

TEST_F(JudgeWithFakeRunner, WarmupOutputsAreNotJudged) {
  const EvalResult r =
      judged(at("warmup", kEvery, [](FakeExchange& x) { outputs_of(x)[3] -= 1.0f; }));
  EXPECT_EQ(r.verdict, VerdictKind::kCorrect) << r.feedback;
}

TEST_F(JudgeWithFakeRunner, TimedCallReturningNonZeroIsARuntimeError) {
  const EvalResult r = judged(at("timed", 0, [](FakeExchange& x) { x.body["rc"] = 2; }));
  EXPECT_EQ(r.verdict, VerdictKind::kRuntimeError);
  EXPECT_EQ(r.reason, "kevin_forward returned non-zero during timing");
}

TEST_F(JudgeWithFakeRunner, TimedCallTheRunnerReportsFailedIsARuntimeErrorWithItsError) {
  const EvalResult r = judged(at("warmup", 1, [](FakeExchange& x) {
    x.body = {{"ok", false}, {"stage", "time"}, {"error", "cudaErrorIllegalAddress"}};
  }));
  EXPECT_EQ(r.verdict, VerdictKind::kRuntimeError);
  EXPECT_EQ(r.reason, "cudaErrorIllegalAddress");
}

TEST_F(JudgeWithFakeRunner, TimedCallWithoutANonNegativeEventTimeIsAMalformedTimingRecord) {
  // (A non-finite time cannot be written in JSON: 1e999 is a malformed reply.)
  for (const char* frame :
       {R"({"ok": true, "rc": 0})", R"({"ok": true, "rc": 0, "event_ms": -0.5})"}) {
    SCOPED_TRACE(frame);
    const EvalResult r = judged(at("timed", 2, [frame](FakeExchange& x) { x.frame = frame; }));
    EXPECT_EQ(r.verdict, VerdictKind::kRuntimeError);
    EXPECT_EQ(r.reason, "the process running the kernel returned a malformed timing record");
  }
}

TEST_F(JudgeWithFakeRunner, RunnerSilentInATimedCallIsATimeoutOfTiming) {
  const EvalResult r = judged(at("timed", 3, [](FakeExchange& x) { x.hangs = true; }));
  EXPECT_EQ(r.verdict, VerdictKind::kTimeout);
  EXPECT_EQ(r.reason, "timing did not finish");
  EXPECT_TRUE(contains(r.feedback, "within 20.0 s during timing")) << r.feedback;
}

TEST_F(JudgeWithFakeRunner, RunnerThatDiesInAWarmupCallIsARuntimeErrorOfTiming) {
  const EvalResult r = judged(at("warmup", 0, [](FakeExchange& x) { x.dies = killed_by(SIGBUS); }));
  EXPECT_EQ(r.verdict, VerdictKind::kRuntimeError);
  EXPECT_TRUE(contains(r.reason, "ended unexpectedly during timing (killed by signal 7"))
      << r.reason;
}

TEST_F(JudgeWithFakeRunner, TimedCallsDeadlineIsTheSoonerOfTheCallTimeoutAndTheTimingPhasesEnd) {
  config_.call_timeout = milliseconds(3000);
  ASSERT_EQ(judged().verdict, VerdictKind::kCorrect);
  for (const auto& timed : log_.of_step("timed")) EXPECT_GT(timed.deadline_ms, 2000);
  log_ = {};
  config_.timing_phase_limit = milliseconds(1000);
  ASSERT_EQ(judged().verdict, VerdictKind::kCorrect);
  for (const auto& timed : log_.of_step("timed")) EXPECT_LE(timed.deadline_ms, 1000);
}

TEST_F(JudgeWithFakeRunner, TimedCallPastTheTimingPhasesEndIsGivenAndToldOfOneMillisecond) {
  config_.timing_phase_limit = milliseconds(0);
  const EvalResult r = judged(
      both(at("warmup", 0, [](FakeExchange&) { std::this_thread::sleep_for(milliseconds(3)); }),
           at("warmup", 1, [](FakeExchange& x) { x.hangs = true; })));
  EXPECT_EQ(r.verdict, VerdictKind::kTimeout);
  EXPECT_TRUE(contains(r.feedback, "within 0.0 s during timing")) << r.feedback;
  const auto warmups = log_.of_step("warmup");
  ASSERT_EQ(warmups.size(), 2u);
  EXPECT_GT(warmups[1].deadline_ms, 0);
  EXPECT_LE(warmups[1].deadline_ms, 1);
}

// --- The timing protocol --------------------------------------------------------------------

TEST_F(JudgeWithFakeRunner, JudgeSpeaksTheProtocolInOrderWithAPoisonForEveryCommand) {
  ASSERT_EQ(judged().verdict, VerdictKind::kCorrect);
  std::vector<std::string> steps;
  for (const auto& request : log_.requests) {
    steps.push_back(request.step);
    EXPECT_TRUE(request.cmd.contains("next_poison")) << request.cmd.dump();
  }
  std::vector<std::string> expected = {"setup"};
  expected.insert(expected.end(), 10, "calibration");
  expected.push_back("load");
  expected.insert(expected.end(), kSets + 1, "call");
  expected.insert(expected.end(), 3, "warmup");
  expected.insert(expected.end(), kTimingSets, "timed");
  EXPECT_EQ(steps, expected);
  std::vector<size_t> call_sets, warmup_sets;
  for (const auto& c : log_.of_step("call")) call_sets.push_back(c.cmd.at("set").get<size_t>());
  for (const auto& w : log_.of_step("warmup")) warmup_sets.push_back(w.cmd.at("set").get<size_t>());
  EXPECT_EQ(call_sets, (std::vector<size_t>{0, 1, 2, 0})) << "every set, then set 0 again";
  EXPECT_EQ(warmup_sets, (std::vector<size_t>{0, 1, 2}));
  ASSERT_EQ(log_.starts.size(), 1u);
  EXPECT_EQ(log_.starts[0].inputs_file, ref_.inputs_file())
      << "the runner gets the inputs, never the expected outputs";
}

TEST_F(JudgeWithFakeRunner, DeterminismCallRunsUnderAnotherPoison) {
  std::vector<uint32_t> poisons;
  const auto keep = [&poisons](FakeExchange& x) { poisons.push_back(x.poison); };
  ASSERT_EQ(judged(both(at("call", 0, keep), at("call", kSets, keep))).verdict,
            VerdictKind::kCorrect);
  ASSERT_EQ(poisons.size(), 2u);
  EXPECT_NE(poisons[0], poisons[1]);
}

TEST_F(JudgeWithFakeRunner, EachTimingSetIsTimedOnceAndOnlyInTheSlot) {
  auto data = read_file(ref_.timing_inputs_file());
  ASSERT_TRUE(data.is_ok());
  const uint64_t set_bytes = layout_of(ref_.input_tensors()).set_bytes;
  std::set<uint64_t> timing_sets;
  for (size_t j = 0; j < kTimingSets; ++j)
    timing_sets.insert(runner::host_hash(data->data() + j * set_bytes, set_bytes));
  ASSERT_EQ(judged().verdict, VerdictKind::kCorrect);
  std::set<uint64_t> timed;
  for (const auto& t : log_.of_step("timed")) {
    EXPECT_FALSE(t.cmd.contains("set"));
    timed.insert(t.slot_hash);
  }
  EXPECT_EQ(log_.of_step("timed").size(), kTimingSets);
  EXPECT_EQ(timed, timing_sets) << "every timing set once, in the slot";
}

TEST_F(JudgeWithFakeRunner, TimedCallCountIsTheTimingBudgetOverTheCallTimeWithinItsBounds) {
  config_.min_timed_calls = 3;
  config_.max_timed_calls = 7;
  config_.timing_budget_ms =
      5.5;  // 5 calls of 1 ms (1.1 ms a correctness call, less 0.1 ms overhead)
  EXPECT_EQ(judged().timing->calls, 5);
  config_.timing_budget_ms = 0.5;
  EXPECT_EQ(judged().timing->calls, 3) << "at least the minimum";
  config_.timing_budget_ms = 1000;
  EXPECT_EQ(judged().timing->calls, 7) << "at most the maximum";
}

TEST_F(JudgeWithFakeRunner, NoMoreRunsAreTimedThanThereAreTimingSets) {
  ref_ = sums(4);
  ref_.baseline = baseline_of(2.0);
  EXPECT_EQ(judged().timing->calls, 4);
}

TEST_F(JudgeWithFakeRunner, SecondTimedBlockIsCutToTheTimingPhaseBudget) {
  config_.min_timed_calls = 4;
  config_.timing_phase_budget_ms = 1e-9;
  EXPECT_EQ(judged().timing->calls, 6)
      << "the first block (half of 12) is timed whole, and is the minimum already";
}

TEST_F(JudgeWithFakeRunner, HarnessOverheadIsTheLowQuintileOfTheCalibrationCalls) {
  // Calibration call i costs the judge (i + 1) tenths of a millisecond beyond its event time.
  const EvalResult r = judged(
      at("calibration", kEvery, [](FakeExchange& x) { took(x, 0.2 + 0.1 * (x.index + 1)); }));
  ASSERT_TRUE(r.harness_overhead_ms.has_value());
  EXPECT_NEAR(*r.harness_overhead_ms, 0.3, 1e-9);
}

// --- The judge's clock against the runner's --------------------------------------------------

// --- Adaptive timing and the speedup's interval --------------------------------------------------

// Every other timed call 1.5 ms instead of 1 ms: a median whose interval stays wide.
FakeScript alternating_times() {
  return at("timed", kEvery, [](FakeExchange& x) {
    if (x.index % 2) timed_at(1.5, 1.6)(x);
  });
}

TEST_F(JudgeWithFakeRunner, WithoutAnIntervalTargetEveryAffordableCallIsTimed) {
  ref_ = sums(40);
  ref_.baseline = baseline_of(2.0);
  const EvalResult r = judged();
  ASSERT_EQ(r.verdict, VerdictKind::kCorrect) << r.feedback;
  EXPECT_EQ(r.timing->calls, 40);
  EXPECT_EQ(log_.of_step("timed").size(), 40u);
}

TEST_F(JudgeWithFakeRunner, AStableKernelStopsOnceItsMedianIsTight) {
  ref_ = sums(40);
  ref_.baseline = baseline_of(2.0);
  config_.timing_ci = 0.02;
  const EvalResult r = judged();
  ASSERT_EQ(r.verdict, VerdictKind::kCorrect) << r.feedback;
  EXPECT_EQ(r.timing->calls, config_.min_timed_calls) << "constant times: tight at the minimum";
  EXPECT_EQ(log_.of_step("timed").size(), static_cast<size_t>(config_.min_timed_calls));
  ASSERT_TRUE(r.speedup_ci.has_value());
  EXPECT_DOUBLE_EQ(r.speedup_ci->first, 2.0);
  EXPECT_DOUBLE_EQ(r.speedup_ci->second, 2.0);
}

TEST_F(JudgeWithFakeRunner, ANoisyKernelIsTimedUntilTheBudgetAndItsIntervalShown) {
  ref_ = sums(40);
  TimingStats baseline = baseline_of(3.0);
  baseline.median_lo_ms = 2.7;
  baseline.median_hi_ms = 3.3;
  ref_.baseline = baseline;
  config_.timing_ci = 0.02;
  const EvalResult r = judged(alternating_times());
  ASSERT_EQ(r.verdict, VerdictKind::kCorrect) << r.feedback;
  EXPECT_EQ(r.timing->calls, 40) << "the interval never tightened";
  EXPECT_DOUBLE_EQ(r.timing->median_lo_ms, 1.0);
  EXPECT_DOUBLE_EQ(r.timing->median_hi_ms, 1.5);
  ASSERT_TRUE(r.speedup_ci.has_value());
  EXPECT_DOUBLE_EQ(r.speedup_ci->first, 2.7 / 1.5);
  EXPECT_DOUBLE_EQ(r.speedup_ci->second, 3.3 / 1.0);
  EXPECT_LE(r.speedup_ci->first, *r.speedup);
  EXPECT_GE(r.speedup_ci->second, *r.speedup);
  EXPECT_TRUE(contains(r.feedback, "(95% interval 1.80-3.30x)")) << r.feedback;
  const auto back = eval_result_from_json(to_json(r));
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_EQ(back->speedup_ci, r.speedup_ci);
}

TEST_F(JudgeWithFakeRunner, EventTimeLongerThanTheJudgesWaitIsTimerTampering) {
  const EvalResult r = judged(at("timed", 2, timed_at(1.2, 1.1)));
  EXPECT_EQ(r.verdict, VerdictKind::kRejected);
  EXPECT_EQ(r.reason, "timer_tampering");
  EXPECT_TRUE(contains(
      r.feedback, "timed run 3 reported 1.2 ms, longer than the 1.1 ms the judge waited for it"))
      << r.feedback;
  EXPECT_FALSE(r.speedup.has_value());
}

TEST_F(JudgeWithFakeRunner, EventTimeWithinFiftyMicrosecondsOfTheJudgesWaitIsBelieved) {
  const EvalResult r = judged(at("timed", kEvery, timed_at(1.14, 1.1)));
  EXPECT_EQ(r.verdict, VerdictKind::kCorrect) << r.feedback;
  EXPECT_NEAR(*r.candidate_ms, 1.14, 1e-9);
}

TEST_F(JudgeWithFakeRunner, TimeTheJudgeSawBeyondTheEventWindowIsOffStreamWork) {
  const EvalResult r = judged(at("timed", kEvery, timed_at(1.0, 3.1)));
  EXPECT_EQ(r.verdict, VerdictKind::kRejected);
  EXPECT_EQ(r.reason, "off_stream_work");
  EXPECT_TRUE(contains(
      r.feedback, "took the judge 2.0000 ms longer than the harness's overhead plus the 1.0000 ms"))
      << r.feedback;
  EXPECT_NEAR(*r.unaccounted_ms, 2.0, 1e-9);
  // Refused only once the overhead, measured again in a fresh runner, was no larger.
  EXPECT_NEAR(r.recalibrated_overhead_ms.value_or(-1), 0.1, 1e-9);
  EXPECT_EQ(log_.starts.size(), 2u);
}

TEST_F(JudgeWithFakeRunner, AMachineBusierSinceCalibrationIsMeasuredAgainBeforeARefusal) {
  // The harness costs 0.1 ms a call at calibration, then 2.1 ms once the machine is busy: an
  // honest 1 ms call takes 3.1 ms. A fresh runner, started after the answer's is stopped,
  // measures the harness at 2.1 ms; the answer is judged against that.
  const EvalResult r = judged(both(at("timed", kEvery,
                                      [](FakeExchange& x) {
                                        x.body["event_ms"] = 1.0;
                                        took(x, 3.1);
                                        x.printed = x.index == 0 ? "from the answer\n" : "";
                                      }),
                                   at("calibration", kEvery, [](FakeExchange& x) {
                                     if (x.runner == 1) took(x, 0.2 + 2.1);
                                   })));
  ASSERT_EQ(r.verdict, VerdictKind::kCorrect) << r.feedback;
  EXPECT_NEAR(*r.recalibrated_overhead_ms, 2.1, 1e-9);
  EXPECT_NEAR(*r.harness_overhead_ms, 2.1, 1e-9);
  EXPECT_NEAR(*r.candidate_ms, 1.0, 1e-9);
  // The fresh runner was set up and calibrated, never given the answer; both were finished,
  // and what the answer printed is still its output.
  ASSERT_EQ(log_.starts.size(), 2u);
  EXPECT_EQ(log_.of_step("load").size(), 1u);
  EXPECT_EQ(log_.of_step("setup").size(), 2u);
  EXPECT_EQ(log_.finished, 2);
  EXPECT_EQ(r.runner_output, "from the answer\n");
}

TEST_F(JudgeWithFakeRunner, AQuieterMachineSinceCalibrationKeepsTheFirstOverhead) {
  // The larger measure stands: a fresh runner that finds the harness cheaper changes nothing.
  const EvalResult r = judged(
      both(at("timed", kEvery, timed_at(1.0, 3.1)), at("calibration", kEvery, [](FakeExchange& x) {
             if (x.runner == 1) took(x, 0.2 + 0.01);
           })));
  EXPECT_EQ(r.reason, "off_stream_work");
  EXPECT_NEAR(*r.recalibrated_overhead_ms, 0.01, 1e-9);
  EXPECT_NEAR(*r.harness_overhead_ms, 0.1, 1e-9);
}

TEST_F(JudgeWithFakeRunner, AFreshRunnerThatCannotCalibrateIsTheHarnessError) {
  const Status s = failed(
      both(at("timed", kEvery, timed_at(1.0, 3.1)), at("calibration", 0, [](FakeExchange& x) {
             if (x.runner > 0) x.dies = exited_with(1);
           })));
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_TRUE(contains(s.message(), "the runner failed while calibrating")) << s.message();
}

TEST_F(JudgeWithFakeRunner, CallsWithinTheirWindowsAreNotMeasuredAgain) {
  const EvalResult r = judged();
  ASSERT_EQ(r.verdict, VerdictKind::kCorrect) << r.feedback;
  EXPECT_FALSE(r.recalibrated_overhead_ms.has_value());
  EXPECT_EQ(log_.starts.size(), 1u);
}

TEST_F(JudgeWithFakeRunner, OffStreamWorkOnShortCallsIsJudgedAgainstFourClockAllowances) {
  // Overhead 0.4 ms, so the allowance is 0.1 ms; the limit is 4 of them (half of a 0.1 ms event is
  // less).
  times_.calibration_judge_ms = 0.6;
  const EvalResult within = judged(at("timed", kEvery, timed_at(0.1, 0.1 + 0.4 + 0.35)));
  EXPECT_EQ(within.verdict, VerdictKind::kCorrect) << within.feedback;
  const EvalResult beyond = judged(at("timed", kEvery, timed_at(0.1, 0.1 + 0.4 + 0.45)));
  EXPECT_EQ(beyond.reason, "off_stream_work");
}

TEST_F(JudgeWithFakeRunner, OffStreamWorkOnLongCallsIsJudgedAgainstHalfTheEventTime) {
  const EvalResult within = judged(at("timed", kEvery, timed_at(10, 10 + 0.1 + 4.5)));
  EXPECT_EQ(within.verdict, VerdictKind::kCorrect) << within.feedback;
  const EvalResult beyond = judged(at("timed", kEvery, timed_at(10, 10 + 0.1 + 5.5)));
  EXPECT_EQ(beyond.reason, "off_stream_work");
}

TEST_F(JudgeWithFakeRunner, TimeBeyondTheEventWindowIsChargedLessAQuarterOfTheHarnessOverhead) {
  // Overhead 0.1 ms: the allowance is 0.025 ms, more than the 0.02 ms slack.
  const EvalResult r = judged(at("timed", kEvery, timed_at(1.0, 1.4)));
  ASSERT_EQ(r.verdict, VerdictKind::kCorrect) << r.feedback;
  EXPECT_NEAR(*r.candidate_ms, 1.3 - 0.025, 1e-9);
  EXPECT_NEAR(*r.unaccounted_ms, 0.3, 1e-9);
}

TEST_F(JudgeWithFakeRunner, TimeBeyondTheEventWindowIsChargedLessTheSlackWhenTheHarnessIsFast) {
  times_.calibration_judge_ms =
      0.21;  // overhead 0.01 ms: a quarter of it is under the 0.02 ms slack
  const EvalResult r = judged(at("timed", kEvery, timed_at(1.0, 1.21)));
  ASSERT_EQ(r.verdict, VerdictKind::kCorrect) << r.feedback;
  EXPECT_NEAR(*r.candidate_ms, 1.2 - 0.02, 1e-9);
}

TEST_F(JudgeWithFakeRunner, OnTheCpuTheRunnersCpuTimeNotTheWallClockMeasuresTheWork) {
  const EvalResult r = judged(at("timed", kEvery, [](FakeExchange& x) {
    x.judge_ms = 5.0;  // waiting for a core on a loaded machine
    x.cpu_ms = 1.1;
  }));
  ASSERT_EQ(r.verdict, VerdictKind::kCorrect) << r.feedback;
  EXPECT_DOUBLE_EQ(*r.candidate_ms, 1.0);
  for (const auto& timed : log_.of_step("timed")) {
    EXPECT_TRUE(timed.measure_cpu);
    EXPECT_FALSE(timed.spin);
  }
}

TEST_F(JudgeWithFakeRunner, OnTheCpuWorkInOtherThreadsIsOffStreamWork) {
  const EvalResult r = judged(at("timed", kEvery, [](FakeExchange& x) { x.cpu_ms = 3.1; }));
  EXPECT_EQ(r.verdict, VerdictKind::kRejected);
  EXPECT_EQ(r.reason, "off_stream_work");
}

TEST_F(JudgeWithFakeRunner, OnTheCpuAnUnknownCpuTimeFallsBackToTheJudgesClock) {
  const EvalResult r = judged(at("timed", kEvery, [](FakeExchange& x) {
    x.judge_ms = 3.1;
    x.cpu_ms.reset();
  }));
  EXPECT_EQ(r.verdict, VerdictKind::kRejected);
  EXPECT_EQ(r.reason, "off_stream_work");
}

TEST_F(JudgeWithFakeRunner, ATimingSetTravelsWithItsOwnRequestOnly) {
  // The runner session writes it into the slot after the previous call's ready frame, inside
  // the judge's clock (runner_session_test.cpp); the judge never touches the slot itself.
  const EvalResult r = judged();
  ASSERT_EQ(r.verdict, VerdictKind::kCorrect) << r.feedback;
  const size_t set_bytes = log_.of_step("timed").front().slot_set_bytes;
  EXPECT_GT(set_bytes, 0u);
  for (const char* step : {"calibration", "timed"}) {
    for (const auto& req : log_.of_step(step)) EXPECT_EQ(req.slot_set_bytes, set_bytes) << step;
  }
  for (const char* step : {"setup", "load", "call", "warmup"}) {
    for (const auto& req : log_.of_step(step)) EXPECT_EQ(req.slot_set_bytes, 0u) << step;
  }
}

TEST_F(JudgeWithFakeRunner, OnTheGpuTimedCallsAreSpunForAndTheJudgesWallClockMeasuresTheWork) {
  config_.backend = Backend::kCuda;
  const EvalResult r = judged(at("timed", kEvery, [](FakeExchange& x) { x.cpu_ms = 50; }));
  ASSERT_EQ(r.verdict, VerdictKind::kCorrect) << r.feedback;
  EXPECT_DOUBLE_EQ(*r.candidate_ms, 1.0);
  EXPECT_EQ(r.device_ordinal, 0);
  for (const auto& timed : log_.of_step("timed")) {
    EXPECT_TRUE(timed.spin);
    EXPECT_FALSE(timed.measure_cpu);
  }
  for (const auto& call : log_.of_step("call")) EXPECT_FALSE(call.spin);
}

// --- The baseline ---------------------------------------------------------------------------

TEST_F(JudgeWithFakeRunner, CloseComparisonRetimesTheBaselineOnceTheCandidateIsGone) {
  ref_.baseline = baseline_of(1.1);
  std::vector<size_t> timed_before, finished_before;
  EvalHooks hooks;
  hooks.retime_baseline = [&](const TwoStepHold&) -> Result<TimingStats> {
    timed_before.push_back(log_.of_step("timed").size());
    finished_before.push_back(static_cast<size_t>(log_.finished));
    return baseline_of(1.05);
  };
  const EvalResult r = judged({}, hooks);
  ASSERT_EQ(r.verdict, VerdictKind::kCorrect) << r.feedback;
  // After every timed call, with the candidate's runner already told to exit.
  EXPECT_EQ(timed_before, (std::vector<size_t>{12}));
  EXPECT_EQ(finished_before, (std::vector<size_t>{1}));
  EXPECT_EQ(r.baseline_source, "retimed");
  EXPECT_NEAR(*r.baseline_ms, 1.05, 1e-9);
  EXPECT_NEAR(*r.speedup, 1.05, 1e-9);
  EXPECT_FALSE(r.baseline_retimes_refused.has_value());
}

TEST_F(JudgeWithFakeRunner, ARetimeSharesTheDeviceWhileItsSetsAreBuiltAndHoldsItAloneForItsCalls) {
  // A neighbour's correctness call (a shared hold) asks for the device while the re-time
  // builds its sets, and again once its calls run: the first gets it, the second waits.
  config_.gate = &gate_;
  ref_.baseline = baseline_of(1.1);
  const auto neighbour = [this](std::atomic<bool>* got) {
    return std::thread([this, got] {
      gate_.lock_shared();
      *got = true;
      gate_.unlock_shared();
    });
  };
  std::atomic<bool> got_while_building{false}, got_while_timing{false};
  bool ran_while_building = false, ran_while_timing = true;
  std::thread waiting;
  EvalHooks hooks;
  hooks.retime_baseline = [&](const TwoStepHold& hold) -> Result<TimingStats> {
    hold.share();
    std::thread building = neighbour(&got_while_building);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ran_while_building = got_while_building;
    building.join();
    hold.alone();
    waiting = neighbour(&got_while_timing);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ran_while_timing = got_while_timing;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    return baseline_of(1.05);
  };
  const EvalResult r = judged({}, hooks);
  waiting.join();
  ASSERT_EQ(r.verdict, VerdictKind::kCorrect) << r.feedback;
  EXPECT_EQ(r.baseline_source, "retimed");
  EXPECT_TRUE(ran_while_building) << "the device is shared while the sets are built";
  EXPECT_FALSE(ran_while_timing) << "the baseline's calls hold it alone";
  EXPECT_TRUE(got_while_timing) << "released once the re-time is over";
  // The fake runner's own calibration and timed calls take a few ms; the re-time's 300.
  EXPECT_GE(r.phases.alone_ms, 300) << "the baseline's calls count as time held alone";
}

TEST_F(JudgeWithFakeRunner, ARetimeFasterThanTheCachedBaselineIsUsed) {
  ref_.baseline = baseline_of(1.1);
  EvalHooks hooks;
  hooks.retime_baseline = [&](const TwoStepHold&) -> Result<TimingStats> {
    return baseline_of(0.9);
  };
  const EvalResult r = judged({}, hooks);
  ASSERT_EQ(r.verdict, VerdictKind::kCorrect) << r.feedback;
  EXPECT_EQ(r.baseline_source, "retimed");
  EXPECT_NEAR(*r.speedup, 0.9, 1e-9);
}

TEST_F(JudgeWithFakeRunner, ARetimeFarSlowerThanTheCachedBaselineIsTimedAgainThenRefused) {
  // A machine made busy while the baseline is re-timed: 20x slower every time.
  ref_.baseline = baseline_of(1.1);
  int retimed = 0;
  EvalHooks hooks;
  hooks.retime_baseline = [&](const TwoStepHold&) -> Result<TimingStats> {
    ++retimed;
    return baseline_of(22);
  };
  const EvalResult r = judged({}, hooks);
  ASSERT_EQ(r.verdict, VerdictKind::kCorrect) << r.feedback;
  EXPECT_EQ(retimed, 3);
  EXPECT_EQ(r.baseline_source, "cached");
  EXPECT_NEAR(*r.baseline_ms, 1.1, 1e-9);
  EXPECT_NEAR(*r.speedup, 1.1, 1e-9);
  EXPECT_EQ(r.baseline_retimes_refused, 3);
  EXPECT_NE(dump_json(to_json(r)).find("\"baseline_retimes_refused\":3"), std::string::npos);
}

TEST_F(JudgeWithFakeRunner, ASlowRetimeIsNoiseAndTheNextOneWithinTheDriftIsUsed) {
  ref_.baseline = baseline_of(1.1);
  std::vector<double> medians = {30, 1.2};  // the second is within 10 % of 1.1
  size_t retimed = 0;
  EvalHooks hooks;
  hooks.retime_baseline = [&](const TwoStepHold&) -> Result<TimingStats> {
    return baseline_of(medians[retimed++]);
  };
  const EvalResult r = judged({}, hooks);
  ASSERT_EQ(r.verdict, VerdictKind::kCorrect) << r.feedback;
  EXPECT_EQ(retimed, 2u);
  EXPECT_EQ(r.baseline_source, "retimed");
  EXPECT_NEAR(*r.baseline_ms, 1.2, 1e-9);
}

TEST_F(JudgeWithFakeRunner, ShakyComparisonRetimesTheBaseline) {
  ref_.baseline = baseline_of(1.8);  // a speedup of 1.8: not close, but within 2x
  int retimed = 0;
  EvalHooks hooks;
  hooks.retime_baseline = [&](const TwoStepHold&) -> Result<TimingStats> {
    ++retimed;
    return baseline_of(1.8);
  };
  // The first block's p90 is twice its median.
  const EvalResult r =
      judged(both(at("timed", 4, timed_at(2.0, 2.1)), at("timed", 5, timed_at(2.0, 2.1))), hooks);
  ASSERT_EQ(r.verdict, VerdictKind::kCorrect) << r.feedback;
  EXPECT_EQ(retimed, 1);
}

TEST_F(JudgeWithFakeRunner, DistantComparisonKeepsTheCachedBaseline) {
  ref_.baseline = baseline_of(10);
  int retimed = 0;
  EvalHooks hooks;
  hooks.retime_baseline = [&](const TwoStepHold&) -> Result<TimingStats> {
    ++retimed;
    return baseline_of(10);
  };
  const EvalResult r = judged({}, hooks);
  ASSERT_EQ(r.verdict, VerdictKind::kCorrect) << r.feedback;
  EXPECT_EQ(retimed, 0);
  EXPECT_EQ(r.baseline_source, "cached");
}

TEST_F(JudgeWithFakeRunner, BaselineRetimingFailureIsTheHarnessError) {
  ref_.baseline = baseline_of(1.0);
  EvalHooks hooks;
  hooks.retime_baseline = [](const TwoStepHold&) -> Result<TimingStats> {
    return unavailable("the reference worker died");
  };
  const Status s = failed({}, hooks);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_EQ(s.message(), "the reference worker died");
}

TEST_F(JudgeWithFakeRunner, CorrectCandidateWithoutABaselineHasNoSpeedup) {
  ref_.baseline.reset();
  const EvalResult r = judged();
  ASSERT_EQ(r.verdict, VerdictKind::kCorrect) << r.feedback;
  EXPECT_FALSE(r.speedup.has_value());
  EXPECT_FALSE(r.baseline_ms.has_value());
  EXPECT_TRUE(r.feedback.ends_with("each on inputs it had not seen).")) << r.feedback;
}

TEST_F(JudgeWithFakeRunner, SlowerCandidateIsToldToLookForAFasterApproach) {
  ref_.baseline = baseline_of(0.5);
  const EvalResult r = judged();
  ASSERT_EQ(r.verdict, VerdictKind::kCorrect) << r.feedback;
  EXPECT_DOUBLE_EQ(*r.speedup, 0.5);
  EXPECT_TRUE(contains(r.feedback, "a speedup of 0.50x. It is slower than the reference"))
      << r.feedback;
}

TEST_F(JudgeWithFakeRunner, CompileBaselineIsTheSpeedupsAndEagersIsReportedBesideIt) {
  ref_.baseline = baseline_of(1.5);  // torch.compile's time
  ref_.baseline_kind = BaselineKind::kCompile;
  ref_.eager_baseline = baseline_of(4.0);
  const EvalResult r = judged();
  ASSERT_EQ(r.verdict, VerdictKind::kCorrect) << r.feedback;
  EXPECT_DOUBLE_EQ(*r.speedup, 1.5);
  EXPECT_DOUBLE_EQ(*r.speedup_vs_eager, 4.0);
  EXPECT_DOUBLE_EQ(*r.eager_baseline_ms, 4.0);
  EXPECT_TRUE(contains(r.feedback,
                       "against 1.5 ms for the PyTorch reference under torch.compile: a speedup "
                       "of 1.50x (4.00x against eager PyTorch's 4 ms)."))
      << r.feedback;
  const Json j = to_json(r);
  EXPECT_EQ(j["baseline_kind"], "compile");
  EXPECT_DOUBLE_EQ(j["speedup_vs_eager"].get<double>(), 4.0);
  auto back = eval_result_from_json(j);
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_EQ(back->baseline_kind, BaselineKind::kCompile);
  EXPECT_EQ(to_json(*back), j);

  const EvalResult wrong = judged(at("call", 0, [](FakeExchange& x) { outputs_of(x)[0] += 1.0f; }));
  EXPECT_FALSE(wrong.speedup_vs_eager.has_value()) << "no speedup of any kind for a wrong answer";
}

TEST_F(JudgeWithFakeRunner, EagerBaselineIsNamedInTheJsonAndNoSecondSpeedupIsGiven) {
  const EvalResult r = judged();
  ASSERT_EQ(r.verdict, VerdictKind::kCorrect) << r.feedback;
  EXPECT_EQ(to_json(r)["baseline_kind"], "eager");
  EXPECT_FALSE(r.speedup_vs_eager.has_value());
  EXPECT_FALSE(contains(r.feedback, "torch.compile")) << r.feedback;
  Json unknown = to_json(r);
  unknown["baseline_kind"] = "jit";
  auto refused = eval_result_from_json(unknown);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_TRUE(contains(refused.status().message(), "baseline_kind")) << refused.status().message();
}

// --- The result as JSON -----------------------------------------------------------------------

TEST_F(JudgeWithFakeRunner, ResultReadsBackFromItsJsonForm) {
  for (const EvalResult& r :
       {judged(), judged(at("call", 1, [](FakeExchange& x) { outputs_of(x)[5] += 1.0f; })),
        judged(at("timed", kEvery, timed_at(1.0, 3.1)))}) {  // with a recalibrated overhead
    SCOPED_TRACE(verdict_name(r.verdict));
    auto back = eval_result_from_json(to_json(r));
    ASSERT_TRUE(back.is_ok()) << back.status().to_string();
    EXPECT_EQ(to_json(*back), to_json(r));
  }
}

TEST_F(JudgeWithFakeRunner, ResultJsonWithAnUnknownVerdictOrAMistypedFieldIsRefusedNamingIt) {
  Json j = to_json(judged());
  j["speedup"] = "fast";
  auto mistyped = eval_result_from_json(j);
  ASSERT_FALSE(mistyped.is_ok());
  EXPECT_EQ(mistyped.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(contains(mistyped.status().message(), "speedup")) << mistyped.status().message();
  j["verdict"] = "brilliant";
  auto unknown = eval_result_from_json(j);
  ASSERT_FALSE(unknown.is_ok());
  EXPECT_TRUE(contains(unknown.status().message(), "unknown verdict \"brilliant\""))
      << unknown.status().message();
}

// --- Faults a neighbour on a shared GPU could cause ------------------------------------------

TEST_F(JudgeWithFakeRunner, TimeoutWhileSharingTheGpuIsJudgedAgainWithTheGpuHeldAlone) {
  const EvalResult r = judged_hanging_once_beside_a_neighbour("call", 1);
  EXPECT_EQ(r.verdict, VerdictKind::kCorrect) << r.feedback;
  EXPECT_EQ(log_.starts.size(), 2u);
}

TEST_F(JudgeWithFakeRunner, TimeoutWithTheGpuToItselfIsNotJudgedAgain) {
  // Nobody else held the device during the call that hung, so nobody slowed it: a retry would
  // only hold every other evaluation off the device for another call timeout.
  config_.gate = &gate_;
  config_.call_timeout = milliseconds(400);
  a_neighbour_uses_the_device(milliseconds(100));  // before the evaluation, not beside the call
  const EvalResult r = judged(at("call", 1, [](FakeExchange& x) { x.hangs = true; }));
  EXPECT_EQ(r.verdict, VerdictKind::kTimeout);
  EXPECT_EQ(log_.starts.size(), 1u);
}

TEST_F(JudgeWithFakeRunner, TimeoutANeighbourBarelySharedIsNotJudgedAgain) {
  // A runner starting beside a hang (its setup holds the device for moments) takes far less
  // than a tenth of a 3 s call: without it the call would still have run out of time.
  config_.gate = &gate_;
  config_.call_timeout = milliseconds(3000);
  const EvalResult r = judged(at("call", 1, [this](FakeExchange& x) {
    x.hangs = true;
    a_neighbour_uses_the_device(milliseconds(20));
  }));
  EXPECT_EQ(r.verdict, VerdictKind::kTimeout);
  EXPECT_EQ(log_.starts.size(), 1u);
}

TEST_F(JudgeWithFakeRunner, LoadTimingOutBesideANeighbourIsJudgedAgain) {
  const EvalResult r = judged_hanging_once_beside_a_neighbour("load", 0);
  EXPECT_EQ(r.verdict, VerdictKind::kCorrect) << r.feedback;
  EXPECT_EQ(log_.starts.size(), 2u);
}

TEST_F(JudgeWithFakeRunner, OutOfMemoryWhileSharingTheGpuIsJudgedAgain) {
  config_.gate = &gate_;
  const EvalResult r = judged(at("call", 0, [this](FakeExchange& x) {
    if (log_.starts.size() == 1)
      x.body = {{"ok", false}, {"error", "cudaErrorMemoryAllocation: out of memory"}};
  }));
  EXPECT_EQ(r.verdict, VerdictKind::kCorrect) << r.feedback;
  EXPECT_EQ(log_.starts.size(), 2u);
}

TEST_F(JudgeWithFakeRunner, FaultWhileTimedIsNotJudgedAgain) {
  config_.gate = &gate_;
  const EvalResult r = judged(at("timed", 0, [](FakeExchange& x) { x.hangs = true; }));
  EXPECT_EQ(r.verdict, VerdictKind::kTimeout);
  EXPECT_EQ(log_.starts.size(), 1u);
}

TEST_F(JudgeWithFakeRunner, WrongAnswerWhileSharingTheGpuIsNotJudgedAgain) {
  config_.gate = &gate_;
  const EvalResult r = judged(at("call", 0, [](FakeExchange& x) { outputs_of(x)[0] += 1.0f; }));
  EXPECT_EQ(r.verdict, VerdictKind::kWrongAnswer);
  EXPECT_EQ(log_.starts.size(), 1u);
}

TEST_F(JudgeWithFakeRunner, WaitingForTheDeviceGateIsReportedApartFromTheWork) {
  config_.gate = &gate_;
  gate_.lock();  // another evaluation is timing: this one's shared steps wait for it
  std::thread timing_elsewhere([this] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    gate_.unlock();
  });
  const EvalResult r = judged();
  timing_elsewhere.join();
  ASSERT_EQ(r.verdict, VerdictKind::kCorrect) << r.feedback;
  EXPECT_GE(r.phases.gate_wait_ms, 250);
  EXPECT_LE(r.phases.gate_wait_ms,
            r.phases.start_ms + r.phases.load_ms + r.phases.check_ms + r.phases.time_ms);
  EXPECT_DOUBLE_EQ(to_json(r)["phases_ms"]["gate_wait"].get<double>(), r.phases.gate_wait_ms);
  EXPECT_EQ(judged().phases.gate_wait_ms < 250, true) << "nobody else holds the gate now";
}

TEST_F(JudgeWithFakeRunner, TimeHeldAloneCountsTheTimedCallsAndNotTheSharedOnes) {
  config_.gate = &gate_;
  const auto sleep_ms = [](int ms) {
    return [ms](FakeExchange&) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); };
  };
  // 150 ms in a correctness call (the device shared), 60 ms in a timed call (held alone).
  const EvalResult r = judged(both(at("call", 0, sleep_ms(150)), at("timed", 0, sleep_ms(60))));
  ASSERT_EQ(r.verdict, VerdictKind::kCorrect) << r.feedback;
  EXPECT_GE(r.phases.alone_ms, 60);
  EXPECT_LT(r.phases.alone_ms, 150) << "the shared correctness call is not time held alone";
  EXPECT_LE(r.phases.alone_ms, r.phases.load_ms + r.phases.time_ms);
  const Json phases = to_json(r)["phases_ms"];
  EXPECT_DOUBLE_EQ(phases["alone"].get<double>(), r.phases.alone_ms);
  EXPECT_DOUBLE_EQ(phases["start"].get<double>(), r.phases.start_ms);
}

TEST_F(JudgeWithFakeRunner, CalibrationHoldsTheDeviceAloneAsTheTimedCallsDo) {
  // A neighbour's correctness call (a shared hold) asks for the device during the first
  // exchange of each step: it must wait through calibration and timing, not through checking.
  config_.gate = &gate_;
  std::map<std::string, bool> neighbour_ran;  // step → the neighbour got the device meanwhile
  std::vector<std::thread> neighbours;
  std::vector<std::shared_ptr<std::atomic<bool>>> flags;
  const EvalResult r = judged([&](FakeExchange& x) {
    if (x.index != 0 || neighbour_ran.count(x.step)) return;
    auto got = flags.emplace_back(std::make_shared<std::atomic<bool>>(false));
    neighbours.emplace_back([this, got] {
      gate_.lock_shared();
      *got = true;
      gate_.unlock_shared();
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    neighbour_ran[x.step] = got->load();
  });
  for (auto& t : neighbours) t.join();
  ASSERT_EQ(r.verdict, VerdictKind::kCorrect) << r.feedback;
  EXPECT_FALSE(neighbour_ran.at("calibration"));
  EXPECT_FALSE(neighbour_ran.at("timed"));
  EXPECT_TRUE(neighbour_ran.at("call"));
}

TEST_F(JudgeWithFakeRunner, TimeoutWithoutADeviceGateIsNotJudgedAgain) {
  const EvalResult r = judged(at("call", 0, [](FakeExchange& x) { x.hangs = true; }));
  EXPECT_EQ(r.verdict, VerdictKind::kTimeout);
  EXPECT_EQ(log_.starts.size(), 1u);
}

TEST_F(JudgeWithFakeRunner, EveryRunnerIsFinishedWhateverBecameOfIt) {
  ASSERT_EQ(judged_hanging_once_beside_a_neighbour("call", 0).verdict, VerdictKind::kCorrect);
  ASSERT_EQ(judged(at("call", 0, [](FakeExchange& x) { x.dies = killed_by(SIGSEGV); })).verdict,
            VerdictKind::kRuntimeError);
  EXPECT_EQ(log_.starts.size(), 3u) << "one retried after a timeout; a crash is not retried";
  EXPECT_EQ(log_.finished, 3);
}

}  // namespace
}  // namespace kevin::engine
