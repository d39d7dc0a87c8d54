// routes.h — the HTTP routes of `kevin serve` and who may call them: OpenEnv's (/health,
// /metadata, /schema, /state, /reset, /step), KernelGYM's (/evaluate, /evaluate/batch,
// /status/{id}, /results/{id}) and /metrics. Independent of the network library, so every
// route is tested without sockets.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "server/body_budget.h"
#include "server/env_service.h"
#include "server/http_reply.h"
#include "server/kernelgym.h"
#include "server/work_queue.h"

namespace kevin::server {

class Routes {
 public:
  // All borrowed. `bodies`: the server's request-body budget, shown in /metrics. `token`: the
  // bearer token every route but /health needs ("" = none).
  Routes(EnvService* service, KernelGymApi* gym, const WorkQueue* queue, const BodyBudget* bodies,
         std::string token)
      : service_(service), gym_(gym), queue_(queue), bodies_(bodies), token_(std::move(token)) {}

  // True when a request for `path` with this Authorization header value may proceed: no
  // token is set, the path is /health, or the header is "Bearer <token>" (compared in time
  // independent of where it differs).
  bool authorized(std::string_view path, std::string_view authorization) const;
  // Routes that answer at once and may run on a network thread; the rest may evaluate.
  static bool quick(std::string_view method, std::string_view path);
  // Routes whose answer depends on the request body: POST /reset, /step, /evaluate and
  // /evaluate/batch. The network layer reads no other request's body (so none of a route open
  // without the token).
  static bool takes_body(std::string_view method, std::string_view path);
  // Answers one request (`target` may carry a query string, ignored). 404 for an unknown
  // path, 405 for a known path with the wrong method. Never throws.
  HttpReply handle(std::string_view method, std::string_view target, std::string_view body) const;

 private:
  Json health() const;

  EnvService* service_;
  KernelGymApi* gym_;
  const WorkQueue* queue_;
  const BodyBudget* bodies_;
  std::string token_;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
};

// The path of a request target without its query string, percent-decoded ("%2F" → "/").
std::string request_path(std::string_view target);

}  // namespace kevin::server
