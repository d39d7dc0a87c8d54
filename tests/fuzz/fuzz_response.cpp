// fuzz_response.cpp — fuzz target: the model-response parser on arbitrary bytes, for kevin's
// answers and KernelBench's, and the format detection that picks between them.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "policy/response_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (const auto format :
       {kevin::engine::CandidateFormat::kKevin, kevin::engine::CandidateFormat::kKernelBench}) {
    const auto r = kevin::policy::parse_response(text, 64, format);
    if (r.ok && r.code.empty()) __builtin_trap();  // a parsed candidate always has code
  }
  (void)kevin::engine::detect_format(text);
  return 0;
}
