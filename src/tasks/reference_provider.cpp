// reference_provider.cpp — seed drawing, the seed-set cache over ReferenceStore, and baseline
// timing under the device's exclusive gate with its TTL cache.
#include "tasks/reference_provider.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <utility>

#include "core/file.h"
#include "core/log.h"
#include "core/long_wait.h"
#include "core/mutex.h"
#include "core/sha256.h"
#include "sys/file_lock.h"
#include "engine/run/runner_session.h"

namespace kevin::tasks {
namespace fs = std::filesystem;

namespace {

std::vector<uint64_t> secret_seeds(int count) {
  std::random_device os_random;
  std::vector<uint64_t> seeds;
  for (int i = 0; i < count; ++i) {
    // Python's torch.manual_seed takes < 2^63; two 32-bit draws from the OS source.
    seeds.push_back(((uint64_t{os_random()} << 32) | os_random()) & ((uint64_t{1} << 62) - 1));
  }
  return seeds;
}

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// An exclusive lock on `path` (created if missing), held until the returned lock goes, so
// only one thread or process makes a given cache entry at a time; the others wait and reuse
// it. A lock that cannot be taken (an unwritable cache) holds nothing: the work may then be
// done twice, never wrongly.
sys::FileLock one_at_a_time(const fs::path& path) {
  auto lock = sys::FileLock::acquire(path, sys::FileLock::Mode::kExclusive, /*wait=*/true,
                                     /*create=*/true);
  return lock.is_ok() ? std::move(lock).value() : sys::FileLock();
}

// The cached baseline in `file` while it is younger than `ttl` (ttl 0: never).
std::optional<engine::TimingStats> fresh_baseline(const fs::path& file, std::chrono::seconds ttl) {
  auto text = read_file(file);
  if (!text.is_ok()) return std::nullopt;
  auto j = parse_json(*text);
  if (!j.is_ok()) return std::nullopt;
  auto b = engine::timing_stats_from_json(*j);
  if (!b.is_ok() || b->measured_at <= 0 || unix_now() - b->measured_at >= ttl.count())
    return std::nullopt;
  return *b;
}

// The peak rates cached in `file`, if it holds valid ones.
std::optional<engine::DevicePeaks> cached_peaks(const fs::path& file) {
  auto text = read_file(file);
  if (!text.is_ok()) return std::nullopt;
  auto j = parse_json(*text);
  if (!j.is_ok()) return std::nullopt;
  auto p = engine::device_peaks_from_json(*j);
  if (!p.is_ok()) return std::nullopt;
  return *p;
}

// How progress messages name a task file: its folder and stem ("level1/028_gelu").
std::string task_label(const fs::path& task) {
  return (task.parent_path().filename() / task.stem()).string();
}

}  // namespace

struct ReferenceProvider::TaskKey {
  fs::path task;
  std::string backend;
  int device = 0;
  std::string task_hash;  // SHA-256 of the task file
  std::string set_key;    // names the seed-set folder
};

// One worker slot held for one request; the slot is free again when the lease ends.
class ReferenceProvider::WorkerLease {
 public:
  WorkerLease(ReferenceProvider* owner, size_t slot) : owner_(owner), slot_(slot) {}
  WorkerLease(WorkerLease&& o) noexcept
      : owner_(std::exchange(o.owner_, nullptr)), slot_(o.slot_) {}
  WorkerLease& operator=(WorkerLease&&) = delete;
  WorkerLease(const WorkerLease&) = delete;
  WorkerLease& operator=(const WorkerLease&) = delete;
  ~WorkerLease() {
    if (owner_ != nullptr) owner_->release_worker(slot_);
  }
  ReferenceWorker* operator->() const { return &*owner_->slots_[slot_]; }

