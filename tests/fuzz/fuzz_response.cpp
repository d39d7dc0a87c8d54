// fuzz_response.cpp — fuzz target: the model-reply reader on arbitrary bytes, for kevin's
// answers and KernelBench's, under every driver's rules, and the format detection that picks
// between them.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "env/reply.h"

namespace {

using kevin::engine::CandidateFormat;
using kevin::env::Unfenced;

void read_under_every_rule(std::string_view text) {
  for (const auto unfenced :
       {Unfenced::kParseError, Unfenced::kEntryDefined, Unfenced::kAlwaysSource}) {
    for (const bool either : {false, true}) {
      kevin::env::ReplyRules rules;
      rules.either_format = either;
      rules.unfenced = unfenced;
      rules.max_summary = 64;
      rules.cut_off_at_tokens = 7;
      const auto action = kevin::env::read_reply(text, rules);
      // An unusable action says why, a usable one has code (a request field that is the
      // source may be empty: the judge refuses that, not the reader).
      if (action.parsed != action.parse_error.empty()) __builtin_trap();
      if (action.parsed && action.code.empty() && unfenced != Unfenced::kAlwaysSource)
        __builtin_trap();
      if (action.summary.size() > rules.max_summary) __builtin_trap();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (const auto format : {CandidateFormat::kKevin, CandidateFormat::kKernelBench}) {
    const auto r = kevin::env::parse_response(text, 64, format);
    if (r.ok && r.code.empty()) __builtin_trap();  // a parsed candidate always has code
  }
  read_under_every_rule(text);
  (void)kevin::engine::detect_format(text);
  return 0;
}
