// reference_provider_test.cpp — the provider with the real worker (CPU backend): leased
// protocol-2 seed sets that a refresh never pulls from under a reader, the size cap, the
// baseline's TTL, the timing gate (shared for data, exclusive for baselines, none for
// retime_baseline), a task that never returns, and a preparation cancelled mid-way.
#include "tasks/reference_provider.h"

#include <gtest/gtest.h>

#include <fstream>
#include <future>
#include <regex>
#include <thread>

#include "core/long_wait.h"
#include "core/mutex.h"
#include "sys/tempdir.h"
#include "tasks/worker_test_support.h"

namespace kevin::tasks {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono_literals;
using testing::fixture_task;

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class Provider : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = sys::TempDir::create("kevin-provider-test-");
    ASSERT_TRUE(dir.is_ok());
    tmp_ = std::move(dir).value();
  }

  ProviderOptions options() const {
    ProviderOptions p;
    p.cache_dir = tmp_.path() / "cache";
    p.worker = testing::worker_options();
    p.num_sets = 2;
    p.max_calls = 12;
    p.min_timing_sets = 2;
    p.timing_budget_ms = 50;
    p.min_calls = 3;
    return p;
  }

  // The files in <cache>/baseline (one per cached baseline).
  std::vector<fs::path> baseline_files() const {
    std::vector<fs::path> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(tmp_.path() / "cache" / "baseline", ec))
      out.push_back(e.path());
    return out;
  }

  // True once some key has a published set (its `current` pointer).
  bool some_set_published() const {
    std::error_code ec;
    for (const auto& key : fs::directory_iterator(tmp_.path() / "cache" / "reference", ec)) {
      if (fs::exists(key.path() / "current")) return true;
    }
    return false;
  }

  sys::TempDir tmp_;
};

TEST_F(Provider, GetReturnsALeasedProtocol2SetWithATimedBaselineAndReusesBoth) {
  ReferenceProvider p(options());
  auto first = p.get(fixture_task("vector_add.py"), "cpu", 0);
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  EXPECT_NE(first->lease, nullptr);
  EXPECT_EQ(first->task_file, fixture_task("vector_add.py"));
  EXPECT_EQ(first->num_sets, 2u);
  EXPECT_EQ(first->num_timing_sets, 12u) << "tiny sets: one per timing seed";
  EXPECT_TRUE(std::regex_match(first->dir.filename().string(), std::regex("set-[0-9a-f]{32}")));
  EXPECT_EQ(first->dir.parent_path().parent_path(), tmp_.path() / "cache" / "reference");
  ASSERT_TRUE(first->baseline.has_value());
  EXPECT_GT(first->baseline->median_ms, 0);
  EXPECT_GE(first->baseline->calls, 3);
  EXPECT_NEAR(static_cast<double>(first->baseline->measured_at), static_cast<double>(unix_now()),
              60);
  EXPECT_EQ(baseline_files().size(), 1u);
  // Speed of light: the work counted while preparing (37 x 131 sums: one FLOP and three
  // float32 values moved per element) and the CPU's peak rates, measured once and cached.
  ASSERT_TRUE(first->work.has_value());
  EXPECT_EQ(first->work->flops, 37 * 131);
  EXPECT_EQ(first->work->min_bytes, 3 * 37 * 131 * 4);
  ASSERT_TRUE(first->peaks.has_value());
  EXPECT_EQ(first->peaks->device_name, "cpu");
  EXPECT_GT(first->peaks->bandwidth_gbps, 0);
  EXPECT_GT(first->peaks->tflops_for("float32"), 0);
  EXPECT_EQ(std::distance(fs::directory_iterator(tmp_.path() / "cache" / "peaks"),
                          fs::directory_iterator()),
            1);

  auto second = p.get(fixture_task("vector_add.py"), "cpu", 0);
  ASSERT_TRUE(second.is_ok());
  EXPECT_EQ(second->dir, first->dir) << "within the seed TTL the set is reused";
  EXPECT_EQ(second->baseline->measured_at, first->baseline->measured_at) << "and the baseline";
  EXPECT_DOUBLE_EQ(second->baseline->median_ms, first->baseline->median_ms);

  ReferenceProvider later(options());  // another kevin process, say
  auto warm = later.get(fixture_task("vector_add.py"), "cpu", 0);
  ASSERT_TRUE(warm.is_ok());
  EXPECT_EQ(warm->dir, first->dir);
  EXPECT_EQ(warm->baseline->measured_at, first->baseline->measured_at);
  ASSERT_TRUE(warm->peaks.has_value());
  EXPECT_EQ(warm->peaks->measured_at, first->peaks->measured_at) << "peaks are measured once";
  EXPECT_EQ(later.python(), "") << "a warm cache starts no worker";
}

