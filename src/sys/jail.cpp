// jail.cpp — kevin-sandbox's option parsing and its launch: namespaces, the new root, the
// init process of the new PID namespace, and the command.
//
// Processes: the launcher (started by the caller) unshares the namespaces and forks the
// init (PID 1 inside), which builds the root and forks the command (PID 2), reaps, and
// reports the command's wait status to the launcher through a pipe. Each dies with its
// parent (PR_SET_PDEATHSIG); when the init dies, the kernel kills everything left in the
// PID namespace, so nothing the command started outlives kevin-sandbox.
//
// The root: a tmpfs is mounted on /tmp (in the private mount namespace only) and becomes
// the root by pivot_root, with the old root under /oldroot; that way sources anywhere,
// /tmp included, stay reachable while the new root is filled. The new root is another
// tmpfs holding mount points only; after the second pivot_root the old root is detached.
#include "sys/jail.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstdint>
#include <cstring>
#include <map>
#include <string_view>

namespace kevin::sys {
namespace fs = std::filesystem;

namespace {

// ---- options ---------------------------------------------------------------------------

Result<uint64_t> parse_number(const std::string& flag, const std::string& text) {
  uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) {
    return invalid_argument(flag + " wants a non-negative integer, not '" + text + "'");
  }
  return value;
}

// Absolute, normal paths only: the launcher prefixes them with /oldroot and /newroot.
Result<fs::path> parse_path(const std::string& flag, const std::string& text) {
  const fs::path p(text);
  if (!p.is_absolute() || p.lexically_normal() != p || text.find("/..") != std::string::npos ||
      (text.size() > 1 && text.back() == '/')) {
    return invalid_argument(flag + " wants an absolute normal path, not '" + text + "'");
  }
  return p;
}

bool known_device(const std::string& name) {
  return name == "null" || name == "zero" || name == "full" || name == "random" ||
         name == "urandom";
}

// Applies one "--flag value" pair to `o`.
Status apply_option(const std::string& flag, const std::string& value, JailOptions* o) {
  if (flag == "--ro" || flag == "--rw" || flag == "--chdir") {
    KEVIN_ASSIGN_OR_RETURN(fs::path p, parse_path(flag, value));
    if (flag == "--chdir") {
      o->chdir = p;
    } else {
      (flag == "--ro" ? o->read_only : o->read_write).push_back(p);
    }
    return Status::ok();
  }
  if (flag == "--dev") {
    if (!known_device(value)) return invalid_argument("--dev: unknown device '" + value + "'");
    if (value != "null") o->devices.push_back(value);
    return Status::ok();
  }
  if (flag == "--env") {
    if (value.find('=') == std::string::npos || value.front() == '=') {
      return invalid_argument("--env wants KEY=VALUE, not '" + value + "'");
    }
    o->env.push_back(value);
    return Status::ok();
  }
  KEVIN_ASSIGN_OR_RETURN(uint64_t n, parse_number(flag, value));
  const auto fits_id = [&]() -> Status {
    if (n >= UINT32_MAX) return invalid_argument(flag + " " + value + " is not a valid id");
    return Status::ok();
  };
  if (flag == "--tmp-size") {
    if (n == 0) return invalid_argument("--tmp-size must be positive (tmpfs reads 0 as unlimited)");
    o->tmp_bytes = n;
  } else if (flag == "--uid") {
    KEVIN_RETURN_IF_ERROR(fits_id());
    o->uid = static_cast<uid_t>(n);
  } else if (flag == "--gid") {
    KEVIN_RETURN_IF_ERROR(fits_id());
    o->gid = static_cast<gid_t>(n);
  } else if (flag == "--parent-pid") {
    if (n == 0 || n > INT32_MAX) return invalid_argument("--parent-pid " + value + " is not a pid");
    o->parent_pid = static_cast<pid_t>(n);
  } else if (flag == "--as") {
    o->limits.address_space_bytes = n;
  } else if (flag == "--cpu") {
    o->limits.cpu_seconds = n;
  } else if (flag == "--fsize") {
    o->limits.file_size_bytes = n;
  } else if (flag == "--nofile") {
    o->limits.open_files = n;
  } else {
    return invalid_argument("unknown option " + flag);
  }
  return Status::ok();
}

}  // namespace

