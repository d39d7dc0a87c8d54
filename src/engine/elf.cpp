// elf.cpp — ELF64 section and dynamic-symbol walking with explicit bounds checks.
#include <cstdint>
#include "engine/elf.h"

#include <elf.h>

#include <cstring>

namespace kevin::engine {
namespace {

template <typename T>
bool read_at(std::string_view image, uint64_t offset, T* out) {
  if (offset > image.size() || image.size() - offset < sizeof(T)) return false;
  std::memcpy(out, image.data() + offset, sizeof(T));
  return true;
}

// NUL-terminated string at `offset` inside the string table [table, table + size).
bool string_at(std::string_view image, uint64_t table, uint64_t size, uint64_t offset,
               std::string* out) {
  if (table > image.size() || size > image.size() - table || offset >= size) return false;
  const std::string_view strtab = image.substr(table, size);
  const size_t end = strtab.find('\0', offset);
  if (end == std::string_view::npos) return false;
  *out = std::string(strtab.substr(offset, end - offset));
  return true;
}

}  // namespace

Result<ElfSymbols> read_elf_symbols(std::string_view image) {
  Elf64_Ehdr eh;
  if (!read_at(image, 0, &eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) {
    return invalid_argument("not an ELF file");
  }
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB) {
    return invalid_argument("not a 64-bit little-endian ELF file");
  }
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0) {
    return invalid_argument("ELF file has no usable section table");
  }
  std::vector<Elf64_Shdr> sections(eh.e_shnum);
  for (uint16_t i = 0; i < eh.e_shnum; ++i) {
    if (!read_at(image, eh.e_shoff + uint64_t{i} * sizeof(Elf64_Shdr), &sections[i])) {
      return invalid_argument("ELF section header out of bounds");
    }
  }
  ElfSymbols result;
  for (const auto& sh : sections) {
    if ((sh.sh_flags & SHF_ALLOC) && (sh.sh_flags & SHF_WRITE)) result.writable_bytes += sh.sh_size;
    if (sh.sh_flags & SHF_TLS) result.tls_bytes += sh.sh_size;
    if (sh.sh_type != SHT_DYNSYM) continue;
    if (sh.sh_entsize != sizeof(Elf64_Sym) || sh.sh_link >= sections.size()) {
      return invalid_argument("malformed dynamic symbol table");
    }
    const Elf64_Shdr& strtab = sections[sh.sh_link];
    const uint64_t count = sh.sh_size / sizeof(Elf64_Sym);
    for (uint64_t k = 1; k < count; ++k) {
      Elf64_Sym sym;
      if (!read_at(image, sh.sh_offset + k * sizeof(Elf64_Sym), &sym)) {
        return invalid_argument("dynamic symbol out of bounds");
      }
      std::string name;
      if (!string_at(image, strtab.sh_offset, strtab.sh_size, sym.st_name, &name)) {
        return invalid_argument("dynamic symbol name out of bounds");
      }
      if (name.empty()) continue;
      const unsigned bind = ELF64_ST_BIND(sym.st_info);
      if (sym.st_shndx == SHN_UNDEF) {
        result.imports.push_back(name);
      } else if (bind == STB_GLOBAL || bind == STB_WEAK || bind == STB_GNU_UNIQUE) {
        result.exports.push_back(name);
      }
    }
  }
  return result;
}

}  // namespace kevin::engine
