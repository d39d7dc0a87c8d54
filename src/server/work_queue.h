// work_queue.h — a fixed set of threads running queued jobs in order of arrival. The server
// evaluates here, off its network threads, so sockets keep being served (pings answered,
// quick routes replied) while the engine works.
#pragma once

#include <deque>
#include <functional>
#include <optional>
#include <thread>
#include <vector>

#include "core/mutex.h"

namespace kevin::server {

class WorkQueue {
 public:
  // Starts `threads` (at least 1) threads.
  explicit WorkQueue(int threads);
  // finish(), then the threads are joined.
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Queues `job`. False (the job is dropped, never run) once finish() has begun. A job that
  // throws is our bug: the exception is logged and the thread goes on.
  bool submit(std::function<void()> job);
  // Stops taking jobs, runs every job already queued, and waits for all of them. Idempotent.
  void finish();

  size_t queued() const;  // waiting for a thread
  int running() const;    // on a thread now

 private:
  void loop();
  // The next job, counted running; nullopt once finishing and nothing is left.
  std::optional<std::function<void()>> next_job();

  mutable Mutex mu_;
  CondVar wake_;
  std::deque<std::function<void()>> jobs_ GUARDED_BY(mu_);
  int running_ GUARDED_BY(mu_) = 0;
  bool finishing_ GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace kevin::server
