// reference_provider.h — reference data on demand, cached on disk: secret seed sets in
// immutable leased directories (reference_store.h), reused until the seed TTL, and eager
// baselines timed under the device's exclusive gate, cached until the baseline TTL.
// Thread-safe; up to ProviderOptions::workers Python workers serve requests at once (each
// started lazily and restarted after a failed request), so different tasks prepare in parallel.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/device_gate.h"
#include "core/mutex.h"
#include "engine/run/reference.h"
#include "tasks/reference_store.h"
#include "tasks/reference_worker.h"

namespace kevin::tasks {

struct ProviderOptions {
  std::filesystem::path cache_dir;  // uses <cache_dir>/reference and /baseline
  WorkerOptions worker;
  // Python workers serving requests at once: preparations of different tasks run in parallel
  // (each worker holds its own interpreter and, on CUDA, its own context). At least 1.
  int workers = 4;
  int num_sets = 5;                             // K
  std::chrono::seconds seed_ttl{3600};          // 0: a fresh seed set every time
  std::chrono::seconds baseline_ttl{6 * 3600};  // 0: the baseline is re-timed every time
  double timing_budget_ms = 2000;
  int warmup = 3, min_calls = 10, max_calls = 100;
  // What speedups are measured against (ReferenceSet::baseline). kCompile times torch.compile's
  // code as well as eager PyTorch's (ReferenceSet::eager_baseline, reported beside it); it
  // needs PyTorch 2.0 or later in the worker.
  engine::BaselineKind baseline = engine::BaselineKind::kEager;
  // T timing sets per seed set: as many as this many bytes of inputs and expected outputs
  // hold, at least min_timing_sets, at most max_calls.
  uint64_t timing_bytes_budget = kDefaultTimingBytesBudget;
  int min_timing_sets = kDefaultMinTimingSets;
  // Cap on <cache_dir>/reference; least recently used sets that no evaluation holds go first.
  uint64_t max_reference_bytes = uint64_t{32} << 30;
  // The gate of CUDA device `device` (the CPU backend: lane 0) that timing holds alone;
  // borrowed, must outlive the provider; null or unset: no gate. Data preparation holds it
  // shared (it uses the device), baseline timing and the peak measurement exclusively.
  std::function<DeviceGate*(int device)> timing_gate;
  // Once it reads true (the run's Ctrl-C), get() starts no preparation and no baseline timing,
  // and one in progress is abandoned: the worker's process group is killed, nothing is cached,
  // and get() fails with kCancelled. Re-timings for a judge (retime_baseline) are not
  // cancelled. Borrowed; null: never.
  const std::atomic<bool>* cancel = nullptr;
};

// A seed set (K correctness seeds and max_calls timing seeds from the OS random source, never
// stored) is prepared once per (task content, backend, device, K, timing parameters); a
// baseline is cached per (task content hash, device name, torch version, protocol, kind); the
// device's peak rates (speed of light) per (backend, device name, torch version), for good.
class ReferenceProvider {
 public:
  explicit ReferenceProvider(ProviderOptions options);

  // Reference data for `task` on `backend` ("cuda"/"cpu") and CUDA device `device`, with
  // its baseline of options.baseline's kind, and eager's beside it when that is compile (each
  // timed now when the cached one is missing or older than baseline_ttl: its sets built with
  // the gate shared, its calls with the device alone) and the device's peak rates (measured
  // alone the first time this device model and torch version are seen; a failed measurement
  // is logged, not retried by this provider, and leaves `peaks` empty: speed of light is a
  // report, never a verdict). One thread or process at a time prepares a set, times a
  // baseline or measures peaks (file locks); the others wait and reuse it. The set carries a
  // lease: its files stay in place while any copy of it lives, even if a newer set replaces
  // it. Lock order: file lock, a worker of the pool, then the gate, so callers must not hold
  // `device`'s gate (shared or exclusive) when calling this. While data is prepared, a LongWait
  // names it
  // ("preparing reference data for level1/028_gelu"); how long the preparation took is kept in the
  // key's folder (prepare_seconds) for the next one to quote. Errors: kNotFound (task file),
  // kInvalidArgument (the task is broken), kDeadlineExceeded (the task ran past the worker's
  // limit), kFailedPrecondition (no interpreter with torch), kCancelled (options.cancel).
  Result<engine::ReferenceSet> get(const std::filesystem::path& task, const std::string& backend,
                                   int device);

