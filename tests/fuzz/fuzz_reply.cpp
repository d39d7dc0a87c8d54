// fuzz_reply.cpp — fuzz target: a runner's reply frame (untrusted once the candidate is
// loaded) through the judge's bounded, type-checked parse.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "engine/runner_session.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)kevin::engine::parse_runner_reply(
      std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
