// process.cpp — posix_spawn wrapper, deadline waits, command capture.
#include "sys/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>
#include <thread>

#include "sys/fd.h"

extern char** environ;

namespace kevin::sys {
namespace fs = std::filesystem;

int Deadline::poll_timeout_ms() const {
  if (at_ == Clock::time_point::max()) return -1;
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(at_ - Clock::now());
  if (left.count() <= 0) return 0;
  return left.count() > INT_MAX ? INT_MAX : static_cast<int>(left.count());
}

std::string ExitInfo::describe() const {
  if (exited) return "exit code " + std::to_string(code);
  const char* name = strsignal(signal);
  return "killed by signal " + std::to_string(signal) + " (" + (name ? name : "?") + ")";
}

namespace {

ExitInfo decode(int status, const struct rusage& usage) {
  const auto micros = [](const timeval& t) {
    return std::chrono::seconds(t.tv_sec) + std::chrono::microseconds(t.tv_usec);
  };
  ExitInfo info;
  info.cpu_time = micros(usage.ru_utime) + micros(usage.ru_stime);
  if (WIFEXITED(status)) {
    info.exited = true;
    info.code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    info.signal = WTERMSIG(status);
  }
  return info;
}

}  // namespace

Child& Child::operator=(Child&& other) noexcept {
  if (this != &other) {
    if (running()) kill_and_reap();
    pid_ = std::exchange(other.pid_, -1);
  }
  return *this;
}

Child::~Child() {
  if (running()) kill_and_reap();
}

Result<ExitInfo> Child::wait(Deadline deadline) {
  if (!running()) return failed_precondition("child already reaped");
  auto pause = std::chrono::microseconds(200);
  while (true) {
    int status = 0;
    struct rusage usage {};
    const pid_t r = ::wait4(pid_, &status, WNOHANG, &usage);
    if (r == pid_) {
      pid_ = -1;
      return decode(status, usage);
    }
    if (r < 0 && errno != EINTR) {
      pid_ = -1;
      return internal_error(std::string("wait4: ") + std::strerror(errno));
    }
    if (deadline.expired()) return deadline_exceeded("child still running");
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(10000));
  }
}

ExitInfo Child::kill_and_reap() {
  if (!running()) return {};
  ::kill(-pid_, SIGKILL);  // the whole group: the child may have left helpers behind
  ::kill(pid_, SIGKILL);
  int status = 0;
  struct rusage usage {};
  while (::wait4(pid_, &status, 0, &usage) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  return decode(status, usage);
}

Result<Child> spawn(const SpawnOptions& options) {
  if (options.argv.empty()) return invalid_argument("spawn: empty argv");
  if (::access(options.argv[0].c_str(), X_OK) != 0) {
    return not_found("cannot execute " + options.argv[0] + ": " + std::strerror(errno));
  }
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attr);
  // Two passes: first copy every source to a spare high descriptor, then onto its target.
  // Mapping directly could overwrite a source that a later mapping still needs (a parent fd
  // 5 meant for child fd 6 would be gone after dup2(x, 5)); going through a copy also clears
  // O_CLOEXEC when source and target are the same number.
  constexpr int kSpare = 900;
  for (size_t i = 0; i < options.fds.size(); ++i) {
    posix_spawn_file_actions_adddup2(&actions, options.fds[i].second, kSpare + static_cast<int>(i));
  }
  for (size_t i = 0; i < options.fds.size(); ++i) {
    posix_spawn_file_actions_adddup2(&actions, kSpare + static_cast<int>(i), options.fds[i].first);
  }
  for (size_t i = 0; i < options.fds.size(); ++i) {
    posix_spawn_file_actions_addclose(&actions, kSpare + static_cast<int>(i));
  }
  if (options.cwd) posix_spawn_file_actions_addchdir_np(&actions, options.cwd->c_str());
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  sigaddset(&defaults, SIGXFSZ);
  sigaddset(&defaults, SIGXCPU);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);

  std::vector<char*> argv;
  for (const auto& a : options.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const auto& e : options.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, argv[0], &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return unavailable("spawn " + options.argv[0] + ": " + std::strerror(rc));
  return Child(pid);
}

std::vector<std::string> current_environment(const std::vector<std::string>& keep) {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry = *e;
    if (keep.empty()) {
      env.push_back(entry);
      continue;
    }
    const std::string key = entry.substr(0, entry.find('='));
    for (const auto& k : keep) {
      if (k == key) env.push_back(entry);
    }
  }
  return env;
}

fs::path executable_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::current_path() : exe.parent_path();
}

Result<CommandResult> run_command(const std::vector<std::string>& argv, Deadline deadline,
                                  size_t max_output, const std::optional<fs::path>& cwd,
                                  const std::optional<std::vector<std::string>>& env) {
  CommandOptions options;
  options.max_output = max_output;
  options.cwd = cwd;
  options.env = env;
  return run_command(argv, deadline, options);
}

Result<CommandResult> run_command(const std::vector<std::string>& argv, Deadline deadline,
                                  const CommandOptions& options) {
  KEVIN_ASSIGN_OR_RETURN(Pipe out, make_pipe());
  const int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  Fd devnull_fd(devnull);
  SpawnOptions spawn_options;
  spawn_options.argv = argv;
  spawn_options.env = options.env ? *options.env : current_environment();
  spawn_options.fds = {{0, devnull}, {1, out.write.get()}, {2, out.write.get()}};
  spawn_options.cwd = options.cwd;
  const auto start = Clock::now();
  KEVIN_ASSIGN_OR_RETURN(Child child, spawn(spawn_options));
  out.write.reset();
  CommandResult result;
  const Status drained = read_until_eof_or_limit(out.read.get(), options.max_output,
                                                 options.kill_after_output.value_or(SIZE_MAX),
                                                 deadline, &result.output, &result.output_exceeded);
  if (drained.code() == StatusCode::kDeadlineExceeded || result.output_exceeded) {
    result.timed_out = !result.output_exceeded;
    result.exit = child.kill_and_reap();
  } else {
    auto exit = child.wait(deadline);
    if (!exit.is_ok()) {
      result.timed_out = true;
      result.exit = child.kill_and_reap();
    } else {
      result.exit = *exit;
    }
  }
  result.wall_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  return result;
}

std::optional<fs::path> find_program(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return std::nullopt;
  std::string dirs = path;
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    const fs::path candidate = fs::path(dirs.substr(start, end - start)) / name;
    if (!candidate.parent_path().empty() && ::access(candidate.c_str(), X_OK) == 0)
      return candidate;
    start = end + 1;
  }
  return std::nullopt;
}

}  // namespace kevin::sys
