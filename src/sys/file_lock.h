// file_lock.h — advisory whole-file locks (flock) held by a movable owner, for coordination
// between processes that share a directory (the build cache's entry leases).
#pragma once

#include <filesystem>

#include "core/status.h"
#include "sys/fd.h"

namespace kevin::sys {

// One flock on one open file; released when the FileLock is destroyed or reset. The lock
// belongs to the open file description, so it survives renames of the file or its folder.
class FileLock {
 public:
  enum class Mode { kShared, kExclusive };

  FileLock() = default;
  FileLock(FileLock&&) noexcept = default;
  FileLock& operator=(FileLock&&) noexcept = default;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  ~FileLock() = default;  // closing the descriptor releases the lock

  // Opens `path` (creating it, mode 0644, when `create`) and locks it. With `wait` false a
  // lock held by someone else in a conflicting mode gives kUnavailable at once; a missing
  // file without `create` gives kNotFound; other failures kIoError.
  static Result<FileLock> acquire(const std::filesystem::path& path, Mode mode, bool wait,
                                  bool create);

  bool held() const { return fd_.valid(); }
  int fd() const { return fd_.get(); }
  void reset() { fd_.reset(); }
  // True when `path` still names the very file this lock is on (same device and inode):
  // false once it has been renamed away, deleted or replaced.
  bool still_at(const std::filesystem::path& path) const;

 private:
  explicit FileLock(Fd fd) : fd_(std::move(fd)) {}
  Fd fd_;
};

}  // namespace kevin::sys
