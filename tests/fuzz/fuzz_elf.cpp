// fuzz_elf.cpp — fuzz target: the ELF reader on arbitrary bytes (built objects are untrusted).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "engine/elf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)kevin::engine::read_elf_symbols(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
