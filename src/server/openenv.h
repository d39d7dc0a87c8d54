// openenv.h — OpenEnv's protocol over the environment service: the WebSocket /ws messages
// (reset, step, state, close → observation, state, error with OpenEnv's error codes) and the
// stateless HTTP routes (POST /reset, POST /step, GET /state). docs/serve.md lists the shapes.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "core/json.h"
#include "server/env_service.h"
#include "server/front_end.h"
#include "server/http_reply.h"

namespace kevin::server {

// OpenEnv's WebSocket error codes.
inline constexpr const char* kInvalidJson = "INVALID_JSON";
inline constexpr const char* kUnknownType = "UNKNOWN_TYPE";
inline constexpr const char* kValidationError = "VALIDATION_ERROR";
inline constexpr const char* kExecutionError = "EXECUTION_ERROR";
inline constexpr const char* kCapacityReached = "CAPACITY_REACHED";
inline constexpr const char* kSessionError = "SESSION_ERROR";

// The largest client frame parsed (bytes) and its nesting depth: a model's reply fits easily.
inline constexpr JsonLimits kMessageLimits{8u << 20, 16};

// {"type":"error","data":{"message":…,"code":…, <extra>}}.
std::string ws_error(std::string_view code, std::string_view message,
                     const Json& extra = Json::object());

using WsReply = SocketReply;

// One WebSocket connection's session. Not thread-safe: the connection hands it one frame at
// a time, in arrival order.
class OpenEnvConnection final : public SocketConversation {
 public:
  explicit OpenEnvConnection(std::unique_ptr<EnvSession> session) : session_(std::move(session)) {}
  // Handles one client text frame; blocks while a step evaluates. Never throws: anything the
  // client sends wrong is an error frame, and the loop goes on.
  WsReply handle(std::string_view frame) override;
  // SESSION_ERROR when the socket closes after it, EXECUTION_ERROR otherwise.
  WsReply refusal(std::string_view message, bool close) const override {
    return {ws_error(close ? kSessionError : kExecutionError, message), close};
  }

 private:
  WsReply reset(const Json& data);
  WsReply step(const Json& data);
  std::unique_ptr<EnvSession> session_;
};

// The stateless HTTP routes: each request gets a fresh session that is closed afterwards
// (OpenEnv's HTTP semantics), so POST /step must name its task (`problem_id` in the action
// or beside it). Bad requests are 422 in FastAPI's shape; capacity or stopping 503; engine
// failures 500.
HttpReply http_reset(EnvService& service, std::string_view body);
HttpReply http_step(EnvService& service, std::string_view body);
HttpReply http_state();

}  // namespace kevin::server
