// interrupt.cpp — the signal-waiting thread behind watch_interrupts().
#include "cli/interrupt.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>
#include <thread>

namespace kevin::cli {
namespace {

void say(const std::string& text) {
  const ssize_t ignored = ::write(STDERR_FILENO, text.data(), text.size());
  (void)ignored;
}

}  // namespace

const std::atomic<bool>* watch_interrupts(const std::string& command, const std::string& first_message) {
  static std::atomic<bool> interrupted{false};
  static std::once_flag once;
  std::call_once(once, [&] {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    // "\r\033[K" first: the signal may arrive while a progress line is drawn.
    const std::string first = "\r\033[K" + command + ": " + first_message + " (Ctrl-C again to exit at once)\n";
    const std::string second = "\r\033[K" + command + ": exiting now\n";
    std::thread([set, first, second] {
      int signal = 0;
      for (int seen = 0; sigwait(&set, &signal) == 0; ++seen) {
        if (seen > 0) {
          say(second);
          std::_Exit(kExitInterrupted);
        }
        say(first);
        interrupted.store(true);
      }
    }).detach();
  });
  return &interrupted;
}

}  // namespace kevin::cli
