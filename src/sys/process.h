// process.h — spawning child processes (posix_spawn, never fork: the parent may hold a CUDA
// context or threads), waiting with deadlines, killing whole process groups.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace kevin::sys {

using Clock = std::chrono::steady_clock;

// A point in time after which a wait gives up.
class Deadline {
 public:
  static Deadline after(std::chrono::milliseconds d) { return Deadline(Clock::now() + d); }
  static Deadline never() { return Deadline(Clock::time_point::max()); }
  bool expired() const { return Clock::now() >= at_; }
  // Milliseconds left, clamped to [0, INT32_MAX], for poll().
  int poll_timeout_ms() const;
  Clock::time_point at() const { return at_; }

 private:
  explicit Deadline(Clock::time_point at) : at_(at) {}
  Clock::time_point at_;
};

struct SpawnOptions {
  std::vector<std::string> argv;             // argv[0] is the program path (no PATH search)
  std::vector<std::string> env;              // the child's whole environment
  std::vector<std::pair<int, int>> fds;      // {child_fd, parent_fd}: dup2'd into the child
  std::optional<std::filesystem::path> cwd;  // working directory
  // Every other descriptor is closed in the child because kevin opens all its descriptors
  // with O_CLOEXEC. The child gets its own process group so it can be killed whole.
};

// How a child ended.
struct ExitInfo {
  bool exited = false;  // true: normal exit with `code`; false: killed by `signal`
  int code = 0;
  int signal = 0;
  // User plus system CPU time of the child and of every descendant that was waited for
  // (wait4's rusage): a whole process tree's, where each parent reaps its own children.
  std::chrono::microseconds cpu_time{0};
  std::string describe() const;  // "exit code 3" / "killed by signal 11 (Segmentation fault)"
};

// A spawned child. Destroying a still-running Child kills its process group and reaps it.
class Child {
 public:
  Child() = default;
  explicit Child(pid_t pid) : pid_(pid) {}
  Child(Child&& other) noexcept : pid_(std::exchange(other.pid_, -1)) {}
  Child& operator=(Child&& other) noexcept;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child();

  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0; }
  // Waits for exit until `deadline`; kDeadlineExceeded leaves the child running.
  Result<ExitInfo> wait(Deadline deadline);
  // SIGKILLs the process group and reaps the child. Returns how it ended (killed, normally).
  ExitInfo kill_and_reap();

 private:
  pid_t pid_ = -1;
};

// Starts a child. Errors (program missing, spawn failure) are kUnavailable/kNotFound.
Result<Child> spawn(const SpawnOptions& options);

// The current process's environment as "K=V" strings, optionally keeping only `keep` keys.
std::vector<std::string> current_environment(const std::vector<std::string>& keep = {});

// Directory holding the running executable (from /proc/self/exe).
std::filesystem::path executable_dir();

// Runs a program to completion, capturing stdout+stderr (at most `max_output` bytes kept).
struct CommandResult {
  ExitInfo exit;
  std::string output;
  bool timed_out = false;
  bool output_exceeded = false;  // killed for printing more than kill_after_output bytes
  double wall_ms = 0;
};
// `env` replaces the environment when given (e.g. to keep secrets away from a compiler
// that processes untrusted source); otherwise the child inherits ours.
Result<CommandResult> run_command(
    const std::vector<std::string>& argv, Deadline deadline, size_t max_output = 1 << 20,
    const std::optional<std::filesystem::path>& cwd = std::nullopt,
    const std::optional<std::vector<std::string>>& env = std::nullopt);

// Everything run_command can be told besides the program and the deadline.
struct CommandOptions {
  size_t max_output = 1 << 20;  // bytes of stdout+stderr kept
  // When set, the process group is killed as soon as more than this many bytes have been
  // printed (CommandResult::output_exceeded), instead of draining a flood until the deadline.
  std::optional<size_t> kill_after_output;
  std::optional<std::filesystem::path> cwd;
  std::optional<std::vector<std::string>> env;  // replaces the environment when given
};
Result<CommandResult> run_command(const std::vector<std::string>& argv, Deadline deadline,
                                  const CommandOptions& options);

// Finds `name` on PATH; nullopt if absent.
std::optional<std::filesystem::path> find_program(const std::string& name);

}  // namespace kevin::sys
