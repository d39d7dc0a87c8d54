// cache_dir.cpp — publishing, leasing, touching and evicting cache entry folders.
#include "sys/cache_dir.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace kevin::sys {
namespace fs = std::filesystem;

namespace {

constexpr const char* kEvictorLock = ".evict.lock";
constexpr const char* kTrashPrefix = ".evicted-";
constexpr int kPublishAttempts = 3;

std::string random_suffix() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  char buf[32];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(rng()));
  return buf;
}

struct Candidate {
  fs::path path;
  int64_t last_use_ns = 0;
  uint64_t bytes = 0;
};

int64_t mtime_ns(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 +
         static_cast<int64_t>(st.st_mtim.tv_nsec);
}

// Every entry folder <root>/<shard>/<name>, with its last use and size; removes trash.
std::vector<Candidate> scan(const fs::path& root, std::error_code& ec) {
  std::vector<Candidate> out;
  for (const auto& shard : fs::directory_iterator(root, ec)) {
    const std::string name = shard.path().filename().string();
    if (name.rfind(kTrashPrefix, 0) == 0) {
      std::error_code ignored;
      fs::remove_all(shard.path(), ignored);  // an eviction that was interrupted
      continue;
    }
    if (name.front() == '.' || !shard.is_directory()) continue;
    std::error_code shard_ec;
    for (const auto& entry : fs::directory_iterator(shard.path(), shard_ec)) {
      if (!entry.is_directory()) continue;
      struct stat st {};
      const fs::path lock = entry.path() / kEntryLockFile;
      if (::stat(lock.c_str(), &st) != 0 && ::stat(entry.path().c_str(), &st) != 0) continue;
      out.push_back({entry.path(), mtime_ns(st), entry_bytes(entry.path())});
    }
  }
  return out;
}

// Evicts one entry unless it is leased; true when it was removed.
bool try_evict(const fs::path& root, const fs::path& entry, bool* in_use) {
  const fs::path lock_path = entry / kEntryLockFile;
  auto lock =
      FileLock::acquire(lock_path, FileLock::Mode::kExclusive, /*wait=*/false, /*create=*/true);
  if (!lock.is_ok()) {
    *in_use = lock.status().code() == StatusCode::kUnavailable;
    return false;
  }
  if (!lock->still_at(lock_path)) return false;  // another evictor got there first
  const fs::path trash = root / (kTrashPrefix + random_suffix());
  std::error_code ec;
  fs::rename(entry, trash, ec);
  if (ec) return false;
  lock->reset();
  fs::remove_all(trash, ec);
  return true;
}

}  // namespace

uint64_t entry_bytes(const fs::path& entry) {
  uint64_t total = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(entry, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code size_ec;
    if (it->is_regular_file(size_ec)) {
      const auto size = it->file_size(size_ec);
      if (!size_ec) total += size;
    }
  }
  return total;
}

Result<FileLock> publish_entry(const fs::path& staged, const fs::path& entry) {
  KEVIN_ASSIGN_OR_RETURN(FileLock lease,
                         FileLock::acquire(staged / kEntryLockFile, FileLock::Mode::kShared,
                                           /*wait=*/true, /*create=*/true));
  std::error_code ec;
  fs::create_directories(entry.parent_path(), ec);
  for (int attempt = 0; attempt < kPublishAttempts; ++attempt) {
    // The lock travels with the file, so our lease covers the entry from the moment it
    // appears: an evictor can never catch it unleased.
    if (::rename(staged.c_str(), entry.c_str()) == 0) return lease;
    if (errno != ENOTEMPTY && errno != EEXIST) {
      return io_error("rename " + staged.string() + " to " + entry.string() + ": " +
                      std::strerror(errno));
    }
    if (auto theirs = lease_entry(entry); theirs.is_ok()) {
      fs::remove_all(staged, ec);
      return theirs;
    }
    // Theirs was being evicted; the name is free again.
  }
  fs::remove_all(staged, ec);
  return unavailable("cannot publish " + entry.string() + ": it keeps changing");
}

Result<FileLock> lease_entry(const fs::path& entry) {
  const fs::path lock_path = entry / kEntryLockFile;
  KEVIN_ASSIGN_OR_RETURN(FileLock lease, FileLock::acquire(lock_path, FileLock::Mode::kShared,
                                                           /*wait=*/true, /*create=*/false));
  if (!lease.still_at(lock_path)) return not_found(entry.string() + " was evicted");
  return lease;
}

void touch_entry(const fs::path& entry) {
  ::utimensat(AT_FDCWD, (entry / kEntryLockFile).c_str(), nullptr, 0);
}

Result<EvictionStats> evict_to_cap(const fs::path& root, uint64_t max_bytes) {
  EvictionStats stats;
  std::error_code ec;
  fs::create_directories(root, ec);
  auto evictor = FileLock::acquire(root / kEvictorLock, FileLock::Mode::kExclusive, /*wait=*/false,
                                   /*create=*/true);
  if (!evictor.is_ok()) {
    if (evictor.status().code() != StatusCode::kUnavailable) return evictor.status();
    stats.skipped = true;
    return stats;
  }
  std::vector<Candidate> entries = scan(root, ec);
  if (ec) return io_error("cannot list " + root.string() + ": " + ec.message());
  std::sort(entries.begin(), entries.end(),
            [](const Candidate& a, const Candidate& b) { return a.last_use_ns < b.last_use_ns; });
  stats.entries = entries.size();
  for (const auto& e : entries) stats.bytes_before += e.bytes;
  stats.bytes_after = stats.bytes_before;
  for (const auto& e : entries) {
    if (stats.bytes_after <= max_bytes) break;
    bool in_use = false;
    if (try_evict(root, e.path, &in_use)) {
      stats.bytes_after -= e.bytes;
      ++stats.evicted;
    } else if (in_use) {
      ++stats.in_use;
    }
  }
  return stats;
}

}  // namespace kevin::sys
