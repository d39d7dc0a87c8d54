// generate_command.cpp — `kevin generate`: one answer from a policy (the in-process model or a
// script) for a prompt, or, with --serve, the policy behind an OpenAI-compatible chat endpoint
// (server/openai_api.h) until SIGINT/SIGTERM. Wiring only.
#include <CLI/CLI.hpp>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <ostream>

#include "cli/app.h"
#include "cli/run_setup.h"
#if defined(KEVIN_HAVE_SERVER)
#include "server/openai_api.h"
#include "server/server.h"
#endif

namespace kevin::cli {
namespace {

struct GenerateArgs {
  std::string policy, backend = "auto", prompt, system, host = "127.0.0.1", token_file, name;
  std::vector<std::string> stop;
  double temperature = 0.9, top_p = 1.0;
  int max_tokens = 16384, max_batch = 16, port = 8001;
  bool open_think = false, serve = false, show_reasoning = false;
};

int fail(std::ostream& err, const Status& s) { return report_failure(err, "generate", s); }

// The name /v1/models lists: --name, else the model folder's (or script's) name.
std::string served_name(const GenerateArgs& a) {
  if (!a.name.empty()) return a.name;
  const std::filesystem::path target = a.policy.substr(a.policy.find(':') + 1);
  const std::string stem = target.filename().string();
  return stem.empty() ? target.parent_path().filename().string() : stem;
}

int generate_once(const GenerateArgs& a, policy::Policy* policy, std::ostream& out,
                  std::ostream& err) {
  std::string prompt = a.prompt;
  if (prompt == "-") prompt.assign(std::istreambuf_iterator<char>(std::cin), {});
  if (prompt.empty()) return fail(err, invalid_argument("the prompt is empty"));
  std::vector<ChatMessage> messages;
  if (!a.system.empty()) messages.push_back({"system", a.system});
  messages.push_back({"user", prompt});
  policy::GenerationParams params;
  params.temperature = a.temperature;
  params.top_p = a.top_p;
  params.max_tokens = a.max_tokens;
  params.stop = a.stop;
  auto g = policy->generate(messages, params);
  if (!g.is_ok()) return fail(err, g.status());
  if (a.show_reasoning && !g->reasoning.empty())
    out << "<think>\n" << g->reasoning << "\n</think>\n";
  out << g->content << "\n";
  err << "kevin generate: ";
  if (g->completion_tokens >= 0) err << g->completion_tokens << " tokens in ";
  err << g->latency_ms / 1000 << " s (" << (g->finish_reason.empty() ? "stop" : g->finish_reason)
      << ")\n";
  return kExitOk;
}

#if defined(KEVIN_HAVE_SERVER)
// The bearer token, read before the model loads (minutes at 32B), so that a bad token file or an
// open host without one is refused at once.
Result<std::string> serving_token(const GenerateArgs& a) {
  KEVIN_ASSIGN_OR_RETURN(std::string token, read_token_file(a.token_file));
  KEVIN_RETURN_IF_ERROR(server::check_exposure(a.host, token));
  return token;
}

int serve(const GenerateArgs& a, const std::string& token, policy::Policy* policy,
          std::ostream& out, std::ostream& err) {
  server::OpenAiRoutes routes(policy, {served_name(a), a.max_tokens, a.max_batch});
  server::ServerOptions options;
  options.host = a.host;
  options.port = static_cast<uint16_t>(a.port);
  options.token = token;
  auto srv = server::Server::create(&routes, options);
  if (!srv.is_ok()) return fail(err, srv.status());
  out << "kevin generate: serving " << served_name(a) << " (" << policy->name() << ") at http://"
      << a.host << ":" << (*srv)->port() << "/v1 (POST /v1/chat/completions"
      << (token.empty() ? "" : ", bearer token required") << ")" << std::endl;
  const Status ran = (*srv)->run(/*handle_signals=*/true);
  if (!ran.is_ok()) return fail(err, ran);
  out << "kevin generate: stopped after " << routes.completions() << " completions" << std::endl;
  return kExitOk;
}
#endif

int generate(const GenerateArgs& a, std::ostream& out, std::ostream& err) {
  auto spec = policy_spec_json(a.policy, a.backend, a.open_think);
  if (!spec.is_ok()) return fail(err, spec.status());
  (*spec)["max_batch"] = a.max_batch;
  if (!a.serve && a.prompt.empty())
    return fail(err, invalid_argument("give --prompt TEXT (or - for stdin), or --serve"));
#if defined(KEVIN_HAVE_SERVER)
  std::string token;
  if (a.serve) {
    auto checked = serving_token(a);
    if (!checked.is_ok()) return fail(err, checked.status());
    token = std::move(checked).value();
  }
#else
  if (a.serve) {
    return fail(err, failed_precondition(
                         "this kevin was built without Boost headers: no --serve (`make build` "
                         "in kevin's source folder installs libboost-dev and rebuilds)"));
  }
#endif
  err << "kevin generate: loading " << a.policy << "..." << std::endl;
  auto policy = make_policy(*spec);
  if (!policy.is_ok()) return fail(err, policy.status());
#if defined(KEVIN_HAVE_SERVER)
  if (a.serve) return serve(a, token, policy->get(), out, err);
#endif
  return generate_once(a, policy->get(), out, err);
}

}  // namespace

void add_generate_command(CLI::App& app, Action& action) {
  auto a = std::make_shared<GenerateArgs>();
  CLI::App* sub = app.add_subcommand(
      "generate",
      "sample from a model with kevin's generation engine: one answer to --prompt, or (--serve) "
      "an OpenAI-compatible chat endpoint for other tools");
  sub->add_option("--policy", a->policy,
                  "local:MODEL_DIR (an HF Qwen2 folder run in-process) or scripted:FILE")
      ->required();
  sub->add_option("--backend", a->backend, "where a local model runs: cuda, cpu or auto")
      ->check(CLI::IsMember({"auto", "cuda", "cpu"}))
      ->capture_default_str();
  sub->add_flag("--open-think", a->open_think,
                "start answers inside <think> (QwQ-32B's chat template)");
  sub->add_option("--prompt", a->prompt, "the user message (- reads it from stdin)");
  sub->add_option("--system", a->system, "a system message before it");
  sub->add_flag("--show-reasoning", a->show_reasoning, "print the <think> block too");
  sub->add_option("--temperature", a->temperature, "sampling temperature (--prompt)")
      ->check(CLI::Range(0.0, 2.0))
      ->capture_default_str();
  sub->add_option("--top-p", a->top_p, "nucleus sampling mass (--prompt)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  sub->add_option("--stop", a->stop, "stop strings (--prompt)");
  sub->add_option("--max-tokens", a->max_tokens,
                  "tokens one answer may take; with --serve the most a request may ask for, and "
                  "the default")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  sub->add_option("--max-batch", a->max_batch,
                  "requests sampled together (--serve takes this many at once)")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  sub->add_flag("--serve", a->serve, "serve POST /v1/chat/completions and GET /v1/models");
  add_listen_options(sub, &a->host, &a->port, &a->token_file);
  sub->add_option("--name", a->name, "model name served (default: the model folder's name)");
  sub->footer(
      "Examples:\n"
      "  kevin generate --policy local:models/qwen2.5-0.5b --prompt 'Write a CUDA vector add'\n"
      "  kevin generate --policy local:models/qwq-32b --open-think --serve --port 8001\n"
      "  kevin run --llm http://127.0.0.1:8001/v1 --tasks level1   # a run against it\n"
      "Fields and errors: docs/serve.md (\"kevin generate\")");
  sub->callback([a, &action] {
    action = [a](std::ostream& out, std::ostream& err) { return generate(*a, out, err); };
  });
}

}  // namespace kevin::cli
