// fuzz_json_lines.cpp — fuzz target: JSON-lines parsing (batch files, runner and worker replies).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto docs = kevin::parse_json_lines(std::string_view(reinterpret_cast<const char*>(data), size));
  if (docs.is_ok()) {
    for (const auto& d : *docs) (void)kevin::dump_json(d);
  }
  return 0;
}
