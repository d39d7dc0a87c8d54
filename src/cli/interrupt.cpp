// interrupt.cpp — the signal handler behind watch_interrupts(). A handler (not a sigwait
// thread) because threads may exist before the watch starts (a CUDA driver's, on a GPU
// machine): a signal blocked only in later threads would reach an earlier one and end the
// process by its default action.
#include "cli/interrupt.h"

#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <mutex>

namespace kevin::cli {
namespace {

std::atomic<bool> g_interrupted{false};
std::atomic<int> g_signals{0};
// The messages, written from the handler with write(2) (async-signal-safe).
char g_first[512];
char g_second[128];
size_t g_first_len = 0, g_second_len = 0;

void say(const char* text, size_t len) {
  const ssize_t ignored = ::write(STDERR_FILENO, text, len);
  (void)ignored;
}

void on_signal(int) {
  if (g_signals.fetch_add(1) > 0) {
    say(g_second, g_second_len);
    ::_exit(kExitInterrupted);
  }
  say(g_first, g_first_len);
  g_interrupted.store(true);
}

// Copies `text` into `buf` (cut to fit) and returns its length.
size_t keep(const std::string& text, char* buf, size_t size) {
  const size_t n = std::min(text.size(), size - 1);
  std::memcpy(buf, text.data(), n);
  buf[n] = '\0';
  return n;
}

}  // namespace

const std::atomic<bool>* watch_interrupts(const std::string& command,
                                          const std::string& first_message) {
  static std::once_flag once;
  std::call_once(once, [&] {
    // "\r\033[K" first: the signal may arrive while a progress line is drawn.
    g_first_len =
        keep("\r\033[K" + command + ": " + first_message + " (Ctrl-C again to exit at once)\n",
             g_first, sizeof g_first);
    g_second_len = keep("\r\033[K" + command + ": exiting now\n", g_second, sizeof g_second);
    struct sigaction action {};
    action.sa_handler = on_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;  // blocking calls elsewhere go on; the flag is polled
    ::sigaction(SIGINT, &action, nullptr);
    ::sigaction(SIGTERM, &action, nullptr);
  });
  return &g_interrupted;
}

}  // namespace kevin::cli
