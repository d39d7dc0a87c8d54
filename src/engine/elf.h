// elf.h — a small, bounds-checked reader for the ELF64 shared objects the compile driver
// builds: dynamic imports and exports, and the size of writable static storage. Input is
// untrusted (built from candidate code), so every offset is checked; malformed files give an
// error, never a crash.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace kevin::engine {

struct ElfSymbols {
  std::vector<std::string> imports;  // undefined dynamic symbols (version suffix removed)
  std::vector<std::string> exports;  // defined global/weak dynamic symbols
  uint64_t writable_bytes = 0;       // sum of allocated writable sections (.data, .bss, ...)
  uint64_t tls_bytes = 0;            // thread-local sections (.tdata, .tbss)
};

// Parses an ELF64 little-endian image held in memory.
Result<ElfSymbols> read_elf_symbols(std::string_view image);

}  // namespace kevin::engine
