// elf.h — a small, bounds-checked reader for the ELF64 shared objects the compile driver
// builds: dynamic imports and exports, the size of writable static storage, and the structure
// the object gate judges (sections, segments, dynamic entries, code the loader runs by
// itself). Input is untrusted (built from candidate code), so every offset is checked;
// malformed files give an error, never a crash, and work is linear in the file's size.
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

// What linking several relocatable objects (partial links) into one shared object needs to
// know of each: the names it defines in .symtab.
struct ElfRelocatableSymbols {
  // Defined with global, weak or STB_GNU_UNIQUE binding: what must become local for two
  // objects' own names not to meet.
  std::vector<std::string> globals;
  std::vector<std::string> functions;  // every defined function, of any binding
};
// Reads an x86-64 relocatable object (ET_REL). kInvalidArgument for anything else or a
// malformed table.
Result<ElfRelocatableSymbols> read_elf_relocatable_symbols(std::string_view image);

struct ElfSection {
  std::string name;
  uint32_t type = 0;   // SHT_*
  uint64_t flags = 0;  // SHF_*
  uint64_t addr = 0;
  uint64_t size = 0;
};

struct ElfSegment {
  uint32_t type = 0;   // PT_*
  uint32_t flags = 0;  // PF_*
  uint64_t vaddr = 0;
  uint64_t memsz = 0;
};

// Where the dynamic loader finds a function it calls by itself.
enum class ElfCallKind { kDtInit, kDtFini, kInitArray, kFiniArray, kPreinitArray };

// A function the dynamic loader calls by itself, at load or unload time.
struct ElfLoadTimeCall {
  ElfCallKind kind = ElfCallKind::kInitArray;
  std::string source;     // "DT_INIT", "DT_FINI", ".init_array[0]", ".fini_array[1]", ...
  bool resolved = false;  // `target` is known: DT_INIT/DT_FINI, or a slot set by exactly
                          // one R_X86_64_RELATIVE relocation (its addend)
  uint64_t target = 0;
  std::vector<std::string> names;  // .symtab functions defined at `target` (a few at most)
  bool unique = true;              // each of `names` is the name of exactly one .symtab symbol
};

struct ElfObject {
  ElfSymbols symbols;
  std::vector<ElfSection> sections;  // in file order, index 0 (the null section) included
  std::vector<ElfSegment> segments;
  std::vector<std::string> needed;  // DT_NEEDED
  // Dynamic entries that make the loader search or load anything beyond DT_NEEDED:
  // "DT_RPATH=...", "DT_RUNPATH=...", "DT_AUXILIARY=...", "DT_FILTER=...", "DT_AUDIT=...".
  std::vector<std::string> loader_directives;
  bool text_relocations = false;  // DT_TEXTREL, or DF_TEXTREL in DT_FLAGS
  bool unverified_relocations =
      false;  // DT_REL / DT_RELR / DT_PLTREL other than RELA: not followed
  bool has_symtab = false;
  // STT_GNU_IFUNC symbols of .dynsym or .symtab, and "R_X86_64_IRELATIVE" per such relocation.
  std::vector<std::string> ifuncs;
  // DT_INIT, DT_FINI, then every slot of the preinit/init/fini arrays (from the dynamic
  // entries and from sections of those types).
  std::vector<ElfLoadTimeCall> load_time_calls;
  std::string init_code;  // the first bytes of .init (at most 64)
  std::string fini_code;  // the first bytes of .fini (at most 64)
  // Addresses (relative to the load base) of the .symtab data objects in writable sections:
  // nvcc's host shadows of __device__ and __constant__ variables are among them (at most
  // kMaxDataObjects are listed).
  std::vector<uint64_t> writable_data_objects;
};
inline constexpr size_t kMaxDataObjects = 4096;

// Parses an x86-64 ELF64 little-endian shared object held in memory. Errors (kInvalidArgument)
// for anything malformed: out-of-bounds tables, wrong entry sizes, no dynamic segment.
Result<ElfObject> read_elf_object(std::string_view image);

}  // namespace kevin::engine
