// protocol_test.cpp — the judge–runner protocol: the codec round-trips every command and reply
// and refuses what it cannot read, and both real runners (kevin-runner with a compiled
// candidate, kernelbench_runner.py with a PyTorch answer) pass the same scripted exchange with
// the same replies, field by field, and the same bytes in the output staging area.
#include "engine/runner/protocol.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/file.h"
#include "engine/harness_math.h"
#include "engine/runner/host_kernels.h"
#include "engine/run/runner_session.h"
#include "sys/tempdir.h"

namespace kevin::runner_protocol {
namespace {
namespace fs = std::filesystem;

// ---- The codec.

runner_protocol::Setup a_setup() {
  runner_protocol::Setup s;
  s.backend = "cpu";
  s.sets = 2;
  s.set_bytes = 32;
  s.output_bytes = 16;
  s.scalars = {{1.5}, {2.5}};
  s.inputs = {{0, {4}, 0, 16}, {0, {4}, 16, 16}};
  s.outputs = {{0, {2, 2}, 0, 16}};
  s.cpu_seconds = 600;
  s.output_limit = 1 << 20;
  s.next_poison = 77;
  return s;
}

Load a_kernelbench_load() {
  Load l;
  l.next_poison = 9;
  l.data_symbols = {16, 32};
  l.extensions = {"sum_ext"};
  l.args = {{"a", "input"}, {"weight", "parameter"}};
  l.forward_args = {"tensor", "scalar"};
  l.scalar_kinds = {"float"};
  l.init_inputs = Json::array({3, 4.5});
  return l;
}

Command round_trip(const Command& c) {
  auto back = decode_command(encode(c));
  EXPECT_TRUE(back.is_ok()) << back.status().to_string();
  return back.is_ok() ? *back : Command(Exit{});
}

TEST(RunnerProtocol, EveryCommandRoundTripsThroughItsFrame) {
  const auto setup = std::get<runner_protocol::Setup>(round_trip(a_setup()));
  EXPECT_EQ(setup.scalars, a_setup().scalars);
  ASSERT_EQ(setup.inputs.size(), 2u);
  EXPECT_EQ(setup.inputs[1].offset, 16u);
  EXPECT_EQ(setup.outputs[0].shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(setup.next_poison, 77u);
  EXPECT_EQ(setup.op_log_library, "");

  const auto load = std::get<Load>(round_trip(a_kernelbench_load()));
  EXPECT_EQ(load.data_symbols, (std::vector<uint64_t>{16, 32}));
  EXPECT_EQ(load.extensions, std::vector<std::string>{"sum_ext"});
  ASSERT_EQ(load.args.size(), 2u);
  EXPECT_EQ(load.args[1].role, "parameter");
  EXPECT_EQ(load.init_inputs, Json::array({3, 4.5}));

  const auto call = std::get<Call>(round_trip(Call{1, 5}));
  EXPECT_EQ(call.set, 1u);
  EXPECT_EQ(call.next_poison, 5u);
  const auto warmup = std::get<TimeCall>(round_trip(TimeCall{0, {}, 6}));
  EXPECT_FALSE(warmup.on_slot());
  const auto timed = std::get<TimeCall>(round_trip(TimeCall{std::nullopt, {0.5}, 7}));
  EXPECT_TRUE(timed.on_slot());
  EXPECT_EQ(timed.slot_scalars, std::vector<double>{0.5});
  EXPECT_TRUE(std::holds_alternative<Resume>(round_trip(Resume{})));
  EXPECT_TRUE(std::holds_alternative<Exit>(round_trip(Exit{})));
}

TEST(RunnerProtocol, AnAbiLoadCarriesNoKernelBenchFields) {
  Load l;
  l.data_symbols = {8};
  const Json frame = encode(l);
  EXPECT_FALSE(frame.contains("extensions"));
  EXPECT_FALSE(frame.contains("init_inputs"));
  EXPECT_EQ(frame.at("cmd"), "load");
}

TEST(RunnerProtocol, AFrameThatCannotBeReadNamesWhat) {
  const auto refused = [](Json frame) {
    auto c = decode_command(frame);
    EXPECT_FALSE(c.is_ok());
    return c.is_ok() ? std::string() : c.status().message();
  };
  EXPECT_EQ(refused({{"cmd", "fly"}}), "unknown command 'fly'");
  EXPECT_EQ(refused({{"set", 1}}), "missing field \"cmd\"");
  EXPECT_EQ(refused({{"cmd", "call"}, {"set", 1}}), "missing field \"next_poison\"");
  EXPECT_EQ(refused({{"cmd", "time_call"}, {"next_poison", 1}}), "missing field \"slot_scalars\"");
  Json setup = encode(a_setup());
  setup["inputs"][0].erase("bytes");
  EXPECT_EQ(refused(setup), "missing field \"bytes\"");
  setup = encode(a_setup());
  setup["sets"] = "two";
  EXPECT_NE(refused(setup).find("field \"sets\""), std::string::npos);
}

TEST(RunnerProtocol, EveryReplyRoundTripsAsTheReplyToItsCommand) {
  const Reply setup = decode_reply(a_setup(), encode(SetupReply{"cpu", 64, {1, 2}, {"a"}, {"b"}}));
  const auto& s = std::get<SetupReply>(setup);
  EXPECT_EQ(s.device, "cpu");
  EXPECT_EQ(s.workspace_bytes, 64u);
  EXPECT_EQ(s.input_hashes, (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(s.enforced, std::vector<std::string>{"a"});
  EXPECT_EQ(s.skipped, std::vector<std::string>{"b"});
  EXPECT_EQ(std::get<LoadReply>(decode_reply(Load{}, encode(LoadReply{12}))).static_bytes, 12u);
  const auto called = std::get<CallReply>(decode_reply(Call{}, encode(CallReply{3, {4}})));
  EXPECT_EQ(called.rc, 3);
  EXPECT_EQ(called.input_hashes, std::vector<uint64_t>{4});
  const auto timed =
      std::get<TimeCallReply>(decode_reply(TimeCall{}, encode(TimeCallReply{0, 1.25})));
  EXPECT_EQ(timed.event_ms, 1.25);
  const auto failed = std::get<Failure>(decode_reply(Call{}, encode(Failure{"call", "boom"})));
  EXPECT_EQ(failed.stage, "call");
  EXPECT_EQ(failed.error, "boom");
  EXPECT_TRUE(decode_ready(encode(Ready{true, ""})).ready);
  EXPECT_EQ(decode_ready(encode(Ready{false, "scrub"})).error, "scrub");
}

TEST(RunnerProtocol, MissingFieldsTakeTheJudgesDefaultsAndNoOkIsAFailure) {
  EXPECT_TRUE(std::holds_alternative<Failure>(decode_reply(Call{}, Json{{"rc", 0}})));
  const auto called = std::get<CallReply>(decode_reply(Call{}, Json{{"ok", true}}));
  EXPECT_TRUE(called.input_hashes.empty());  // no hashes: the inputs count as modified
  const auto timed = std::get<TimeCallReply>(decode_reply(TimeCall{}, Json{{"ok", true}}));
  EXPECT_FALSE(timed.event_ms.has_value());  // no time: a malformed timing record
  EXPECT_FALSE(decode_ready(Json::object()).ready);
}

TEST(RunnerProtocol, EachTableFieldOfTheWrongTypeMakesAReplyOutOfProtocol) {
  EXPECT_TRUE(reply_well_typed(encode(SetupReply{"cpu", 0, {1}, {"x"}, {}})));
  EXPECT_TRUE(reply_well_typed(Json{{"ok", true}, {"unknown", "allowed"}}));
  EXPECT_FALSE(reply_well_typed(Json::array()));
  const Json wrong = "a string";
  for (const ReplyField& f : reply_fields()) {
    SCOPED_TRACE(std::string(f.name));
    const Json bad = f.type == "string" ? Json(7) : wrong;
    EXPECT_FALSE(reply_well_typed(Json{{std::string(f.name), bad}}));
  }
  EXPECT_FALSE(reply_well_typed(Json{{"input_hashes", {-1}}}));
  EXPECT_FALSE(reply_well_typed(Json{{"rc", 0.5}}));
  EXPECT_FALSE(reply_well_typed(Json{{"sandbox", {{"enforced", {1}}}}}));
}

// ---- Both runners, one script.

constexpr uint64_t kN = 64;  // elements per tensor
constexpr uint64_t kTensorBytes = kN * sizeof(float);
constexpr uint64_t kSetBytes = 2 * kTensorBytes;  // a, then b
constexpr uint32_t kSetupPoison = 4321;           // odd: the low bit is always set in a poison word

// Input set `k`: a[i] = k + i/8, b[i] = 1 - i/16.
std::vector<float> input_set(int k) {
  std::vector<float> set(2 * kN);
  for (uint64_t i = 0; i < kN; ++i) {
    set[i] = static_cast<float>(k) + static_cast<float>(i) / 8;
    set[kN + i] = 1.0f - static_cast<float>(i) / 16;
  }
  return set;
}

// The script's task, which needs both inputs in their order and no arithmetic (a PyTorch answer
// may only move data): b's first half, then a's second.
std::vector<float> spliced(const std::vector<float>& set) {
  std::vector<float> out(kN);
  for (uint64_t i = 0; i < kN; ++i) out[i] = i < kN / 2 ? set[kN + i] : set[i];
  return out;
}

std::vector<uint8_t> bytes_of(const std::vector<float>& values) {
  std::vector<uint8_t> b(values.size() * sizeof(float));
  std::memcpy(b.data(), values.data(), b.size());
  return b;
}

constexpr const char* kKernel = R"(#include "kevin_abi.h"
extern "C" int kevin_forward(const kevin_args* args) {
  const float* a = (const float*)args->inputs[0].data;
  const float* b = (const float*)args->inputs[1].data;
  float* out = (float*)args->outputs[0].data;
  const int64_t n = args->outputs[0].shape[0];
  for (int64_t i = 0; i < n; ++i) out[i] = i < n / 2 ? b[i] : a[i];
  return 0;
}
)";

constexpr const char* kAnswer = R"(import torch

class ModelNew(torch.nn.Module):
    def forward(self, a, b):
        out = b.clone()
        half = out.shape[0] // 2
        out[half:] = a[half:]
        return out
)";

// What one step of the script left: the reply, and the staging area after it.
struct Step {
  std::string name;
  engine::Runner::Reply reply;
  std::vector<uint8_t> staging;
};

class BothRunners : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = sys::TempDir::create("kevin-protocol-").value();
    std::string sets;
    for (int k = 0; k < 2; ++k) {
      const auto b = bytes_of(input_set(k));
      sets.append(b.begin(), b.end());
    }
    ASSERT_TRUE(write_file_atomic(dir_.path() / "inputs.bin", sets).is_ok());
    ASSERT_TRUE(write_file_atomic(dir_.path() / "kernel.cpp", kKernel).is_ok());
    const std::string compile = "g++ -shared -fPIC -O1 -I '" KEVIN_SOURCE_DIR "/src/engine/abi' '" +
                                (dir_.path() / "kernel.cpp").string() + "' -o '" +
                                (dir_.path() / "candidate.so").string() + "'";
    ASSERT_EQ(std::system(compile.c_str()), 0) << compile;
  }

