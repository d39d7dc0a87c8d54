// routes.cpp — `kevin serve`'s dispatch on (method, path). Evaluating routes block; the network
// layer runs them on its workers (quick() says which).
#include "server/routes.h"

#include "server/openenv.h"

namespace kevin::server {
namespace {

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

}  // namespace

bool EnvRoutes::quick(std::string_view method, std::string_view path) const {
  if (method != "GET") return false;
  return path == "/health" || path == "/metadata" || path == "/schema" || path == "/state" ||
         path == "/metrics" || starts_with(path, "/status/") || starts_with(path, "/results/");
}

bool EnvRoutes::takes_body(std::string_view method, std::string_view path) const {
  return method == "POST" &&
         (path == "/reset" || path == "/step" || path == "/evaluate" || path == "/evaluate/batch");
}

SocketOpening EnvRoutes::open_socket() {
  auto session = service_->open_session();
  if (session.is_ok()) return std::make_unique<OpenEnvConnection>(std::move(session).value());
  if (session.status().code() == StatusCode::kResourceExhausted) {
    return SocketReply{ws_error(kCapacityReached, session.status().message(),
                                {{"active_sessions", service_->metrics().active_sessions()},
                                 {"max_sessions", service_->options().max_sessions}}),
                       true};
  }
  return SocketReply{ws_error(kSessionError, session.status().message()), true};
}

Json EnvRoutes::health(const ServerLoad& load) const {
  const double uptime =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  return {
      {"status", service_->stopping() ? "unhealthy" : "healthy"},
      {"timestamp", iso_time_now()},
      {"gpu_status",
       {{"backend", service_->evaluator()->backend()},
        {"device", service_->evaluator()->device_name()}}},
      {"queue_status",
       {{"queued", load.queued_requests}, {"running", service_->metrics().evaluations_running()}}},
      {"memory_usage", nullptr},
      {"active_tasks", gym_->active()},
      {"active_sessions", service_->metrics().active_sessions()},
      {"total_processed", service_->metrics().evaluations_total()},
      {"uptime", uptime}};
}

HttpReply EnvRoutes::handle(std::string_view method, std::string_view target, std::string_view body,
                            const ServerLoad& load) const {
  const std::string path = request_path(target);
  const bool get = method == "GET", post = method == "POST";
  auto only = [&](bool allowed, auto&& answer) -> HttpReply {
    if (!allowed) return detail_reply(405, "method not allowed");
    return answer();
  };
  if (path == "/health") return only(get, [&] { return json_reply(200, health(load)); });
  if (path == "/metadata") return only(get, [&] { return json_reply(200, service_->metadata()); });
  if (path == "/schema") return only(get, [&] { return json_reply(200, EnvService::schema()); });
  if (path == "/state") return only(get, [&] { return http_state(); });
  if (path == "/metrics") {
    return only(get, [&] {
      return HttpReply{
          200,
          service_->metrics().prometheus(load.queued_requests, load.buffered_body_bytes),
          "text/plain; version=0.0.4",
          {}};
    });
  }
  if (path == "/reset") return only(post, [&] { return http_reset(*service_, body); });
  if (path == "/step") return only(post, [&] { return http_step(*service_, body); });
  if (path == "/evaluate") return only(post, [&] { return gym_->evaluate(body); });
  if (path == "/evaluate/batch") return only(post, [&] { return gym_->evaluate_batch(body); });
  if (starts_with(path, "/status/")) return only(get, [&] { return gym_->status(path.substr(8)); });
  if (starts_with(path, "/results/"))
    return only(get, [&] { return gym_->results(path.substr(9)); });
  return detail_reply(404, "no route " + path + " (see docs/serve.md)");
}

}  // namespace kevin::server
