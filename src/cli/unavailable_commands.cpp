// unavailable_commands.cpp — subcommands whose jobs have not landed yet.
#include "cli/app.h"

namespace kevin::cli {

void add_serve_command(CLI::App& app, Action& action) {
  add_unavailable_command(app, action, "serve", "serve the environment over HTTP/WebSocket",
                          "arrives with the environment server");
}
void add_worker_command(CLI::App& app, Action& action) {
  add_unavailable_command(app, action, "worker", "run a remote GPU evaluation worker",
                          "arrives with the environment server");
}

}  // namespace kevin::cli
