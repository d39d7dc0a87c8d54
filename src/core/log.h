// log.h — levelled logging to stderr. `KEVIN_LOG(info) << "compiled " << n << " kernels";`
// writes one line "[kevin I 12:00:01.234] compiled 3 kernels" if the level is enabled.
// A live status line (a progress display on a terminal) stays below the messages: each
// message clears it and draws it again. Thread-safe: each message is one write call.
#pragma once

#include <optional>
#include <sstream>
#include <string_view>

namespace kevin::log {

enum class Level { debug = 0, info = 1, warn = 2, error = 3, off = 4 };

// Sets the minimum level written. Default: info, or KEVIN_LOG_LEVEL from the environment.
void set_level(Level level);
Level level();
bool enabled(Level level);
// Parses "debug", "info", "warn", "error", "off"; nullopt for anything else.
std::optional<Level> parse_level(std::string_view text);

// Draws `line` as the status line at the bottom of the terminal on stderr (replacing the
// previous one); messages written while it is set appear above it. Only for a terminal:
// the line is drawn with a carriage return and an erase-line escape, without a newline.
void set_status_line(std::string_view line);
// Erases the status line and stops redrawing it; `keep` leaves its text in place (ending it
// with a newline) instead.
void clear_status_line(bool keep = false);

// One message; written when destroyed. Use through KEVIN_LOG.
class Message {
 public:
  explicit Message(Level level) : level_(level) {}
  ~Message();
  Message(const Message&) = delete;
  Message& operator=(const Message&) = delete;
  std::ostream& stream() { return out_; }

 private:
  Level level_;
  std::ostringstream out_;
};

}  // namespace kevin::log

#define KEVIN_LOG(lvl)                                    \
  if (!::kevin::log::enabled(::kevin::log::Level::lvl)) { \
  } else                                                  \
    ::kevin::log::Message(::kevin::log::Level::lvl).stream()
