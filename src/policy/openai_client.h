// openai_client.h — a policy backed by any OpenAI-compatible chat-completions server (vLLM,
// SGLang, llama.cpp's server, hosted APIs) over HTTP(S) with libcurl. Reasoning arrives as
// `reasoning_content` (or `reasoning`) or inline <think>; both are handled. Connection
// errors, timeouts, 429 and 5xx replies are retried with exponential backoff; at most
// `max_concurrency` requests are in flight. docs/policies.md covers each server.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "core/mutex.h"
#include "policy/policy.h"

namespace kevin::policy {

struct OpenAIConfig {
  std::string base_url = "http://127.0.0.1:8000/v1";  // POST <base_url>/chat/completions
  std::string model;
  std::string api_key_env = "OPENAI_API_KEY";  // read at construction; empty: no auth header
  std::chrono::milliseconds timeout{600000};   // one request, generation included
  std::chrono::milliseconds connect_timeout{10000};
  int max_retries = 5;
  std::chrono::milliseconds backoff{500};  // doubles per retry, at most 16 s, with jitter
  int max_concurrency = 64;
};

class OpenAIClient final : public Policy {
 public:
  explicit OpenAIClient(OpenAIConfig config);
  Result<Generation> generate(const std::vector<ChatMessage>& messages,
                              const GenerationParams& params) override;
  std::string name() const override { return "openai:" + config_.model + "@" + config_.base_url; }

  // The request body for `messages` (exposed for tests).
  std::string request_body(const std::vector<ChatMessage>& messages,
                           const GenerationParams& params) const;
  // Parses a chat-completions reply body (exposed for tests and the fuzz target).
  static Result<Generation> parse_reply(const std::string& body);

  // The model ids the server lists at GET <base_url>/models (OpenAI's {"data": [{"id"}]}),
  // asked once with a 15 s limit. kUnavailable when the server cannot be reached or fails,
  // kNotFound when it does not list models (404), kInvalidArgument for a reply of another shape.
  Result<std::vector<std::string>> served_models() const;

 private:
  struct Attempt {
    long status = 0;  // HTTP status, 0 when no reply
    std::string body;
    std::string transport;  // curl's error, when there was no reply
  };
  Attempt post(const std::string& body, const std::atomic<bool>* cancel) const;
  // One HTTP exchange with <base_url><path>: a POST of `body`, or a GET when it is null;
  // abandoned (transport "cancelled") once `cancel` (optional) reads true.
  Attempt request(const std::string& path, const std::string* body,
                  std::chrono::milliseconds timeout,
                  const std::atomic<bool>* cancel = nullptr) const;

  OpenAIConfig config_;
  std::string api_key_;
  Mutex mu_;
  CondVar slots_cv_;
  int in_flight_ GUARDED_BY(mu_) = 0;
};

}  // namespace kevin::policy
