// runner_session.cpp — spawning and talking to kevin-runner.
#include "engine/run/runner_session.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <utility>

#include "core/file.h"
#include "core/mutex.h"
#include "core/parallel.h"
#include "sys/cuda_probe.h"
#include "sys/gpu_memory.h"

namespace kevin::engine {
namespace fs = std::filesystem;

namespace {

constexpr const char* kScratchPrefix = "kevin-run-";

// "kevin-run-<pid>-": scratch folders say which judge made them.
std::string scratch_prefix(pid_t judge) { return kScratchPrefix + std::to_string(judge) + "-"; }

bool alive(pid_t pid) { return pid > 0 && (::kill(pid, 0) == 0 || errno == EPERM); }

// The judge a runner process names in its environment, or -1 (not a runner, or unreadable).
pid_t judge_of_runner(const fs::path& proc_entry) {
  std::ifstream comm(proc_entry / "comm");
  std::string name;
  if (!std::getline(comm, name) || name != "kevin-runner") return -1;
  std::ifstream environ(proc_entry / "environ");
  std::string var;
  while (std::getline(environ, var, '\0')) {
    if (var.rfind("KEVIN_PARENT_PID=", 0) == 0)
      return static_cast<pid_t>(std::atol(var.c_str() + 17));
  }
  return -1;
}

// The runners this process has started and not yet reaped, by device (StoppedRunners).
class LiveRunners {
 public:
  void add(pid_t pid, int device) {
    MutexLock lock(mu_);
    devices_[pid] = device;
  }
  void remove(pid_t pid) {
    MutexLock lock(mu_);
    devices_.erase(pid);
  }
  // Stops every runner of `device` and what runs under it; returns what was stopped. Holding
  // the lock meanwhile keeps a runner from being reaped (and its pid reused) mid-way.
  std::vector<pid_t> stop(int device) {
    MutexLock lock(mu_);
    std::vector<pid_t> stopped;
    for (const auto& [pid, d] : devices_) {
      if (d == device) stop_tree(pid, &stopped);
    }
    return stopped;
  }

 private:
  static void stop_tree(pid_t pid, std::vector<pid_t>* stopped) {
    if (::kill(pid, SIGSTOP) != 0) return;
    stopped->push_back(pid);
    for (pid_t child : sys::child_processes(pid)) stop_tree(child, stopped);
  }

  Mutex mu_;
  std::map<pid_t, int> devices_ GUARDED_BY(mu_);
};

LiveRunners& live_runners() {
  static LiveRunners* runners = new LiveRunners;  // never destroyed: used until exit
  return *runners;
}

// Waits for `fd` to become readable without sleeping, until `deadline`.
void spin_until_readable(int fd, sys::Deadline deadline) {
  pollfd p{fd, POLLIN, 0};
  while (!deadline.expired() && ::poll(&p, 1, 0) == 0) {
  }
}

}  // namespace

StoppedRunners::StoppedRunners(int device) : stopped_(live_runners().stop(device)) {}

StoppedRunners::~StoppedRunners() {
  // Children first was not needed: a stopped parent does not reap, so every pid is still its
  // process until it is continued.
  for (pid_t pid : stopped_) ::kill(pid, SIGCONT);
}

RunnerSession::Listing::Listing(pid_t pid, int device) : pid_(pid) {
  live_runners().add(pid, device);
}

RunnerSession::Listing::Listing(Listing&& other) noexcept : pid_(std::exchange(other.pid_, -1)) {}

RunnerSession::Listing& RunnerSession::Listing::operator=(Listing&& other) noexcept {
  if (this != &other) {
    if (pid_ > 0) live_runners().remove(pid_);
    pid_ = std::exchange(other.pid_, -1);
  }
  return *this;
}

RunnerSession::Listing::~Listing() {
  if (pid_ > 0) live_runners().remove(pid_);
}

Leftovers clean_up_after_dead_judges() {
  Leftovers left;
  std::error_code ec;
  const char* tmp = std::getenv("TMPDIR");
  for (const auto& entry : fs::directory_iterator(tmp != nullptr && *tmp ? tmp : "/tmp", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(kScratchPrefix, 0) != 0) continue;
    const pid_t judge = static_cast<pid_t>(std::atol(name.c_str() + std::strlen(kScratchPrefix)));
    if (judge <= 0 || alive(judge)) continue;
    if (fs::remove_all(entry.path(), ec) > 0) ++left.folders;
  }
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t judge = judge_of_runner(entry.path());
    if (judge <= 0 || alive(judge)) continue;
    if (::kill(static_cast<pid_t>(std::stol(name)), SIGKILL) == 0) ++left.runners;
  }
  return left;
}

