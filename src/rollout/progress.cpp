// progress.cpp — formatting (rates, ETA) and the display thread.
#include "rollout/progress.h"

#include <iomanip>
#include <sstream>

#include "core/log.h"
#include "core/mutex.h"

namespace kevin::rollout {

std::string format_duration(std::chrono::seconds d) {
  const long long s = std::max<long long>(0, d.count());
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", s / 3600, (s % 3600) / 60);
  } else if (s >= 60) {
    std::snprintf(buf, sizeof buf, "%lldm%02llds", s / 60, s % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%llds", s);
  }
  return buf;
}

std::string progress_line(const Progress& p, std::chrono::seconds elapsed,
                          std::optional<int> running_evaluations,
                          const std::vector<WaitInfo>& waits) {
  const size_t done = p.turns_done.load(), total = p.turns_total.load(),
               restored = p.turns_restored.load();
  const size_t fresh = done - std::min(done, restored);
  std::ostringstream o;
  o << std::fixed << std::setprecision(1);
  o << "turns " << done << "/" << total;
  if (restored > 0) o << " (" << restored << " resumed)";
  o << " · tasks " << p.tasks_done.load() << "/" << p.tasks_total.load();
  const double minutes = std::max(1.0, static_cast<double>(elapsed.count())) / 60.0;
  o << " · " << static_cast<double>(fresh) / minutes << " turns/min · " << format_duration(elapsed)
    << ", ETA ";
  if (fresh == 0) {
    o << "-";
  } else {
    const double left_s = static_cast<double>(total - std::min(total, done)) * minutes * 60.0 /
                          static_cast<double>(fresh);
    o << format_duration(std::chrono::seconds(static_cast<long long>(left_s)));
  }
  const int evaluating = p.evaluating.load();
  o << " · generating " << p.generating.load() << " · evaluating " << evaluating;
  if (running_evaluations && evaluating > 0) {
    const int running = std::min(*running_evaluations, evaluating);
    o << " (" << running << " running, " << evaluating - running << " queued)";
  }
  for (const WaitInfo& w : waits) {
    o << " · " << w.what << " (" << format_duration(w.so_far) << " so far";
    if (w.last_time) o << ", last time " << format_duration(*w.last_time);
    o << ")";
  }
  o << " · correct " << p.correct.load() << " · best " << std::setprecision(2)
    << p.best_speedup.load() << "x";
  return o.str();
}

ProgressDisplay::ProgressDisplay(const Progress* progress, bool tty,
                                 std::chrono::milliseconds interval,
                                 std::function<int()> running_evaluations)
    : progress_(progress),
      tty_(tty),
      interval_(tty ? std::chrono::milliseconds(500) : interval),
      running_evaluations_(std::move(running_evaluations)) {
  thread_ = std::thread([this] { loop(); });
}

ProgressDisplay::~ProgressDisplay() {
  stop_.notify();
  thread_.join();
  if (tty_) {
    log::set_status_line(line());
    log::clear_status_line(/*keep=*/true);
  } else {
    KEVIN_LOG(info) << "run: " << line();
  }
}

std::string ProgressDisplay::line() const {
  const auto elapsed =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - start_);
  std::optional<int> running;
  if (running_evaluations_) running = running_evaluations_();
  return progress_line(*progress_, elapsed, running, current_waits());
}

void ProgressDisplay::loop() {
  if (tty_) log::set_status_line(line());
  while (!stop_.wait_for(interval_)) {
    if (tty_) {
      log::set_status_line(line());
    } else {
      KEVIN_LOG(info) << "run: " << line();  // a heartbeat: written even when nothing moved
    }
  }
}

}  // namespace kevin::rollout