  // Times the baseline (options.baseline's kind) now on fresh secret seeds, without reading
  // or writing the cache, holding `device` through `hold` (the judge's, which counts the
  // waits): shared while a worker builds the sets, alone for the calls. The caller holds no
  // gate of `device` when calling this, and releases `hold` after. measured_at is now. For a
  // set from get(): retime_baseline(ref.task_file, ref.backend, device, hold). Errors as get().
  Result<engine::TimingStats> retime_baseline(const std::filesystem::path& task,
                                              const std::string& backend, int device,
                                              const TwoStepHold& hold);

  // The set get() would return without preparing one: the task's current set in the cache
  // while it is younger than seed_ttl (without its baseline or peaks), else nullopt (also
  // when the task file cannot be read). Starts no worker.
  std::optional<engine::ReferenceSet> current(const std::filesystem::path& task,
                                              const std::string& backend, int device) const;

  // The task's ABI argument list at `backend`'s sizes (ReferenceWorker::describe), through
  // the same worker process. Errors as get().
  Result<Json> describe(const std::filesystem::path& task, const std::string& backend);

  // The interpreter in use, once a worker has started ("" before).
  std::string python() const;

 private:
  struct TaskKey;
  class WorkerLease;
  // A worker of its own for one request, started (again) if needed: waits while all
  // options_.workers are busy. Errors: a worker that cannot start (ReferenceWorker::start's).
  Result<WorkerLease> lease_worker();
  // Marks `slot` free and wakes one waiter; called by the slot's lease when it ends.
  void release_worker(size_t slot);
  DeviceGate* gate(int device) const;
  Result<TaskKey> task_key(const std::filesystem::path& task, const std::string& backend,
                           int device) const;
  // The key's fresh current set, else a newly prepared and published one.
  Result<engine::ReferenceSet> seed_set(const TaskKey& k);
  // The cached baseline of `kind` for `ref`'s device and torch version while younger than
  // baseline_ttl, else one timed now (under the exclusive gate) and cached.
  Result<engine::TimingStats> cached_baseline(const TaskKey& k, const engine::ReferenceSet& ref,
                                              engine::BaselineKind kind);
  // The device's cached peak rates, else measured now under the exclusive gate and cached.
  std::optional<engine::DevicePeaks> device_peaks(const TaskKey& k,
                                                  const engine::ReferenceSet& ref);
  // Times with a worker: leases it, then takes `hold` shared while the worker builds its sets
  // and alone for the calls, every runner of `device` stopped while they run
  // (engine::StoppedRunners). `cancel` as in TaskRequest.
  Result<engine::TimingStats> time_baseline(const std::filesystem::path& task,
                                            const std::string& backend, int device,
                                            engine::BaselineKind kind,
                                            const std::atomic<bool>* cancel,
                                            const TwoStepHold& hold);
  // The lock file that one thread or process holds while it makes the cache file `cached`
  // (a baseline's, the peak rates').
  std::filesystem::path lock_file(const std::filesystem::path& cached) const;
  // kCancelled naming `what` once options_.cancel reads true, else OK.
  Status check_cancel(const std::string& what) const;

  ProviderOptions options_;
  ReferenceStore store_;
  mutable Mutex mu_;
  CondVar worker_freed_;
  // Slot i's worker belongs to whoever holds busy_[i] (a WorkerLease): it is used outside mu_.
  std::vector<std::optional<ReferenceWorker>> slots_;
  std::vector<bool> busy_ GUARDED_BY(mu_);
  std::string python_ GUARDED_BY(mu_);
  // Peak-rate cache files whose measurement failed here: not tried again by this provider.
  std::set<std::string> peaks_failed_ GUARDED_BY(mu_);
};

}  // namespace kevin::tasks