  engine::Runner::Start start() const {
    engine::Runner::Start how;
    how.runner = fs::path(KEVIN_BUILD_DIR) / "bin/kevin-runner";
    how.inputs_file = dir_.path() / "inputs.bin";
    how.staging_bytes = kTensorBytes;
    how.slot_bytes = kSetBytes;
    how.sandbox = false;
    return how;
  }

  engine::Runner::Start python_start() const {
    engine::Runner::Start how = start();
    how.python = KEVIN_SYSTEM_PYTHON;
    how.python_runner = fs::path(KEVIN_SOURCE_DIR) / "src/engine/runner/kernelbench_runner.py";
    how.support_library = fs::path(KEVIN_BUILD_DIR) / "bin/libkevin-runner-support.so";
    return how;
  }

  static runner_protocol::Setup setup() {
    runner_protocol::Setup s;
    s.backend = "cpu";
    s.sets = 2;
    s.set_bytes = kSetBytes;
    s.output_bytes = kTensorBytes;
    s.scalars = {{}, {}};
    s.inputs = {{0, {int64_t{kN}}, 0, kTensorBytes},
                {0, {int64_t{kN}}, kTensorBytes, kTensorBytes}};
    s.outputs = {{0, {int64_t{kN}}, 0, kTensorBytes}};
    s.cpu_seconds = 60;
    s.output_limit = 1 << 16;
    s.next_poison = kSetupPoison;
    return s;
  }

