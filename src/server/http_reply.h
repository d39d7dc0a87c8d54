// http_reply.h — what a route answers, independent of the HTTP library: status, body, content
// type and extra headers. The network layer (server.h) writes it; routes build it.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/json.h"

namespace kevin::server {

struct HttpReply {
  unsigned status = 200;
  std::string body;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;
};

inline HttpReply json_reply(unsigned status, const Json& body) {
  return {status, dump_json(body), "application/json", {}};
}

// FastAPI's shape for errors raised by a handler: {"detail": message}.
inline HttpReply detail_reply(unsigned status, const std::string& message) {
  return json_reply(status, {{"detail", message}});
}

// FastAPI's shape for a request that fails validation (422): {"detail": [{loc, msg, type}]}.
inline HttpReply validation_reply(const std::string& field, const std::string& message) {
  return json_reply(422, {{"detail", Json::array({{{"loc", Json::array({"body", field})},
                                                   {"msg", message},
                                                   {"type", "value_error"}}})}});
}

}  // namespace kevin::server
