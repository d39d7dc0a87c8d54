// sandbox.cpp — namespaces, the empty root, privilege drop, rlimits and the two seccomp
// allowlists of the runner (default: trap, report the call's number, die by SIGSYS).
#include "engine/runner/sandbox.h"

#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "sys/confine.h"

namespace kevin::runner {
namespace {

constexpr rlim_t kStackBytes = rlim_t{16} << 20;

bool is_root() { return ::geteuid() == 0; }

Status os_error(const std::string& what) { return unavailable(what + ": " + std::strerror(errno)); }

// Lowest address the main thread's stack may reach (set by enter_namespaces or the first
// scrub): the scrub never needs to look below it.
uintptr_t g_stack_floor = 0;

void remember_stack_floor() {
  rlimit lim{kStackBytes, kStackBytes};
  ::setrlimit(RLIMIT_STACK, &lim);
  char here;
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  g_stack_floor = (reinterpret_cast<uintptr_t>(&here) - kStackBytes) & ~(page - 1);
}

bool write_text(const char* path, const std::string& text) {
  const int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

// Who this runner must die with: the judge (its pid, from die_with_parent), or inside a PID
// namespace the outer process, watched through a pipe whose other end only it holds (a
// parent outside the namespace reads as pid 0 there).
int g_judge_pid = 0;
int g_lifeline_fd = -1;

// The outer process of a PID namespace: waits for PID 1 and ends the same way. It keeps only
// `lifeline`, whose closing (its death) PID 1 can see.
[[noreturn]] void mirror_child(pid_t child, int lifeline) {
  for (int fd = 0; fd < 1024; ++fd) {
    if (fd != lifeline) ::close(fd);  // the judge sees EOF only from the child
  }
  rlimit no_core{0, 0};
  ::setrlimit(RLIMIT_CORE, &no_core);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) {
    ::signal(WTERMSIG(status), SIG_DFL);
    ::raise(WTERMSIG(status));
  }
  ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

// Decimal text of `v` into `out` (async-signal-safe); returns the length.
size_t format_number(long v, char* out) {
  char digits[24];
  size_t n = 0;
  const bool negative = v < 0;
  unsigned long u = negative ? 0ul - static_cast<unsigned long>(v) : static_cast<unsigned long>(v);
  do {
    digits[n++] = static_cast<char>('0' + u % 10);
    u /= 10;
  } while (u != 0);
  size_t len = 0;
  if (negative) out[len++] = '-';
  while (n > 0) out[len++] = digits[--n];
  return len;
}

// SIGSYS from the filter's trap: say which call it was (the judge shows what the runner
// printed), then make a forbidden call again; SIGSYS is blocked inside this handler, so the
// kernel resets it to its default action and the process dies by SIGSYS.
void on_forbidden_call(int, siginfo_t* info, void*) {
  static const char kPrefix[] = "kevin-runner: forbidden system call number ";
  char line[96];
  size_t len = sizeof kPrefix - 1;
  std::memcpy(line, kPrefix, len);
  len += format_number(info->si_syscall, line + len);
  line[len++] = '\n';
  (void)!::write(2, line, len);
  ::syscall(SYS_rt_sigaction, SIGSYS, nullptr, nullptr, 8);
  ::_exit(128 + SIGSYS);  // not reached
}

Status install_trap_handler() {
  struct sigaction sa {};
  sa.sa_sigaction = on_forbidden_call;
  sa.sa_flags = SA_SIGINFO;
  if (::sigaction(SIGSYS, &sa, nullptr) != 0) return os_error("sigaction(SIGSYS)");
  return Status::ok();
}

enum class Stage { kLoader, kSealed };

// Builds and loads one allowlist. Every thread gets it (TSYNC): the CUDA driver's helper
// threads share the address space, so an unfiltered one would be a way out.
Status install_allowlist(Stage stage, int object_fd, const SyscallNeeds& needs) {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_TRAP);
  if (ctx == nullptr) return internal_error("seccomp_init failed");
  int rc = 0;
  const auto allow = [&](int nr, std::initializer_list<scmp_arg_cmp> args = {}) {
    const int r =
        seccomp_rule_add_array(ctx, SCMP_ACT_ALLOW, nr, static_cast<unsigned>(args.size()),
                               args.size() == 0 ? nullptr : args.begin());
    if (r != 0 && rc == 0) rc = r;
  };
  // Memory, time, waiting and leaving: what the runner's own protocol loop needs.
  for (int nr : {SCMP_SYS(read),
                 SCMP_SYS(write),
                 SCMP_SYS(writev),
                 SCMP_SYS(close),
                 SCMP_SYS(fstat),
                 SCMP_SYS(newfstatat),
                 SCMP_SYS(lseek),
                 SCMP_SYS(pread64),
                 SCMP_SYS(munmap),
                 SCMP_SYS(mremap),
                 SCMP_SYS(brk),
                 SCMP_SYS(futex),
                 SCMP_SYS(poll),
                 SCMP_SYS(ppoll),
                 SCMP_SYS(sched_yield),
                 SCMP_SYS(nanosleep),
                 SCMP_SYS(clock_nanosleep),
                 SCMP_SYS(clock_gettime),
                 SCMP_SYS(gettimeofday),
                 SCMP_SYS(getpid),
                 SCMP_SYS(gettid),
                 SCMP_SYS(rt_sigreturn),
                 SCMP_SYS(rt_sigprocmask),
                 SCMP_SYS(restart_syscall),
                 SCMP_SYS(exit),
                 SCMP_SYS(exit_group),
                 SCMP_SYS(getrandom)}) {
    allow(nr);
  }
  // Mappings never executable, except the candidate object while the loader maps it.
  allow(SCMP_SYS(mmap), {SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0)});
  // Freeing pages (the allocator, the stack scrub) is the only advice allowed.
  allow(SCMP_SYS(madvise), {SCMP_A2(SCMP_CMP_EQ, MADV_DONTNEED)});
  // Signals to ourselves only (abort and raise use these).
  const auto self = static_cast<scmp_datum_t>(::getpid());
  allow(SCMP_SYS(tgkill), {SCMP_A0(SCMP_CMP_EQ, self)});
  allow(SCMP_SYS(kill), {SCMP_A0(SCMP_CMP_EQ, self)});
  if (needs.python) {
    // The interpreter and PyTorch's allocator: file status and descriptor flags of what is
    // already open, signal masks and alternate stacks, thread identity, resource queries.
    for (int nr :
         {SCMP_SYS(fcntl), SCMP_SYS(rt_sigaction), SCMP_SYS(sigaltstack), SCMP_SYS(getcwd),
          SCMP_SYS(sched_getaffinity), SCMP_SYS(getrusage), SCMP_SYS(sysinfo), SCMP_SYS(getuid),
          SCMP_SYS(geteuid), SCMP_SYS(getgid), SCMP_SYS(getegid), SCMP_SYS(readlink),
          SCMP_SYS(set_robust_list), SCMP_SYS(rseq), SCMP_SYS(prlimit64), SCMP_SYS(dup)}) {
      allow(nr);
    }
    // Python's pymalloc and PyTorch's caching allocator give pages back with other advice too.
    allow(SCMP_SYS(madvise), {SCMP_A2(SCMP_CMP_EQ, MADV_FREE)});
    // isatty() on the descriptors it writes to (the one terminal query Python makes).
    if (!needs.gpu) allow(SCMP_SYS(ioctl), {SCMP_A1(SCMP_CMP_EQ, TCGETS)});
    if (stage == Stage::kSealed) {
      // Libraries probing for files once sealed (the CUDA driver, PyTorch) get "permission
      // denied" rather than killing an honest answer: nothing is opened either way.
      const int r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(openat), 0);
      if (r != 0 && rc == 0) rc = r;
    }
  }
  if (needs.gpu) {
    // The driver talks to its device files by ioctl; its helper threads poll them.
    for (int nr : {SCMP_SYS(ioctl), SCMP_SYS(epoll_wait), SCMP_SYS(epoll_pwait),
                   SCMP_SYS(sched_getaffinity), SCMP_SYS(set_robust_list), SCMP_SYS(rseq)}) {
      allow(nr);
    }
  }
  if (stage == Stage::kLoader) {
    // dlopen: open the object read-only, map it (text executable, never also writable) and
    // make its relocated data read-only.
    const scmp_datum_t fd = static_cast<uint32_t>(object_fd);
    allow(SCMP_SYS(openat),
          {SCMP_A2(SCMP_CMP_MASKED_EQ, O_ACCMODE | O_CREAT | O_TRUNC | O_APPEND, O_RDONLY)});
    allow(SCMP_SYS(mmap), {SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC | PROT_WRITE, PROT_EXEC),
                           SCMP_A4(SCMP_CMP_MASKED_EQ, 0xffffffffu, fd)});
    allow(SCMP_SYS(mprotect), {SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0)});
    // The strict allowlist goes on top once the object is loaded (filters only ever narrow).
    allow(SCMP_SYS(seccomp));
  }
  if (rc == 0) rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
  // no_new_privs is already set (close_doors); libseccomp would set it again with prctl.
  if (rc == 0) rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
  if (rc == 0) rc = seccomp_load(ctx);
  seccomp_release(ctx);
  if (rc != 0) return internal_error(std::string("seccomp: ") + std::strerror(-rc));
  return Status::ok();
}

}  // namespace

