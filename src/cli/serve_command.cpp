// serve_command.cpp — `kevin serve`: the environment server (OpenEnv WebSocket/HTTP and
// KernelGYM REST) over the local engine, until SIGINT/SIGTERM.
#include <CLI/CLI.hpp>

#include <ostream>

#include "cli/app.h"
#include "cli/engine_flags.h"
#include "cli/paths.h"
#include "cli/run_setup.h"
#include "server/routes.h"
#include "server/server.h"

namespace kevin::cli {
namespace fs = std::filesystem;

namespace {

struct ServeArgs {
  std::string host = "127.0.0.1", token_file, tasks_dir, split;
  std::vector<std::string> tasks;
  int port = 8000, max_sessions = 64, max_turns = 8, turns = 4, io_threads = 2;
  EngineFlags engine;
  QueueFlags queue;
  double speedup_cap = 0, max_body_mb = 64, max_buffered_body_mb = 0;
  bool accept_reference_code = false;
};

int serve(const ServeArgs& a, std::ostream& out, std::ostream& err) {
  auto fail = [&](const Status& s) { return report_failure(err, "serve", s); };
  auto token = read_token_file(a.token_file);
  if (!token.is_ok()) return fail(token.status());
  const std::vector<std::string> specs =
      a.tasks.empty() ? std::vector<std::string>{tasks_dir(a.tasks_dir).string()} : a.tasks;
  auto selected = select_tasks(specs, a.tasks_dir, a.split);
  if (!selected.is_ok()) return fail(selected.status());
  auto engine = resolve_engine_json(a.queue.with_queue(a.engine.settings()));
  if (!engine.is_ok()) return fail(engine.status());
  // Before the engine starts: an open host without a token is refused in one line.
  if (const Status exposed = server::check_exposure(a.host, *token); !exposed.is_ok())
    return fail(exposed);
  auto evaluator = make_evaluator(*engine);
  if (!evaluator.is_ok()) return fail(evaluator.status());
  server::ServiceOptions service_options;
  service_options.max_sessions = a.max_sessions;
  service_options.max_turns = a.max_turns;
  service_options.default_turns = std::min(a.turns, a.max_turns);
  if (a.speedup_cap > 0) service_options.score.speedup_cap = a.speedup_cap;
  service_options.accept_reference_code = a.accept_reference_code;
  service_options.adhoc_dir = fs::path((*engine)["cache_dir"].get<std::string>()) / "served-tasks";
  server::EnvService service(evaluator->get(), std::move(selected).value(), service_options);
  server::ServerOptions options;
  options.host = a.host;
  options.port = static_cast<uint16_t>(a.port);
  options.token = *token;
  options.io_threads = a.io_threads;
  options.max_body_bytes = static_cast<size_t>(a.max_body_mb * (1 << 20));
  options.max_buffered_body_bytes = static_cast<size_t>(a.max_buffered_body_mb * (1 << 20));
  server::KernelGymApi gym(&service);
  server::EnvRoutes routes(&service, &gym);
  auto srv = server::Server::create(&routes, options);
  if (!srv.is_ok()) return fail(srv.status());
  out << "kevin serve: listening on http://" << a.host << ":" << (*srv)->port()
      << " (OpenEnv /ws, KernelGYM /evaluate; " << service.tasks().size() << " tasks, "
      << (*evaluator)->backend() << " on " << (*evaluator)->device_name() << ", up to "
      << a.max_sessions << " sessions" << (token->empty() ? "" : ", bearer token required") << ")"
      << std::endl;
  const Status ran = (*srv)->run(/*handle_signals=*/true);
  if (!ran.is_ok()) return fail(ran);
  out << "kevin serve: stopped after " << service.metrics().evaluations_total() << " evaluations"
      << std::endl;
  return kExitOk;
}

}  // namespace

void add_serve_command(CLI::App& app, Action& action) {
  auto a = std::make_shared<ServeArgs>();
  CLI::App* sub = app.add_subcommand("serve",
                                     "serve the environment to RL stacks: OpenEnv (WebSocket /ws, "
                                     "HTTP /reset /step /state /schema /metadata /health), "
                                     "KernelGYM's REST API (/evaluate, /evaluate/batch, "
                                     "/status/ID, /results/ID) and Prometheus /metrics");
  add_listen_options(sub, &a->host, &a->port, &a->token_file);
  sub->add_option(
      "--tasks", a->tasks,
      "tasks served: suite names, task ids, .py files or folders (default: every shipped task)");
  sub->add_option("--tasks-dir", a->tasks_dir,
                  "folder of suites that names refer to (default: the shipped tasks/)");
  sub->add_option("--split", a->split, "serve only the train or holdout tasks")
      ->check(CLI::IsMember({"train", "holdout"}));
  sub->add_option("--max-sessions", a->max_sessions,
                  "open WebSocket sessions at once; more get CAPACITY_REACHED")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  sub->add_option("--max-turns", a->max_turns, "most steps an episode may ask for in reset")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  sub->add_option("--turns", a->turns, "steps of an episode whose reset does not say")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  sub->add_option("--speedup-cap", a->speedup_cap, "cap speedups in rewards (0: off)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  add_engine_flags(sub, &a->engine,
                   "answers: kevin (C ABI; default), kernelbench (ModelNew + load_inline, "
                   "KernelBench's prompt style), auto (kevin's prompts, either format judged)");
  sub->add_option("--io-threads", a->io_threads, "network threads")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  sub->add_option("--max-body-mb", a->max_body_mb, "largest HTTP request body (MiB)")
      ->check(CLI::Range(0.001, 4096.0))
      ->capture_default_str();
  sub->add_option("--max-buffered-body-mb", a->max_buffered_body_mb,
                  "HTTP request bodies held at once, all connections together (MiB); more are "
                  "refused with 503 (default 0: 4 x --max-body-mb)")
      ->check(CLI::Range(0.0, 65536.0))
      ->capture_default_str();
  sub->add_flag("--accept-reference-code", a->accept_reference_code,
                "evaluate against reference_code sent to /evaluate: it runs unsandboxed in the "
                "reference worker, so only "
                "where every client is trusted (default: refused; clients name served tasks with "
                "problem_id)");
  add_queue_options(sub, &a->queue);
  sub->footer(
      "Examples:\n"
      "  kevin serve --backend cpu --tasks level1          # loopback, port 8000\n"
      "  kevin serve --host 0.0.0.0 --token-file token.txt --max-sessions 128\n"
      "  kevin serve --port 0 --tasks tests/fixtures/tasks  # any free port (printed)\n"
      "Protocols and fields: docs/serve.md");
  sub->callback([a, &action] {
    action = [a](std::ostream& out, std::ostream& err) { return serve(*a, out, err); };
  });
}

}  // namespace kevin::cli
