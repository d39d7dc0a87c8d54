// progress.h — the live progress display of `kevin run`: on a terminal one status line
// rewritten in place every half second; otherwise a plain log line every `interval`. It
// reads the rollout's Progress counters from its own thread until stopped.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>

#include "rollout/rollout.h"

namespace kevin::rollout {

// "turns 37/144 (12 resumed) · tasks 1/2 · generating 3 · evaluating 2 · correct 12 · best 2.31x"
std::string progress_line(const Progress& p);

class ProgressDisplay {
 public:
  // `out` is borrowed (stderr in the CLI) and must outlive the display.
  ProgressDisplay(const Progress* progress, std::ostream* out, bool tty,
                  std::chrono::milliseconds interval = std::chrono::seconds(10));
  ~ProgressDisplay();  // stops and prints the final line
  ProgressDisplay(const ProgressDisplay&) = delete;
  ProgressDisplay& operator=(const ProgressDisplay&) = delete;

 private:
  void loop();

  const Progress* progress_;
  std::ostream* out_;
  bool tty_;
  std::chrono::milliseconds interval_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace kevin::rollout
