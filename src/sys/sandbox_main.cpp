// sandbox_main.cpp — kevin-sandbox: runs a command (the compiler) in the sandbox described in
// sys/jail.h. Usage: kevin-sandbox [OPTIONS] -- COMMAND [ARG...]; see parse_jail_args.
#include <unistd.h>

#include <string>
#include <vector>

#include "sys/jail.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  auto options = kevin::sys::parse_jail_args(args);
  if (!options.is_ok()) {
    const std::string line = kevin::sys::kJailMessagePrefix + options.status().message() + "\n";
    const ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
    (void)ignored;
    return kevin::sys::kJailUsageExit;
  }
  // _exit: nothing is left to flush, and exit handlers (a sanitizer build's leak check among
  // them) cannot work inside the namespaces and limits the launcher has entered.
  ::_exit(kevin::sys::run_jail(*options));
}
