// interrupt.h — Ctrl-C and SIGTERM for long commands (run, train, worker): the first signal
// asks the job to stop in good order (a flag it polls), a second one exits at once with 130.
// Children need no signal of their own: each dies with kevin (docs/sandbox.md).
#pragma once

#include <atomic>
#include <string>

namespace kevin::cli {

inline constexpr int kExitInterrupted = 130;  // 128 + SIGINT, what shells expect

// Installs a process-wide handler for SIGINT and SIGTERM (whichever thread they reach). On
// the first it prints "<command>: <first_message> (Ctrl-C again to exit at once)" to stderr
// and sets the returned flag; on the second it prints "<command>: exiting now" and calls
// _exit(130). One watch per process: a later call returns the same flag. Messages longer than
// a few hundred bytes are cut.
const std::atomic<bool>* watch_interrupts(const std::string& command,
                                          const std::string& first_message);

}  // namespace kevin::cli