TEST_F(Provider, CurrentIsThePreparedSetAndNeedsNoWorker) {
  ReferenceProvider first(options());
  EXPECT_FALSE(first.current(fixture_task("vector_add.py"), "cpu", 0).has_value())
      << "nothing prepared yet, and current() prepares nothing";
  EXPECT_EQ(first.python(), "");
  ASSERT_TRUE(first.get(fixture_task("vector_add.py"), "cpu", 0).is_ok());

  ReferenceProvider later(options());  // another kevin process, say
  auto set = later.current(fixture_task("vector_add.py"), "cpu", 0);
  ASSERT_TRUE(set.has_value());
  EXPECT_EQ(set->outputs.front().bytes(), 37u * 131u * 4u);
  EXPECT_EQ(set->has_cpu_sizes, std::optional<bool>(true)) << "vector_add has KEVIN_CPU_SIZES";
  EXPECT_EQ(later.python(), "") << "no worker was started";
  EXPECT_FALSE(later.current(tmp_.path() / "missing.py", "cpu", 0).has_value());
}

// Two tasks that each wait, while loading, for the other to have started loading: they can
// only both load when two workers serve at once.
void write_rendezvous_task(const fs::path& dir, const std::string& me, const std::string& other,
                           int wait_s) {
  std::ofstream(dir / (me + ".py"))
      << "import os, time, torch\n"
      << "HERE = os.path.dirname(os.path.abspath(__file__))\n"
      << "open(os.path.join(HERE, '" << me << ".started'), 'w').close()\n"
      << "deadline = time.time() + " << wait_s << "\n"
      << "while not os.path.exists(os.path.join(HERE, '" << other << ".started')):\n"
      << "    if time.time() > deadline:\n"
      << "        raise RuntimeError('" << other << " never started loading')\n"
      << "    time.sleep(0.05)\n"
      << "class Model(torch.nn.Module):\n"
      << "    def forward(self, x):\n"
      << "        return x * 2\n"
      << "def get_inputs():\n"
      << "    return [torch.randn(8)]\n"
      << "def get_init_inputs():\n"
      << "    return []\n";
}

// Two rendezvous tasks asked for at once from a provider with `workers` workers.
std::pair<Result<engine::ReferenceSet>, Result<engine::ReferenceSet>> get_both(
    const ProviderOptions& base, const fs::path& dir, int workers, int wait_s) {
  fs::create_directories(dir);
  write_rendezvous_task(dir, "a", "b", wait_s);
  write_rendezvous_task(dir, "b", "a", wait_s);
  ProviderOptions o = base;
  o.workers = workers;
  ReferenceProvider p(o);
  auto a = std::async(std::launch::async, [&] { return p.get(dir / "a.py", "cpu", 0); });
  auto b = std::async(std::launch::async, [&] { return p.get(dir / "b.py", "cpu", 0); });
  auto ra = a.get();
  return {std::move(ra), b.get()};
}

TEST_F(Provider, DifferentTasksPrepareInParallelOnTheirOwnWorkers) {
  const auto [a, b] = get_both(options(), tmp_.path() / "rendezvous", 2, 60);
  EXPECT_TRUE(a.is_ok()) << a.status().to_string();
  EXPECT_TRUE(b.is_ok()) << b.status().to_string();
}

TEST_F(Provider, OneWorkerServesOneRequestAtATime) {
  const auto [a, b] = get_both(options(), tmp_.path() / "rendezvous", 1, 2);
  // Whichever loads first waits in vain for the other, which waits for the worker.
  EXPECT_FALSE(a.is_ok() && b.is_ok());
  const Status failed = a.is_ok() ? b.status() : a.status();
  EXPECT_NE(failed.message().find("never started loading"), std::string::npos)
      << failed.to_string();
}

