// unavailable_commands.cpp — subcommands whose jobs have not landed yet.
#include "cli/app.h"

namespace kevin::cli {

#if !defined(KEVIN_HAVE_SERVER)
void add_serve_command(CLI::App& app, Action& action) {
  add_unavailable_command(
      app, action, "serve", "serve the environment over HTTP/WebSocket",
      "this kevin was built without Boost headers; install libboost-dev and rebuild");
}
#endif
#if !defined(KEVIN_HAVE_QUEUE)
void add_worker_command(CLI::App& app, Action& action) {
  add_unavailable_command(
      app, action, "worker", "run a remote GPU evaluation worker",
      "this kevin was built without hiredis; install libhiredis-dev and rebuild");
}
#endif

}  // namespace kevin::cli
