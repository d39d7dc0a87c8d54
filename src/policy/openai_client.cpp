// openai_client.cpp — request building, libcurl transport, retries and reply parsing.
#include "policy/openai_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <thread>

#include "core/json.h"
#include "core/log.h"
#include "core/mutex.h"

namespace kevin::policy {
namespace {

size_t append_body(char* data, size_t size, size_t count, void* out) {
  static_cast<std::string*>(out)->append(data, size * count);
  return size * count;
}

// curl's progress callback: a non-zero return aborts the transfer.
int abort_if_cancelled(void* cancel, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<const std::atomic<bool>*>(cancel)->load() ? 1 : 0;
}

constexpr const char* kCancelledTransport = "cancelled";

void global_init() {
  static const bool done = [] { return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK; }();
  (void)done;
}

bool retryable(long status) { return status == 0 || status == 429 || status >= 500; }

}  // namespace

OpenAIClient::OpenAIClient(OpenAIConfig config) : config_(std::move(config)) {
  global_init();
  if (!config_.api_key_env.empty()) {
    if (const char* key = std::getenv(config_.api_key_env.c_str()); key != nullptr) api_key_ = key;
  }
  while (!config_.base_url.empty() && config_.base_url.back() == '/') config_.base_url.pop_back();
}

std::string OpenAIClient::request_body(const std::vector<ChatMessage>& messages,
                                       const GenerationParams& p) const {
  Json msgs = Json::array();
  for (const auto& m : messages) msgs.push_back({{"role", m.role}, {"content", m.content}});
  Json body = {{"model", config_.model},       {"messages", msgs},
               {"temperature", p.temperature}, {"top_p", p.top_p},
               {"max_tokens", p.max_tokens},   {"stream", false}};
  if (!p.stop.empty()) body["stop"] = p.stop;
  return dump_json(body);
}

Result<Generation> OpenAIClient::parse_reply(const std::string& body) {
  auto doc = parse_json(body);
  if (!doc.is_ok())
    return invalid_argument("the server's reply is not JSON: " + body.substr(0, 200));
  const Json& j = *doc;
  if (!j.is_object() || !j.contains("choices") || !j["choices"].is_array() ||
      j["choices"].empty() || !j["choices"][0].is_object()) {
    return invalid_argument("the server's reply has no choices: " + body.substr(0, 200));
  }
  const Json& choice = j["choices"][0];
  const Json message = choice.value("message", Json::object());
  if (!message.is_object()) return invalid_argument("the server's reply has a malformed message");
  Generation g;
  const auto text = [](const Json& v) {
    return v.is_string() ? v.get<std::string>() : std::string();
  };
  g.content = message.contains("content") ? text(message["content"]) : "";
  g.reasoning = message.contains("reasoning_content") ? text(message["reasoning_content"])
                : message.contains("reasoning")       ? text(message["reasoning"])
                                                      : "";
  g.finish_reason = choice.contains("finish_reason") ? text(choice["finish_reason"]) : "";
  if (j.contains("usage") && j["usage"].is_object()) {
    const Json& u = j["usage"];
    if (u.contains("prompt_tokens") && u["prompt_tokens"].is_number_integer())
      g.prompt_tokens = u["prompt_tokens"];
    if (u.contains("completion_tokens") && u["completion_tokens"].is_number_integer()) {
      g.completion_tokens = u["completion_tokens"];
    }
  }
  split_inline_reasoning(&g);
  return g;
}

OpenAIClient::Attempt OpenAIClient::post(const std::string& body,
                                         const std::atomic<bool>* cancel) const {
  return request("/chat/completions", &body, config_.timeout, cancel);
}

OpenAIClient::Attempt OpenAIClient::request(const std::string& path, const std::string* body,
                                            std::chrono::milliseconds timeout,
                                            const std::atomic<bool>* cancel) const {
  Attempt a;
  CURL* curl = curl_easy_init();
  if (curl == nullptr) {
    a.transport = "curl_easy_init failed";
    return a;
  }
  const std::string url = config_.base_url + path;
  curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
  if (!api_key_.empty())
    headers = curl_slist_append(headers, ("Authorization: Bearer " + api_key_).c_str());
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  if (body != nullptr) {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body->c_str());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(body->size()));
  }
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(config_.connect_timeout.count()));
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, append_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &a.body);
  if (cancel != nullptr) {
    curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, abort_if_cancelled);
    curl_easy_setopt(curl, CURLOPT_XFERINFODATA, const_cast<std::atomic<bool>*>(cancel));
    curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  }
  const CURLcode rc = curl_easy_perform(curl);
  if (rc == CURLE_OK) {
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &a.status);
  } else {
    a.transport = curl_easy_strerror(rc);
    if (rc == CURLE_OPERATION_TIMEDOUT)
      a.transport = "timed out after " + std::to_string(timeout.count()) + " ms";
    if (rc == CURLE_ABORTED_BY_CALLBACK) a.transport = kCancelledTransport;
  }
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  return a;
}

