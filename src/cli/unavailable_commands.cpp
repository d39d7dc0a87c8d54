// unavailable_commands.cpp — the commands whose packages this build lacked (`make demo` builds
// without them; `make build` installs them and rebuilds).
#include "cli/app.h"

namespace kevin::cli {

#if !defined(KEVIN_HAVE_SERVER)
void add_serve_command(CLI::App& app, Action& action) {
  add_unavailable_command(
      app, action, "serve", "serve the environment over HTTP/WebSocket",
      "this kevin was built without Boost headers; `make build` in kevin's source folder "
      "installs libboost-dev and rebuilds");
}
#endif
#if !defined(KEVIN_HAVE_QUEUE)
void add_worker_command(CLI::App& app, Action& action) {
  add_unavailable_command(
      app, action, "worker", "run a remote GPU evaluation worker",
      "this kevin was built without hiredis; `make build` in kevin's source folder installs "
      "libhiredis-dev and rebuilds");
}
#endif

}  // namespace kevin::cli
