// front_end.cpp — what every front end shares: the bearer check and request paths.
#include "server/front_end.h"

namespace kevin::server {
namespace {

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The length may show; the content does not (no early exit on the first differing byte).
bool same_secret(std::string_view given, std::string_view secret) {
  if (secret.empty() || given.size() != secret.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < secret.size(); ++i)
    diff |= static_cast<unsigned char>(given[i] ^ secret[i]);
  return diff == 0;
}

}  // namespace

std::string request_path(std::string_view target) {
  const std::string_view path = target.substr(0, target.find('?'));
  std::string out;
  for (size_t i = 0; i < path.size(); ++i) {
    if (path[i] == '%' && i + 2 < path.size() && hex_value(path[i + 1]) >= 0 &&
        hex_value(path[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hex_value(path[i + 1]) * 16 + hex_value(path[i + 2])));
      i += 2;
    } else {
      out.push_back(path[i]);
    }
  }
  return out;
}

bool bearer_authorized(std::string_view authorization, std::string_view token) {
  if (token.empty()) return true;
  constexpr std::string_view kBearer = "Bearer ";
  if (!starts_with(authorization, kBearer)) return false;
  return same_secret(authorization.substr(kBearer.size()), token);
}

}  // namespace kevin::server
