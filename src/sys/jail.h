// jail.h — the compiler sandbox behind the `kevin-sandbox` helper: runs one command in new
// mount, network, IPC, UTS and PID namespaces (plus a user namespace when not started as
// root) on a fresh root that holds only what the options name, as an unprivileged user with
// resource limits and an explicit environment. The option parsing lives here, apart from
// the helper's main(), so that it can be tested and so that callers build command lines
// with the same code that reads them.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/status.h"
#include "sys/confine.h"

namespace kevin::sys {

// Exit codes of kevin-sandbox itself (the command's own exit status is passed through
// otherwise, and a command killed by a signal makes kevin-sandbox die of the same signal).
// With either code, the last line on stderr is "kevin-sandbox: <one-line reason>".
inline constexpr int kJailSetupFailedExit = 111;  // namespaces, mounts, limits or exec failed
inline constexpr int kJailUsageExit = 112;        // malformed options
inline constexpr const char* kJailMessagePrefix = "kevin-sandbox: ";

struct JailOptions {
  // Bound at the same path inside. A path whose last component is a symlink is recreated as
  // that symlink (bind its target too); parent components must not be symlinks (pass
  // canonical parents). A path already visible through an earlier read-only bind is skipped.
  std::vector<std::filesystem::path> read_only;
  std::vector<std::filesystem::path> read_write;
  std::filesystem::path chdir = "/";         // working directory inside
  std::vector<std::string> devices;          // /dev nodes besides null: zero, full, random, urandom
  bool proc = true;                          // a /proc of the new PID namespace
  uint64_t tmp_bytes = uint64_t{512} << 20;  // size of the private /tmp (tmpfs)
  uid_t uid = kNobodyUid;                    // who the command runs as (the uid seen inside)
  gid_t gid = kNobodyGid;
  // The caller's pid: kevin-sandbox dies with it, and exits at once if it is already gone
  // (0: whoever is the parent at start, which cannot tell whether it already died).
  pid_t parent_pid = 0;
  ResourceLimits limits = default_limits();
  std::vector<std::string> env;      // the command's whole environment, "K=V"
  std::vector<std::string> command;  // argv; command[0] is an absolute path inside

  static ResourceLimits default_limits() {
    ResourceLimits l;
    l.address_space_bytes = uint64_t{8} << 30;
    l.file_size_bytes = uint64_t{512} << 20;
    l.open_files = 512;
    l.core_bytes = 0;
    return l;
  }
};

// Reads kevin-sandbox's arguments (without the program name):
//   --ro PATH  --rw PATH  --chdir PATH  --dev NAME  --no-proc  --tmp-size BYTES
//   --uid N  --gid N  --parent-pid N  --as BYTES  --cpu SECONDS  --fsize BYTES  --nofile N
//   --env K=V
//   -- COMMAND [ARG...]
// kInvalidArgument naming the offending argument.
Result<JailOptions> parse_jail_args(const std::vector<std::string>& args);

// The arguments that parse_jail_args reads back as `options` (every field spelled out).
std::vector<std::string> jail_args(const JailOptions& options);

// Runs options.command in the sandbox and returns the exit code kevin-sandbox should exit
// with; a command killed by a signal is forwarded by raising that signal (this call then
// does not return). Setup failures print one line and give kJailSetupFailedExit. Meant to
// be called from a single-threaded process (it forks): kevin-sandbox's main().
int run_jail(const JailOptions& options);

}  // namespace kevin::sys
