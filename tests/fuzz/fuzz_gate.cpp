// fuzz_gate.cpp — fuzz target: the static gate and its lexer on arbitrary bytes, both backends.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "engine/gate.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)kevin::engine::strip_comments_and_strings(text);
  (void)kevin::engine::check_source(text, kevin::engine::Backend::kCuda);
  (void)kevin::engine::check_source(text, kevin::engine::Backend::kCpu);
  return 0;
}
