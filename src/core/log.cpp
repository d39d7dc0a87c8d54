// log.cpp — the stderr sink and level filter behind KEVIN_LOG.
#include "core/log.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <string>

#include "core/mutex.h"

namespace kevin::log {
namespace {

Level initial_level() {
  const char* env = std::getenv("KEVIN_LOG_LEVEL");
  if (env == nullptr) return Level::info;
  return parse_level(env).value_or(Level::info);
}

std::atomic<Level>& current_level() {
  static std::atomic<Level> level{initial_level()};
  return level;
}

char level_letter(Level level) {
  switch (level) {
    case Level::debug:
      return 'D';
    case Level::info:
      return 'I';
    case Level::warn:
      return 'W';
    case Level::error:
      return 'E';
    case Level::off:
      break;
  }
  return '?';
}

std::string timestamp() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t secs = std::chrono::system_clock::to_time_t(now);
  const auto millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm parts{};
  localtime_r(&secs, &parts);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%02d:%02d:%02d.%03d", parts.tm_hour, parts.tm_min, parts.tm_sec,
                static_cast<int>(millis));
  return buf;
}

// The status line and the lock that keeps it and messages from interleaving.
struct StatusLine {
  Mutex mu;
  std::string text GUARDED_BY(mu);
  bool shown GUARDED_BY(mu) = false;
};

StatusLine& status_line() {
  static StatusLine s;
  return s;
}

void write_stderr(const std::string& text) {
  const ssize_t ignored = ::write(STDERR_FILENO, text.data(), text.size());
  (void)ignored;
}

constexpr const char* kEraseLine = "\r\033[K";

}  // namespace

void set_status_line(std::string_view line) {
  StatusLine& s = status_line();
  MutexLock lock(s.mu);
  s.text = line;
  s.shown = true;
  write_stderr(kEraseLine + s.text);
}

void clear_status_line(bool keep) {
  StatusLine& s = status_line();
  MutexLock lock(s.mu);
  if (!s.shown) return;
  write_stderr(keep ? kEraseLine + s.text + "\n" : std::string(kEraseLine));
  s.shown = false;
  s.text.clear();
}

void set_level(Level level) { current_level().store(level); }
Level level() { return current_level().load(); }
bool enabled(Level lvl) { return lvl != Level::off && lvl >= level(); }

std::optional<Level> parse_level(std::string_view text) {
  if (text == "debug") return Level::debug;
  if (text == "info") return Level::info;
  if (text == "warn" || text == "warning") return Level::warn;
  if (text == "error") return Level::error;
  if (text == "off") return Level::off;
  return std::nullopt;
}

Message::~Message() {
  std::string line = "[kevin ";
  line += level_letter(level_);
  line += ' ';
  line += timestamp();
  line += "] ";
  line += out_.str();
  line += '\n';
  // One write per line keeps concurrent messages from interleaving mid-line; a status line
  // is erased first and drawn again below the message, in the same write.
  StatusLine& s = status_line();
  MutexLock lock(s.mu);
  write_stderr(s.shown ? kEraseLine + line + s.text : line);
}

}  // namespace kevin::log
