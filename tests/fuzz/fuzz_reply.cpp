// fuzz_reply.cpp — fuzz target: a runner's reply frame (untrusted once the candidate is
// loaded) through the judge's bounded, type-checked parse, then read as the reply to each
// command the judge sends and as a readiness frame.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "engine/run/runner_session.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace proto = kevin::runner_protocol;
  const auto body = kevin::engine::parse_runner_reply(
      std::string_view(reinterpret_cast<const char*>(data), size));
  if (!body.is_ok()) return 0;
  for (const proto::Command& sent :
       {proto::Command(proto::Setup{}), proto::Command(proto::Load{}),
        proto::Command(proto::Call{}), proto::Command(proto::TimeCall{})})
    (void)proto::decode_reply(sent, *body);
  (void)proto::decode_ready(*body);
  return 0;
}
