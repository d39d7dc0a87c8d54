// reference_worker_test.cpp — the real Python worker on the CPU backend: protocol-2 data (K
// correctness and T timing sets, T bounded by the byte budget and the minimum), the baseline
// op, describe/check, a task that never returns, and the worker's exit when kevin dies.
#include "tasks/reference_worker.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <thread>

#include "sys/fd.h"
#include "sys/tempdir.h"
#include "tasks/worker_test_support.h"

namespace kevin::tasks {
namespace {
namespace fs = std::filesystem;
using testing::fixture_task;
using testing::seed_range;
using testing::worker_options;

std::string read_bytes(const fs::path& file, uint64_t offset, uint64_t size) {
  std::ifstream in(file, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(offset));
  std::string out(size, '\0');
  in.read(out.data(), static_cast<std::streamsize>(size));
  return out;
}

// A CPU baseline of vector_add: two warm-up seeds, `timing_sets` timing seeds, at least 3 calls.
BaselineRequest vector_add_baseline(int timing_sets) {
  BaselineRequest r;
  r.task = fixture_task("vector_add.py");
  r.backend = "cpu";
  r.seeds = {1, 2};
  r.timing_seeds = seed_range(200, timing_sets);
  r.min_calls = 3;
  return r;
}

// One worker for the tests that keep it healthy (starting one imports torch: seconds).
class Worker : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto w = ReferenceWorker::start(worker_options());
    ASSERT_TRUE(w.is_ok()) << w.status().to_string();
    worker_ = new ReferenceWorker(std::move(w).value());
  }
  static void TearDownTestSuite() {
    delete worker_;
    worker_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(worker_, nullptr);
    auto dir = sys::TempDir::create("kevin-worker-test-");
    ASSERT_TRUE(dir.is_ok());
    tmp_ = std::move(dir).value();
  }

  PrepareRequest prepare_request(std::vector<uint64_t> timing_seeds, uint64_t bytes_budget,
                                 int min_sets) const {
    PrepareRequest r;
    r.task = fixture_task("vector_add.py");
    r.backend = "cpu";
    r.seeds = {1, 2, 3};
    r.timing_seeds = std::move(timing_seeds);
    r.timing_bytes_budget = bytes_budget;
    r.min_timing_sets = min_sets;
    r.out_dir = tmp_.path() / ("data-" + std::to_string(++outputs_));
    return r;
  }

  static ReferenceWorker* worker_;
  sys::TempDir tmp_;
  mutable int outputs_ = 0;
};
ReferenceWorker* Worker::worker_ = nullptr;

// vector_add at CPU sizes: inputs a, b of 37x131 float32, output of the same shape.
uint64_t bytes_per_set(const engine::ReferenceSet& ref) {
  return engine::layout_of(ref.input_tensors()).set_bytes +
         engine::layout_of(ref.outputs).set_bytes;
}

TEST_F(Worker, PrepareWritesCorrectnessAndTimingSetsInTheReferenceLayout) {
  std::vector<uint64_t> timing = {1};  // timing set 0 shares correctness set 0's seed
  for (uint64_t s : seed_range(101, 11)) timing.push_back(s);
  auto ref = worker_->prepare(prepare_request(timing, uint64_t{1} << 30, 2));
  ASSERT_TRUE(ref.is_ok()) << ref.status().to_string();
  EXPECT_EQ(ref->num_sets, 3u);
  EXPECT_EQ(ref->num_timing_sets, 12u) << "the budget holds every seed's set";
  EXPECT_EQ(ref->timing_scalars.size(), 12u);
  EXPECT_EQ(ref->baseline, std::nullopt) << "prepare no longer times";
  const uint64_t in = engine::layout_of(ref->input_tensors()).set_bytes;
  const uint64_t out = engine::layout_of(ref->outputs).set_bytes;
  EXPECT_EQ(fs::file_size(ref->timing_inputs_file()), 12 * in);
  EXPECT_EQ(fs::file_size(ref->timing_expected_file()), 12 * out);
  // Timing sets are built exactly as correctness sets are: the same seed gives the same bytes.
  EXPECT_EQ(read_bytes(ref->timing_inputs_file(), 0, in), read_bytes(ref->inputs_file(), 0, in));
  EXPECT_EQ(read_bytes(ref->timing_expected_file(), 0, out),
            read_bytes(ref->expected_file(), 0, out));
  EXPECT_NE(read_bytes(ref->timing_inputs_file(), in, in), read_bytes(ref->inputs_file(), in, in));
  auto meta = parse_json(*read_file(ref->dir / "meta.json"));
  ASSERT_TRUE(meta.is_ok());
  EXPECT_EQ((*meta)["protocol"], 3);
  // What a KernelBench answer is run with: forward's two tensors in order, no scalars, no
  // constructor arguments.
  EXPECT_EQ(ref->forward_args, (std::vector<std::string>{"tensor", "tensor"}));
  EXPECT_TRUE(ref->scalar_kinds.empty());
  EXPECT_EQ(ref->init_inputs, Json::array());
  EXPECT_EQ((*meta)["num_timing_sets"], 12);
}

