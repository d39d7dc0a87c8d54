// routes.h — `kevin serve`'s front end: OpenEnv's routes (/health, /metadata, /schema, /state,
// /reset, /step and the /ws sessions), KernelGYM's (/evaluate, /evaluate/batch, /status/{id},
// /results/{id}) and /metrics. Independent of the network library, so every route is tested
// without sockets.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "server/env_service.h"
#include "server/front_end.h"
#include "server/kernelgym.h"

namespace kevin::server {

class EnvRoutes final : public FrontEnd {
 public:
  // Both borrowed; they outlive the routes.
  EnvRoutes(EnvService* service, KernelGymApi* gym) : service_(service), gym_(gym) {}

  bool open_path(std::string_view path) const override { return path == "/health"; }
  bool quick(std::string_view method, std::string_view path) const override;
  // POST /reset, /step, /evaluate and /evaluate/batch.
  bool takes_body(std::string_view method, std::string_view path) const override;
  // 404 for an unknown path, 405 for a known path with the wrong method.
  HttpReply handle(std::string_view method, std::string_view target, std::string_view body,
                   const ServerLoad& load) const override;
  // FastAPI's shape: {"detail": message}.
  HttpReply error(unsigned status, const std::string& message) const override {
    return detail_reply(status, message);
  }
  // An OpenEnv session, or CAPACITY_REACHED (with the counts) when max_sessions are open.
  SocketOpening open_socket() override;
  void begin_shutdown() override { service_->begin_shutdown(); }
  // Every session may evaluate at once, and a few KernelGYM requests beside them.
  int default_workers() const override { return service_->options().max_sessions + 16; }

 private:
  Json health(const ServerLoad& load) const;

  EnvService* service_;
  KernelGymApi* gym_;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
};

}  // namespace kevin::server