void die_with_parent(int expected_parent) {
  g_judge_pid = expected_parent;
  if (expected_parent > 0 && !sys::die_with_parent(expected_parent).is_ok()) ::_exit(1);
}

namespace {

// The kernel forgets the parent-death signal when the uid changes: armed again after the
// drop to nobody, or a runner whose judge died would keep running a candidate that never
// returns (holding a GPU, in the CUDA case).
Status rearm_death_signal() {
  if (g_lifeline_fd >= 0) {
    const Status alive = sys::die_with_parent_lifeline(g_lifeline_fd);
    ::close(g_lifeline_fd);
    g_lifeline_fd = -1;
    return alive;
  }
  return g_judge_pid > 0 ? sys::die_with_parent(g_judge_pid) : Status::ok();
}

}  // namespace

void adopt_judge(int judge_pid, int lifeline_fd) {
  g_judge_pid = judge_pid;
  g_lifeline_fd = lifeline_fd;
}

int lifeline_for_exec() {
  if (g_lifeline_fd >= 0) ::fcntl(g_lifeline_fd, F_SETFD, 0);
  return g_lifeline_fd;
}

Status enter_namespaces(bool pid_namespace, SandboxReport* report) {
  remember_stack_floor();
  const bool root = is_root();
  const uid_t uid = ::getuid();
  const gid_t gid = ::getgid();
  int flags = CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWNS;
  if (!root) flags |= CLONE_NEWUSER;
  if (::unshare(flags) != 0) return os_error("cannot create the runner's namespaces (unshare)");
  if (!root) {
    // Unprivileged: the namespace maps our own ids to root inside it.
    if (!write_text("/proc/self/setgroups", "deny") ||
        !write_text("/proc/self/uid_map", "0 " + std::to_string(uid) + " 1") ||
        !write_text("/proc/self/gid_map", "0 " + std::to_string(gid) + " 1")) {
      return os_error("cannot map ids in the runner's user namespace");
    }
    report->enforced.push_back("userns");
  }
  report->enforced.insert(report->enforced.end(), {"netns", "ipcns", "mountns"});
  if (::mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    return os_error("private mounts");
  if (!pid_namespace) return Status::ok();
  if (::unshare(CLONE_NEWPID) != 0) return os_error("cannot create the runner's PID namespace");
  int lifeline[2];
  if (::pipe2(lifeline, O_CLOEXEC) != 0) return os_error("lifeline pipe");
  const pid_t child = ::fork();
  if (child < 0) return os_error("fork into the PID namespace");
  if (child > 0) mirror_child(child, lifeline[1]);
  ::close(lifeline[1]);
  g_lifeline_fd = lifeline[0];
  // PID 1 of the namespace. Should the outer process die before this line, the judge is gone
  // too (the outer dies with it) and the command channel's end of stream stops this process.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
    return os_error("mount /proc in the PID namespace");
  }
  report->enforced.push_back("pidns");
  return Status::ok();
}

