// cache_dir.h — a folder of cache entries shared by processes, with leases and a size cap.
// Layout: <root>/<shard>/<name>/ entry folders, each holding a lock file (kEntryLockFile).
//   * An entry is published whole: a folder prepared elsewhere on the same filesystem is
//     renamed into place, so readers never see half an entry.
//   * Whoever uses an entry's files holds a lease: a shared flock on its lock file.
//   * Eviction removes least recently used entries (by the lock file's modification time,
//     refreshed by touch_entry) until the total is under the cap, and skips every entry it
//     cannot lock exclusively at once (leased). A victim is renamed away while locked and
//     only then deleted, so a lease taken afterwards finds it gone instead of holding a
//     deleted entry. Folders whose names start with '.' are not entries.
#pragma once

#include <cstdint>
#include <filesystem>

#include "core/status.h"
#include "sys/file_lock.h"

namespace kevin::sys {

inline constexpr const char* kEntryLockFile = "lock";

// Publishes `staged` (a complete entry folder the caller owns) at `entry` and returns a
// lease on the entry in place: this one, or an equivalent one another publisher put there
// first (then `staged` is deleted). The caller must not touch `staged` afterwards. kIoError
// when the rename fails for another reason (staged is left for the caller to remove).
Result<FileLock> publish_entry(const std::filesystem::path& staged,
                               const std::filesystem::path& entry);

// A shared lease on the published entry at `entry`: kNotFound when there is none or it was
// just evicted. Waits while an evictor holds the entry (a moment).
Result<FileLock> lease_entry(const std::filesystem::path& entry);

// Marks `entry` as used now (its place in the LRU order). Best effort.
void touch_entry(const std::filesystem::path& entry);

// Bytes of the regular files under `entry`.
uint64_t entry_bytes(const std::filesystem::path& entry);

struct EvictionStats {
  uint64_t bytes_before = 0;  // all entries at the scan
  uint64_t bytes_after = 0;   // what is left (leased entries over the cap included)
  size_t entries = 0;         // entries seen
  size_t evicted = 0;
  size_t in_use = 0;     // entries that would have been evicted but were leased
  bool skipped = false;  // another process was evicting: nothing done
};

// Evicts least recently used entries under `root` until their total is at most `max_bytes`
// (0 keeps only leased entries); also deletes leftovers of interrupted evictions. One
// evictor at a time per root (others skip). kIoError only when `root` cannot be listed.
Result<EvictionStats> evict_to_cap(const std::filesystem::path& root, uint64_t max_bytes);

}  // namespace kevin::sys