TEST_F(Provider, ARefreshNeverTouchesASetStillInUse) {
  ProviderOptions o = options();
  o.seed_ttl = 0s;  // a new set every time (--fresh-seeds)
  ReferenceProvider p(o);
  auto got = p.get(fixture_task("vector_add.py"), "cpu", 0);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  engine::ReferenceSet in_use = std::move(got).value();
  const fs::path old_dir = in_use.dir;
  const std::string old_expected = *read_file(in_use.expected_file());
  const std::string old_timing_expected = *read_file(in_use.timing_expected_file());

  auto fresh = p.get(fixture_task("vector_add.py"), "cpu", 0);
  ASSERT_TRUE(fresh.is_ok());
  EXPECT_NE(fresh->dir, old_dir) << "each set has a directory of its own";
  EXPECT_EQ(*read_file(in_use.expected_file()), old_expected)
      << "the reader's expected outputs did not change";
  EXPECT_EQ(*read_file(in_use.timing_expected_file()), old_timing_expected);
  EXPECT_TRUE(engine::load_reference(old_dir).is_ok());
  EXPECT_NE(*read_file(fresh->expected_file()), old_expected) << "new secret seeds";

  in_use = {};
  EXPECT_FALSE(fs::exists(old_dir)) << "removed once released";
  EXPECT_TRUE(fs::exists(fresh->dir));
}

TEST_F(Provider, SizeCapEvictsSetsNotInUse) {
  ProviderOptions o = options();
  o.max_reference_bytes = 1;  // every set is over the cap
  ReferenceProvider p(o);
  auto held = p.get(fixture_task("vector_add.py"), "cpu", 0);
  ASSERT_TRUE(held.is_ok()) << held.status().to_string();
  fs::path released;
  {
    auto r = p.get(fixture_task("row_sum_scaled.py"), "cpu", 0);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    released = r->dir;
  }
  EXPECT_TRUE(fs::exists(released)) << "nothing is swept until a set is published";
  auto third = p.get(fixture_task("linear_relu.py"), "cpu", 0);
  ASSERT_TRUE(third.is_ok()) << third.status().to_string();
  EXPECT_FALSE(fs::exists(released)) << "not in use: evicted";
  EXPECT_TRUE(fs::exists(held->dir)) << "in use: kept over the cap";
  EXPECT_TRUE(fs::exists(third->dir));
}

TEST_F(Provider, BaselineIsReTimedOnceOlderThanItsTtl) {
  ReferenceProvider first(options());
  auto a = first.get(fixture_task("vector_add.py"), "cpu", 0);
  ASSERT_TRUE(a.is_ok()) << a.status().to_string();
  const int64_t measured = a->baseline->measured_at;
  std::this_thread::sleep_for(2100ms);

  auto b = first.get(fixture_task("vector_add.py"), "cpu", 0);
  ASSERT_TRUE(b.is_ok());
  EXPECT_EQ(b->baseline->measured_at, measured) << "6 h TTL: still fresh";

  ProviderOptions o = options();
  o.baseline_ttl = 1s;
  ReferenceProvider second(o);
  auto c = second.get(fixture_task("vector_add.py"), "cpu", 0);
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_GT(c->baseline->measured_at, measured) << "older than the TTL: timed again on use";
  EXPECT_EQ(c->dir, a->dir) << "the data set has its own TTL";
  auto d = second.get(fixture_task("vector_add.py"), "cpu", 0);
  ASSERT_TRUE(d.is_ok());
  EXPECT_GE(d->baseline->measured_at, c->baseline->measured_at);
}

TEST_F(Provider, CompileBaselineIsCachedApartAndEagersIsReportedBesideIt) {
  ProviderOptions o = options();
  o.baseline = engine::BaselineKind::kCompile;
  ReferenceProvider p(o);
  auto ref = p.get(fixture_task("vector_add.py"), "cpu", 0);
  if (!ref.is_ok() && ref.status().code() == StatusCode::kFailedPrecondition &&
      ref.status().message().find("needs PyTorch 2.0") != std::string::npos) {
    GTEST_SKIP() << ref.status().message();  // CompileBaselineOnAnOldPyTorchSaysWhatItNeeds
  }
  ASSERT_TRUE(ref.is_ok()) << ref.status().to_string();
  EXPECT_EQ(ref->baseline_kind, engine::BaselineKind::kCompile);
  ASSERT_TRUE(ref->baseline.has_value());
  ASSERT_TRUE(ref->eager_baseline.has_value());
  EXPECT_GT(ref->baseline->median_ms, 0);
  EXPECT_GE(ref->baseline->calls, 3);
  EXPECT_GT(ref->eager_baseline->median_ms, 0);
  EXPECT_EQ(baseline_files().size(), 2u) << "eager's and compile's, each under its own key";

  // An eager provider on the same cache finds eager's file and times nothing.
  ReferenceProvider eager(options());
  auto plain = eager.get(fixture_task("vector_add.py"), "cpu", 0);
  ASSERT_TRUE(plain.is_ok()) << plain.status().to_string();
  EXPECT_EQ(plain->baseline_kind, engine::BaselineKind::kEager);
  EXPECT_FALSE(plain->eager_baseline.has_value());
  EXPECT_EQ(plain->baseline->measured_at, ref->eager_baseline->measured_at);
  EXPECT_DOUBLE_EQ(plain->baseline->median_ms, ref->eager_baseline->median_ms);
  EXPECT_EQ(baseline_files().size(), 2u);
}