Status close_doors(uint64_t cpu_seconds, uint64_t output_bytes, uint64_t address_space_bytes,
                   uint64_t data_bytes, SandboxReport* report) {
  if (::chroot(".") != 0 || ::chdir("/") != 0) return os_error("chroot into the scratch folder");
  report->enforced.push_back("empty root");
  if (is_root()) {
    KEVIN_RETURN_IF_ERROR(sys::become_user(sys::kNobodyUid, sys::kNobodyGid));
    report->enforced.push_back("uid=nobody");
  } else {
    KEVIN_RETURN_IF_ERROR(sys::forbid_new_privileges());
  }
  if (const Status armed = rearm_death_signal(); !armed.is_ok()) ::_exit(1);  // the judge is gone
  sys::ResourceLimits limits;
  limits.cpu_seconds = cpu_seconds;
  limits.file_size_bytes = output_bytes;
  limits.core_bytes = 0;
  // The CUDA driver reserves address space by the terabyte, so only the CPU runner gets a cap.
  if (address_space_bytes > 0) limits.address_space_bytes = address_space_bytes;
  if (data_bytes > 0) limits.data_bytes = data_bytes;
  KEVIN_RETURN_IF_ERROR(sys::apply_resource_limits(limits));
  report->enforced.push_back("rlimits");
  if (data_bytes > 0) report->enforced.push_back("memory cap");
  return install_trap_handler();
}

Status allow_loading(int object_fd, const SyscallNeeds& needs) {
  return install_allowlist(Stage::kLoader, object_fd, needs);
}

Status seal(const SyscallNeeds& needs, SandboxReport* report) {
  KEVIN_RETURN_IF_ERROR(install_allowlist(Stage::kSealed, -1, needs));
  report->enforced.push_back("seccomp allowlist");
  return Status::ok();
}

void scrub_stack_below_here() {
  volatile char here = 0;
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto sp = reinterpret_cast<uintptr_t>(&here);
  if (g_stack_floor == 0) remember_stack_floor();
  // Whole pages below this frame are dropped (they read back as zeros); the partial pages
  // just below it are cleared by hand, within this frame's reach and above the red zone.
  const uintptr_t near_top = sp - 512;
  const uintptr_t whole_top = (near_top & ~(page - 1)) - page;
  if (whole_top > g_stack_floor) {
    ::madvise(reinterpret_cast<void*>(g_stack_floor), whole_top - g_stack_floor, MADV_DONTNEED);
  }
  for (auto* p = reinterpret_cast<volatile char*>(whole_top);
       reinterpret_cast<uintptr_t>(p) < near_top; ++p)
    *p = 0;
}

}  // namespace kevin::runner
