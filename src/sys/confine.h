// confine.h — small confinement steps a process applies to itself before it runs untrusted
// work: resource limits, dying with its parent, becoming another user. Shared by the
// compiler sandbox (kevin-sandbox) and usable by the candidate runner.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>

#include "core/status.h"

namespace kevin::sys {

inline constexpr uid_t kNobodyUid = 65534;
inline constexpr gid_t kNobodyGid = 65534;

// Resource limits; an unset field leaves that limit as it is. Soft and hard limits are set
// to the same value except CPU time, whose hard limit is one second above the soft one so
// that the process first gets SIGXCPU (a clear cause) and SIGKILL only if it ignores it.
struct ResourceLimits {
  std::optional<uint64_t> address_space_bytes;  // RLIMIT_AS
  // RLIMIT_DATA: private writable memory (the heap, anonymous mappings), not the PROT_NONE
  // reservations CUDA makes by the terabyte, so it caps memory where RLIMIT_AS cannot.
  std::optional<uint64_t> data_bytes;
  std::optional<uint64_t> cpu_seconds;      // RLIMIT_CPU
  std::optional<uint64_t> file_size_bytes;  // RLIMIT_FSIZE (writes past it: SIGXFSZ)
  std::optional<uint64_t> open_files;       // RLIMIT_NOFILE
  std::optional<uint64_t> core_bytes;       // RLIMIT_CORE (0: no core dumps)
};

// Applies `limits` to the calling process (inherited by its children). kInternal naming the
// limit when the kernel refuses one (limits already applied stay applied).
Status apply_resource_limits(const ResourceLimits& limits);

// Asks the kernel to SIGKILL the calling process when its parent dies, then closes the race
// in which the parent died before the request took effect: if getppid() is no longer
// `expected_parent` the parent is gone and kFailedPrecondition is returned (the caller
// should exit at once).
Status die_with_parent(pid_t expected_parent);

// The same for a process whose parent is not visible to it (the first process of a new PID
// namespace, whose getppid() is 0): the parent holds the write end of a pipe open for its
// whole life and never writes; `lifeline_read_fd` is the read end. A hang-up on it means
// the parent is gone. The caller must have closed its own copy of the write end.
Status die_with_parent_lifeline(int lifeline_read_fd);

// Becomes `uid`/`gid` with no supplementary groups (which also drops every capability) and
// sets no_new_privs, so nothing the process executes can gain privileges again. Needs root
// (or CAP_SETUID/CAP_SETGID) for another uid; kInternal naming the step that failed.
Status become_user(uid_t uid, gid_t gid);

// Sets no_new_privs alone (for processes that keep their uid).
Status forbid_new_privileges();

// Gives `dir` and everything under it to `uid`/`gid` (never following links). With
// `regular_only`, anything that is neither a regular file nor a folder (symlinks, pipes,
// sockets, devices) is deleted instead: a tree written by an untrusted process then holds
// nothing that could redirect a later open. kIoError naming the first failure.
Status chown_tree(const std::filesystem::path& dir, uid_t uid, gid_t gid, bool regular_only);

}  // namespace kevin::sys
