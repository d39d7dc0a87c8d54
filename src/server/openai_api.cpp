// openai_api.cpp — chat completions over a policy. The request is checked field by field before
// anything is sampled, so a client learns which field is wrong (OpenAI's `param`) and a bad
// request never holds a batch slot.
#include "server/openai_api.h"

#include <variant>

#include "core/json.h"

namespace kevin::server {
namespace {

constexpr std::string_view kChatPath = "/v1/chat/completions";
constexpr std::string_view kModelsPath = "/v1/models";
// A chat request is text: far below the server's body limit, and shallow.
constexpr JsonLimits kRequestLimits{32u << 20, 16};
constexpr size_t kMaxStops = 4;  // as OpenAI's API

int64_t unix_seconds(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

const char* error_type(unsigned status) {
  switch (status) {
    case 401:
      return "authentication_error";
    case 404:
      return "not_found_error";
    case 429:
      return "rate_limit_error";
    case 500:
      return "server_error";
    case 503:
      return "service_unavailable";
    default:
      return "invalid_request_error";
  }
}

HttpReply openai_error(unsigned status, const std::string& message, const std::string& param = "",
                       const std::string& code = "") {
  return json_reply(status, {{"error",
                              {{"message", message},
                               {"type", error_type(status)},
                               {"param", param.empty() ? Json(nullptr) : Json(param)},
                               {"code", code.empty() ? Json(nullptr) : Json(code)}}}});
}

// A field that fails its check: the reply names it.
struct BadField {
  std::string param, message;
};

// A message's content: a string, or a list of parts of which only text parts are taken.
std::variant<std::string, BadField> content_text(const Json& content, const std::string& param) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) return BadField{param, "content must be a string or a list of parts"};
  std::string text;
  for (const Json& part : content) {
    if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") ||
        !part["text"].is_string())
      return BadField{param, "only text parts ({\"type\": \"text\", \"text\": ...}) are served"};
    text += part["text"].get<std::string>();
  }
  return text;
}

std::variant<std::vector<ChatMessage>, BadField> chat_messages(const Json& request) {
  if (!request.contains("messages") || !request["messages"].is_array() ||
      request["messages"].empty())
    return BadField{"messages", "messages must be a non-empty list"};
  std::vector<ChatMessage> messages;
  for (size_t i = 0; i < request["messages"].size(); ++i) {
    const Json& m = request["messages"][i];
    const std::string param = "messages[" + std::to_string(i) + "]";
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
      return BadField{param + ".role", "each message needs a role"};
    const std::string role = m["role"].get<std::string>();
    if (role != "system" && role != "user" && role != "assistant" && role != "developer")
      return BadField{param + ".role", "role must be system, developer, user or assistant"};
    auto text = content_text(m.value("content", Json("")), param + ".content");
    if (auto* bad = std::get_if<BadField>(&text)) return *bad;
    // A developer message is the system message of newer clients.
    messages.push_back({role == "developer" ? "system" : role, std::get<std::string>(text)});
  }
  return messages;
}

// A number field within [low, high], or `fallback` when absent or null.
std::variant<double, BadField> number_field(const Json& request, const char* key, double fallback,
                                            double low, double high) {
  if (!request.contains(key) || request[key].is_null()) return fallback;
  if (!request[key].is_number()) return BadField{key, std::string(key) + " must be a number"};
  const double value = request[key].get<double>();
  if (!(value >= low && value <= high))
    return BadField{key, std::string(key) + " must be within [" + dump_json(low) + ", " +
                             dump_json(high) + "]"};
  return value;
}

std::variant<std::vector<std::string>, BadField> stop_field(const Json& request) {
  if (!request.contains("stop") || request["stop"].is_null()) return std::vector<std::string>{};
  const Json& stop = request["stop"];
  if (stop.is_string()) return std::vector<std::string>{stop.get<std::string>()};
  if (!stop.is_array() || stop.size() > kMaxStops)
    return BadField{"stop", "stop must be a string or a list of at most 4 strings"};
  std::vector<std::string> stops;
  for (const Json& s : stop) {
    if (!s.is_string() || s.get<std::string>().empty())
      return BadField{"stop", "each stop must be a non-empty string"};
    stops.push_back(s.get<std::string>());
  }
  return stops;
}

// Everything a request asks for, checked.
struct ChatRequest {
  std::vector<ChatMessage> messages;
  policy::GenerationParams params;
};

