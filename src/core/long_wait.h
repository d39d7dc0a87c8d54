// long_wait.h — waits worth naming to the user (reference data being prepared, the precompiled
// PyTorch header being built): while one lasts, progress displays say what is being waited for,
// for how long so far, and how long the same work took last time, which each wait keeps in a
// small file beside what it makes (whole seconds as text). Only measured durations are kept.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace kevin {

// A wait in progress, as a display names it.
struct WaitInfo {
  std::string what;  // "preparing reference data for level1/028_gelu"
  std::chrono::seconds so_far{0};
  std::optional<std::chrono::seconds> last_time;  // nullopt: never measured here
};

// The waits in progress in this process (every thread's), oldest first. Thread-safe.
std::vector<WaitInfo> current_waits();

// The duration kept in `file` by record_duration(); nullopt when the file is missing or does
// not hold one.
std::optional<std::chrono::seconds> recorded_duration(const std::filesystem::path& file);
// Keeps `d` in `file` (written atomically, parent folders created). Errors: I/O.
Status record_duration(const std::filesystem::path& file, std::chrono::seconds d);

// One wait, listed by current_waits() from construction to destruction. `duration_file` holds
// the last duration of the same work (read now); finish() writes this one's there. A wait
// destroyed without finish() (failed, cancelled) records nothing. Neither copyable nor movable.
class LongWait {
 public:
  LongWait(std::string what, std::filesystem::path duration_file);
  ~LongWait();
  LongWait(const LongWait&) = delete;
  LongWait& operator=(const LongWait&) = delete;

  // How long the same work took last time (nullopt: never measured).
  std::optional<std::chrono::seconds> last_time() const { return last_time_; }
  // Records the time since construction in the duration file. Errors: I/O.
  Status finish() const;

 private:
  uint64_t id_ = 0;
  std::filesystem::path duration_file_;
  std::optional<std::chrono::seconds> last_time_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace kevin
