// sha256.h — SHA-256 (FIPS 180-4) for content-addressed caches: build cache keys and task
// content hashes. Incremental; not for secrets.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace kevin {

class Sha256 {
 public:
  Sha256();
  // Appends bytes to the message.
  Sha256& update(std::string_view bytes);
  // Appends a length-prefixed field, so ("ab","c") and ("a","bc") hash differently.
  Sha256& update_field(std::string_view bytes);
  // Finishes and returns the digest as 64 lowercase hex characters. Call once.
  std::string hex_digest();

 private:
  void compress(const uint8_t* block);
  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_{};
  size_t buffered_ = 0;
  uint64_t total_bytes_ = 0;
};

// One-shot hex digest of `bytes`.
std::string sha256_hex(std::string_view bytes);

}  // namespace kevin