TEST_F(Worker, TimingSetCountIsBoundedByTheByteBudgetTheMinimumAndTheSeeds) {
  auto probe = worker_->prepare(prepare_request(seed_range(100, 4), uint64_t{1} << 30, 1));
  ASSERT_TRUE(probe.is_ok()) << probe.status().to_string();
  const uint64_t set = bytes_per_set(*probe);

  auto by_budget = worker_->prepare(prepare_request(seed_range(100, 12), 5 * set + set / 2, 2));
  ASSERT_TRUE(by_budget.is_ok());
  EXPECT_EQ(by_budget->num_timing_sets, 5u) << "floor(budget / bytes per set)";

  auto by_minimum = worker_->prepare(prepare_request(seed_range(100, 12), 1, 3));
  ASSERT_TRUE(by_minimum.is_ok());
  EXPECT_EQ(by_minimum->num_timing_sets, 3u) << "at least min_timing_sets, whatever the budget";

  auto by_seeds = worker_->prepare(prepare_request(seed_range(100, 4), 1, 10));
  ASSERT_TRUE(by_seeds.is_ok());
  EXPECT_EQ(by_seeds->num_timing_sets, 4u) << "never more than the seeds given";
}

TEST_F(Worker, BaselineTimesOneCallPerTimingSetAndWritesNothing) {
  BaselineRequest r = vector_add_baseline(12);
  r.budget_ms = 2000;
  auto all = worker_->baseline(r);
  ASSERT_TRUE(all.is_ok()) << all.status().to_string();
  EXPECT_EQ(all->calls, 12) << "fast calls: one on every timing set";
  EXPECT_GT(all->median_ms, 0);
  EXPECT_LE(all->min_ms, all->median_ms);
  EXPECT_EQ(all->measured_at, 0) << "the caller stamps what it keeps";
  // The median's interval, at the ranks the judge uses for candidates (12 calls: 2nd and 11th).
  EXPECT_TRUE(all->has_interval());
  EXPECT_LE(all->median_lo_ms, all->median_ms);
  EXPECT_GE(all->median_hi_ms, all->median_ms);
  EXPECT_EQ(engine::median_ci_ranks(12), (std::pair<size_t, size_t>{2, 11}));

  r.budget_ms = 1e-6;
  auto by_time = worker_->baseline(r);
  ASSERT_TRUE(by_time.is_ok());
  EXPECT_EQ(by_time->calls, 3) << "a spent time budget still gives min_calls";

  r.budget_ms = 2000;
  r.timing_bytes_budget = 1;
  r.min_timing_sets = 4;
  r.min_calls = 10;
  auto by_sets = worker_->baseline(r);
  ASSERT_TRUE(by_sets.is_ok());
  EXPECT_EQ(by_sets->calls, 4) << "at most T: the timing sets the data would hold";
  EXPECT_TRUE(fs::is_empty(tmp_.path()));
}

TEST_F(Worker, DescribeAndCheckStillWork) {
  auto d = worker_->describe(fixture_task("vector_add.py"), "cpu");
  ASSERT_TRUE(d.is_ok()) << d.status().to_string();
  EXPECT_EQ((*d)["inputs"].size(), 2u);
  EXPECT_EQ((*d)["outputs"][0]["shape"], Json::array({37, 131}));
  auto flags = worker_->check(fixture_task("vector_add.py"), "cpu");
  ASSERT_TRUE(flags.is_ok()) << flags.status().to_string();
}

TEST_F(Worker, BrokenTaskIsATaskError) {
  const fs::path task = tmp_.path() / "broken.py";
  ASSERT_TRUE(write_file_atomic(task, "import torch\ndef get_inputs():\n    return []\n").is_ok());
  auto r = worker_->prepare([&] {
    PrepareRequest p = prepare_request(seed_range(1, 3), 1, 1);
    p.task = task;
    return p;
  }());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(worker_->alive()) << "a task error leaves the worker serving";
}

