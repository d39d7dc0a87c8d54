// sandbox.cpp — namespaces, privilege drop, rlimits and the seccomp filter of the runner.
#include <cstdint>
#include "engine/runner/sandbox.h"

#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace kevin::runner {
namespace {

constexpr uid_t kNobody = 65534;

bool is_root() { return ::geteuid() == 0; }

}  // namespace

void isolate_network(SandboxReport* report) {
  if (!is_root()) {
    report->skipped.push_back("netns (not root)");
    return;
  }
  if (::unshare(CLONE_NEWNET) == 0) {
    report->enforced.push_back("netns");
  } else {
    report->skipped.push_back(std::string("netns (") + std::strerror(errno) + ")");
  }
}

void drop_privileges(SandboxReport* report) {
  if (is_root()) {
    if (::setgroups(0, nullptr) == 0 && ::setresgid(kNobody, kNobody, kNobody) == 0 &&
        ::setresuid(kNobody, kNobody, kNobody) == 0) {
      report->enforced.push_back("uid=nobody");
    } else {
      report->skipped.push_back(std::string("uid drop (") + std::strerror(errno) + ")");
    }
  } else {
    report->skipped.push_back("uid drop (not root)");
  }
  ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
}

Status apply_limits(uint64_t cpu_seconds, uint64_t output_bytes, SandboxReport* report) {
  const auto set = [](int resource, rlim_t value) {
    rlimit lim{value, value};
    return ::setrlimit(resource, &lim) == 0;
  };
  if (!set(RLIMIT_CPU, cpu_seconds) || !set(RLIMIT_FSIZE, output_bytes) || !set(RLIMIT_CORE, 0)) {
    return internal_error(std::string("setrlimit: ") + std::strerror(errno));
  }
  report->enforced.push_back("rlimits");
  return Status::ok();
}

