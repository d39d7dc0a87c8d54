// runner_session.h — the judge's handle on one candidate runner process: spawns it with its
// descriptors (commands, replies, read-only input sets, shared output staging, a capped
// capture file for stdout/stderr), exchanges framed JSON with deadlines, and turns death or
// silence into data (died / timed_out) rather than errors.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "core/json.h"
#include "sys/fd.h"
#include "sys/process.h"
#include "sys/tempdir.h"

namespace kevin::engine {

class RunnerSession {
 public:
  struct Start {
    std::filesystem::path runner;       // kevin-runner executable
    std::filesystem::path object;       // built candidate (copied into a scratch dir)
    std::filesystem::path inputs_file;  // inputs.bin, passed read-only
    uint64_t staging_bytes = 0;         // one output set
    int device = 0;
  };
  struct Reply {
    Json body;                // the runner's reply when it answered
    bool died = false;        // it exited or was killed before answering
    bool timed_out = false;   // it did not answer before the deadline (now killed)
    sys::ExitInfo exit;       // how it ended when died/timed_out
  };

  static Result<RunnerSession> start(const Start& how);

  // Sends `cmd` and waits for the reply until `deadline`.
  Result<Reply> request(const Json& cmd, sys::Deadline deadline);
  const uint8_t* staging() const { return staging_.data(); }
  // The first `max_bytes` the candidate printed to stdout/stderr.
  std::string captured_output(size_t max_bytes = 2048) const;
  // Asks the runner to exit, then reaps it (killing it if it lingers).
  void finish();

 private:
  sys::TempDir scratch_;
  sys::Child child_;
  sys::Fd commands_, replies_, capture_;
  sys::SharedMemory staging_;
};

}  // namespace kevin::engine