  // The same exchange for either runner: setup, a calibration call on the slot, the candidate
  // staged (the object, and `answer` as answer.py where not empty) as the judge stages it once
  // built, load, a call on each set, a warm-up and a timed call on the slot, then a call on a
  // set that does not exist (the harness's failure, after which the runner is gone).
  std::vector<Step> script(const engine::Runner::Start& how, const Load& load,
                           std::string_view answer = {}) {
    auto started = engine::RunnerSession::start(how);
    EXPECT_TRUE(started.is_ok()) << started.status().to_string();
    if (!started.is_ok()) return {};
    engine::RunnerSession session = std::move(started).value();
    std::vector<Step> steps;
    const auto ask = [&](const char* name, const Command& cmd, std::vector<uint8_t> slot = {}) {
      const bool timed = std::holds_alternative<TimeCall>(cmd);
      auto reply =
          session.request(cmd, sys::Deadline::after(std::chrono::seconds(60)), false, timed, slot);
      EXPECT_TRUE(reply.is_ok()) << name << ": " << reply.status().to_string();
      if (!reply.is_ok()) return;
      if (reply->cpu_before_ns) {
        (void)session.cpu_ms_since(*reply->cpu_before_ns,
                                   sys::Deadline::after(std::chrono::seconds(10)));
      }
      steps.push_back({name, *reply, {session.staging(), session.staging() + kTensorBytes}});
    };
    ask("setup", setup());
    ask("calibration", TimeCall{std::nullopt, {}, 55}, bytes_of(input_set(7)));
    const Status staged = session.stage(dir_.path() / "candidate.so", answer);
    EXPECT_TRUE(staged.is_ok()) << staged.to_string();
    ask("load", load);
    ask("call 0", Call{0, 56});
    ask("call 1", Call{1, 57});
    ask("warmup", TimeCall{0, {}, 58});
    ask("timed", TimeCall{std::nullopt, {}, 59}, bytes_of(input_set(5)));
    ask("out of range", Call{9, 60});
    ask("after the failure", Call{0, 61});
    session.finish();
    return steps;
  }

