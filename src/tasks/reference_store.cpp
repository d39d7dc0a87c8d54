// reference_store.cpp — set directories, leases (flock on a `lease` file), the `current`
// pointer and the sweep that deletes what no lease holds.
#include "tasks/reference_store.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>
#include <vector>

#include "core/file.h"
#include "sys/fd.h"

namespace kevin::tasks {
namespace fs = std::filesystem;

namespace {

constexpr char kLeaseFile[] = "lease";
constexpr char kPointerFile[] = "current";
constexpr char kSetPrefix[] = "set-";
constexpr char kStagingPrefix[] = "prep-";
constexpr char kDeadPrefix[] = "dead-";
constexpr size_t kNameHexDigits = 32;  // 128 random bits
// A staging directory without its lease file is either being created (microseconds) or was
// abandoned by a crash at that moment; only the latter gets this old.
constexpr auto kAbandonedAge = std::chrono::hours(1);

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// Unguessable, so that nothing outside kevin can name a set before it is published.
std::string random_set_name() {
  static constexpr char kHex[] = "0123456789abcdef";
  std::random_device os_random;
  std::string name = kSetPrefix;
  while (name.size() < sizeof(kSetPrefix) - 1 + kNameHexDigits) {
    uint32_t bits = os_random();
    for (int i = 0; i < 8; ++i, bits >>= 4) name += kHex[bits & 15u];
  }
  return name;
}

bool valid_set_name(const std::string& name) {
  const size_t prefix = sizeof(kSetPrefix) - 1;
  if (name.size() != prefix + kNameHexDigits || !starts_with(name, kSetPrefix)) return false;
  return std::all_of(name.begin() + static_cast<std::ptrdiff_t>(prefix), name.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::optional<std::string> read_pointer(const fs::path& key_dir) {
  auto name = read_file(key_dir / kPointerFile, 256);
  if (!name.is_ok() || !valid_set_name(*name)) return std::nullopt;
  return *name;
}

// A set is retired once its key's pointer names another set (or none): nobody will lease it
// again, so whoever drops the last lease may delete it.
bool retired(const fs::path& dir) {
  const auto current = read_pointer(dir.parent_path());
  return !current || *current != dir.filename().string();
}

// Deletes `dir` unless a lease holds it: locks its lease file exclusively without waiting,
// renames the directory out of readers' sight (a reader that was waiting for the lock then
// finds the name gone), and removes it. False when the set is in use.
bool try_remove(const fs::path& dir) {
  sys::Fd fd(::open((dir / kLeaseFile).c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.valid() && ::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) return false;
  const fs::path dead = dir.parent_path() / (kDeadPrefix + dir.filename().string());
  std::error_code ec;
  fs::rename(dir, dead, ec);
  const fs::path doomed = ec ? dir : dead;
  fs::remove_all(doomed, ec);
  return true;
}

// When the lease file of a set was last touched: its last use.
fs::file_time_type last_used(const fs::path& dir) {
  std::error_code ec;
  const auto t = fs::last_write_time(dir / kLeaseFile, ec);
  return ec ? fs::file_time_type::min() : t;
}

bool older_than(const fs::path& path, std::chrono::seconds age) {
  std::error_code ec;
  const auto t = fs::last_write_time(path, ec);
  return ec || fs::file_time_type::clock::now() - t >= age;
}

uint64_t dir_bytes(const fs::path& dir) {
  uint64_t total = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::error_code size_ec;
    if (e.is_regular_file(size_ec)) total += e.file_size(size_ec);
  }
  return total;
}

std::vector<fs::path> entries(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) out.push_back(e.path());
  return out;
}

struct LiveSet {
  fs::path dir;
  uint64_t bytes = 0;
  fs::file_time_type used;
};

// Cleans one key's folder: dead and abandoned directories, retired sets no lease holds.
// Appends the sets that remain to *live.
void sweep_key(const fs::path& key_dir, std::vector<LiveSet>* live) {
  const auto current = read_pointer(key_dir);
  std::error_code ec;
  for (const fs::path& p : entries(key_dir)) {
    const std::string name = p.filename().string();
    if (!fs::is_directory(p, ec)) continue;
    if (starts_with(name, kDeadPrefix)) {
      fs::remove_all(p, ec);  // its remover crashed (or is at it too: either may finish)
    } else if (starts_with(name, kStagingPrefix)) {
      // Its preparer holds the lease; without a holder it was abandoned.
      if (fs::exists(p / kLeaseFile, ec) || older_than(p, kAbandonedAge)) try_remove(p);
    } else if (starts_with(name, kSetPrefix)) {
      if (name != current && try_remove(p)) continue;
      live->push_back({p, dir_bytes(p), last_used(p)});
    }
  }
}

}  // namespace

// A shared flock on a set's lease file, and the set's current path (staging moves).
class SetLease {
 public:
  SetLease(sys::Fd fd, fs::path dir) : fd_(std::move(fd)), dir_(std::move(dir)) {}
  SetLease(const SetLease&) = delete;
  SetLease& operator=(const SetLease&) = delete;
  // Releases the lock, then deletes the set if it is retired and nobody else holds it:
  // an old set disappears as soon as its last reader is done.
  ~SetLease() {
    fd_.reset();
    if (retired(dir_)) try_remove(dir_);
  }

  void moved_to(fs::path dir) { dir_ = std::move(dir); }
  // Marks the set used now (the eviction order); the lease file's time is all that changes.
  void touch() const { ::futimens(fd_.get(), nullptr); }