std::variant<ChatRequest, BadField> parse_request(const Json& request, const OpenAiOptions& o) {
  if (!request.is_object()) return BadField{"", "the body must be a JSON object"};
  if (request.value("stream", false) == true)
    return BadField{"stream", "streaming is not served: send \"stream\": false"};
  if (request.contains("n") && request["n"] != 1)
    return BadField{"n", "one choice per request (n = 1)"};
  ChatRequest r;
  auto messages = chat_messages(request);
  if (auto* bad = std::get_if<BadField>(&messages)) return *bad;
  r.messages = std::get<0>(std::move(messages));
  auto temperature = number_field(request, "temperature", r.params.temperature, 0, 2);
  auto top_p = number_field(request, "top_p", r.params.top_p, 0, 1);
  // max_completion_tokens is the newer name; it wins where both are given.
  const char* length_key =
      request.contains("max_completion_tokens") && !request["max_completion_tokens"].is_null()
          ? "max_completion_tokens"
          : "max_tokens";
  auto max_tokens = number_field(request, length_key, o.max_tokens, 1, o.max_tokens);
  auto stops = stop_field(request);
  for (auto* bad : {std::get_if<BadField>(&temperature), std::get_if<BadField>(&top_p),
                    std::get_if<BadField>(&max_tokens)}) {
    if (bad) return *bad;
  }
  if (auto* bad = std::get_if<BadField>(&stops)) return *bad;
  if (std::get<double>(top_p) <= 0) return BadField{"top_p", "top_p must be above 0"};
  r.params.temperature = std::get<double>(temperature);
  r.params.top_p = std::get<double>(top_p);
  r.params.max_tokens = static_cast<int>(std::get<double>(max_tokens));
  r.params.stop = std::get<0>(std::move(stops));
  return r;
}

HttpReply policy_error(const Status& s) {
  switch (s.code()) {
    case StatusCode::kInvalidArgument:
      return openai_error(400, s.message());
    case StatusCode::kCancelled:
    case StatusCode::kUnavailable:
    case StatusCode::kResourceExhausted:
      return openai_error(503, s.message());
    default:
      return openai_error(500, s.message());
  }
}

Json usage(const policy::Generation& g) {
  const int64_t prompt = std::max<int64_t>(g.prompt_tokens, 0);
  const int64_t completion = std::max<int64_t>(g.completion_tokens, 0);
  return {{"prompt_tokens", prompt},
          {"completion_tokens", completion},
          {"total_tokens", prompt + completion}};
}

}  // namespace

bool OpenAiRoutes::quick(std::string_view method, std::string_view path) const {
  return method == "GET" && (path == "/health" || path == kModelsPath);
}

bool OpenAiRoutes::takes_body(std::string_view method, std::string_view path) const {
  return method == "POST" && path == kChatPath;
}

HttpReply OpenAiRoutes::error(unsigned status, const std::string& message) const {
  return openai_error(status, message);
}

SocketOpening OpenAiRoutes::open_socket() {
  return SocketReply{
      openai_error(404, "no WebSocket API here: POST " + std::string(kChatPath)).body, true};
}

HttpReply OpenAiRoutes::models() const {
  return json_reply(200, {{"object", "list"},
                          {"data", Json::array({{{"id", options_.model},
                                                 {"object", "model"},
                                                 {"created", unix_seconds(started_)},
                                                 {"owned_by", "kevin"}}})}});
}

HttpReply OpenAiRoutes::chat_completion(std::string_view body) const {
  if (stopping_) return openai_error(503, "the server is stopping");
  auto parsed = parse_json(body, kRequestLimits);
  if (!parsed.is_ok())
    return openai_error(400, "the body is not JSON: " + parsed.status().message());
  if (parsed->is_object() && parsed->contains("model") && (*parsed)["model"].is_string() &&
      (*parsed)["model"] != options_.model) {
    return openai_error(404,
                        "the model " + (*parsed)["model"].get<std::string>() +
                            " is not served here (GET /v1/models lists " + options_.model + ")",
                        "model", "model_not_found");
  }
  auto request = parse_request(*parsed, options_);
  if (auto* bad = std::get_if<BadField>(&request))
    return openai_error(400, bad->message, bad->param);
  const ChatRequest& r = std::get<ChatRequest>(request);
  auto generation = policy_->generate(r.messages, r.params);
  if (!generation.is_ok()) return policy_error(generation.status());
  const int64_t n = ++completions_;
  Json message = {{"role", "assistant"}, {"content", generation->content}};
  if (!generation->reasoning.empty()) message["reasoning_content"] = generation->reasoning;
  return json_reply(
      200,
      {{"id", "chatcmpl-kevin-" + std::to_string(unix_seconds(started_)) + "-" + std::to_string(n)},
       {"object", "chat.completion"},
       {"created", unix_seconds(std::chrono::system_clock::now())},
       {"model", options_.model},
       {"choices",
        Json::array({{{"index", 0},
                      {"message", message},
                      {"finish_reason",
                       generation->finish_reason.empty() ? "stop" : generation->finish_reason}}})},
       {"usage", usage(*generation)}});
}

HttpReply OpenAiRoutes::handle(std::string_view method, std::string_view target,
                               std::string_view body, const ServerLoad& load) const {
  const std::string path = request_path(target);
  const bool get = method == "GET", post = method == "POST";
  auto only = [&](bool allowed, auto&& answer) -> HttpReply {
    if (!allowed) return openai_error(405, "method not allowed");
    return answer();
  };
  if (path == "/health") {
    return only(get, [&] {
      return json_reply(200, {{"status", stopping_ ? "stopping" : "ok"},
                              {"model", options_.model},
                              {"queued", load.queued_requests},
                              {"completions", completions_.load()}});
    });
  }
  if (path == kModelsPath) return only(get, [&] { return models(); });
  if (path == kChatPath) return only(post, [&] { return chat_completion(body); });
  return openai_error(404, "no route " + path + " (POST " + std::string(kChatPath) + ")");
}

}  // namespace kevin::server
