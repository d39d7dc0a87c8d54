// openai_api.h — `kevin generate --serve`'s front end: a policy (the in-process model) behind
// OpenAI's chat-completions API, so other tools can sample from kevin's generation engine.
// Routes: GET /health, GET /v1/models, POST /v1/chat/completions (no streaming, n = 1); errors
// in OpenAI's shape {"error": {message, type, param, code}}. docs/serve.md lists the fields.
#pragma once

#include <atomic>
#include <chrono>
#include <string>
#include <string_view>

#include "policy/policy.h"
#include "server/front_end.h"

namespace kevin::server {

struct OpenAiOptions {
  std::string model;  // the name /v1/models lists; a request naming another model gets 404
  // The most tokens one request may ask for (max_tokens above it is refused, 400); also the
  // default when a request names none.
  int max_tokens = 16384;
  int workers = 16;  // requests sampled at once (the local policy batches them)
};

class OpenAiRoutes final : public FrontEnd {
 public:
  // `policy` is borrowed and outlives the routes; its generate() is called from several threads.
  OpenAiRoutes(policy::Policy* policy, OpenAiOptions options)
      : policy_(policy), options_(std::move(options)) {}

  bool open_path(std::string_view path) const override { return path == "/health"; }
  bool quick(std::string_view method, std::string_view path) const override;
  // POST /v1/chat/completions.
  bool takes_body(std::string_view method, std::string_view path) const override;
  // 404 for an unknown path, 405 for a known path with the wrong method; a request the policy
  // fails is 400 (refused input), 503 (cancelled, unavailable, at capacity) or 500.
  HttpReply handle(std::string_view method, std::string_view target, std::string_view body,
                   const ServerLoad& load) const override;
  HttpReply error(unsigned status, const std::string& message) const override;
  // No WebSocket API: every upgrade is refused.
  SocketOpening open_socket() override;
  // Requests that arrive from now on get 503; generations in flight finish.
  void begin_shutdown() override { stopping_ = true; }
  int default_workers() const override { return options_.workers; }

  // Requests answered with a completion so far. Thread-safe.
  int64_t completions() const { return completions_; }

 private:
  HttpReply chat_completion(std::string_view body) const;
  HttpReply models() const;

  policy::Policy* policy_;
  OpenAiOptions options_;
  std::atomic<bool> stopping_{false};
  mutable std::atomic<int64_t> completions_{0};
  std::chrono::system_clock::time_point started_ = std::chrono::system_clock::now();
};

}  // namespace kevin::server
