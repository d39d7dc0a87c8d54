// confine.cpp — setrlimit, PR_SET_PDEATHSIG with its race checks, and the uid drop.
#include "sys/confine.h"

#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

namespace kevin::sys {
namespace {

Status errno_status(const std::string& what) {
  return internal_error(what + ": " + std::strerror(errno));
}

Status set_limit(int resource, const char* name, uint64_t soft, uint64_t hard) {
  const rlimit lim{static_cast<rlim_t>(soft), static_cast<rlim_t>(hard)};
  if (::setrlimit(resource, &lim) != 0) return errno_status(std::string("setrlimit ") + name);
  return Status::ok();
}

Status set_limit(int resource, const char* name, const std::optional<uint64_t>& value) {
  if (!value) return Status::ok();
  return set_limit(resource, name, *value, *value);
}

}  // namespace

Status apply_resource_limits(const ResourceLimits& limits) {
  KEVIN_RETURN_IF_ERROR(set_limit(RLIMIT_AS, "RLIMIT_AS", limits.address_space_bytes));
  KEVIN_RETURN_IF_ERROR(set_limit(RLIMIT_DATA, "RLIMIT_DATA", limits.data_bytes));
  KEVIN_RETURN_IF_ERROR(set_limit(RLIMIT_FSIZE, "RLIMIT_FSIZE", limits.file_size_bytes));
  KEVIN_RETURN_IF_ERROR(set_limit(RLIMIT_NOFILE, "RLIMIT_NOFILE", limits.open_files));
  KEVIN_RETURN_IF_ERROR(set_limit(RLIMIT_CORE, "RLIMIT_CORE", limits.core_bytes));
  if (limits.cpu_seconds) {
    KEVIN_RETURN_IF_ERROR(
        set_limit(RLIMIT_CPU, "RLIMIT_CPU", *limits.cpu_seconds, *limits.cpu_seconds + 1));
  }
  return Status::ok();
}

Status die_with_parent(pid_t expected_parent) {
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0)
    return errno_status("prctl(PR_SET_PDEATHSIG)");
  if (::getppid() != expected_parent) return failed_precondition("parent process already gone");
  return Status::ok();
}

Status die_with_parent_lifeline(int lifeline_read_fd) {
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0)
    return errno_status("prctl(PR_SET_PDEATHSIG)");
  pollfd p{lifeline_read_fd, POLLIN, 0};
  int r = 0;
  do {
    r = ::poll(&p, 1, 0);
  } while (r < 0 && errno == EINTR);
  if (r < 0) return errno_status("poll(lifeline)");
  // The parent never writes, so any event (hang-up, or readable end of file) means it is gone.
  if (r > 0) return failed_precondition("parent process already gone");
  return Status::ok();
}

Status forbid_new_privileges() {
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    return errno_status("prctl(PR_SET_NO_NEW_PRIVS)");
  return Status::ok();
}

Status become_user(uid_t uid, gid_t gid) {
  if (::setgroups(0, nullptr) != 0) return errno_status("setgroups");
  if (::setresgid(gid, gid, gid) != 0) return errno_status("setresgid " + std::to_string(gid));
  if (::setresuid(uid, uid, uid) != 0) return errno_status("setresuid " + std::to_string(uid));
  return forbid_new_privileges();
}

Status chown_tree(const std::filesystem::path& dir, uid_t uid, gid_t gid, bool regular_only) {
  namespace fs = std::filesystem;
  if (::lchown(dir.c_str(), uid, gid) != 0)
    return io_error("chown " + dir.string() + ": " + std::strerror(errno));
  std::error_code ec;
  std::vector<fs::path> strays;
  for (auto it = fs::recursive_directory_iterator(dir, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const fs::file_status st = it->symlink_status();
    if (regular_only && !fs::is_regular_file(st) && !fs::is_directory(st)) {
      strays.push_back(it->path());
      continue;
    }
    if (::lchown(it->path().c_str(), uid, gid) != 0) {
      return io_error("chown " + it->path().string() + ": " + std::strerror(errno));
    }
  }
  if (ec) return io_error("cannot walk " + dir.string() + ": " + ec.message());
  for (const auto& p : strays) {
    fs::remove(p, ec);
    if (ec) return io_error("cannot remove " + p.string() + ": " + ec.message());
  }
  return Status::ok();
}

}  // namespace kevin::sys
