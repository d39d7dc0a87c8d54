// openenv.cpp — message validation (OpenEnv's models forbid unknown fields) and the mapping
// of service errors onto OpenEnv's codes: bad input → VALIDATION_ERROR, a refused or failed
// operation → EXECUTION_ERROR, a stopping server → SESSION_ERROR and the socket closes.
#include "server/openenv.h"

#include <optional>
#include <variant>

namespace kevin::server {
namespace {

// A step's action: the model's reply, and the task for stateless HTTP steps.
struct StepAction {
  std::string code;
  std::optional<std::string> problem_id;
};

struct FieldError {
  std::string field, message;
};

std::variant<StepAction, FieldError> step_action_from_json(const Json& action) {
  if (!action.is_object())
    return FieldError{"action", "the action must be an object with a \"code\" string"};
  StepAction a;
  bool has_code = false;
  for (const auto& [key, value] : action.items()) {
    if (key == "code") {
      if (!value.is_string())
        return FieldError{"code", "\"code\" must be a string (the model's reply)"};
      a.code = value.get<std::string>();
      has_code = true;
    } else if (key == "problem_id") {
      if (!value.is_string()) return FieldError{"problem_id", "\"problem_id\" must be a string"};
      a.problem_id = value.get<std::string>();
    } else if (key != "metadata") {
      return FieldError{key, "unknown action field \"" + key +
                                 "\" (the action has \"code\" and optional \"metadata\")"};
    }
  }
  if (!has_code)
    return FieldError{
        "code", "the action needs \"code\": the model's reply with the kernel in a fenced block"};
  return a;
}

Json errors_list(const FieldError& e) {
  return Json::array(
      {{{"loc", Json::array({e.field})}, {"msg", e.message}, {"type", "value_error"}}});
}

WsReply error_frame(const Status& s) {
  if (s.code() == StatusCode::kInvalidArgument)
    return {ws_error(kValidationError, s.message()), false};
  if (s.code() == StatusCode::kUnavailable) return {ws_error(kSessionError, s.message()), true};
  return {ws_error(kExecutionError, s.message()), false};
}

WsReply observation_frame(const StepReply& reply) {
  return {dump_json({{"type", "observation"}, {"data", to_json(reply)}}), false};
}

HttpReply http_error(const Status& s) {
  switch (s.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotFound:
    case StatusCode::kFailedPrecondition:
      return validation_reply("body", s.message());
    case StatusCode::kUnavailable:
    case StatusCode::kResourceExhausted:
      return detail_reply(503, s.message());
    default:
      return detail_reply(500, s.message());
  }
}

}  // namespace

std::string ws_error(std::string_view code, std::string_view message, const Json& extra) {
  Json data = extra.is_object() ? extra : Json::object();
  data["message"] = std::string(message);
  data["code"] = std::string(code);
  return dump_json({{"type", "error"}, {"data", data}});
}

WsReply OpenEnvConnection::handle(std::string_view frame) {
  auto parsed = parse_json(frame, kMessageLimits);
  if (!parsed.is_ok())
    return {ws_error(kInvalidJson, "the message is not JSON: " + parsed.status().message()), false};
  const Json& message = *parsed;
  if (!message.is_object() || !message.contains("type") || !message["type"].is_string()) {
    return {ws_error(kUnknownType,
                     "a message is an object with a \"type\": reset, step, state or close"),
            false};
  }
  for (const auto& [key, value] : message.items()) {
    if (key != "type" && key != "data") {
      return {ws_error(kValidationError, "unknown message field \"" + key + "\"",
                       {{"errors", errors_list({key, "extra fields are not permitted"})}}),
              false};
    }
  }
  const std::string type = message["type"].get<std::string>();
  const Json data = message.value("data", Json::object());
  if (type == "reset") return reset(data);
  if (type == "step") return step(data);
  if (type == "state") return {dump_json({{"type", "state"}, {"data", session_->state()}}), false};
  if (type == "close") return {"", true};
  return {ws_error(kUnknownType,
                   "unknown message type \"" + type + "\" (expected reset, step, state or close)"),
          false};
}

WsReply OpenEnvConnection::reset(const Json& data) {
  auto params = reset_params_from_json(data);
  if (!params.is_ok()) return error_frame(params.status());
  auto reply = session_->reset(*params);
  if (!reply.is_ok()) return error_frame(reply.status());
  return observation_frame(*reply);
}

WsReply OpenEnvConnection::step(const Json& data) {
  auto action = step_action_from_json(data);
  if (auto* e = std::get_if<FieldError>(&action)) {
    return {ws_error(kValidationError, e->message, {{"errors", errors_list(*e)}}), false};
  }
  auto reply = session_->step(std::get<StepAction>(action).code);
  if (!reply.is_ok()) return error_frame(reply.status());
  return observation_frame(*reply);
}

HttpReply http_reset(EnvService& service, std::string_view body) {
  Json request = Json::object();
  if (body.find_first_not_of(" \t\r\n") != std::string_view::npos) {
    auto parsed = parse_json(body, kMessageLimits);
    if (!parsed.is_ok())
      return validation_reply("body", "the body is not JSON: " + parsed.status().message());
    request = *parsed;
  }
  auto params = reset_params_from_json(request);
  if (!params.is_ok()) return validation_reply("body", params.status().message());
  auto session = service.open_session();
  if (!session.is_ok()) return detail_reply(503, session.status().message());
  auto reply = (*session)->reset(*params);
  if (!reply.is_ok()) return http_error(reply.status());
  return json_reply(200, to_json(*reply));
}

HttpReply http_step(EnvService& service, std::string_view body) {
  auto parsed = parse_json(body, kMessageLimits);
  if (!parsed.is_ok())
    return validation_reply("body", "the body is not JSON: " + parsed.status().message());
  const Json& request = *parsed;
  if (!request.is_object() || !request.contains("action"))
    return validation_reply("action", "field required");
  auto action = step_action_from_json(request["action"]);
  if (auto* e = std::get_if<FieldError>(&action)) return validation_reply(e->field, e->message);
  StepAction a = std::get<StepAction>(action);
  if (!a.problem_id && request.contains("problem_id") && request["problem_id"].is_string()) {
    a.problem_id = request["problem_id"].get<std::string>();
  }
  if (!a.problem_id) {
    return validation_reply(
        "problem_id",
        "a stateless POST /step needs \"problem_id\" (or use the /ws session for episodes)");
  }
  auto session = service.open_session();
  if (!session.is_ok()) return detail_reply(503, session.status().message());
  ResetParams params;
  params.problem_id = a.problem_id;
  params.max_turns = 1;
  auto started = (*session)->reset(params);
  if (!started.is_ok()) return http_error(started.status());
  auto reply = (*session)->step(a.code);
  if (!reply.is_ok()) return http_error(reply.status());
  return json_reply(200, to_json(*reply));
}

HttpReply http_state() { return json_reply(200, {{"episode_id", nullptr}, {"step_count", 0}}); }

}  // namespace kevin::server