 private:
  sys::Fd fd_;
  fs::path dir_;
};

namespace {

// Share-locks dir/lease. Null when the set is gone or was deleted while we waited for the
// lock (the deleter renames the directory before it unlocks, so the name no longer leads to
// the file we hold).
std::shared_ptr<SetLease> lease_set(const fs::path& dir) {
  const fs::path file = dir / kLeaseFile;
  sys::Fd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return nullptr;
  while (::flock(fd.get(), LOCK_SH) != 0) {
    if (errno != EINTR) return nullptr;
  }
  struct stat held {
  }, named{};
  if (::fstat(fd.get(), &held) != 0 || ::stat(file.c_str(), &named) != 0 ||
      held.st_ino != named.st_ino || held.st_dev != named.st_dev) {
    return nullptr;
  }
  return std::make_shared<SetLease>(std::move(fd), dir);
}

Result<fs::path> make_staging_dir(const fs::path& key_dir) {
  std::error_code ec;
  fs::create_directories(key_dir, ec);
  std::string pattern = (key_dir / (std::string(kStagingPrefix) + "XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    return io_error("cannot create a staging directory in " + key_dir.string() + ": " +
                    std::strerror(errno));
  }
  return fs::path(pattern);
}

}  // namespace

Staging::~Staging() = default;  // dropping the lease of an unpublished directory removes it

std::optional<engine::ReferenceSet> ReferenceStore::current(const std::string& key,
                                                            std::chrono::seconds ttl) const {
  if (ttl.count() <= 0) return std::nullopt;
  // A set named by the pointer can be replaced and deleted before we lock it; then the
  // pointer names a newer one, so look again (a few times: a dangling pointer stays put).
  for (int attempt = 0; attempt < 5; ++attempt) {
    const auto name = read_pointer(key_dir(key));
    if (!name) return std::nullopt;
    const fs::path dir = key_dir(key) / *name;
    std::shared_ptr<SetLease> lease = lease_set(dir);
    if (!lease) continue;
    if (older_than(dir / "meta.json", ttl)) return std::nullopt;
    auto ref = engine::load_reference(dir);
    if (!ref.is_ok()) return std::nullopt;  // replaced by the caller's new set, then removed
    lease->touch();
    ref->lease = std::move(lease);
    return std::move(ref).value();
  }
  return std::nullopt;
}

Result<Staging> ReferenceStore::stage(const std::string& key) const {
  KEVIN_ASSIGN_OR_RETURN(fs::path dir, make_staging_dir(key_dir(key)));
  // The lease file gets its name only once locked, so a sweep never finds it unlocked.
  const fs::path unnamed = dir / "lease.new";
  sys::Fd fd(::open(unnamed.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600));
  if (!fd.valid() || ::flock(fd.get(), LOCK_SH) != 0 ||
      ::rename(unnamed.c_str(), (dir / kLeaseFile).c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::error_code ec;
    fs::remove_all(dir, ec);
    return io_error("cannot lease staging directory " + dir.string() + ": " + why);
  }
  Staging s;
  s.dir_ = dir;
  s.lease_ = std::make_shared<SetLease>(std::move(fd), dir);
  return s;
}

Result<engine::ReferenceSet> ReferenceStore::publish(const std::string& key,
                                                     Staging staging) const {
  const std::string name = random_set_name();
  const fs::path dir = key_dir(key) / name;
  if (::rename(staging.dir_.c_str(), dir.c_str()) != 0) {
    return io_error("cannot publish " + staging.dir_.string() + " as " + dir.string() + ": " +
                    std::strerror(errno));
  }
  staging.dir_ = dir;
  staging.lease_->moved_to(dir);  // from here on, an error path removes `dir`
  KEVIN_ASSIGN_OR_RETURN(engine::ReferenceSet ref, engine::load_reference(dir));
  KEVIN_RETURN_IF_ERROR(write_file_atomic(key_dir(key) / kPointerFile, name));
  staging.lease_->touch();
  ref.lease = std::move(staging.lease_);
  sweep();
  return ref;
}

void ReferenceStore::sweep() const {
  std::vector<LiveSet> live;
  std::error_code ec;
  for (const fs::path& p : entries(root_)) {
    if (fs::is_regular_file(p, ec) && p.extension() == ".lock") {
      fs::remove(p, ec);  // protocol 1 kept its lock files here
    } else if (fs::is_directory(p, ec) && fs::exists(p / "meta.json", ec)) {
      fs::remove_all(p, ec);  // a protocol-1 set: data directly in <root>/<key>
    } else if (fs::is_directory(p, ec)) {
      sweep_key(p, &live);
    }
  }
  uint64_t total = 0;
  for (const auto& s : live) total += s.bytes;
  std::sort(live.begin(), live.end(),
            [](const LiveSet& a, const LiveSet& b) { return a.used < b.used; });
  for (const auto& s : live) {
    if (total <= max_bytes_) break;
    if (try_remove(s.dir)) total -= s.bytes;
  }
}

uint64_t ReferenceStore::total_bytes() const {
  uint64_t total = 0;
  for (const fs::path& key : entries(root_)) {
    for (const fs::path& p : entries(key)) {
      if (starts_with(p.filename().string(), kSetPrefix)) total += dir_bytes(p);
    }
  }
  return total;
}

}  // namespace kevin::tasks