TEST_F(Provider, CompileBaselineOnAnOldPyTorchSaysWhatItNeeds) {
  ProviderOptions o = options();
  o.baseline = engine::BaselineKind::kCompile;
  ReferenceProvider p(o);
  auto ref = p.get(fixture_task("vector_add.py"), "cpu", 0);
  if (ref.is_ok()) GTEST_SKIP() << "this PyTorch has torch.compile";
  EXPECT_EQ(ref.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(ref.status().message().find("a torch.compile baseline needs PyTorch 2.0 or later"),
            std::string::npos)
      << ref.status().message();
  EXPECT_NE(ref.status().message().find("--baseline eager"), std::string::npos);
  EXPECT_EQ(baseline_files().size(), 1u) << "eager's was timed and kept; no compile file";
}

TEST_F(Provider, BaselineIsTimedUnderTheExclusiveGateAndDataPreparedUnderTheSharedOne) {
  DeviceGate gate;
  Mutex mu;
  std::vector<int> asked;  // devices whose gate the provider asked for, in order
  ProviderOptions o = options();
  o.timing_gate = [&](int device) {
    MutexLock lock(mu);
    asked.push_back(device);
    return &gate;
  };
  ReferenceProvider p(o);

  gate.lock_shared();  // another evaluation's correctness run holds the device shared
  auto pending = std::async(std::launch::async,
                            [&] { return p.get(fixture_task("vector_add.py"), "cpu", 0); });
  const auto until = std::chrono::steady_clock::now() + 60s;
  while (!some_set_published() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(20ms);
  EXPECT_TRUE(some_set_published()) << "data preparation shares the device";
  EXPECT_EQ(pending.wait_for(1500ms), std::future_status::timeout)
      << "the baseline waits for the device alone";
  EXPECT_TRUE(baseline_files().empty());
  gate.unlock_shared();

  ASSERT_EQ(pending.wait_for(60s), std::future_status::ready);
  auto ref = pending.get();
  ASSERT_TRUE(ref.is_ok()) << ref.status().to_string();
  EXPECT_TRUE(ref->baseline.has_value());
  {
    MutexLock lock(mu);
    EXPECT_EQ(asked, (std::vector<int>{0, 0, 0}))
        << "one shared hold (data), one for the baseline (shared, then alone), one exclusive "
           "(peak rates)";
  }
  auto free_again = std::async(std::launch::async, [&] {
    gate.lock();
    gate.unlock();
  });
  EXPECT_EQ(free_again.wait_for(10s), std::future_status::ready)
      << "the provider released the gate";
}

TEST_F(Provider, RetimeBaselineHoldsTheDeviceThroughTheCallersStepsAndLeavesTheCacheAlone) {
  DeviceGate gate;
  ProviderOptions o = options();
  o.timing_gate = [&](int) { return &gate; };
  ReferenceProvider p(o);
  auto ref = p.get(fixture_task("vector_add.py"), "cpu", 0);
  ASSERT_TRUE(ref.is_ok()) << ref.status().to_string();
  ASSERT_EQ(baseline_files().size(), 1u);
  const std::string cached = *read_file(baseline_files().front());

  // The judge's holds: the provider takes them, and never the gate itself.
  std::vector<std::string> steps;
  const TwoStepHold hold{[&] { steps.push_back("share"); }, [&] { steps.push_back("alone"); }};
  gate.lock();  // were the provider to take the gate itself, it would wait here
  auto retimed = std::async(
      std::launch::async, [&] { return p.retime_baseline(ref->task_file, ref->backend, 0, hold); });
  const bool finished = retimed.wait_for(60s) == std::future_status::ready;
  gate.unlock();
  ASSERT_TRUE(finished) << "retime_baseline takes only the caller's holds";
  auto b = retimed.get();
  ASSERT_TRUE(b.is_ok()) << b.status().to_string();
  EXPECT_EQ(steps, (std::vector<std::string>{"share", "alone"}));
  EXPECT_GT(b->median_ms, 0);
  EXPECT_GE(b->measured_at, ref->baseline->measured_at);
  EXPECT_EQ(*read_file(baseline_files().front()), cached) << "the cache is not touched";
  EXPECT_EQ(baseline_files().size(), 1u);
  EXPECT_EQ(p.retime_baseline(tmp_.path() / "missing.py", "cpu", 0, hold).status().code(),
            StatusCode::kNotFound);
}

TEST_F(Provider, ATaskThatNeverReturnsIsStoppedAndTheWorkerRestarts) {
  ProviderOptions o = options();
  o.worker.prepare_timeout = 3s;
  o.worker.describe_timeout = 3s;
  ReferenceProvider p(o);
  const fs::path endless = testing::write_endless_task(tmp_.path());
  auto stuck = p.get(endless, "cpu", 0);
  EXPECT_EQ(stuck.status().code(), StatusCode::kDeadlineExceeded);
  const std::string why =
      "endless.py: get_inputs/forward did not finish within 3 s; the reference worker was stopped";
  EXPECT_NE(stuck.status().message().find(why), std::string::npos) << stuck.status().message();
  EXPECT_EQ(p.describe(endless, "cpu").status().code(), StatusCode::kDeadlineExceeded);

  auto fine = p.get(fixture_task("vector_add.py"), "cpu", 0);
  EXPECT_TRUE(fine.is_ok()) << "a fresh worker serves the next request: "
                            << fine.status().to_string();
  size_t leftovers = 0;
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(tmp_.path() / "cache" / "reference", ec)) {
    if (e.path().filename().string().rfind("prep-", 0) == 0) ++leftovers;
  }
  EXPECT_EQ(leftovers, 0u) << "the stopped preparation's staging directory is removed";
}

TEST_F(Provider, ACancelledPreparationStopsAtOnceAndLeavesNothingBehind) {
  std::atomic<bool> cancel{false};
  ProviderOptions o = options();
  o.cancel = &cancel;
  ReferenceProvider p(o);
  const fs::path endless = testing::write_endless_task(tmp_.path());
  const std::string named =
      "preparing reference data for " + tmp_.path().filename().string() + "/endless";
  std::chrono::steady_clock::time_point cancelled_at;
  std::thread stopper([&] {
    // Once the preparation is under way (the worker has started and been asked).
    for (int i = 0; i < 1200; ++i) {
      const auto waits = current_waits();
      if (!waits.empty() && waits.front().what == named) break;
      std::this_thread::sleep_for(50ms);
    }
    cancelled_at = std::chrono::steady_clock::now();
    cancel = true;
  });
  auto stopped = p.get(endless, "cpu", 0);
  stopper.join();
  EXPECT_EQ(stopped.status().code(), StatusCode::kCancelled) << stopped.status().to_string();
  EXPECT_NE(stopped.status().message().find("endless.py"), std::string::npos)
      << stopped.status().message();
  EXPECT_LT(std::chrono::steady_clock::now() - cancelled_at, 2s);
  EXPECT_TRUE(current_waits().empty());
  EXPECT_FALSE(some_set_published());
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(tmp_.path() / "cache" / "reference", ec)) {
    EXPECT_NE(e.path().filename(), "prepare_seconds") << "an abandoned preparation has no time";
    EXPECT_NE(e.path().filename().string().rfind("prep-", 0), 0u) << e.path();
  }
  // No preparation starts while the flag is up; afterwards a fresh worker serves.
  EXPECT_EQ(p.get(fixture_task("vector_add.py"), "cpu", 0).status().code(), StatusCode::kCancelled);
  EXPECT_FALSE(some_set_published());
  cancel = false;
  auto fine = p.get(fixture_task("vector_add.py"), "cpu", 0);
  ASSERT_TRUE(fine.is_ok()) << fine.status().to_string();
  EXPECT_TRUE(recorded_duration(fine->dir.parent_path() / "prepare_seconds").has_value())
      << "a finished preparation keeps its time for the next one";
}

}  // namespace
}  // namespace kevin::tasks
