// reference_store.h — immutable seed-set directories, <root>/<key>/set-<32 random hex>, with
// <root>/<key>/current naming the key's current one. Readers hold a lease (a shared flock on
// the set's `lease` file); a set is deleted only under an exclusive flock taken without
// waiting, so never under a reader, in this process or another.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "engine/run/reference.h"

namespace kevin::tasks {

class SetLease;

// A directory being filled with a new set. Leased from its creation, so no sweep removes it
// while the worker writes; removed on destruction unless published. Move-only.
class Staging {
 public:
  Staging() = default;
  Staging(Staging&&) noexcept = default;
  Staging& operator=(Staging&&) noexcept = default;
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;
  ~Staging();

  const std::filesystem::path& dir() const { return dir_; }

 private:
  friend class ReferenceStore;
  std::filesystem::path dir_;
  std::shared_ptr<SetLease> lease_;
};

class ReferenceStore {
 public:
  // `root` (created on demand) holds one folder per key; `max_bytes` caps the total size of
  // its sets (sets in use are never evicted, so the total may exceed it while they are).
  ReferenceStore(std::filesystem::path root, uint64_t max_bytes)
      : root_(std::move(root)), max_bytes_(max_bytes) {}

  // The key's current set with a lease, when it exists, loads, and was prepared less than
  // `ttl` ago (ttl 0: never fresh). Marks it used (for eviction order).
  std::optional<engine::ReferenceSet> current(const std::string& key,
                                              std::chrono::seconds ttl) const;

  // A new, empty, leased staging directory for `key`. Errors: I/O.
  Result<Staging> stage(const std::string& key) const;

  // Renames `staging` to a fresh unguessable name, makes it the key's current set, and
  // returns it loaded and leased; then sweeps. Errors: the data does not load
  // (load_reference's), I/O. On error the staging directory is removed.
  Result<engine::ReferenceSet> publish(const std::string& key, Staging staging) const;

  // Removes what no lease holds: retired sets (not their key's current one), abandoned
  // staging directories, protocol-1 leftovers; then, while the sets total more than
  // max_bytes, unleased sets in least-recently-used order. Safe to run from any thread or
  // process at any time.
  void sweep() const;

  // Total bytes of the sets under the root.
  uint64_t total_bytes() const;

  std::filesystem::path key_dir(const std::string& key) const { return root_ / key; }
  const std::filesystem::path& root() const { return root_; }

 private:
  std::filesystem::path root_;
  uint64_t max_bytes_;
};

}  // namespace kevin::tasks
