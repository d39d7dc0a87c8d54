// reference_provider.cpp — cache layout, seed drawing and baseline reuse.
#include <cstdint>
#include "tasks/reference_provider.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>

#include "core/file.h"
#include "core/log.h"
#include "core/sha256.h"
#include "sys/tempdir.h"

namespace kevin::tasks {
namespace fs = std::filesystem;

namespace {

bool fresh(const fs::path& meta, std::chrono::seconds ttl) {
  std::error_code ec;
  const auto written = fs::last_write_time(meta, ec);
  if (ec) return false;
  return fs::file_time_type::clock::now() - written < ttl;
}

std::vector<uint64_t> secret_seeds(int count) {
  std::random_device os_random;
  std::vector<uint64_t> seeds;
  for (int i = 0; i < count; ++i) {
    // Python's torch.manual_seed takes < 2^63; two 32-bit draws from the OS source.
    seeds.push_back(((uint64_t{os_random()} << 32) | os_random()) & ((uint64_t{1} << 62) - 1));
  }
  return seeds;
}

// Holds an exclusive lock on `path` (created if missing) for its lifetime, so only one
// process prepares a given seed set at a time; the others wait and then reuse it.
class FileLock {
 public:
  explicit FileLock(const fs::path& path) : fd_(::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600)) {
    if (fd_ >= 0) ::flock(fd_, LOCK_EX);
  }
  ~FileLock() {
    if (fd_ >= 0) ::close(fd_);  // closing releases the lock
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_;
};

// Puts `fresh` in place of `target` atomically: readers see the old or the new directory,
// never none. The old contents end up at `fresh` (removed by the caller).
Status swap_in(const fs::path& fresh, const fs::path& target) {
  if (::renameat2(AT_FDCWD, fresh.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE) == 0) return Status::ok();
  if (errno == ENOENT && ::rename(fresh.c_str(), target.c_str()) == 0) return Status::ok();
  return io_error("cannot store reference data in " + target.string() + ": " + std::strerror(errno));
}

}  // namespace

Result<ReferenceWorker*> ReferenceProvider::worker() {
  if (worker_ && !worker_->alive()) worker_.reset();
  if (!worker_) {
    KEVIN_ASSIGN_OR_RETURN(ReferenceWorker w, ReferenceWorker::start(options_.worker));
    worker_.emplace(std::move(w));
  }
  return &*worker_;
}

Result<Json> ReferenceProvider::describe(const fs::path& task, const std::string& backend) {
  std::lock_guard<std::mutex> lock(mu_);
  KEVIN_ASSIGN_OR_RETURN(ReferenceWorker * w, worker());
  return w->describe(task, backend);
}

std::string ReferenceProvider::python() const {
  std::lock_guard<std::mutex> lock(mu_);
  return worker_ ? worker_->python() : "";
}

Result<engine::ReferenceSet> ReferenceProvider::get(const fs::path& task, const std::string& backend, int device) {
  KEVIN_ASSIGN_OR_RETURN(std::string source, read_file(task, size_t{16} << 20));
  std::lock_guard<std::mutex> lock(mu_);
  const std::string task_hash = sha256_hex(source);
  const std::string key = Sha256()
                              .update_field(task_hash)
                              .update_field(backend)
                              .update_field(std::to_string(device))
                              .update_field(std::to_string(options_.num_sets))
                              .update_field(std::to_string(engine::kReferenceProtocol))
                              .hex_digest();
  const fs::path root = options_.cache_dir / "reference";
  const fs::path dir = root / key;
  std::error_code ec;
  fs::create_directories(root, ec);
  FileLock other_processes(root / (key + ".lock"));
  if (options_.seed_ttl.count() > 0 && fresh(dir / "meta.json", options_.seed_ttl)) {
    if (auto cached = engine::load_reference(dir); cached.is_ok() && cached->baseline) return cached;
  }

  KEVIN_ASSIGN_OR_RETURN(ReferenceWorker * w, worker());
  const std::string device_name = w->device_name(backend, device);
  const fs::path baseline_file = options_.cache_dir / "baseline" /
                                 (Sha256()
                                      .update_field(task_hash)
                                      .update_field(device_name)
                                      .update_field(w->torch_version())
                                      .update_field(std::to_string(engine::kReferenceProtocol))
                                      .hex_digest() +
                                  ".json");
  std::optional<engine::TimingStats> baseline;
  if (auto text = read_file(baseline_file); text.is_ok()) {
    if (auto j = parse_json(*text); j.is_ok()) {
      if (auto b = engine::timing_stats_from_json(*j); b.is_ok()) baseline = *b;
    }
  }

  ::chmod(options_.cache_dir.c_str(), 0700);  // expected outputs: readable by us only
  KEVIN_ASSIGN_OR_RETURN(sys::TempDir staging, sys::TempDir::create("prep-", root));
  PrepareRequest req;
  req.task = task;
  req.backend = backend;
  req.device = device;
  req.seeds = secret_seeds(options_.num_sets);
  req.out_dir = staging.path();
  req.baseline = !baseline.has_value();
  req.timing_budget_ms = options_.timing_budget_ms;
  req.warmup = options_.warmup;
  req.min_calls = options_.min_calls;
  req.max_calls = options_.max_calls;
  KEVIN_LOG(info) << "preparing reference data for " << task.filename().string() << " on " << device_name
                  << (req.baseline ? " (with eager baseline timing)" : "");
  KEVIN_ASSIGN_OR_RETURN(engine::ReferenceSet ref, w->prepare(req));
  if (baseline) {
    ref.baseline = baseline;
  } else if (ref.baseline) {
    (void)write_file_atomic(baseline_file, dump_json(engine::to_json(*ref.baseline)));
  }
  KEVIN_RETURN_IF_ERROR(write_file_atomic(staging.path() / "meta.json", dump_json(engine::reference_meta_json(ref))));
  // Swap the new seed set in; evaluations that mapped the old files keep their mappings, and
  // the staging TempDir removes the old set on destruction.
  KEVIN_RETURN_IF_ERROR(swap_in(staging.path(), dir));
  ref.dir = dir;
  return ref;
}

}  // namespace kevin::tasks
