// runner_session.h — the judge's handle on one candidate runner process: Runner, what the
// judge needs of one, and RunnerSession, the real one, which spawns kevin-runner with its
// descriptors (commands, replies, read-only correctness input sets, shared output staging, a
// shared timing-set slot, a capped capture file for stdout/stderr), exchanges framed JSON
// with deadlines, times each exchange on the judge's own clock, and turns death, silence or
// a malformed reply into data (died / timed_out / malformed) rather than errors: once the
// candidate is loaded, the runner's replies may be the candidate's.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.h"
#include "engine/runner/protocol.h"
#include "sys/fd.h"
#include "sys/process.h"
#include "sys/tempdir.h"

namespace kevin::engine {

// What judges that died without cleaning up (SIGKILL, a crash) left behind, removed by
// clean_up_after_dead_judges(): runner scratch folders in the temporary directory, named
// after the process that made them, and runner processes whose judge is gone (a runner dies
// with its judge by itself; this catches any that could not).
struct Leftovers {
  int folders = 0;  // scratch folders removed
  int runners = 0;  // runner processes killed
};
// Safe to call at any time: folders and runners of living judges are left alone.
Leftovers clean_up_after_dead_judges();

// One frame from a runner (untrusted once the candidate is loaded) as a JSON object: at most
// 1 MiB, nested at most 8 deep, every field the judge reads of the type the protocol gives it
// (runner_protocol::reply_well_typed). kInvalidArgument says what was wrong otherwise;
// nothing is built from a refused frame.
Result<Json> parse_runner_reply(std::string_view frame);

// What the judge needs of one runner process; RunnerSession is the real one, and tests
// script fakes behind it (fake_runner.h). Owned by one evaluation, used from one thread.
class Runner {
 public:
  // The process, before any candidate exists: a runner is started (and set up) while its
  // candidate is still being built, and is given the candidate later with stage().
  struct Start {
    std::filesystem::path runner;       // kevin-runner executable
    std::filesystem::path inputs_file;  // inputs.bin, passed read-only
    uint64_t staging_bytes = 0;         // one output set
    uint64_t slot_bytes = 0;            // one input set
    int device = 0;
    bool sandbox = true;        // confine the runner (docs/sandbox.md)
    bool pid_namespace = true;  // ... in a PID namespace of its own too
    // KernelBench answers: kevin-runner execs `python` on `python_runner` (kernelbench_runner.py,
    // given `support_library`).
    std::string python;
    std::filesystem::path python_runner, support_library;
  };
  struct Reply {
    // The runner's reply to the command when none of the below: a Failure, or the command's
    // own reply type (runner_protocol::decode_reply of a frame parse_runner_reply accepted).
    runner_protocol::Reply body;
    bool died = false;          // it exited or was killed before answering
    bool timed_out = false;     // it did not answer before the deadline (now killed)
    bool malformed = false;     // it answered with an oversized, over-nested or non-object reply
    std::string malformed_why;  // what was wrong with it
    sys::ExitInfo exit;         // how it ended when died/timed_out/malformed (it is killed then)
    double judge_ms = 0;        // the judge's clock from sending `cmd` to the end of the reply
    // With `measure_cpu`: the candidate process's CPU time before the command (it was asleep,
    // so the count is exact), for cpu_ms_since().
    std::optional<uint64_t> cpu_before_ns;
    bool answered() const { return !died && !timed_out && !malformed; }
  };

  virtual ~Runner() = default;

  // Places the candidate where the runner's "load" finds it: a copy of the built `object` and,
  // for a KernelBench answer, its text (`answer`, empty for kevin's ABI) as answer.py. Call
  // it before "load", at most once; the runner reads neither file before then. Errors: the
  // copy could not be made (the harness's).
  virtual Status stage(const std::filesystem::path& object, std::string_view answer) = 0;