TEST_F(Worker, ATaskThatCannotLoadHereSaysWhy) {
  const fs::path missing = tmp_.path() / "needs_package.py";
  ASSERT_TRUE(write_file_atomic(missing, "import kevin_no_such_package\n").is_ok());
  auto r = worker_->check(missing, "cpu");
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("needs the Python package 'kevin_no_such_package'"),
            std::string::npos)
      << r.status().to_string();
  // KernelBench's level 4 reads model configs from the hub at import; offline that fails so.
  const fs::path hub = tmp_.path() / "needs_hub.py";
  ASSERT_TRUE(
      write_file_atomic(hub,
                        "raise OSError(\"We couldn't connect to 'https://huggingface.co' to load "
                        "this file\")\n")
          .is_ok());
  auto offline = worker_->check(hub, "cpu");
  EXPECT_EQ(offline.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(offline.status().message().find("set HF_HUB_OFFLINE=1"), std::string::npos)
      << offline.status().to_string();
  EXPECT_TRUE(worker_->alive());
}

TEST_F(Worker, CheckComparesLargeOutputsInChunksWithTheSameFlags) {
  // 5M elements: more than one chunk of the comparison. A constant-output task is flagged
  // whichever chunk decides; an honest one is not.
  const fs::path constant = tmp_.path() / "big_constant.py";
  ASSERT_TRUE(write_file_atomic(
                  constant,
                  "import torch\nimport torch.nn as nn\nclass Model(nn.Module):\n"
                  "    def forward(self, x):\n        return torch.zeros_like(x) + 3.0 + x * 1e-6\n"
                  "def get_inputs():\n    return [torch.randn(5 * 1024 * 1024)]\n"
                  "def get_init_inputs():\n    return []\n")
                  .is_ok());
  auto flags = worker_->check(constant, "cpu");
  ASSERT_TRUE(flags.is_ok()) << flags.status().to_string();
  const std::string all = [&] {
    std::string t;
    for (const auto& f : *flags) t += f + "\n";
    return t;
  }();
  EXPECT_NE(all.find("constant:"), std::string::npos) << all;
  EXPECT_NE(all.find("ignores_input"), std::string::npos) << all;
  auto honest = worker_->check(fixture_task("vector_add.py"), "cpu");
  ASSERT_TRUE(honest.is_ok());
  EXPECT_TRUE(honest->empty()) << honest->front();
}

// The two-step baseline: the worker builds its sets, then waits for the caller (who takes the
// device alone meanwhile) before any timed call.
TEST(WorkerTwoStep, BaselineWaitsForTheCallerOnceItsSetsAreBuiltAndTheWaitIsNotItsTime) {
  WorkerOptions o = worker_options();
  o.baseline_timeout = std::chrono::seconds(2);
  auto w = ReferenceWorker::start(o);
  ASSERT_TRUE(w.is_ok()) << w.status().to_string();
  BaselineRequest r = vector_add_baseline(6);
  int asked = 0;
  r.sets_built = [&] {
    ++asked;
    // Longer than the request's limit: a wait for the device is not the worker's time.
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    return Status::ok();
  };
  auto timed = w->baseline(r);
  ASSERT_TRUE(timed.is_ok()) << timed.status().to_string();
  EXPECT_EQ(asked, 1);
  EXPECT_EQ(timed->calls, 6);
  EXPECT_TRUE(w->alive());

  // The caller gives up (Ctrl-C while waiting for the device): the request fails with its
  // error, and the worker, still waiting for its go, is stopped.
  r.sets_built = [] { return cancelled("interrupted while waiting for the device"); };
  auto refused = w->baseline(r);
  EXPECT_EQ(refused.status().code(), StatusCode::kCancelled);
  EXPECT_NE(refused.status().message().find("the reference worker was stopped"), std::string::npos)
      << refused.status().message();
  EXPECT_FALSE(w->alive());
}

