// sandbox.h — confinement of the candidate runner, applied in stages so that CUDA can start
// before the doors close:
//   isolate_network()   before CUDA init: a new, empty network namespace (root only);
//   drop_privileges()   after device setup: become nobody (root only), no new privileges;
//   apply_limits()      CPU time, file size (output flood), core dumps, descriptors;
//   install_seccomp()   last, before the candidate is loaded: kills the process on
//                       execve/fork/ptrace/namespace calls; refuses new threads, sockets,
//                       opens for writing, truncation, io_uring, pidfds, executable mappings,
//                       signals to other processes and limit changes.
// docs/sandbox.md lists what is enforced where.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace kevin::runner {

struct SandboxReport {
  std::vector<std::string> enforced;  // what was applied, e.g. "seccomp", "netns"
  std::vector<std::string> skipped;   // what was not, and why
};

void isolate_network(SandboxReport* report);
void drop_privileges(SandboxReport* report);
Status apply_limits(uint64_t cpu_seconds, uint64_t output_bytes, SandboxReport* report);
Status install_seccomp(SandboxReport* report);

}  // namespace kevin::runner
