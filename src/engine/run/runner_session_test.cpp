// runner_session_test.cpp — RunnerSession against a stand-in runner process
// (tests/fixtures/runner/ready_gap_probe.py): when a timing set becomes visible to the runner
// relative to the frames of the protocol.
#include "engine/run/runner_session.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "core/file.h"
#include "sys/gpu_memory.h"
#include "sys/tempdir.h"

namespace kevin::engine {
namespace {
namespace fs = std::filesystem;

constexpr uint64_t kSlotBytes = 16;
constexpr int kDevice = 3;

sys::Deadline soon() { return sys::Deadline::after(std::chrono::seconds(20)); }

class ReadyGap : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = sys::TempDir::create("kevin-ready-gap-");
    ASSERT_TRUE(dir.is_ok()) << dir.status().to_string();
    dir_ = std::move(dir).value();
    const fs::path inputs = dir_.path() / "inputs.bin";
    ASSERT_TRUE(write_file_atomic(inputs, std::string(kSlotBytes, '\0')).is_ok());
    Runner::Start how;
    how.runner = fs::path(KEVIN_SOURCE_DIR) / "tests/fixtures/runner/ready_gap_probe.py";
    how.inputs_file = inputs;
    how.staging_bytes = 8;
    how.slot_bytes = kSlotBytes;
    how.sandbox = false;
    how.device = kDevice;
    auto started = RunnerSession::start(how);
    ASSERT_TRUE(started.is_ok()) << started.status().to_string();
    session_.emplace(std::move(started).value());
    runner_protocol::Setup setup;
    setup.set_bytes = kSlotBytes;
    auto ready = session_->request(setup, soon(), false, false, {});
    ASSERT_TRUE(ready.is_ok() && ready->answered() &&
                std::holds_alternative<runner_protocol::SetupReply>(ready->body));
  }

  // A timed call on a set whose every byte is `value`.
  void timed_call(uint8_t value) {
    const std::vector<uint8_t> set(kSlotBytes, value);
    auto reply = session_->request(runner_protocol::TimeCall{}, soon(), false, false, set);
    ASSERT_TRUE(reply.is_ok()) << reply.status().to_string();
    ASSERT_TRUE(reply->answered() &&
                std::holds_alternative<runner_protocol::TimeCallReply>(reply->body))
        << reply->exit.describe();
  }

  sys::TempDir dir_;
  std::optional<RunnerSession> session_;
};

TEST_F(ReadyGap, ATimingSetReachesTheRunnerOnlyAfterItsReadyFrame) {
  // The probe looks at the slot again 0.2 s after each reply, before it says it is ready: a
  // set handed over before that frame (while the runner cleans up, out of every clock) would
  // show there.
  for (uint8_t v : {uint8_t{1}, uint8_t{2}, uint8_t{3}}) timed_call(v);
  session_->finish();
  EXPECT_EQ(session_->captured_output(4096),
            "call saw 1\ngap saw 1\ncall saw 2\ngap saw 2\ncall saw 3\ngap saw 3\n");
}

TEST_F(ReadyGap, ASetOfAnotherSizeIsTheJudgesError) {
  const std::vector<uint8_t> set(kSlotBytes - 1, 7);
  auto reply = session_->request(runner_protocol::TimeCall{}, soon(), false, false, set);
  ASSERT_FALSE(reply.is_ok());
  EXPECT_EQ(reply.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(reply.status().message().find("15 bytes for a slot of 16"), std::string::npos)
      << reply.status().message();
}

TEST_F(ReadyGap, StoppedRunnersStopTheRunnersOfTheirDeviceWhileTheyLive) {
  const pid_t runner = session_->pid();
  {
    const StoppedRunners other_device(kDevice - 1);
    EXPECT_EQ(other_device.count(), 0u);
    EXPECT_NE(sys::process_state(runner), 'T');
  }
  {
    const StoppedRunners stopped(kDevice);
    EXPECT_EQ(stopped.count(), 1u);
    // SIGSTOP is delivered asynchronously: the state follows within moments.
    for (int i = 0; i < 200 && sys::process_state(runner) != 'T'; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    EXPECT_EQ(sys::process_state(runner), 'T');
  }
  timed_call(9);  // continued: it answers again
  session_->finish();
  EXPECT_EQ(StoppedRunners(kDevice).count(), 0u) << "a finished runner is no longer listed";
}

}  // namespace
}  // namespace kevin::engine