Result<std::vector<std::string>> OpenAIClient::served_models() const {
  const Attempt a = request("/models", nullptr, std::chrono::milliseconds(15000));
  const std::string where = config_.base_url + "/models";
  if (a.status == 0)
    return unavailable("cannot reach the model server at " + where + ": " + a.transport);
  if (a.status == 404)
    return not_found(where + " answered 404: this server does not list its models");
  if (a.status != 200) {
    return unavailable(where + " answered HTTP " + std::to_string(a.status) + ": " +
                       a.body.substr(0, 200));
  }
  auto doc = parse_json(a.body);
  if (!doc.is_ok() || !doc->is_object() || !doc->contains("data") || !(*doc)["data"].is_array()) {
    return invalid_argument(where + " did not answer with a model list: " + a.body.substr(0, 200));
  }
  std::vector<std::string> ids;
  for (const Json& m : (*doc)["data"]) {
    if (m.is_object() && m.contains("id") && m["id"].is_string())
      ids.push_back(m["id"].get<std::string>());
  }
  return ids;
}

namespace {

// Waits `d`, or less once `cancel` (optional) reads true.
void sleep_unless_cancelled(std::chrono::milliseconds d, const std::atomic<bool>* cancel) {
  const auto end = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < end && (cancel == nullptr || !cancel->load())) {
    std::this_thread::sleep_for(
        std::min<std::chrono::milliseconds>(d, std::chrono::milliseconds(50)));
  }
}

}  // namespace

Result<Generation> OpenAIClient::generate(const std::vector<ChatMessage>& messages,
                                          const GenerationParams& params) {
  {
    MutexLock lock(mu_);
    while (in_flight_ >= config_.max_concurrency) slots_cv_.wait(mu_);
    ++in_flight_;
  }
  struct Release {
    OpenAIClient* c;
    ~Release() {
      MutexLock lock(c->mu_);
      --c->in_flight_;
      c->slots_cv_.notify_one();
    }
  } release{this};

  const std::string body = request_body(messages, params);
  thread_local std::mt19937 rng{std::random_device{}()};
  auto wait = config_.backoff;
  const auto start = std::chrono::steady_clock::now();
  Attempt last;
  const auto cancelled_now = [&] { return params.cancel != nullptr && params.cancel->load(); };
  for (int attempt = 0; attempt <= config_.max_retries; ++attempt) {
    if (cancelled_now()) return cancelled(name() + ": generation cancelled");
    last = post(body, params.cancel);
    if (last.transport == kCancelledTransport) return cancelled(name() + ": generation cancelled");
    if (last.status == 200) {
      auto g = parse_reply(last.body);
      if (g.is_ok())
        g->latency_ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                .count();
      return g;
    }
    if (!retryable(last.status)) {
      return invalid_argument("the server refused the request (HTTP " +
                              std::to_string(last.status) + "): " + last.body.substr(0, 300));
    }
    if (attempt == config_.max_retries) break;
    const auto jitter = std::chrono::milliseconds(
        std::uniform_int_distribution<int>(0, static_cast<int>(wait.count() / 4))(rng));
    KEVIN_LOG(warn) << name() << ": "
                    << (last.status ? "HTTP " + std::to_string(last.status) : last.transport)
                    << "; retrying in " << (wait + jitter).count() << " ms";
    sleep_unless_cancelled(wait + jitter, params.cancel);
    wait = std::min(wait * 2, std::chrono::milliseconds(16000));
  }
  const std::string why =
      last.status ? "HTTP " + std::to_string(last.status) + ": " + last.body.substr(0, 300)
                  : last.transport;
  if (last.status == 0 && last.transport.rfind("timed out", 0) == 0)
    return deadline_exceeded(name() + ": " + why);
  return unavailable(name() + ": gave up after " + std::to_string(config_.max_retries + 1) +
                     " attempts: " + why);
}

}  // namespace kevin::policy
