// mutex.h — kevin's mutexes, locks, condition variable and notification: std::mutex,
// std::shared_mutex and std::condition_variable wearing clang's thread-safety attributes
// (thread_annotations.h), so the clang check proves that every GUARDED_BY field is used with its
// mutex held. Use these, never the std types directly (libstdc++'s are not annotated, so the
// analysis could not see them).
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <shared_mutex>

#include "core/thread_annotations.h"

namespace kevin {

// A non-recursive mutual-exclusion lock. Neither copyable nor movable.
class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void lock() ACQUIRE() { mu_.lock(); }
  void unlock() RELEASE() { mu_.unlock(); }

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Holds a Mutex for its lifetime (the std::lock_guard of this header).
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~MutexLock() RELEASE() { mu_.unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex& mu_;
};

// A readers-writer lock: many holders in shared mode, or one in exclusive mode.
class CAPABILITY("shared mutex") SharedMutex {
 public:
  SharedMutex() = default;
  SharedMutex(const SharedMutex&) = delete;
  SharedMutex& operator=(const SharedMutex&) = delete;

  void lock() ACQUIRE() { mu_.lock(); }
  void unlock() RELEASE() { mu_.unlock(); }
  void lock_shared() ACQUIRE_SHARED() { mu_.lock_shared(); }
  void unlock_shared() RELEASE_SHARED() { mu_.unlock_shared(); }

 private:
  std::shared_mutex mu_;
};

// Holds a SharedMutex in shared mode for its lifetime.
class SCOPED_CAPABILITY ReaderLock {
 public:
  explicit ReaderLock(SharedMutex& mu) ACQUIRE_SHARED(mu) : mu_(mu) { mu_.lock_shared(); }
  ~ReaderLock() RELEASE() { mu_.unlock_shared(); }
  ReaderLock(const ReaderLock&) = delete;
  ReaderLock& operator=(const ReaderLock&) = delete;

 private:
  SharedMutex& mu_;
};

// Holds a SharedMutex in exclusive mode for its lifetime.
class SCOPED_CAPABILITY WriterLock {
 public:
  explicit WriterLock(SharedMutex& mu) ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~WriterLock() RELEASE() { mu_.unlock(); }
  WriterLock(const WriterLock&) = delete;
  WriterLock& operator=(const WriterLock&) = delete;

 private:
  SharedMutex& mu_;
};

// A condition variable for Mutex. Waits may wake spuriously: callers loop on their condition,
//   while (!ready_) cv_.wait(mu_);
// which keeps the condition's fields in code the analysis checks (a predicate lambda would not be).
class CondVar {
 public:
  using Clock = std::chrono::steady_clock;

  // Releases `mu` while blocked; holds it again on return.
  void wait(Mutex& mu) REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu.mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();
  }
  // As wait(), but gives up at `deadline`: false when it returns because the deadline passed.
  bool wait_until(Mutex& mu, Clock::time_point deadline) REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu.mu_, std::adopt_lock);
    const bool notified = cv_.wait_until(lock, deadline) == std::cv_status::no_timeout;
    lock.release();
    return notified;
  }
  // As wait_until(), `timeout` from now.
  bool wait_for(Mutex& mu, Clock::duration timeout) REQUIRES(mu) {
    return wait_until(mu, Clock::now() + timeout);
  }
  void notify_one() { cv_.notify_one(); }
  void notify_all() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

// A flag set once and waited on: the stop signal of a thread that ticks until told to stop.
class Notification {
 public:
  // Sets the flag and wakes every waiter. Idempotent.
  void notify() {
    MutexLock lock(mu_);
    notified_ = true;
    cv_.notify_all();
  }
  bool has_been_notified() const {
    MutexLock lock(mu_);
    return notified_;
  }
  // Blocks until notify().
  void wait() {
    MutexLock lock(mu_);
    while (!notified_) cv_.wait(mu_);
  }
  // Blocks until notify() or for `timeout`: true when notified.
  bool wait_for(CondVar::Clock::duration timeout) {
    const auto deadline = CondVar::Clock::now() + timeout;
    MutexLock lock(mu_);
    while (!notified_ && cv_.wait_until(mu_, deadline)) {
    }
    return notified_;
  }

 private:
  mutable Mutex mu_;
  CondVar cv_;
  bool notified_ GUARDED_BY(mu_) = false;
};

}  // namespace kevin