  sys::TempDir dir_;
};

bool python_has_torch() {
  return std::system(KEVIN_SYSTEM_PYTHON " -c 'import torch' > /dev/null 2>&1") == 0;
}

// What every conforming runner must reply at each step of the script.
void expect_conforming(const std::vector<Step>& steps, const char* runner) {
  SCOPED_TRACE(runner);
  ASSERT_EQ(steps.size(), 9u);
  for (const Step& s : steps) {
    if (s.name == "after the failure") continue;
    ASSERT_TRUE(s.reply.answered())
        << s.name << ": " << s.reply.exit.describe() << " " << s.reply.malformed_why;
  }
  std::vector<uint64_t> hashes;
  for (int k = 0; k < 2; ++k) {
    const auto set = bytes_of(input_set(k));
    hashes.push_back(runner::host_hash(set.data(), set.size()));
  }
  const auto& setup = std::get<SetupReply>(steps[0].reply.body);
  EXPECT_EQ(setup.device, "cpu");
  EXPECT_EQ(setup.input_hashes, hashes);
  // Before the load a timed call runs nothing: the outputs it copies out are the poison of
  // the setup's word, the same word in either language.
  const auto& calibration = std::get<TimeCallReply>(steps[1].reply.body);
  EXPECT_EQ(calibration.rc, 0);
  ASSERT_TRUE(calibration.event_ms.has_value());
  EXPECT_GE(*calibration.event_ms, 0);
  const uint32_t poison = harness::poison_word(0, kSetupPoison);
  for (uint64_t at = 0; at < kTensorBytes; at += 4) {
    uint32_t word = 0;
    std::memcpy(&word, steps[1].staging.data() + at, 4);
    ASSERT_EQ(word, poison) << "at byte " << at;
  }
  EXPECT_TRUE(std::holds_alternative<LoadReply>(steps[2].reply.body));
  for (int k = 0; k < 2; ++k) {
    const Step& step = steps[3 + static_cast<size_t>(k)];
    const auto& called = std::get<CallReply>(step.reply.body);
    EXPECT_EQ(called.rc, 0);
    EXPECT_EQ(called.input_hashes, hashes);
    EXPECT_EQ(step.staging, bytes_of(spliced(input_set(k)))) << step.name;
  }
  EXPECT_EQ(steps[5].staging, bytes_of(spliced(input_set(0))));
  EXPECT_EQ(steps[6].staging, bytes_of(spliced(input_set(5))));
  for (size_t i : {5u, 6u}) {
    const auto& timed = std::get<TimeCallReply>(steps[i].reply.body);
    EXPECT_EQ(timed.rc, 0);
    EXPECT_TRUE(timed.event_ms.has_value() && *timed.event_ms >= 0);
  }
  const auto& failed = std::get<Failure>(steps[7].reply.body);
  EXPECT_EQ(failed.stage, "harness");
  EXPECT_NE(failed.error.find("set out of range"), std::string::npos) << failed.error;
  EXPECT_TRUE(steps[8].reply.died);  // a runner that failed a command is gone
}

Load abi_load() {
  Load l;
  l.next_poison = 50;
  return l;
}

Load answer_load() {
  Load l = abi_load();
  l.extensions = {"splice_ext"};
  l.args = {{"a", "input"}, {"b", "input"}};
  l.forward_args = {"tensor", "tensor"};
  l.init_inputs = Json::array();
  return l;
}

TEST_F(BothRunners, KevinRunnerFollowsTheProtocol) {
  expect_conforming(script(start(), abi_load()), "kevin-runner");
}

TEST_F(BothRunners, ThePythonRunnerRepliesAsKevinRunnerDoesFieldByField) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "libkevin-runner-support.so is built with a sanitizer here, whose runtime an "
                  "uninstrumented python3 cannot load";
#endif
  if (!python_has_torch()) GTEST_SKIP() << KEVIN_SYSTEM_PYTHON << " cannot import torch";
  const auto native = script(start(), abi_load());
  const auto python = script(python_start(), answer_load(), kAnswer);
  expect_conforming(python, "kernelbench_runner.py");
  ASSERT_EQ(native.size(), python.size());
  for (size_t i = 0; i < native.size(); ++i) {
    SCOPED_TRACE(native[i].name);
    const auto& a = native[i].reply;
    const auto& b = python[i].reply;
    EXPECT_EQ(a.died, b.died);
    if (!a.answered() || !b.answered()) continue;
    ASSERT_EQ(a.body.index(), b.body.index())
        << encode(a.body).dump() << " vs " << encode(b.body).dump();
    EXPECT_EQ(native[i].staging, python[i].staging);
    // Fields that depend on the runner alone (its workspace, the candidate's static bytes,
    // the sandbox's layers, the clocks) are left out; every other field must agree.
    if (const auto* s = std::get_if<SetupReply>(&a.body)) {
      EXPECT_EQ(s->device, std::get<SetupReply>(b.body).device);
      EXPECT_EQ(s->input_hashes, std::get<SetupReply>(b.body).input_hashes);
    } else if (const auto* c = std::get_if<CallReply>(&a.body)) {
      EXPECT_EQ(c->rc, std::get<CallReply>(b.body).rc);
      EXPECT_EQ(c->input_hashes, std::get<CallReply>(b.body).input_hashes);
    } else if (const auto* t = std::get_if<TimeCallReply>(&a.body)) {
      EXPECT_EQ(t->rc, std::get<TimeCallReply>(b.body).rc);
      EXPECT_EQ(t->event_ms.has_value(), std::get<TimeCallReply>(b.body).event_ms.has_value());
    } else if (const auto* f = std::get_if<Failure>(&a.body)) {
      EXPECT_EQ(f->stage, std::get<Failure>(b.body).stage);
    }
  }
}

}  // namespace
}  // namespace kevin::runner_protocol
