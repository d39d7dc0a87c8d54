// queue_overhead.cpp — what the Redis queue adds to one evaluation: the producer's round trip
// (claim-and-queue script, XREADGROUP wake-up, result XADD, XREAD, XACK) through a local
// redis-server and an in-process worker, against calling the same evaluator directly. The
// evaluator answers at once, so the difference is the queue's own cost per job.
// Usage: queue_overhead [--jobs N] [--producers P] [--redis-server PATH]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "core/file.h"
#include "env/fake_evaluator.h"
#include "queue/local_redis.h"
#include "queue/remote_evaluator.h"
#include "queue/worker.h"

namespace {

using Clock = std::chrono::steady_clock;
using kevin::queue::LocalRedis;

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

std::string candidate(int i) {
  return "// fake: correct speedup=2\n// job " + std::to_string(i) + "\n";
}

// Milliseconds of each of `n` calls, made one after another from `first`.
template <typename Call>
std::vector<double> serial_latencies(int first, int n, Call call) {
  std::vector<double> ms;
  for (int i = first; i < first + n; ++i) {
    const auto t = Clock::now();
    if (!call(candidate(i))) {
      std::fprintf(stderr, "queue_overhead: job %d failed\n", i);
      std::exit(1);
    }
    ms.push_back(ms_since(t));
  }
  return ms;
}

void print_row(const char* what, const std::vector<double>& ms) {
  std::printf("%-34s p50 %7.3f ms  p90 %7.3f ms  p99 %7.3f ms  (%zu jobs)\n", what,
              percentile(ms, 0.5), percentile(ms, 0.9), percentile(ms, 0.99), ms.size());
}

}  // namespace

int main(int argc, char** argv) {
  int jobs = 500, producers = 16;
  std::string server = "redis-server";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--jobs") jobs = std::atoi(argv[i + 1]);
    if (flag == "--producers") producers = std::atoi(argv[i + 1]);
    if (flag == "--redis-server") server = argv[i + 1];
  }
  auto redis = LocalRedis::start(server, "bench");
  if (!redis.is_ok()) {
    std::fprintf(stderr, "queue_overhead: %s\n", redis.status().to_string().c_str());
    return 2;
  }
  auto dir = kevin::sys::TempDir::create("kevin-queue-overhead-");
  kevin::tasks::TaskInfo task{"bench/task", "bench", "unknown", dir->path() / "task.py"};
  if (!kevin::write_file_atomic(task.path, "class Model: pass\n").is_ok()) return 2;

  kevin::env::FakeEvaluator evaluator{"cpu", "CPU"};
  std::atomic<bool> stop{false};
  kevin::queue::WorkerOptions wo;
  wo.address = (*redis)->address();
  wo.name = "bench-worker";
  wo.model = "cpu";
  wo.jobs = std::max(1, producers);
  wo.task_dir = dir->path() / "received";
  std::thread worker([&] { (void)kevin::queue::Worker(&evaluator, wo).run(stop); });
  kevin::queue::RemoteOptions ro;
  ro.address = (*redis)->address();
  ro.model = "cpu";
  ro.backend = "cpu";
  auto remote = kevin::queue::RemoteEvaluator::create(ro);
  if (!remote.is_ok()) return 2;

  auto through_queue = [&](const std::string& source) {
    return (*remote)->evaluate(task, source).is_ok();
  };
  auto direct = [&](const std::string& source) { return evaluator.evaluate(task, source).is_ok(); };
  serial_latencies(0, 20, through_queue);  // connections, groups, the task file
  const auto local_ms = serial_latencies(1000000, jobs, direct);
  const auto queue_ms = serial_latencies(20, jobs, through_queue);
  std::vector<double> added(queue_ms.size());
  for (size_t i = 0; i < added.size(); ++i) added[i] = queue_ms[i] - local_ms[i];
  print_row("direct call (no queue)", local_ms);
  print_row("through Redis, one at a time", queue_ms);
  print_row("added by the queue", added);

  std::atomic<int> next{2000000};
  const int end = next + jobs * 4;
  const auto t = Clock::now();
  std::vector<std::thread> threads;
  for (int p = 0; p < producers; ++p) {
    threads.emplace_back([&] {
      for (int i = next++; i < end; i = next++) (void)through_queue(candidate(i));
    });
  }
  for (auto& th : threads) th.join();
  std::printf("%d producers, one worker taking %d at once: %.0f jobs/s through the queue\n",
              producers, wo.jobs, 1000.0 * jobs * 4 / ms_since(t));
  stop = true;
  worker.join();
  return 0;
}