Result<RunnerSession> RunnerSession::start(const Start& how) {
  ::signal(SIGPIPE, SIG_IGN);  // a dead runner must not take the judge down with a write
  RunnerSession s;
  KEVIN_ASSIGN_OR_RETURN(s.scratch_, sys::TempDir::create(scratch_prefix(::getpid())));
  // The runner may drop to an unprivileged uid; it needs to read (only) this copy.
  ::chmod(s.scratch_.path().c_str(), 0755);

  const int inputs = ::open(how.inputs_file.c_str(), O_RDONLY | O_CLOEXEC);
  if (inputs < 0)
    return io_error("cannot open " + how.inputs_file.string() + ": " + std::strerror(errno));
  sys::Fd inputs_fd(inputs);
  KEVIN_ASSIGN_OR_RETURN(s.staging_, sys::SharedMemory::create("kevin-staging", how.staging_bytes));
  KEVIN_ASSIGN_OR_RETURN(s.slot_, sys::SharedMemory::create("kevin-slot", how.slot_bytes));
  const int capture = ::memfd_create("kevin-capture", MFD_CLOEXEC);
  if (capture < 0) return io_error(std::string("memfd_create: ") + std::strerror(errno));
  s.capture_.reset(capture);
  const int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  sys::Fd devnull_fd(devnull);
  KEVIN_ASSIGN_OR_RETURN(sys::Pipe cmd, sys::make_pipe());
  KEVIN_ASSIGN_OR_RETURN(sys::Pipe rep, sys::make_pipe());

  sys::SpawnOptions o;
  o.argv = {how.runner.string()};
  if (how.sandbox) o.argv.push_back("--sandbox");
  if (how.sandbox && how.pid_namespace) o.argv.push_back("--pid-namespace");
  if (!how.python.empty()) {
    o.argv.insert(o.argv.end(), {"--python", how.python, how.python_runner.string(),
                                 how.support_library.string()});
  }
  o.env = {"PATH=/usr/bin:/bin",
           "CUDA_VISIBLE_DEVICES=" +
               sys::child_visible_device(how.device, std::getenv("CUDA_VISIBLE_DEVICES")),
           "CUDA_DEVICE_ORDER=PCI_BUS_ID",
           "NCCL_NVLS_ENABLE=0",
           "HOME=/nonexistent",
           "KEVIN_PARENT_PID=" + std::to_string(::getpid())};
  if (!how.python.empty()) {
    // Where the interpreter finds PyTorch, as the reference worker does.
    for (const char* name : {"PYTHONPATH", "PYTHONHOME", "LD_LIBRARY_PATH", "VIRTUAL_ENV"}) {
      if (const char* v = std::getenv(name); v != nullptr)
        o.env.push_back(std::string(name) + "=" + v);
    }
  }
  o.fds = {{0, devnull},         {1, capture},         {2, capture},         {3, cmd.read.get()},
           {4, rep.write.get()}, {5, inputs_fd.get()}, {6, s.staging_.fd()}, {7, s.slot_.fd()}};
  o.cwd = s.scratch_.path();
  KEVIN_ASSIGN_OR_RETURN(s.child_, sys::spawn(o));
  s.listing_ = Listing(s.child_.pid(), how.device);
  s.commands_ = std::move(cmd.write);
  s.replies_ = std::move(rep.read);
  return s;
}

Status RunnerSession::stage(const fs::path& object, std::string_view answer) {
  // The runner's root is its scratch folder (chroot at setup): files placed there now are the
  // ones its "load" opens.
  const fs::path staged = scratch_.path() / "candidate.so";
  std::error_code ec;
  fs::copy_file(object, staged, ec);
  if (ec) return io_error("cannot stage the candidate: " + ec.message());
  ::chmod(staged.c_str(), 0644);
  if (!answer.empty()) {
    const fs::path text = scratch_.path() / "answer.py";
    KEVIN_RETURN_IF_ERROR(write_file_atomic(text, answer));
    ::chmod(text.c_str(), 0644);
  }
  return Status::ok();
}

Result<Json> parse_runner_reply(std::string_view frame) {
  KEVIN_ASSIGN_OR_RETURN(Json body, parse_json(frame, JsonLimits{RunnerSession::kMaxReplyBytes,
                                                                 RunnerSession::kMaxReplyDepth}));
  if (!body.is_object()) return invalid_argument("a reply that is not a JSON object");
  if (!runner_protocol::reply_well_typed(body))
    return invalid_argument("a reply with fields of the wrong type");
  return body;
}

pid_t RunnerSession::work_pid() {
  if (work_pid_ < 0 && child_.running()) {
    const auto children = sys::child_processes(child_.pid());
    work_pid_ = children.empty() ? child_.pid() : children.front();
  }
  return work_pid_;
}

std::optional<uint64_t> RunnerSession::cpu_time_asleep(sys::Deadline deadline) {
  // The kernel brings a process's CPU time up to date when it stops running: read it once it
  // sleeps, or the slice it is in would be counted later, against the wrong exchange.
  const pid_t pid = work_pid();
  while (true) {
    const auto state = sys::process_state(pid);
    if (!state) return std::nullopt;
    if (*state == 'S' || *state == 'D') break;
    if (deadline.expired()) return std::nullopt;
  }
  return sys::cpu_time_ns(pid);
}