Result<JailOptions> parse_jail_args(const std::vector<std::string>& args) {
  JailOptions o;
  size_t i = 0;
  for (; i < args.size() && args[i] != "--"; ++i) {
    const std::string& flag = args[i];
    if (flag == "--no-proc") {
      o.proc = false;
      continue;
    }
    if (i + 1 >= args.size()) return invalid_argument(flag + " wants a value");
    KEVIN_RETURN_IF_ERROR(apply_option(flag, args[++i], &o));
  }
  if (i + 1 >= args.size())
    return invalid_argument("no command given (options, then -- COMMAND [ARG...])");
  o.command.assign(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
  if (!fs::path(o.command[0]).is_absolute()) {
    return invalid_argument("the command must be an absolute path, not '" + o.command[0] + "'");
  }
  return o;
}

std::vector<std::string> jail_args(const JailOptions& o) {
  std::vector<std::string> a;
  const auto add = [&](const std::string& flag, const std::string& value) {
    a.push_back(flag);
    a.push_back(value);
  };
  for (const auto& p : o.read_only) add("--ro", p.string());
  for (const auto& p : o.read_write) add("--rw", p.string());
  add("--chdir", o.chdir.string());
  for (const auto& d : o.devices) add("--dev", d);
  if (!o.proc) a.push_back("--no-proc");
  add("--tmp-size", std::to_string(o.tmp_bytes));
  add("--uid", std::to_string(o.uid));
  add("--gid", std::to_string(o.gid));
  if (o.parent_pid > 0) add("--parent-pid", std::to_string(o.parent_pid));
  const auto limit = [&](const std::string& flag, const std::optional<uint64_t>& v) {
    if (v) add(flag, std::to_string(*v));
  };
  limit("--as", o.limits.address_space_bytes);
  limit("--cpu", o.limits.cpu_seconds);
  limit("--fsize", o.limits.file_size_bytes);
  limit("--nofile", o.limits.open_files);
  for (const auto& e : o.env) add("--env", e);
  a.push_back("--");
  a.insert(a.end(), o.command.begin(), o.command.end());
  return a;
}

namespace {

// ---- failure reporting -----------------------------------------------------------------

// Writes "kevin-sandbox: <why>" as one line and exits; used in every process of the jail.
[[noreturn]] void fail(const std::string& why) {
  std::string line = std::string(kJailMessagePrefix) + why;
  std::replace(line.begin(), line.end(), '\n', ' ');
  line += '\n';
  const ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
  (void)ignored;
  ::_exit(kJailSetupFailedExit);
}

// fail() for the moment after the limits are set, when nothing may be allocated any more:
// the message is written piece by piece.
[[noreturn]] void fail_exec(const char* path, int error) {
  const char* const why = std::strerror(error);
  for (const char* piece : {kJailMessagePrefix, "exec ", path, ": ", why, "\n"}) {
    const ssize_t ignored = ::write(STDERR_FILENO, piece, std::strlen(piece));
    (void)ignored;
  }
  ::_exit(kJailSetupFailedExit);
}

void check(const Status& s) {
  if (!s.is_ok()) fail(s.message());
}

Status errno_error(const std::string& what) {
  return internal_error(what + ": " + std::strerror(errno));
}

// ---- the new root ----------------------------------------------------------------------

constexpr const char* kOld = "/oldroot";  // the host's root while the new one is built
constexpr const char* kNew = "/newroot";

Status mount_at(const char* source, const std::string& target, const char* type,
                unsigned long flags, const std::string& data = {}) {
  if (::mount(source, target.c_str(), type, flags, data.empty() ? nullptr : data.c_str()) != 0) {
    const char* what = type != nullptr ? type : source != nullptr ? source : "(remount)";
    return errno_error(std::string("mount ") + what + " on " + target);
  }
  return Status::ok();
}

Status make_dirs(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return internal_error("mkdir " + dir.string() + ": " + ec.message());
  return Status::ok();
}

// The per-mount flags of the filesystem holding `path` that a bind must keep: in a user
// namespace the kernel refuses a remount that would clear them (they are locked).
unsigned long locked_flags(const std::string& path) {
  struct statvfs s {};
  if (::statvfs(path.c_str(), &s) != 0) return 0;
  unsigned long flags = 0;
  const std::pair<unsigned long, unsigned long> map[] = {
      {ST_RDONLY, MS_RDONLY},    {ST_NOSUID, MS_NOSUID},   {ST_NODEV, MS_NODEV},
      {ST_NOEXEC, MS_NOEXEC},    {ST_NOATIME, MS_NOATIME}, {ST_NODIRATIME, MS_NODIRATIME},
      {ST_RELATIME, MS_RELATIME}};
  for (const auto& [st, ms] : map) {
    if ((s.f_flag & st) != 0) flags |= ms;
  }
  return flags;
}

// Binds `source` (a host path under /oldroot) at `target`, then remounts it with `flags`.
Status bind_at(const std::string& source, const std::string& target, unsigned long flags) {
  KEVIN_RETURN_IF_ERROR(mount_at(source.c_str(), target, nullptr, MS_BIND));
  return mount_at(nullptr, target, nullptr, MS_REMOUNT | MS_BIND | flags | locked_flags(source));
}

// Creates an empty mount point at `target` of the same kind (file or directory) as `st`.
Status make_mount_point(const std::string& target, const struct stat& st) {
  KEVIN_RETURN_IF_ERROR(make_dirs(fs::path(target).parent_path()));
  if (S_ISDIR(st.st_mode)) return make_dirs(target);
  const int fd = ::open(target.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return errno_error("create " + target);
  ::close(fd);
  return Status::ok();
}

Status recreate_symlink(const std::string& source, const std::string& target) {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink(source.c_str(), buf, sizeof buf - 1);
  if (n < 0) return errno_error("readlink " + source);
  KEVIN_RETURN_IF_ERROR(make_dirs(fs::path(target).parent_path()));
  if (::symlink(std::string(buf, static_cast<size_t>(n)).c_str(), target.c_str()) != 0) {
    return errno_error("symlink " + target);
  }
  return Status::ok();
}

// Makes host `path` visible at the same path in the new root.
Status expose(const fs::path& path, bool writable) {
  const std::string source = kOld + path.string();
  const std::string target = kNew + path.string();
  struct stat st {};
  if (::lstat(source.c_str(), &st) != 0) return errno_error(path.string());
  struct stat existing {};
  if (::lstat(target.c_str(), &existing) == 0) {
    // Already visible through an earlier (ancestor) bind, which was read-only.
    if (writable)
      return failed_precondition(path.string() +
                                 " is inside a read-only bind; cannot bind it writable");
    return Status::ok();
  }
  if (S_ISLNK(st.st_mode)) return recreate_symlink(source, target);
  KEVIN_RETURN_IF_ERROR(make_mount_point(target, st));
  return bind_at(source, target, MS_NOSUID | MS_NODEV | (writable ? 0 : MS_RDONLY));
}

Status populate_dev(const JailOptions& o) {
  const std::string dev = std::string(kNew) + "/dev";
  KEVIN_RETURN_IF_ERROR(make_dirs(dev));
  KEVIN_RETURN_IF_ERROR(
      mount_at("tmpfs", dev, "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k"));
  std::vector<std::string> names = {"null"};
  names.insert(names.end(), o.devices.begin(), o.devices.end());
  for (const auto& name : names) {
    const std::string source = std::string(kOld) + "/dev/" + name;
    struct stat st {};
    if (::stat(source.c_str(), &st) != 0 || !S_ISCHR(st.st_mode))
      return errno_error("/dev/" + name + " is not a character device");
    KEVIN_RETURN_IF_ERROR(make_mount_point(dev + "/" + name, st));
    KEVIN_RETURN_IF_ERROR(bind_at(source, dev + "/" + name, MS_NOSUID | MS_NOEXEC));
  }
  for (const auto& [link, to] : std::map<std::string, std::string>{{"fd", "/proc/self/fd"},
                                                                   {"stdin", "/proc/self/fd/0"},
                                                                   {"stdout", "/proc/self/fd/1"},
                                                                   {"stderr", "/proc/self/fd/2"}}) {
    if (::symlink(to.c_str(), (dev + "/" + link).c_str()) != 0)
      return errno_error("symlink /dev/" + link);
  }
  return mount_at(nullptr, dev, nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NOEXEC);
}

Status pivot(const std::string& new_root, const std::string& put_old) {
  if (::syscall(SYS_pivot_root, new_root.c_str(), put_old.c_str()) != 0) {
    return errno_error("pivot_root " + new_root);
  }
  if (::chdir("/") != 0) return errno_error("chdir /");
  return Status::ok();
}

// Stage 1: a private mount tree and a staging root from which the host is under /oldroot.
Status enter_staging_root() {
  KEVIN_RETURN_IF_ERROR(mount_at(nullptr, "/", nullptr, MS_REC | MS_PRIVATE));
  KEVIN_RETURN_IF_ERROR(
      mount_at("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=64k"));
  KEVIN_RETURN_IF_ERROR(make_dirs(std::string("/tmp") + kNew));
  KEVIN_RETURN_IF_ERROR(make_dirs(std::string("/tmp") + kOld));
  return pivot("/tmp", std::string("/tmp") + kOld);
}

// Stage 2: the new root's own mounts, then every bind.
Status fill_new_root(const JailOptions& o) {
  KEVIN_RETURN_IF_ERROR(
      mount_at("tmpfs", kNew, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m"));
  const std::string tmp = std::string(kNew) + "/tmp";
  KEVIN_RETURN_IF_ERROR(make_dirs(tmp));
  KEVIN_RETURN_IF_ERROR(mount_at("tmpfs", tmp, "tmpfs", MS_NOSUID | MS_NODEV,
                                 "mode=1777,size=" + std::to_string(o.tmp_bytes)));
  KEVIN_RETURN_IF_ERROR(populate_dev(o));
  if (o.proc) {
    const std::string proc = std::string(kNew) + "/proc";
    KEVIN_RETURN_IF_ERROR(make_dirs(proc));
    KEVIN_RETURN_IF_ERROR(mount_at("proc", proc, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC));
  }
  // Ancestors first, so that a path inside an earlier bind is seen as already visible.
  std::vector<std::pair<fs::path, bool>> binds;
  for (const auto& p : o.read_only) binds.emplace_back(p, false);
  for (const auto& p : o.read_write) binds.emplace_back(p, true);
  std::sort(binds.begin(), binds.end());
  for (const auto& [path, writable] : binds) KEVIN_RETURN_IF_ERROR(expose(path, writable));
  return Status::ok();
}

// Stage 3: the new root becomes "/", the host's tree is detached, the root goes read-only.
Status enter_new_root(const JailOptions& o) {
  const std::string old = std::string(kNew) + "/.old";
  KEVIN_RETURN_IF_ERROR(make_dirs(old));
  KEVIN_RETURN_IF_ERROR(pivot(kNew, old));
  if (::umount2("/.old", MNT_DETACH) != 0) return errno_error("umount /.old");
  if (::rmdir("/.old") != 0) return errno_error("rmdir /.old");
  KEVIN_RETURN_IF_ERROR(
      mount_at(nullptr, "/", nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV));
  if (::chdir(o.chdir.c_str()) != 0) return errno_error("chdir " + o.chdir.string());
  return Status::ok();
}

// ---- processes -------------------------------------------------------------------------

bool started_as_root() { return ::geteuid() == 0; }

Status write_proc_file(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return errno_error("open " + path);
  const ssize_t n = ::write(fd, text.data(), text.size());
  const int saved = errno;
  ::close(fd);
  errno = saved;
  if (n != static_cast<ssize_t>(text.size())) return errno_error("write " + path);
  return Status::ok();
}

// In a new user namespace: the outside uid/gid appear as options' uid/gid inside.
Status map_ids(const JailOptions& o, uid_t outer_uid, gid_t outer_gid) {
  KEVIN_RETURN_IF_ERROR(write_proc_file("/proc/self/setgroups", "deny"));
  KEVIN_RETURN_IF_ERROR(write_proc_file(
      "/proc/self/uid_map", std::to_string(o.uid) + " " + std::to_string(outer_uid) + " 1\n"));
  return write_proc_file("/proc/self/gid_map",
                         std::to_string(o.gid) + " " + std::to_string(outer_gid) + " 1\n");
}

Status create_namespaces(const JailOptions& o) {
  const bool root = started_as_root();
  const uid_t uid = ::geteuid();
  const gid_t gid = ::getegid();
  int flags = CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWPID;
  if (!root) flags |= CLONE_NEWUSER;
  if (::unshare(flags) != 0) {
    return errno_error(
        std::string("cannot create namespaces (unshare of mount, net, ipc, uts, pid") +
        (root ? "" : ", user") + ")");
  }
  if (!root) KEVIN_RETURN_IF_ERROR(map_ids(o, uid, gid));
  return Status::ok();
}

// PID 2: limits, identity, then the command.
[[noreturn]] void run_command_process(const JailOptions& o, bool root) {
  check(die_with_parent(1));
  // As root the uid changes here; in a user namespace the process already has options' uid
  // inside, and its capabilities there end at execve (its uid is not 0).
  check(root ? become_user(o.uid, o.gid) : forbid_new_privileges());
  std::vector<char*> argv;
  for (const auto& a : o.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const auto& e : o.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  // The limits come last, with nothing left to allocate before execve: under an address-space
  // cap this process (a sanitizer build's above all, with its huge shadow reservations) could
  // not allocate any more.
  check(apply_resource_limits(o.limits));
  ::execve(argv[0], argv.data(), envp.data());
  fail_exec(argv[0], errno);
}

// PID 1: builds the root, starts the command, reaps everything, reports the command's wait
// status on `status_fd`, and exits (which ends the namespace).
[[noreturn]] void run_init(const JailOptions& o, bool root, int lifeline, int status_fd) {
  check(die_with_parent_lifeline(lifeline));
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0,
          0);  // the command (same uid in a user namespace) cannot ptrace us
  constexpr std::string_view kHostname = "kevin-sandbox";  // the host's name stays outside
  if (::sethostname(kHostname.data(), kHostname.size()) != 0)
    fail(std::string("sethostname: ") + std::strerror(errno));
  check(enter_staging_root());
  check(fill_new_root(o));
  check(enter_new_root(o));
  const pid_t child = ::fork();
  if (child < 0) fail(std::string("fork: ") + std::strerror(errno));
  if (child == 0) run_command_process(o, root);
  while (true) {
    int status = 0;
    const pid_t r = ::waitpid(-1, &status, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) fail(std::string("waitpid: ") + std::strerror(errno));
    if (r != child) continue;
    const ssize_t ignored = ::write(status_fd, &status, sizeof status);
    (void)ignored;
    ::_exit(0);
  }
}

// The launcher's exit: the command's exit code, or death by the command's signal.
int forward_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    ::signal(sig, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    ::sigprocmask(SIG_UNBLOCK, &set, nullptr);
    ::raise(sig);
    return 128 + sig;  // a signal whose default action is not to terminate
  }
  return kJailSetupFailedExit;
}

void close_inherited_descriptors() {
  if (::syscall(SYS_close_range, 3U, ~0U, 0U) == 0) return;
  for (int fd = 3; fd < 1024; ++fd) ::close(fd);
}

}  // namespace

int run_jail(const JailOptions& o) {
  close_inherited_descriptors();
  // The launcher itself: no core dump when it forwards a crash signal, gone with its caller.
  ResourceLimits no_core;
  no_core.core_bytes = 0;
  check(apply_resource_limits(no_core));
  check(die_with_parent(o.parent_pid > 0 ? o.parent_pid : ::getppid()));
  const bool root = started_as_root();
  check(create_namespaces(o));
  int status_pipe[2];
  int lifeline[2];
  if (::pipe2(status_pipe, O_CLOEXEC) != 0 || ::pipe2(lifeline, O_CLOEXEC) != 0) {
    fail(std::string("pipe: ") + std::strerror(errno));
  }
  const pid_t init = ::fork();
  if (init < 0) fail(std::string("fork: ") + std::strerror(errno));
  if (init == 0) {
    ::close(status_pipe[0]);
    ::close(lifeline[1]);
    run_init(o, root, lifeline[0], status_pipe[1]);
  }
  ::close(status_pipe[1]);
  ::close(lifeline[0]);  // lifeline[1] stays open until we exit: the init watches it
  int status = 0;
  ssize_t n = 0;
  do {
    n = ::read(status_pipe[0], &status, sizeof status);
  } while (n < 0 && errno == EINTR);
  int init_status = 0;
  while (::waitpid(init, &init_status, 0) < 0 && errno == EINTR) {
  }
  return forward_status(n == static_cast<ssize_t>(sizeof status) ? status : init_status);
}

}  // namespace kevin::sys
