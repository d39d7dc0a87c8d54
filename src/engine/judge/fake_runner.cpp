// fake_runner.cpp — the scripted runner of the judge's unit tests: honest answers made the
// way kevin-runner makes them (poisoned outputs, the sum computed, input hashes), then the
// script, then the reply delivered as RunnerSession delivers a frame.
#include "engine/judge/fake_runner.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <map>
#include <memory>

#include "core/file.h"
#include "engine/runner/host_kernels.h"

namespace kevin::engine {
namespace {

namespace proto = runner_protocol;

class FakeRunner final : public Runner {
 public:
  FakeRunner(std::string inputs, const Start& how, FakeRunnerLog* log, FakeScript script,
             FakeTimes times)
      : number_(static_cast<int>(log->starts.size()) - 1),
        inputs_(std::move(inputs)),
        staging_(how.staging_bytes),
        slot_(how.slot_bytes),
        log_(log),
        script_(std::move(script)),
        times_(times) {}

  Result<Reply> request(const proto::Command& cmd, sys::Deadline deadline, bool spin,
                        bool measure_cpu, std::span<const uint8_t> slot_set) override {
    const std::string step = fake_step(cmd, loaded_);
    const double deadline_ms =
        std::chrono::duration<double, std::milli>(deadline.at() - sys::Clock::now()).count();
    if (!slot_set.empty()) std::copy(slot_set.begin(), slot_set.end(), slot_.begin());
    const bool on_slot = step == "calibration" || step == "timed";
    const Json frame = proto::encode(cmd);
    log_->requests.push_back({frame, step, spin, measure_cpu, deadline_ms,
                              on_slot ? runner::host_hash(slot_.data(), slot_.size()) : 0,
                              slot_set.size()});
    if (ended_) {
      Reply gone;
      gone.died = true;
      gone.exit = *ended_;
      return gone;
    }
    FakeExchange x = honest(cmd, frame, step);
    if (script_) script_(x);
    next_poison_ = frame.value("next_poison", uint32_t{0});
    if (step == "load") loaded_ = true;
    return deliver(cmd, x, measure_cpu);
  }
  Status stage(const std::filesystem::path& object, std::string_view answer) override {
    log_->staged.push_back({number_, object, std::string(answer), log_->requests.size()});
    staged_ = true;
    return Status::ok();
  }
  const uint8_t* staging() const override { return staging_.data(); }
  pid_t pid() const override { return -1; }
  std::optional<double> cpu_ms_since(uint64_t before_ns, sys::Deadline) override {
    if (!cpu_known_) return std::nullopt;
    return static_cast<double>(cpu_ns_ - before_ns) / 1e6;
  }
  std::string captured_output(size_t max_bytes) const override {
    return printed_.substr(0, max_bytes);
  }
  void finish() override { ++log_->finished; }

 private:
  // The answer kevin-runner gives for an honest candidate, its outputs already in staging.
  FakeExchange honest(const proto::Command& cmd, const Json& frame, const std::string& step) {
    FakeExchange x;
    x.cmd = &frame;
    x.step = step;
    x.index = answered_[step]++;
    x.runner = number_;
    x.body = proto::encode(honest_reply(cmd, &x));
    x.cpu_ms = x.judge_ms;
    return x;
  }

  proto::Reply honest_reply(const proto::Command& cmd, FakeExchange* x) {
    if (const auto* setup = std::get_if<proto::Setup>(&cmd)) {
      set_bytes_ = setup->set_bytes;
      inputs_at_ = setup->inputs;
      outputs_at_ = setup->outputs;
      return proto::SetupReply{"fake", 0, input_hashes(), {"fake"}, {}};
    }
    if (const auto* c = std::get_if<proto::Call>(&cmd)) {
      call(input_set(c->set), x);
      x->judge_ms = times_.call_judge_ms;
      return proto::CallReply{0, input_hashes()};
    }
    if (const auto* t = std::get_if<proto::TimeCall>(&cmd)) {
      call(t->on_slot() ? slot_.data() : input_set(*t->set), x);
      const bool calibration = x->step == "calibration";
      x->judge_ms = calibration ? times_.calibration_judge_ms : times_.judge_ms;
      return proto::TimeCallReply{0, calibration ? times_.calibration_event_ms : times_.event_ms};
    }
    // As kevin-runner: nothing to open until the judge has staged the candidate.
    if (!staged_) return proto::Failure{"load", "cannot load the kernel: no candidate.so"};
    return proto::LoadReply{};
  }

  const uint8_t* input_set(size_t k) const {
    return reinterpret_cast<const uint8_t*>(inputs_.data()) + k * set_bytes_;
  }