std::optional<double> RunnerSession::cpu_ms_since(uint64_t before_ns, sys::Deadline deadline) {
  const auto after = cpu_time_asleep(deadline);
  (void)resume(deadline);  // a runner that cannot be told to go on is caught by the next request
  if (!after || *after < before_ns) return std::nullopt;
  return static_cast<double>(*after - before_ns) / 1e6;
}

Status RunnerSession::resume(sys::Deadline deadline) {
  if (!resume_owed_) return Status::ok();
  resume_owed_ = false;
  return sys::write_frame(commands_.get(),
                          dump_json(runner_protocol::encode(runner_protocol::Resume{})), deadline);
}

Result<RunnerSession::Reply> RunnerSession::request(const runner_protocol::Command& cmd,
                                                    sys::Deadline deadline, bool spin,
                                                    bool measure_cpu,
                                                    std::span<const uint8_t> slot_set) {
  if (!runner_protocol::is_answered(cmd))
    return invalid_argument("'" + std::string(runner_protocol::command_name(cmd)) +
                            "' is not a request");
  if (!slot_set.empty() && slot_set.size() != slot_.size())
    return invalid_argument("a timing set of " + std::to_string(slot_set.size()) +
                            " bytes for a slot of " + std::to_string(slot_.size()));
  Reply reply;
  const auto end_with = [this, &reply](bool timed_out) {
    reply.timed_out = timed_out;
    reply.died = !timed_out;
    listing_ = Listing();  // unlisted before it is reaped, so its pid is never another's
    if (!timed_out) {
      // It closed the channel: give it a moment to finish dying so we can say how.
      auto exit = child_.wait(sys::Deadline::after(std::chrono::seconds(5)));
      reply.exit = exit.is_ok() ? *exit : child_.kill_and_reap();
    } else {
      reply.exit = child_.kill_and_reap();
    }
    return reply;
  };
  const auto refuse = [this, &reply](std::string why) {
    // A runner that answers out of protocol cannot be trusted with another command.
    reply.malformed = true;
    reply.malformed_why = std::move(why);
    listing_ = Listing();
    reply.exit = child_.kill_and_reap();
    return reply;
  };
  if (!child_.running()) return end_with(false);
  if (Status resumed = resume(deadline); !resumed.is_ok()) {
    return end_with(resumed.code() == StatusCode::kDeadlineExceeded);
  }
  if (ready_pending_) {
    ready_pending_ = false;
    auto ready = sys::read_frame(replies_.get(), deadline, kMaxReplyBytes);
    if (!ready.is_ok()) return end_with(ready.status().code() == StatusCode::kDeadlineExceeded);
    auto doc = parse_runner_reply(*ready);
    if (!doc.is_ok() || !runner_protocol::decode_ready(*doc).ready)
      return refuse("a malformed readiness frame");
  }
  const std::string text = dump_json(runner_protocol::encode(cmd));
  // The runner has said it is ready and, measured by CPU time, is asleep: only now may the
  // set become visible to it, inside the exchange the judge's clocks charge.
  if (measure_cpu) reply.cpu_before_ns = cpu_time_asleep(deadline);
  const auto t0 = std::chrono::steady_clock::now();
  if (!slot_set.empty()) copy_parallel(slot_set.data(), slot_set.size(), slot_.data());
  Status sent = sys::write_frame(commands_.get(), text, deadline);
  if (!sent.is_ok()) return end_with(sent.code() == StatusCode::kDeadlineExceeded);
  if (spin) spin_until_readable(replies_.get(), deadline);
  auto frame = sys::read_frame(replies_.get(), deadline, kMaxReplyBytes);
  reply.judge_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!frame.is_ok()) {
    if (frame.status().code() == StatusCode::kDeadlineExceeded) return end_with(true);
    if (frame.status().code() == StatusCode::kInvalidArgument)
      return refuse("a reply larger than 1 MiB");
    return end_with(false);
  }
  auto body = parse_runner_reply(*frame);
  if (!body.is_ok()) return refuse(body.status().message());
  reply.body = runner_protocol::decode_reply(cmd, *body);
  const bool ok = !std::holds_alternative<runner_protocol::Failure>(reply.body);
  ready_pending_ = runner_protocol::is_call(cmd) && ok;
  resume_owed_ = measure_cpu && std::holds_alternative<runner_protocol::TimeCall>(cmd) && ok;
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
  listing_ = Listing();
  (void)sys::write_frame(commands_.get(),
                         dump_json(runner_protocol::encode(runner_protocol::Exit{})),
                         sys::Deadline::after(std::chrono::milliseconds(200)));
  commands_.reset();
  if (!child_.wait(sys::Deadline::after(std::chrono::seconds(2))).is_ok()) child_.kill_and_reap();
}

}  // namespace kevin::engine