  // Sends `cmd` and waits for the reply until `deadline`. With `spin`, the judge polls without
  // sleeping (for timed calls, whose judge-side time must not include its own wake-up).
  // After a "call" or "time_call" the runner cleans up and then sends a second, "ready"
  // frame; the next request first waits for it (within its own deadline, off its clock).
  // `slot_set` (slot_bytes, or empty) is the input set a timed command runs on: it is written
  // into the runner's slot only once that ready frame is read and, with `measure_cpu`, the
  // runner's CPU time sampled asleep, and inside judge_ms. So no code of the runner's sees a
  // set before the exchange that is charged for it begins (docs/sandbox.md, "the ready gap").
  // A runner that dies, stays silent or answers out of protocol is a Reply saying so (and is
  // killed). Errors: only the judge's own failures (the command could not be encoded, or
  // `slot_set` is not one slot's size).
  // `cmd` must be an answered command (runner_protocol::is_answered); resume and exit are
  // the session's own business (cpu_ms_since, finish).
  virtual Result<Reply> request(const runner_protocol::Command& cmd, sys::Deadline deadline,
                                bool spin, bool measure_cpu, std::span<const uint8_t> slot_set) = 0;
  // The output set the runner copies a call's outputs to (staging_bytes, shared with it).
  virtual const uint8_t* staging() const = 0;
  // The runner's process (its GPU memory is watched from outside); -1 when there is none.
  virtual pid_t pid() const = 0;
  // The CPU time the candidate's process has spent since `before_ns` (a reply's
  // cpu_before_ns), read once it sleeps again: after a timed reply measured this way the
  // runner waits, asleep, for this call to let it go on (to clean up), so everything up to the
  // reply is counted, and nothing after it, however the machine's cores were shared. nullopt
  // when the kernel will not say, or it does not sleep before `deadline`.
  virtual std::optional<double> cpu_ms_since(uint64_t before_ns, sys::Deadline deadline) = 0;
  // The first `max_bytes` the candidate printed to stdout/stderr.
  virtual std::string captured_output(size_t max_bytes) const = 0;
  // Asks the runner to exit, then reaps it (killing it if it lingers).
  virtual void finish() = 0;

 protected:
  Runner() = default;
  Runner(Runner&&) = default;
  Runner& operator=(Runner&&) = default;
};

// While one lives, every runner process this kevin started on CUDA device `device` (CPU
// runners count as device 0), with the processes under it, is stopped (SIGSTOP); they are
// continued (SIGCONT) when it ends. Baselines are timed under one, so no candidate code of any
// evaluation runs while a baseline is measured. Make one only while holding the device's
// exclusive gate: no exchange with a runner of that device is then in flight, whose clocks a
// stopped runner would stretch. Not copyable; thread-safe.
class StoppedRunners {
 public:
  explicit StoppedRunners(int device);
  ~StoppedRunners();
  StoppedRunners(const StoppedRunners&) = delete;
  StoppedRunners& operator=(const StoppedRunners&) = delete;
  // How many processes were stopped.
  size_t count() const { return stopped_.size(); }

 private:
  std::vector<pid_t> stopped_;
};

class RunnerSession final : public Runner {
 public:
  // Replies are small (a timing record is a few hundred bytes): anything larger or deeper is
  // the candidate's doing and is refused without reading it.
  static constexpr uint32_t kMaxReplyBytes = 1u << 20;
  static constexpr int kMaxReplyDepth = 8;

  // Spawns kevin-runner as `how` says. Errors: the harness's (scratch folder, shared memory,
  // pipes, a runner that cannot be spawned).
  static Result<RunnerSession> start(const Start& how);

  Status stage(const std::filesystem::path& object, std::string_view answer) override;
  Result<Reply> request(const runner_protocol::Command& cmd, sys::Deadline deadline, bool spin,
                        bool measure_cpu, std::span<const uint8_t> slot_set) override;
  const uint8_t* staging() const override { return staging_.data(); }
  pid_t pid() const override { return child_.pid(); }
  // The process the candidate runs in: the runner, or its child in its own PID namespace.
  pid_t work_pid();
  std::optional<double> cpu_ms_since(uint64_t before_ns, sys::Deadline deadline) override;
  std::string captured_output(size_t max_bytes) const override;
  void finish() override;

 private:
  sys::TempDir scratch_;
  sys::Child child_;
  sys::Fd commands_, replies_, capture_;
  sys::SharedMemory staging_, slot_;
  // The candidate process's CPU time once it is asleep (nullopt: gone, or still running at
  // `deadline`).
  std::optional<uint64_t> cpu_time_asleep(sys::Deadline deadline);

  // Lets a runner waiting after a CPU-measured timed reply go on.
  Status resume(sys::Deadline deadline);

  bool resume_owed_ = false;    // the runner waits for "resume" before cleaning up
  bool ready_pending_ = false;  // a "ready" frame is owed by the runner
  pid_t work_pid_ = -1;
  // Lists the runner among the live runners of its device (StoppedRunners) while it lives.
  class Listing {
   public:
    Listing() = default;
    Listing(pid_t pid, int device);
    Listing(Listing&& other) noexcept;
    Listing& operator=(Listing&& other) noexcept;
    ~Listing();

   private:
    pid_t pid_ = -1;
  };
  Listing listing_;  // after child_: unlisted before the child is reaped
};

}  // namespace kevin::engine