Status install_seccomp(SandboxReport* report) {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (ctx == nullptr) return internal_error("seccomp_init failed");
  int rc = 0;
  const auto add = [&](uint32_t action, int syscall_nr, unsigned count = 0,
                       scmp_arg_cmp a = {}, scmp_arg_cmp b = {}) {
    int r = 0;
    if (count == 0) r = seccomp_rule_add(ctx, action, syscall_nr, 0);
    if (count == 1) r = seccomp_rule_add(ctx, action, syscall_nr, 1, a);
    if (count == 2) r = seccomp_rule_add(ctx, action, syscall_nr, 2, a, b);
    if (r != 0 && rc == 0) rc = r;
  };
  const uint32_t kill = SCMP_ACT_KILL_PROCESS;
  // New programs, processes, debugging, namespaces, kernel surfaces: fatal.
  for (int nr : {SCMP_SYS(execve), SCMP_SYS(execveat), SCMP_SYS(fork), SCMP_SYS(vfork),
                 SCMP_SYS(ptrace), SCMP_SYS(process_vm_readv), SCMP_SYS(process_vm_writev),
                 SCMP_SYS(unshare), SCMP_SYS(setns), SCMP_SYS(mount), SCMP_SYS(umount2),
                 SCMP_SYS(pivot_root), SCMP_SYS(chroot), SCMP_SYS(bpf), SCMP_SYS(perf_event_open),
                 SCMP_SYS(kexec_load), SCMP_SYS(init_module), SCMP_SYS(finit_module),
                 SCMP_SYS(delete_module), SCMP_SYS(reboot), SCMP_SYS(swapon), SCMP_SYS(swapoff),
                 SCMP_SYS(userfaultfd), SCMP_SYS(keyctl), SCMP_SYS(add_key),
                 SCMP_SYS(request_key), SCMP_SYS(process_madvise), SCMP_SYS(pidfd_getfd)}) {
    add(kill, nr);
  }
  // clone without CLONE_THREAD makes a process: fatal. Threads: refused (EAGAIN).
  add(kill, SCMP_SYS(clone), 1, SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0));
  add(SCMP_ACT_ERRNO(EAGAIN), SCMP_SYS(clone), 1,
      SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD));
  // clone3 passes flags in memory seccomp cannot read; ENOSYS makes libc fall back to clone.
  add(SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3));
  // No network, no writable files, no executable memory, no limit changes, no filters.
  for (int nr : {SCMP_SYS(socket), SCMP_SYS(socketpair), SCMP_SYS(connect), SCMP_SYS(bind),
                 SCMP_SYS(listen), SCMP_SYS(accept), SCMP_SYS(accept4), SCMP_SYS(creat),
                 SCMP_SYS(setrlimit), SCMP_SYS(prlimit64), SCMP_SYS(seccomp),
                 SCMP_SYS(setuid), SCMP_SYS(setgid), SCMP_SYS(setreuid), SCMP_SYS(setregid),
                 SCMP_SYS(setresuid), SCMP_SYS(setresgid), SCMP_SYS(personality),
                 SCMP_SYS(tkill), SCMP_SYS(rename), SCMP_SYS(renameat), SCMP_SYS(renameat2),
                 SCMP_SYS(unlink), SCMP_SYS(unlinkat), SCMP_SYS(mkdir), SCMP_SYS(mkdirat),
                 SCMP_SYS(symlink), SCMP_SYS(symlinkat), SCMP_SYS(link), SCMP_SYS(linkat),
                 SCMP_SYS(chmod), SCMP_SYS(fchmod), SCMP_SYS(fchmodat), SCMP_SYS(truncate),
                 SCMP_SYS(ftruncate), SCMP_SYS(fallocate), SCMP_SYS(mknod), SCMP_SYS(mknodat),
                 SCMP_SYS(io_uring_setup), SCMP_SYS(io_uring_enter), SCMP_SYS(io_uring_register),
                 SCMP_SYS(pidfd_open), SCMP_SYS(pidfd_send_signal), SCMP_SYS(name_to_handle_at),
                 SCMP_SYS(open_by_handle_at)}) {
    add(SCMP_ACT_ERRNO(EACCES), nr);
  }
  // Opens: read-only only. Each rule tests one way of asking for write access.
  const struct {
    uint64_t mask, value;
  } kWriteModes[] = {{O_ACCMODE, O_WRONLY}, {O_ACCMODE, O_RDWR}, {O_CREAT, O_CREAT}, {O_TRUNC, O_TRUNC},
                     {O_APPEND, O_APPEND}};
  for (const auto& m : kWriteModes) {
    add(SCMP_ACT_ERRNO(EACCES), SCMP_SYS(open), 1, SCMP_A1(SCMP_CMP_MASKED_EQ, m.mask, m.value));
    add(SCMP_ACT_ERRNO(EACCES), SCMP_SYS(openat), 1, SCMP_A2(SCMP_CMP_MASKED_EQ, m.mask, m.value));
  }
  add(SCMP_ACT_ERRNO(EACCES), SCMP_SYS(openat2));
  add(SCMP_ACT_ERRNO(EACCES), SCMP_SYS(mprotect), 1, SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, PROT_EXEC));
  add(SCMP_ACT_ERRNO(EACCES), SCMP_SYS(pkey_mprotect), 1, SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, PROT_EXEC));
  add(SCMP_ACT_ERRNO(EACCES), SCMP_SYS(mmap), 1,
      SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC | PROT_WRITE, PROT_EXEC | PROT_WRITE));
  add(SCMP_ACT_ERRNO(EPERM), SCMP_SYS(prctl), 1, SCMP_A0(SCMP_CMP_EQ, PR_SET_SECCOMP));
  add(SCMP_ACT_ERRNO(EPERM), SCMP_SYS(prctl), 1, SCMP_A0(SCMP_CMP_EQ, PR_SET_DUMPABLE));
  // Signals only to ourselves (abort() and raise() use these).
  const auto self = static_cast<scmp_datum_t>(::getpid());
  add(SCMP_ACT_ERRNO(EPERM), SCMP_SYS(kill), 1, SCMP_A0(SCMP_CMP_NE, self));
  add(SCMP_ACT_ERRNO(EPERM), SCMP_SYS(tgkill), 1, SCMP_A0(SCMP_CMP_NE, self));
  add(SCMP_ACT_ERRNO(EPERM), SCMP_SYS(rt_sigqueueinfo), 1, SCMP_A0(SCMP_CMP_NE, self));
  add(SCMP_ACT_ERRNO(EPERM), SCMP_SYS(rt_tgsigqueueinfo), 1, SCMP_A0(SCMP_CMP_NE, self));
  if (rc != 0) {
    seccomp_release(ctx);
    return internal_error(std::string("seccomp rule: ") + std::strerror(-rc));
  }
  rc = seccomp_load(ctx);
  seccomp_release(ctx);
  if (rc != 0) return internal_error(std::string("seccomp_load: ") + std::strerror(-rc));
  report->enforced.push_back("seccomp");
  return Status::ok();
}

}  // namespace kevin::runner
