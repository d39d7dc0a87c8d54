// front_end.h — the protocol half of a kevin server: which requests it takes, how it answers
// them and how it renders errors. The network half (server.h: listener, token, limits, work
// queue, shutdown) is shared. Front ends: EnvRoutes (`kevin serve`, routes.h) and OpenAiRoutes
// (`kevin generate --serve`, openai_api.h).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <variant>

#include "server/http_reply.h"

namespace kevin::server {

// What the network half holds at the moment a request is answered (for health and metrics).
struct ServerLoad {
  size_t queued_requests = 0;      // waiting for a worker thread
  size_t buffered_body_bytes = 0;  // request bodies held in memory
};

// The frame to send back on a WebSocket, and whether the socket is closed after it (an empty
// text sends nothing).
struct SocketReply {
  std::string text;
  bool close = false;
};

// One WebSocket connection's conversation. Not thread-safe: the server hands it one frame at a
// time, in arrival order, on a worker thread (it may block).
class SocketConversation {
 public:
  virtual ~SocketConversation() = default;
  // Never throws: anything the client sends wrong is answered in the protocol's error shape.
  virtual SocketReply handle(std::string_view frame) = 0;
  // This protocol's error frame for a refusal the server makes itself (a client too far ahead
  // of its replies, a server stopping); `close` ends the socket after it.
  virtual SocketReply refusal(std::string_view message, bool close) const = 0;
};

// A conversation for a new socket, or the closing frame that refuses it.
using SocketOpening = std::variant<std::unique_ptr<SocketConversation>, SocketReply>;

// Implementations are thread-safe: handle() runs on several worker threads at once, quick routes
// on network threads.
class FrontEnd {
 public:
  virtual ~FrontEnd() = default;
  // Paths answered without the bearer token (health checks).
  virtual bool open_path(std::string_view path) const = 0;
  // Requests answered at once, on a network thread; the rest run on the server's workers.
  virtual bool quick(std::string_view method, std::string_view path) const = 0;
  // Requests whose answer depends on their body: the server reads no other request's body.
  virtual bool takes_body(std::string_view method, std::string_view path) const = 0;
  // Answers one request (`target` may carry a query string). Never throws.
  virtual HttpReply handle(std::string_view method, std::string_view target, std::string_view body,
                           const ServerLoad& load) const = 0;
  // This protocol's body for a refusal the server makes itself (401, 404, 413, 503).
  virtual HttpReply error(unsigned status, const std::string& message) const = 0;
  // A WebSocket upgrade at /ws: a conversation, or the closing frame that refuses it.
  virtual SocketOpening open_socket() = 0;
  // From now on new sessions and new work are refused; work in flight finishes.
  virtual void begin_shutdown() = 0;
  // Worker threads for requests that are not quick, when ServerOptions::eval_threads is 0.
  virtual int default_workers() const = 0;
};

// True when `authorization` is "Bearer <token>" (an empty token authorizes everything),
// compared in time independent of where the two differ.
bool bearer_authorized(std::string_view authorization, std::string_view token);

// The path of a request target without its query string, percent-decoded ("%2F" → "/").
std::string request_path(std::string_view target);

}  // namespace kevin::server
