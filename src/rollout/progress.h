// progress.h — the live progress display of `kevin run`: on a terminal one status line kept
// below the log messages and redrawn every half second; otherwise a heartbeat log line every
// `interval` (30 s by default), also while reference data is being prepared, naming the long
// waits in progress (core/long_wait.h). It reads the rollout's Progress counters from its own
// thread until destroyed.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/long_wait.h"
#include "core/mutex.h"
#include "rollout/rollout.h"

namespace kevin::rollout {

// "turns 37/144 (12 resumed) · tasks 1/2 · 4.2 turns/min · 6m02s, ETA 25m · generating 3 ·
// evaluating 2 (1 running, 1 queued) · correct 12 · best 2.31x". Rates and the ETA count the
// turns done in this process only (resumed ones cost nothing); "ETA -" until one is done.
// `running_evaluations`, when known, splits the evaluations into running and queued. Each of
// `waits` follows the evaluations: "preparing reference data for level1/028_gelu (12s so far,
// last time 38s)", the last time only where it was measured.
std::string progress_line(const Progress& p, std::chrono::seconds elapsed,
                          std::optional<int> running_evaluations = std::nullopt,
                          const std::vector<WaitInfo>& waits = {});
// "1h02m", "6m02s", "42s".
std::string format_duration(std::chrono::seconds d);

class ProgressDisplay {
 public:
  // `progress` is borrowed and must outlive the display. `running_evaluations` (optional)
  // is called from the display's thread.
  ProgressDisplay(const Progress* progress, bool tty,
                  std::chrono::milliseconds interval = std::chrono::seconds(30),
                  std::function<int()> running_evaluations = {});
  ~ProgressDisplay();  // stops and leaves the final line (on a terminal) or logs it
  ProgressDisplay(const ProgressDisplay&) = delete;
  ProgressDisplay& operator=(const ProgressDisplay&) = delete;

 private:
  void loop();
  std::string line() const;

  const Progress* progress_;
  bool tty_;
  std::chrono::milliseconds interval_;
  std::function<int()> running_evaluations_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  Notification stop_;
  std::thread thread_;
};

}  // namespace kevin::rollout
