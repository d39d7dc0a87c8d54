// progress.cpp — formatting and the display thread.
#include "rollout/progress.h"

#include <iomanip>
#include <sstream>

#include "core/log.h"

namespace kevin::rollout {

std::string progress_line(const Progress& p) {
  std::ostringstream o;
  o << "turns " << p.turns_done.load() << "/" << p.turns_total.load();
  if (p.turns_restored.load() > 0) o << " (" << p.turns_restored.load() << " resumed)";
  o << " · tasks " << p.tasks_done.load() << "/" << p.tasks_total.load() << " · generating " << p.generating.load()
    << " · evaluating " << p.evaluating.load() << " · correct " << p.correct.load() << " · best "
    << std::fixed << std::setprecision(2) << p.best_speedup.load() << "x";
  return o.str();
}

ProgressDisplay::ProgressDisplay(const Progress* progress, std::ostream* out, bool tty, std::chrono::milliseconds interval)
    : progress_(progress), out_(out), tty_(tty), interval_(tty ? std::chrono::milliseconds(500) : interval) {
  thread_ = std::thread([this] { loop(); });
}

ProgressDisplay::~ProgressDisplay() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  if (tty_) {
    *out_ << "\r\033[K" << progress_line(*progress_) << "\n" << std::flush;
  } else {
    KEVIN_LOG(info) << "run: " << progress_line(*progress_);
  }
}

void ProgressDisplay::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  std::string last;
  while (!cv_.wait_for(lock, interval_, [this] { return stop_; })) {
    const std::string line = progress_line(*progress_);
    if (tty_) {
      *out_ << "\r\033[K" << line << std::flush;
    } else if (line != last) {
      KEVIN_LOG(info) << "run: " << line;
    }
    last = line;
  }
}

}  // namespace kevin::rollout