// The limit: a task whose get_inputs() never returns.
TEST(WorkerLimits, ARequestPastItsLimitStopsTheWorkerAndNamesTaskAndLimit) {
  auto tmp = sys::TempDir::create("kevin-worker-limit-");
  ASSERT_TRUE(tmp.is_ok());
  const fs::path task = testing::write_endless_task(tmp->path());
  WorkerOptions o = worker_options();
  o.prepare_timeout = std::chrono::seconds(3);
  o.describe_timeout = std::chrono::seconds(3);
  auto w = ReferenceWorker::start(o);
  ASSERT_TRUE(w.is_ok()) << w.status().to_string();
  const pid_t pid = w->pid();
  PrepareRequest r;
  r.task = task;
  r.backend = "cpu";
  r.seeds = {1};
  r.timing_seeds = {2};
  r.out_dir = tmp->path() / "out";
  const auto start = std::chrono::steady_clock::now();
  auto ref = w->prepare(r);
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(ref.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(ref.status().message(),
            "task " + task.string() +
                ": get_inputs/forward did not finish within 3 s; the reference worker was stopped");
  EXPECT_GE(waited, 2.9);
  EXPECT_LT(waited, 10);
  EXPECT_FALSE(w->alive());
  EXPECT_NE(::kill(pid, 0), 0) << "the worker process is gone (killed and reaped)";

  auto again = ReferenceWorker::start(o);
  ASSERT_TRUE(again.is_ok());
  EXPECT_EQ(again->describe(task, "cpu").status().code(), StatusCode::kDeadlineExceeded)
      << "describe has its limit too";
}

// Reads from `fd` until a line containing `needle` arrives or the deadline passes.
bool wait_for_line(int fd, const std::string& needle, sys::Deadline deadline) {
  std::string seen;
  while (seen.find(needle) == std::string::npos) {
    char buf[4096];
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, deadline.poll_timeout_ms()) <= 0) return false;
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) return false;
    seen.append(buf, static_cast<size_t>(n));
  }
  return true;
}

// True once `pid` has exited (gone, or a zombie waiting for its new parent to reap it).
bool exited(pid_t pid) {
  auto stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  if (!stat.is_ok()) return true;
  const size_t paren = stat->rfind(')');
  return paren != std::string::npos && paren + 2 < stat->size() && (*stat)[paren + 2] == 'Z';
}

// kevin killed outright: a helper process (standing in for kevin) starts the worker and is
// SIGKILLed while the worker runs a task that never returns. The worker's stdin stays open
// (this test holds the other end), so only the parent watchdog can notice.
TEST(WorkerLifetime, BusyWorkerExitsWithinASecondOfItsParentsDeath) {
  auto tmp = sys::TempDir::create("kevin-worker-orphan-");
  ASSERT_TRUE(tmp.is_ok());
  const fs::path endless = testing::write_endless_task(tmp->path());
  auto python = ReferenceWorker::start(worker_options());  // finds an interpreter with torch
  ASSERT_TRUE(python.is_ok()) << python.status().to_string();
  auto in = sys::make_pipe();
  auto out = sys::make_pipe();
  auto pid_pipe = sys::make_pipe();
  ASSERT_TRUE(in.is_ok() && out.is_ok() && pid_pipe.is_ok());
  sys::SpawnOptions o;
  // sh gives a background job /dev/null as stdin unless redirected, hence fd 4.
  o.argv = {"/bin/sh", "-c", "\"$0\" -u \"$1\" <&4 3>&- 4<&- & echo $! >&3; exec 3>&-; wait",
            python->python(), testing::worker_script().string()};
  o.env = sys::current_environment();
  o.fds = {
      {1, out->write.get()}, {2, STDERR_FILENO}, {3, pid_pipe->write.get()}, {4, in->read.get()}};
  auto helper = sys::spawn(o);
  ASSERT_TRUE(helper.is_ok()) << helper.status().to_string();
  out->write.reset();
  pid_pipe->write.reset();
  in->read.reset();
  std::string pid_text;
  char c = 0;
  while (::read(pid_pipe->read.get(), &c, 1) == 1 && c != '\n') pid_text += c;
  ASSERT_FALSE(pid_text.empty());
  const pid_t worker = static_cast<pid_t>(std::stol(pid_text));
  ASSERT_TRUE(
      wait_for_line(out->read.get(), "\"hello\"", sys::Deadline::after(std::chrono::seconds(60))))
      << "the worker did not start";
  const std::string request =
      dump_json(Json{{"op", "describe"}, {"task", endless.string()}, {"backend", "cpu"}}) + "\n";
  const auto deadline = sys::Deadline::after(std::chrono::seconds(5));
  ASSERT_TRUE(sys::write_all(in->write.get(), request.data(), request.size(), deadline).is_ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // inside get_inputs() by now

  ASSERT_EQ(::kill(helper->pid(), SIGKILL), 0);
  ASSERT_TRUE(helper->wait(sys::Deadline::after(std::chrono::seconds(10))).is_ok());
  const auto killed = std::chrono::steady_clock::now();
  while (!exited(worker) && std::chrono::steady_clock::now() - killed < std::chrono::seconds(5)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  const bool gone = exited(worker);
  if (!gone) ::kill(worker, SIGKILL);  // the one process this test started and lost
  EXPECT_TRUE(gone) << "the orphaned worker is still running";
  EXPECT_LT(took, 1.5) << "the watchdog polls every 0.25 s";
}

}  // namespace
}  // namespace kevin::tasks
