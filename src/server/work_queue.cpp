// work_queue.cpp — the threads' loop: take the oldest job, run it, repeat until finishing
// and nothing is left.
#include "server/work_queue.h"

#include <algorithm>
#include <exception>

#include "core/log.h"

namespace kevin::server {

WorkQueue::WorkQueue(int threads) {
  for (int i = 0; i < std::max(threads, 1); ++i) threads_.emplace_back([this] { loop(); });
}

WorkQueue::~WorkQueue() { finish(); }

bool WorkQueue::submit(std::function<void()> job) {
  {
    MutexLock lock(mu_);
    if (finishing_) return false;
    jobs_.push_back(std::move(job));
  }
  wake_.notify_one();
  return true;
}

void WorkQueue::finish() {
  {
    MutexLock lock(mu_);
    finishing_ = true;
  }
  wake_.notify_all();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
}

size_t WorkQueue::queued() const {
  MutexLock lock(mu_);
  return jobs_.size();
}

int WorkQueue::running() const {
  MutexLock lock(mu_);
  return running_;
}

void WorkQueue::loop() {
  while (std::optional<std::function<void()>> job = next_job()) {
    try {
      (*job)();
    } catch (const std::exception& e) {
      KEVIN_LOG(error) << "server: a job threw (a bug): " << e.what();
    } catch (...) {
      KEVIN_LOG(error) << "server: a job threw (a bug)";
    }
    MutexLock lock(mu_);
    --running_;
  }
}

std::optional<std::function<void()>> WorkQueue::next_job() {
  MutexLock lock(mu_);
  while (!finishing_ && jobs_.empty()) wake_.wait(mu_);
  if (jobs_.empty()) return std::nullopt;  // finishing, and nothing left
  std::function<void()> job = std::move(jobs_.front());
  jobs_.pop_front();
  ++running_;
  return job;
}

}  // namespace kevin::server
