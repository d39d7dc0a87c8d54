// sandbox.h — confinement of the candidate runner, applied in stages so that CUDA can start
// before the doors close (docs/sandbox.md has the threat model):
//   enter_namespaces()   at process start, before CUDA: new network, IPC and mount
//                        namespaces (a user namespace too when not root), and a new PID
//                        namespace where the backend allows it; dies with its parent;
//   close_doors()        once the device is set up, before the candidate is loaded: an empty
//                        root (the scratch folder), uid nobody, no new privileges, rlimits;
//   allow_loading()      right before loading: the loader's seccomp allowlist (the only
//                        executable mapping it allows is the candidate object);
//   seal()               right after loading: the strict allowlist for the rest of the run.
// Every stage either applies fully or fails; the judge refuses to run candidates under a
// partial sandbox unless it was asked to run without one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace kevin::runner {

struct SandboxReport {
  std::vector<std::string> enforced;  // what was applied, e.g. "seccomp", "netns"
  std::vector<std::string> skipped;   // what was not, and why (empty under a full sandbox)
};

// What the runner needs the kernel to let through after the candidate is loaded.
struct SyscallNeeds {
  bool gpu = false;     // the CUDA driver: ioctl on its device files, its helper threads' calls
  bool python = false;  // the Python runner (KernelBench answers): the interpreter's own calls
};

// Makes this process die with its parent (the judge), checking that the parent is still
// `expected_parent`: a runner orphaned before the check exits at once.
void die_with_parent(int expected_parent);

// Unshares the namespaces. With `pid_namespace`, forks: the calling process only waits for the
// child (PID 1 of the new namespace, with a fresh /proc) and exits the way it did; the
// function returns only in the child. Errors: a namespace the kernel refuses.
Status enter_namespaces(bool pid_namespace, SandboxReport* report);

// The Python runner is exec'd by kevin-runner after enter_namespaces(): the judge's pid and the
// PID namespace's lifeline descriptor (inherited, -1 for none) are handed over so that
// close_doors() can re-arm the parent-death signal there as it does here.
void adopt_judge(int judge_pid, int lifeline_fd);
// The lifeline descriptor enter_namespaces() kept (-1 without a PID namespace), made
// inheritable for the exec of the Python runner.
int lifeline_for_exec();

// Makes the current directory the root, drops to nobody (when root) and sets rlimits (CPU
// time, file size = what the candidate may print, no core dumps; address space when
// `address_space_bytes` > 0; private writable memory when `data_bytes` > 0, counting what the
// process already holds).
Status close_doors(uint64_t cpu_seconds, uint64_t output_bytes, uint64_t address_space_bytes,
                   uint64_t data_bytes, SandboxReport* report);

// The loader's allowlist: read-only opens, and `object_fd` (the descriptor the loader will
// get for the candidate object) as the only file that may be mapped executable.
Status allow_loading(int object_fd, const SyscallNeeds& needs);

// The strict allowlist, installed once the candidate is loaded: no file opens, no
// executable or protection-changing mappings, no signal handlers, no processes, threads,
// sockets, IPC or memfds. A forbidden call prints its number to stderr and kills the process
// with SIGSYS.
Status seal(const SyscallNeeds& needs, SandboxReport* report);

// Zeroes the part of the main thread's stack below the caller's frame (what the candidate's
// last call left there), without touching pages it never used.
void scrub_stack_below_here();

}  // namespace kevin::runner
