// runner_session.cpp — spawning and talking to kevin-runner.
#include "engine/runner_session.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "sys/cuda_probe.h"

namespace kevin::engine {
namespace fs = std::filesystem;

Result<RunnerSession> RunnerSession::start(const Start& how) {
  ::signal(SIGPIPE, SIG_IGN);  // a dead runner must not take the judge down with a write
  RunnerSession s;
  KEVIN_ASSIGN_OR_RETURN(s.scratch_, sys::TempDir::create("kevin-run-"));
  // The runner may drop to an unprivileged uid; it needs to read (only) this copy.
  ::chmod(s.scratch_.path().c_str(), 0755);
  const fs::path object = s.scratch_.path() / "candidate.so";
  std::error_code ec;
  fs::copy_file(how.object, object, ec);
  if (ec) return io_error("cannot stage the candidate: " + ec.message());
  ::chmod(object.c_str(), 0644);

  const int inputs = ::open(how.inputs_file.c_str(), O_RDONLY | O_CLOEXEC);
  if (inputs < 0) return io_error("cannot open " + how.inputs_file.string() + ": " + std::strerror(errno));
  sys::Fd inputs_fd(inputs);
  KEVIN_ASSIGN_OR_RETURN(s.staging_, sys::SharedMemory::create("kevin-staging", how.staging_bytes));
  const int capture = ::memfd_create("kevin-capture", MFD_CLOEXEC);
  if (capture < 0) return io_error(std::string("memfd_create: ") + std::strerror(errno));
  s.capture_.reset(capture);
  const int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  sys::Fd devnull_fd(devnull);
  KEVIN_ASSIGN_OR_RETURN(sys::Pipe cmd, sys::make_pipe());
  KEVIN_ASSIGN_OR_RETURN(sys::Pipe rep, sys::make_pipe());

  sys::SpawnOptions o;
  o.argv = {how.runner.string()};
  o.env = {"PATH=/usr/bin:/bin", "CUDA_VISIBLE_DEVICES=" + sys::child_visible_device(how.device, std::getenv("CUDA_VISIBLE_DEVICES")),
           "CUDA_DEVICE_ORDER=PCI_BUS_ID", "NCCL_NVLS_ENABLE=0", "HOME=/nonexistent"};
  o.fds = {{0, devnull}, {1, capture}, {2, capture}, {3, cmd.read.get()},
           {4, rep.write.get()}, {5, inputs_fd.get()}, {6, s.staging_.fd()}};
  o.cwd = s.scratch_.path();
  KEVIN_ASSIGN_OR_RETURN(s.child_, sys::spawn(o));
  s.commands_ = std::move(cmd.write);
  s.replies_ = std::move(rep.read);
  return s;
}

Result<RunnerSession::Reply> RunnerSession::request(const Json& cmd, sys::Deadline deadline) {
  Reply reply;
  const auto end_with = [this, &reply](bool timed_out) {
    reply.timed_out = timed_out;
    reply.died = !timed_out;
    if (!timed_out) {
      // It closed the channel: give it a moment to finish dying so we can say how.
      auto exit = child_.wait(sys::Deadline::after(std::chrono::seconds(5)));
      reply.exit = exit.is_ok() ? *exit : child_.kill_and_reap();
    } else {
      reply.exit = child_.kill_and_reap();
    }
    return reply;
  };
  if (!child_.running()) return end_with(false);
  Status sent = sys::write_frame(commands_.get(), dump_json(cmd), deadline);
  if (!sent.is_ok()) return end_with(sent.code() == StatusCode::kDeadlineExceeded);
  auto frame = sys::read_frame(replies_.get(), deadline);
  if (!frame.is_ok()) {
    if (frame.status().code() == StatusCode::kDeadlineExceeded) return end_with(true);
    return end_with(false);
  }
  auto body = parse_json(*frame);
  if (!body.is_ok()) return internal_error("runner sent malformed JSON: " + body.status().message());
  reply.body = std::move(body).value();
  return reply;
}

std::string RunnerSession::captured_output(size_t max_bytes) const {
  std::string out(max_bytes, '\0');
  const ssize_t n = ::pread(capture_.get(), out.data(), max_bytes, 0);
  out.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return out;
}

void RunnerSession::finish() {
  if (!child_.running()) return;
  (void)sys::write_frame(commands_.get(), R"({"cmd":"exit"})",
                         sys::Deadline::after(std::chrono::milliseconds(200)));
  commands_.reset();
  if (!child_.wait(sys::Deadline::after(std::chrono::seconds(2))).is_ok()) child_.kill_and_reap();
}

}  // namespace kevin::engine
