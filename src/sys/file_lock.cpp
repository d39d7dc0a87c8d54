// file_lock.cpp — open + flock, and the identity check behind cache leases.
#include "sys/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

namespace kevin::sys {

Result<FileLock> FileLock::acquire(const std::filesystem::path& path, Mode mode, bool wait,
                                   bool create) {
  const int flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW | (create ? O_CREAT : 0);
  Fd fd(::open(path.c_str(), flags, 0644));
  if (!fd.valid()) {
    if (errno == ENOENT) return not_found("no lock file " + path.string());
    return io_error("open " + path.string() + ": " + std::strerror(errno));
  }
  const int op = (mode == Mode::kShared ? LOCK_SH : LOCK_EX) | (wait ? 0 : LOCK_NB);
  while (::flock(fd.get(), op) != 0) {
    if (errno == EINTR) continue;
    if (errno == EWOULDBLOCK) return unavailable(path.string() + " is locked");
    return io_error("flock " + path.string() + ": " + std::strerror(errno));
  }
  return FileLock(std::move(fd));
}

bool FileLock::still_at(const std::filesystem::path& path) const {
  struct stat held_stat {};
  struct stat named {};
  if (!held() || ::fstat(fd_.get(), &held_stat) != 0 || ::lstat(path.c_str(), &named) != 0)
    return false;
  return held_stat.st_dev == named.st_dev && held_stat.st_ino == named.st_ino &&
         held_stat.st_nlink > 0;
}

}  // namespace kevin::sys