  std::vector<uint64_t> input_hashes() const {
    std::vector<uint64_t> hashes;
    for (uint64_t at = 0; at + set_bytes_ <= inputs_.size() && set_bytes_ > 0; at += set_bytes_) {
      hashes.push_back(runner::host_hash(inputs_.data() + at, set_bytes_));
    }
    return hashes;
  }

  // Poisons the outputs, then computes the sum of the first two inputs into the first output.
  void call(const uint8_t* in, FakeExchange* x) {
    x->outputs = staging_.data();
    x->poison = next_poison_;
    runner::host_fill32(staging_.data(), next_poison_, staging_.size());
    const auto* a = reinterpret_cast<const float*>(in + inputs_at_[0].offset);
    const auto* b = reinterpret_cast<const float*>(in + inputs_at_[1].offset);
    auto* out = reinterpret_cast<float*>(staging_.data() + outputs_at_[0].offset);
    for (uint64_t i = 0; i < outputs_at_[0].bytes / sizeof(float); ++i) out[i] = a[i] + b[i];
  }

  // The exchange as RunnerSession would report it: death, silence and out-of-protocol
  // replies end the runner; an answer's text is parsed as a frame.
  Reply deliver(const proto::Command& cmd, const FakeExchange& x, bool measure_cpu) {
    printed_ += x.printed;
    Reply r;
    r.judge_ms = x.judge_ms;
    const auto end = [&](sys::ExitInfo how) {
      ended_ = how;
      r.exit = how;
      return r;
    };
    if (x.dies) {
      r.died = true;
      return end(*x.dies);
    }
    if (x.hangs) {
      r.timed_out = true;
      return end(killed_by(SIGKILL));
    }
    auto body = parse_runner_reply(x.frame ? *x.frame : dump_json(x.body));
    if (!body.is_ok()) {
      r.malformed = true;
      r.malformed_why = body.status().message();
      return end(killed_by(SIGKILL));
    }
    r.body = proto::decode_reply(cmd, *body);
    if (measure_cpu) r.cpu_before_ns = cpu_ns_;
    cpu_known_ = x.cpu_ms.has_value();
    cpu_ns_ += static_cast<uint64_t>(x.cpu_ms.value_or(0) * 1e6);
    return r;
  }

  int number_;          // FakeExchange::runner
  std::string inputs_;  // the correctness input sets (inputs.bin)
  std::vector<uint8_t> staging_, slot_;
  FakeRunnerLog* log_;
  FakeScript script_;
  FakeTimes times_;
  uint64_t set_bytes_ = 0;
  std::vector<proto::TensorPlacement> inputs_at_, outputs_at_;
  std::map<std::string, int> answered_;
  bool loaded_ = false;
  bool staged_ = false;  // stage() was called
  uint32_t next_poison_ = 0;
  uint64_t cpu_ns_ = 0;  // the runner's CPU time so far
  bool cpu_known_ = true;
  std::string printed_;
  std::optional<sys::ExitInfo> ended_;
};

}  // namespace

sys::ExitInfo killed_by(int signal) {
  sys::ExitInfo e;
  e.signal = signal;
  return e;
}

sys::ExitInfo exited_with(int code) {
  sys::ExitInfo e;
  e.exited = true;
  e.code = code;
  return e;
}

std::string fake_step(const proto::Command& cmd, bool loaded) {
  const auto* timed = std::get_if<proto::TimeCall>(&cmd);
  if (timed == nullptr) return std::string(proto::command_name(cmd));
  if (!loaded) return "calibration";
  return timed->on_slot() ? "timed" : "warmup";
}

std::vector<FakeRunnerLog::Request> FakeRunnerLog::of_step(std::string_view step) const {
  std::vector<Request> out;
  for (const Request& r : requests) {
    if (r.step == step) out.push_back(r);
  }
  return out;
}

RunnerFactory fake_runners(FakeRunnerLog* log, FakeScript script, FakeTimes times) {
  return [log, script, times](const Runner::Start& how) -> Result<std::unique_ptr<Runner>> {
    log->starts.push_back(how);
    KEVIN_ASSIGN_OR_RETURN(std::string inputs, read_file(how.inputs_file));
    return std::unique_ptr<Runner>(
        std::make_unique<FakeRunner>(std::move(inputs), how, log, script, times));
  };
}

BuildResult fake_build() {
  BuildResult b;
  b.ok = true;
  b.object = std::filesystem::path(KEVIN_BUILD_DIR) / "bin/libkevin-runner-support.so";
  b.key = "fake";
  return b;
}

}  // namespace kevin::engine