 private:
  ReferenceProvider* owner_;
  size_t slot_;
};

ReferenceProvider::ReferenceProvider(ProviderOptions options)
    : options_(std::move(options)),
      store_(options_.cache_dir / "reference", options_.max_reference_bytes),
      slots_(static_cast<size_t>(std::max(1, options_.workers))),
      busy_(slots_.size(), false) {}

Result<ReferenceProvider::WorkerLease> ReferenceProvider::lease_worker() {
  size_t slot = 0;
  {
    MutexLock lock(mu_);
    for (;;) {
      const auto idle = std::find(busy_.begin(), busy_.end(), false);
      if (idle != busy_.end()) {
        slot = static_cast<size_t>(idle - busy_.begin());
        *idle = true;
        break;
      }
      worker_freed_.wait(mu_);
    }
  }
  WorkerLease lease(this, slot);  // from here the slot is ours, and returned on every path
  std::optional<ReferenceWorker>& w = slots_[slot];
  if (w && !w->alive()) w.reset();
  if (!w) {
    // Started outside mu_: an interpreter importing torch takes seconds, and the other
    // slots serve meanwhile.
    KEVIN_ASSIGN_OR_RETURN(ReferenceWorker started, ReferenceWorker::start(options_.worker));
    w.emplace(std::move(started));
    MutexLock lock(mu_);
    python_ = w->python();
  }
  return lease;
}

void ReferenceProvider::release_worker(size_t slot) {
  MutexLock lock(mu_);
  busy_[slot] = false;
  worker_freed_.notify_one();
}

DeviceGate* ReferenceProvider::gate(int device) const {
  return options_.timing_gate ? options_.timing_gate(device) : nullptr;
}

Result<Json> ReferenceProvider::describe(const fs::path& task, const std::string& backend) {
  KEVIN_ASSIGN_OR_RETURN(WorkerLease w, lease_worker());
  return w->describe(task, backend);
}

std::string ReferenceProvider::python() const {
  MutexLock lock(mu_);
  return python_;
}

Result<ReferenceProvider::TaskKey> ReferenceProvider::task_key(const fs::path& task,
                                                               const std::string& backend,
                                                               int device) const {
  KEVIN_ASSIGN_OR_RETURN(std::string source, read_file(task, size_t{16} << 20));
  TaskKey k{task, backend, device, sha256_hex(source), ""};
  // Everything that shapes the data: a set made for other parameters is another set.
  k.set_key = Sha256()
                  .update_field(k.task_hash)
                  .update_field(backend)
                  .update_field(std::to_string(device))
                  .update_field(std::to_string(options_.num_sets))
                  .update_field(std::to_string(options_.max_calls))
                  .update_field(std::to_string(options_.timing_bytes_budget))
                  .update_field(std::to_string(options_.min_timing_sets))
                  .update_field(std::to_string(engine::kReferenceProtocol))
                  .hex_digest();
  return k;
}

Result<engine::ReferenceSet> ReferenceProvider::get(const fs::path& task,
                                                    const std::string& backend, int device) {
  KEVIN_ASSIGN_OR_RETURN(TaskKey k, task_key(task, backend, device));
  KEVIN_ASSIGN_OR_RETURN(engine::ReferenceSet ref, seed_set(k));
  KEVIN_ASSIGN_OR_RETURN(engine::TimingStats eager,
                         cached_baseline(k, ref, engine::BaselineKind::kEager));
  ref.baseline = eager;
  if (options_.baseline != engine::BaselineKind::kEager) {
    KEVIN_ASSIGN_OR_RETURN(ref.baseline, cached_baseline(k, ref, options_.baseline));
    ref.baseline_kind = options_.baseline;
    ref.eager_baseline = eager;
  }
  ref.peaks = device_peaks(k, ref);
  ref.task_file = fs::absolute(task);
  return ref;
}

std::optional<engine::ReferenceSet> ReferenceProvider::current(const fs::path& task,
                                                               const std::string& backend,
                                                               int device) const {
  auto k = task_key(task, backend, device);
  if (!k.is_ok()) return std::nullopt;
  return store_.current(k->set_key, options_.seed_ttl);
}

Result<engine::ReferenceSet> ReferenceProvider::seed_set(const TaskKey& k) {
  if (auto cached = store_.current(k.set_key, options_.seed_ttl)) return std::move(*cached);
  std::error_code ec;
  fs::create_directories(store_.key_dir(k.set_key), ec);
  const sys::FileLock one_preparer = one_at_a_time(store_.key_dir(k.set_key) / "prepare.lock");
  if (auto cached = store_.current(k.set_key, options_.seed_ttl))
    return std::move(*cached);  // made while we waited

  KEVIN_ASSIGN_OR_RETURN(WorkerLease w, lease_worker());
  // Preparing runs the task on the device: hold it shared so that no timing runs meanwhile.
  // Worker before gate (the order of every path here): nobody waits for a worker while
  // holding the gate.
  const SharedDeviceLock shared(gate(k.device));
  // Checked after every wait: preparations queued for a worker do not start after Ctrl-C.
  KEVIN_RETURN_IF_ERROR(check_cancel("reference data for " + k.task.filename().string()));
  ::chmod(options_.cache_dir.c_str(), 0700);  // expected outputs: readable by us only
  KEVIN_ASSIGN_OR_RETURN(Staging staging, store_.stage(k.set_key));
  PrepareRequest req;
  req.task = k.task;
  req.backend = k.backend;
  req.device = k.device;
  req.seeds = secret_seeds(options_.num_sets);
  req.timing_seeds = secret_seeds(options_.max_calls);
  req.timing_bytes_budget = options_.timing_bytes_budget;
  req.min_timing_sets = options_.min_timing_sets;
  req.out_dir = staging.dir();
  req.cancel = options_.cancel;
  const LongWait wait("preparing reference data for " + task_label(k.task),
                      store_.key_dir(k.set_key) / "prepare_seconds");
  std::string last;
  if (auto t = wait.last_time()) last = "; last time " + std::to_string(t->count()) + " s";
  KEVIN_LOG(info) << "preparing reference data for " << k.task.filename().string() << " on "
                  << w->device_name(k.backend, k.device) << " (" << options_.num_sets
                  << " correctness sets, up to " << options_.max_calls << " timing sets" << last
                  << ")";
  KEVIN_RETURN_IF_ERROR(w->prepare(req).status());
  if (Status s = wait.finish(); !s.is_ok()) {
    KEVIN_LOG(warn) << "how long the preparation took was not kept: " << s.message();
  }
  return store_.publish(k.set_key, std::move(staging));
}

fs::path ReferenceProvider::lock_file(const fs::path& cached) const {
  // Beside the cache's folders, not in them: their entries are the cached results only.
  const fs::path dir = options_.cache_dir / "locks";
  std::error_code ec;
  fs::create_directories(dir, ec);
  return dir / (cached.parent_path().filename().string() + "-" + cached.stem().string() + ".lock");
}

Status ReferenceProvider::check_cancel(const std::string& what) const {
  if (options_.cancel == nullptr || !options_.cancel->load()) return Status::ok();
  return cancelled(what + ": not prepared, the run was interrupted");
}

Result<engine::TimingStats> ReferenceProvider::cached_baseline(const TaskKey& k,
                                                               const engine::ReferenceSet& ref,
                                                               engine::BaselineKind kind) {
  // The set names the device and torch version it was made with, so a warm cache needs no
  // worker at all. Eager baselines keep the key they had before there were kinds.
  Sha256 key;
  key.update_field(k.task_hash)
      .update_field(ref.device_name)
      .update_field(ref.torch_version)
      .update_field(std::to_string(engine::kReferenceProtocol));
  if (kind != engine::BaselineKind::kEager) key.update_field(engine::baseline_kind_name(kind));
  const fs::path file = options_.cache_dir / "baseline" / (key.hex_digest() + ".json");
  if (auto b = fresh_baseline(file, options_.baseline_ttl)) return *b;
  const sys::FileLock one_timer = one_at_a_time(lock_file(file));
  if (auto b = fresh_baseline(file, options_.baseline_ttl)) return *b;  // timed while we waited
  KEVIN_RETURN_IF_ERROR(check_cancel("the baseline of " + k.task.filename().string()));
  // The baseline is timed like a candidate: with the device to itself, but only its calls.
  GateSteps steps(gate(k.device));
  KEVIN_ASSIGN_OR_RETURN(engine::TimingStats b, time_baseline(k.task, k.backend, k.device, kind,
                                                              options_.cancel, steps.hold()));
  if (Status s = write_file_atomic(file, dump_json(engine::to_json(b))); !s.is_ok()) {
    KEVIN_LOG(warn) << "baseline not cached: " << s.message();
  }
  return b;
}

std::optional<engine::DevicePeaks> ReferenceProvider::device_peaks(
    const TaskKey& k, const engine::ReferenceSet& ref) {
  const fs::path file = options_.cache_dir / "peaks" /
                        (Sha256()
                             .update_field(ref.backend)
                             .update_field(ref.device_name)
                             .update_field(ref.torch_version)
                             .hex_digest() +
                         ".json");
  if (auto p = cached_peaks(file)) return p;
  // Checked before the gate: a device whose measurement failed must not make every later
  // request wait for the device alone.
  const auto failed_before = [&] {
    MutexLock lock(mu_);
    return peaks_failed_.count(file.string()) != 0;
  };
  if (failed_before()) return std::nullopt;
  const sys::FileLock one_measurer = one_at_a_time(lock_file(file));
  if (auto p = cached_peaks(file)) return p;  // measured while we waited
  if (failed_before()) return std::nullopt;
  if (!check_cancel("peak rates").is_ok()) return std::nullopt;
  auto w = lease_worker();
  if (!w.is_ok()) return std::nullopt;
  // Measured like a baseline: with the device to itself. Worker before gate.
  const ExclusiveDeviceLock exclusive(gate(k.device));
  KEVIN_LOG(info) << "measuring the peak bandwidth and FLOP rates of " << ref.device_name
                  << " (once per device model)";
  const engine::StoppedRunners stopped(k.device);
  auto p = (*w)->peaks(k.backend, k.device);
  if (!p.is_ok()) {
    KEVIN_LOG(warn) << "no speed of light for " << ref.device_name << ": " << p.status().message();
    MutexLock lock(mu_);
    peaks_failed_.insert(file.string());
    return std::nullopt;
  }
  p->measured_at = unix_now();
  if (Status s = write_file_atomic(file, dump_json(engine::to_json(*p))); !s.is_ok()) {
    KEVIN_LOG(warn) << "peak rates not cached: " << s.message();
  }
  return *p;
}

Result<engine::TimingStats> ReferenceProvider::retime_baseline(const fs::path& task,
                                                               const std::string& backend,
                                                               int device,
                                                               const TwoStepHold& hold) {
  if (!fs::is_regular_file(task)) return not_found("task file not found: " + task.string());
  return time_baseline(task, backend, device, options_.baseline, /*cancel=*/nullptr, hold);
}

Result<engine::TimingStats> ReferenceProvider::time_baseline(const fs::path& task,
                                                             const std::string& backend, int device,
                                                             engine::BaselineKind kind,
                                                             const std::atomic<bool>* cancel,
                                                             const TwoStepHold& hold) {
  KEVIN_ASSIGN_OR_RETURN(WorkerLease w, lease_worker());
  BaselineRequest req;
  req.cancel = cancel;
  req.task = task;
  req.backend = backend;
  req.device = device;
  req.seeds = secret_seeds(options_.num_sets);
  req.timing_seeds = secret_seeds(options_.max_calls);
  req.timing_bytes_budget = options_.timing_bytes_budget;
  req.min_timing_sets = options_.min_timing_sets;
  req.budget_ms = options_.timing_budget_ms;
  req.warmup = options_.warmup;
  req.min_calls = options_.min_calls;
  req.kind = kind;
  // No candidate code runs while a baseline is timed: once the device is held alone (so no
  // runner is in an exchange), every runner of this device waits stopped until the calls end.
  std::optional<engine::StoppedRunners> stopped;
  req.sets_built = [&] {
    hold.alone();
    stopped.emplace(device);
    return Status::ok();
  };
  KEVIN_LOG(info) << "timing the " << engine::baseline_kind_name(kind) << " baseline of "
                  << task.filename().string() << " on " << w->device_name(backend, device);
  // The worker builds its sets on the device before the calls: shared until then.
  hold.share();
  KEVIN_ASSIGN_OR_RETURN(engine::TimingStats b, w->baseline(req));
  b.measured_at = unix_now();
  return b;
}

}  // namespace kevin::tasks
