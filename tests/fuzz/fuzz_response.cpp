// fuzz_response.cpp — fuzz target: the model-response parser on arbitrary bytes.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "policy/response_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto r = kevin::policy::parse_response(std::string_view(reinterpret_cast<const char*>(data), size), 64);
  if (r.ok && r.code.empty()) __builtin_trap();  // a parsed candidate always has code
  return 0;
}
