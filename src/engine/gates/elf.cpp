// elf.cpp — ELF64 section, segment, dynamic-entry, relocation and symbol walking with explicit
// bounds checks. Every table is read through read_at/string_at; sizes come from the file and
// are checked against it, so no input can make a read leave the image or loop longer than
// the image is long.
#include "engine/gates/elf.h"

#include <elf.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <unordered_map>

namespace kevin::engine {
namespace {

// More load-time entries than this is not compiler output; refusing bounds the work.
constexpr size_t kMaxLoadTimeCalls = 4096;
constexpr size_t kMaxNamesPerCall = 4;
constexpr size_t kMaxIfuncsListed = 16;
constexpr size_t kCodeBytesKept = 64;

template <typename T>
bool read_at(std::string_view image, uint64_t offset, T* out) {
  if (offset > image.size() || image.size() - offset < sizeof(T)) return false;
  std::memcpy(out, image.data() + offset, sizeof(T));
  return true;
}

// NUL-terminated string at `offset` inside the string table [table, table + size).
bool string_at(std::string_view image, uint64_t table, uint64_t size, uint64_t offset,
               std::string_view* out) {
  if (table > image.size() || size > image.size() - table || offset >= size) return false;
  const std::string_view strtab = image.substr(table, size);
  const size_t end = strtab.find('\0', offset);
  if (end == std::string_view::npos) return false;
  *out = strtab.substr(offset, end - offset);
  return true;
}

uint64_t saturating_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

struct Headers {
  Elf64_Ehdr eh{};
  std::vector<Elf64_Shdr> sections;
};

Result<Headers> read_headers(std::string_view image) {
  Headers h;
  if (!read_at(image, 0, &h.eh) || std::memcmp(h.eh.e_ident, ELFMAG, SELFMAG) != 0) {
    return invalid_argument("not an ELF file");
  }
  if (h.eh.e_ident[EI_CLASS] != ELFCLASS64 || h.eh.e_ident[EI_DATA] != ELFDATA2LSB) {
    return invalid_argument("not a 64-bit little-endian ELF file");
  }
  if (h.eh.e_shentsize != sizeof(Elf64_Shdr) || h.eh.e_shnum == 0) {
    return invalid_argument("ELF file has no usable section table");
  }
  h.sections.resize(h.eh.e_shnum);
  for (uint16_t i = 0; i < h.eh.e_shnum; ++i) {
    if (!read_at(image, h.eh.e_shoff + uint64_t{i} * sizeof(Elf64_Shdr), &h.sections[i])) {
      return invalid_argument("ELF section header out of bounds");
    }
  }
  return h;
}

// Calls fn(symbol, name) for every entry after the null one of the symbol table `table`.
template <typename Fn>
Status for_each_symbol(std::string_view image, const std::vector<Elf64_Shdr>& sections,
                       const Elf64_Shdr& table, Fn&& fn) {
  if (table.sh_entsize != sizeof(Elf64_Sym) || table.sh_link >= sections.size()) {
    return invalid_argument("malformed symbol table");
  }
  const Elf64_Shdr& strtab = sections[table.sh_link];
  const uint64_t count = table.sh_size / sizeof(Elf64_Sym);
  for (uint64_t k = 1; k < count; ++k) {
    Elf64_Sym sym;
    if (!read_at(image, table.sh_offset + k * sizeof(Elf64_Sym), &sym))
      return invalid_argument("symbol out of bounds");
    std::string_view name;
    if (!string_at(image, strtab.sh_offset, strtab.sh_size, sym.st_name, &name)) {
      return invalid_argument("symbol name out of bounds");
    }
    fn(sym, name);
  }
  return Status::ok();
}

// One array the loader walks: its slots' addresses, and what they are called in messages.
struct ArrayRange {
  ElfCallKind kind;
  std::string label;
  uint64_t addr;
  uint64_t size;
};

// One relocation that lands in an array slot.
struct SlotRelocation {
  size_t count = 0;
  uint32_t type = 0;
  int64_t addend = 0;
};

// Reads the structure of a shared object, one table at a time.
class ObjectReader {
 public:
  explicit ObjectReader(std::string_view image) : image_(image) {}

  Result<ElfObject> read() {
    KEVIN_ASSIGN_OR_RETURN(headers_, read_headers(image_));
    if (headers_.eh.e_machine != EM_X86_64 || headers_.eh.e_type != ET_DYN) {
      return invalid_argument("not an x86-64 shared object");
    }
    KEVIN_ASSIGN_OR_RETURN(object_.symbols, read_elf_symbols(image_));
    KEVIN_RETURN_IF_ERROR(read_sections());
    KEVIN_RETURN_IF_ERROR(read_segments());
    KEVIN_RETURN_IF_ERROR(read_dynamic());
    KEVIN_RETURN_IF_ERROR(read_arrays());
    KEVIN_RETURN_IF_ERROR(read_relocations());
    resolve_slots();
    KEVIN_RETURN_IF_ERROR(read_symbols());
    return std::move(object_);
  }

 private:
  Status read_sections() {
    const uint16_t names = headers_.eh.e_shstrndx;
    if (names == SHN_UNDEF || names >= headers_.sections.size())
      return invalid_argument("no section name table");
    const Elf64_Shdr& shstrtab = headers_.sections[names];
    for (const auto& sh : headers_.sections) {
      std::string_view name;
      if (!string_at(image_, shstrtab.sh_offset, shstrtab.sh_size, sh.sh_name, &name)) {
        return invalid_argument("section name out of bounds");
      }
      object_.sections.push_back(
          ElfSection{std::string(name), sh.sh_type, sh.sh_flags, sh.sh_addr, sh.sh_size});
      if (name == ".init") object_.init_code = code_bytes(sh);
      if (name == ".fini") object_.fini_code = code_bytes(sh);
    }
    return Status::ok();
  }

  std::string code_bytes(const Elf64_Shdr& sh) const {
    if (sh.sh_type == SHT_NOBITS || sh.sh_offset > image_.size()) return {};
    const uint64_t length =
        std::min<uint64_t>({sh.sh_size, kCodeBytesKept, image_.size() - sh.sh_offset});
    return std::string(image_.substr(sh.sh_offset, length));
  }

  Status read_segments() {
    const Elf64_Ehdr& eh = headers_.eh;
    if (eh.e_phnum == 0 || eh.e_phnum == PN_XNUM || eh.e_phentsize != sizeof(Elf64_Phdr)) {
      return invalid_argument("ELF file has no usable program headers");
    }
    for (uint16_t i = 0; i < eh.e_phnum; ++i) {
      Elf64_Phdr ph;
      if (!read_at(image_, eh.e_phoff + uint64_t{i} * sizeof(Elf64_Phdr), &ph)) {
        return invalid_argument("ELF program header out of bounds");
      }
      program_headers_.push_back(ph);
      object_.segments.push_back(ElfSegment{ph.p_type, ph.p_flags, ph.p_vaddr, ph.p_memsz});
    }
    return Status::ok();
  }

  // The file offset of [vaddr, vaddr + length) when one PT_LOAD maps all of it from the file.
  std::optional<uint64_t> file_offset(uint64_t vaddr, uint64_t length) const {
    for (const auto& ph : program_headers_) {
      if (ph.p_type != PT_LOAD || vaddr < ph.p_vaddr) continue;
      const uint64_t into = vaddr - ph.p_vaddr;
      if (into > ph.p_filesz || length > ph.p_filesz - into) continue;
      if (ph.p_offset > image_.size() || into > image_.size() - ph.p_offset) continue;
      const uint64_t offset = ph.p_offset + into;
      if (length > image_.size() - offset) continue;
      return offset;
    }
    return std::nullopt;
  }

  Status read_dynamic() {
    const auto dynamic = std::find_if(program_headers_.begin(), program_headers_.end(),
                                      [](const Elf64_Phdr& ph) { return ph.p_type == PT_DYNAMIC; });
    if (dynamic == program_headers_.end()) return invalid_argument("no dynamic segment");
    for (uint64_t at = 0; at + sizeof(Elf64_Dyn) <= dynamic->p_filesz; at += sizeof(Elf64_Dyn)) {
      Elf64_Dyn d;
      if (!read_at(image_, dynamic->p_offset + at, &d))
        return invalid_argument("dynamic entry out of bounds");
      if (d.d_tag == DT_NULL) break;
      dyn_[d.d_tag] = d.d_un.d_val;  // the loader keeps the last of repeated scalar entries too
      if (is_string_entry(d.d_tag)) string_entries_.push_back(d);
    }
    const uint64_t flags = value(DT_FLAGS);
    object_.text_relocations = dyn_.count(DT_TEXTREL) > 0 || (flags & DF_TEXTREL) != 0;
    object_.unverified_relocations = dyn_.count(DT_REL) > 0 || dyn_.count(DT_RELR) > 0 ||
                                     (dyn_.count(DT_JMPREL) > 0 && value(DT_PLTREL) != DT_RELA);
    return read_dynamic_strings();
  }

  static bool is_string_entry(int64_t tag) {
    return tag == DT_NEEDED || tag == DT_RPATH || tag == DT_RUNPATH || tag == DT_AUXILIARY ||
           tag == DT_FILTER || tag == DT_AUDIT || tag == DT_DEPAUDIT;
  }

  Status read_dynamic_strings() {
    if (string_entries_.empty()) return Status::ok();
    const uint64_t size = value(DT_STRSZ);
    const auto table = file_offset(value(DT_STRTAB), size);
    if (!table) return invalid_argument("dynamic string table out of bounds");
    for (const auto& d : string_entries_) {
      std::string_view text;
      if (!string_at(image_, *table, size, d.d_un.d_val, &text))
        return invalid_argument("dynamic string out of bounds");
      if (d.d_tag == DT_NEEDED) {
        object_.needed.emplace_back(text);
      } else {
        object_.loader_directives.push_back(std::string(directive_name(d.d_tag)) + "=" +
                                            std::string(text));
      }
    }
    return Status::ok();
  }

  static const char* directive_name(int64_t tag) {
    switch (tag) {
      case DT_RPATH:
        return "DT_RPATH";
      case DT_RUNPATH:
        return "DT_RUNPATH";
      case DT_AUXILIARY:
        return "DT_AUXILIARY";
      case DT_FILTER:
        return "DT_FILTER";
      case DT_AUDIT:
        return "DT_AUDIT";
      default:
        return "DT_DEPAUDIT";
    }
  }

  uint64_t value(int64_t tag) const {
    const auto it = dyn_.find(tag);
    return it == dyn_.end() ? 0 : it->second;
  }

  Status read_arrays() {
    if (dyn_.count(DT_INIT)) add_call(ElfCallKind::kDtInit, "DT_INIT", value(DT_INIT));
    if (dyn_.count(DT_FINI)) add_call(ElfCallKind::kDtFini, "DT_FINI", value(DT_FINI));
    add_range(ElfCallKind::kPreinitArray, ".preinit_array", DT_PREINIT_ARRAY, DT_PREINIT_ARRAYSZ);
    add_range(ElfCallKind::kInitArray, ".init_array", DT_INIT_ARRAY, DT_INIT_ARRAYSZ);
    add_range(ElfCallKind::kFiniArray, ".fini_array", DT_FINI_ARRAY, DT_FINI_ARRAYSZ);
    for (size_t i = 0; i < headers_.sections.size(); ++i) {
      const auto& sh = headers_.sections[i];
      const std::string& label = object_.sections[i].name;
      if (sh.sh_type == SHT_PREINIT_ARRAY)
        ranges_.push_back({ElfCallKind::kPreinitArray, label, sh.sh_addr, sh.sh_size});
      if (sh.sh_type == SHT_INIT_ARRAY)
        ranges_.push_back({ElfCallKind::kInitArray, label, sh.sh_addr, sh.sh_size});
      if (sh.sh_type == SHT_FINI_ARRAY)
        ranges_.push_back({ElfCallKind::kFiniArray, label, sh.sh_addr, sh.sh_size});
    }
    // A section and its dynamic entry usually describe the same array: keep it once.
    std::sort(ranges_.begin(), ranges_.end(), [](const ArrayRange& a, const ArrayRange& b) {
      return std::tie(a.addr, a.size, a.kind) < std::tie(b.addr, b.size, b.kind);
    });
    ranges_.erase(std::unique(ranges_.begin(), ranges_.end(),
                              [](const ArrayRange& a, const ArrayRange& b) {
                                return a.addr == b.addr && a.size == b.size && a.kind == b.kind;
                              }),
                  ranges_.end());
    for (const auto& range : ranges_) {
      if (range.size % sizeof(uint64_t) != 0)
        return invalid_argument(range.label + " is not an array of addresses");
      for (uint64_t slot = 0; slot < range.size / sizeof(uint64_t); ++slot) {
        if (object_.load_time_calls.size() >= kMaxLoadTimeCalls)
          return invalid_argument("too many load-time entries");
        slots_.push_back(range.addr + slot * sizeof(uint64_t));
        add_call(range.kind, range.label + "[" + std::to_string(slot) + "]", 0).resolved = false;
      }
    }
    return Status::ok();
  }

  void add_range(ElfCallKind kind, const char* label, int64_t address_tag, int64_t size_tag) {
    if (dyn_.count(address_tag))
      ranges_.push_back({kind, label, value(address_tag), value(size_tag)});
  }

  ElfLoadTimeCall& add_call(ElfCallKind kind, std::string source, uint64_t target) {
    ElfLoadTimeCall call;
    call.kind = kind;
    call.source = std::move(source);
    call.resolved = true;
    call.target = target;
    object_.load_time_calls.push_back(std::move(call));
    return object_.load_time_calls.back();
  }

  Status read_relocations() {
    if (dyn_.count(DT_RELAENT) && value(DT_RELAENT) != sizeof(Elf64_Rela))
      return invalid_argument("odd relocation size");
    if (dyn_.count(DT_RELA))
      KEVIN_RETURN_IF_ERROR(read_relocation_table(value(DT_RELA), value(DT_RELASZ)));
    if (dyn_.count(DT_JMPREL) && value(DT_PLTREL) == DT_RELA) {
      KEVIN_RETURN_IF_ERROR(read_relocation_table(value(DT_JMPREL), value(DT_PLTRELSZ)));
    }
    return Status::ok();
  }

  Status read_relocation_table(uint64_t vaddr, uint64_t size) {
    if (size % sizeof(Elf64_Rela) != 0) return invalid_argument("relocation table of odd size");
    const auto table = file_offset(vaddr, size);
    if (!table) return invalid_argument("relocation table out of bounds");
    std::vector<uint64_t> sorted = slots_;
    std::sort(sorted.begin(), sorted.end());
    for (uint64_t at = 0; at < size; at += sizeof(Elf64_Rela)) {
      Elf64_Rela r;
      if (!read_at(image_, *table + at, &r)) return invalid_argument("relocation out of bounds");
      const auto type = static_cast<uint32_t>(ELF64_R_TYPE(r.r_info));
      if (type == R_X86_64_IRELATIVE && object_.ifuncs.size() < kMaxIfuncsListed)
        object_.ifuncs.push_back("R_X86_64_IRELATIVE");
      if (!std::binary_search(sorted.begin(), sorted.end(), r.r_offset)) continue;
      SlotRelocation& slot = slot_relocations_[r.r_offset];
      ++slot.count;
      slot.type = type;
      slot.addend = r.r_addend;
    }
    return Status::ok();
  }

  // A slot's target is known only when exactly one relative relocation sets it (its addend
  // is the address); anything else (a symbolic relocation, none, several) stays unresolved.
  void resolve_slots() {
    size_t slot = 0;
    for (auto& call : object_.load_time_calls) {
      if (call.kind == ElfCallKind::kDtInit || call.kind == ElfCallKind::kDtFini) continue;
      const auto it = slot_relocations_.find(slots_[slot++]);
      if (it == slot_relocations_.end() || it->second.count != 1 ||
          it->second.type != R_X86_64_RELATIVE)
        continue;
      call.resolved = true;
      call.target = static_cast<uint64_t>(it->second.addend);
    }
  }

  bool in_writable_section(const Elf64_Sym& sym) const {
    if (sym.st_shndx == SHN_UNDEF || sym.st_shndx >= headers_.sections.size()) return false;
    const auto& sh = headers_.sections[sym.st_shndx];
    return (sh.sh_flags & SHF_WRITE) != 0 && (sh.sh_flags & SHF_ALLOC) != 0;
  }

  // Two passes over .symtab: the functions at each target, then how often each of their
  // names occurs (a candidate's own "frame_dummy" must not pass for crtstuff's). IFUNC
  // symbols are collected from .dynsym and .symtab alike.
  Status read_symbols() {
    std::unordered_map<uint64_t, std::vector<size_t>> calls_at;
    for (size_t i = 0; i < object_.load_time_calls.size(); ++i) {
      if (object_.load_time_calls[i].resolved)
        calls_at[object_.load_time_calls[i].target].push_back(i);
    }
    std::unordered_map<std::string_view, size_t> name_counts;  // views into the image
    for (const auto& sh : headers_.sections) {
      if (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) continue;
      const bool symtab = sh.sh_type == SHT_SYMTAB;
      object_.has_symtab = object_.has_symtab || symtab;
      KEVIN_RETURN_IF_ERROR(for_each_symbol(
          image_, headers_.sections, sh, [&](const Elf64_Sym& sym, std::string_view name) {
            const unsigned type = ELF64_ST_TYPE(sym.st_info);
            if (type == STT_GNU_IFUNC && object_.ifuncs.size() < kMaxIfuncsListed)
              object_.ifuncs.emplace_back(name);
            if (symtab && type == STT_OBJECT && in_writable_section(sym) &&
                object_.writable_data_objects.size() < kMaxDataObjects) {
              object_.writable_data_objects.push_back(sym.st_value);
            }
            if (!symtab || type != STT_FUNC || sym.st_shndx == SHN_UNDEF || name.empty()) return;
            const auto it = calls_at.find(sym.st_value);
            if (it == calls_at.end()) return;
            for (const size_t index : it->second) {
              auto& names = object_.load_time_calls[index].names;
              if (names.size() < kMaxNamesPerCall) names.emplace_back(name);
            }
            name_counts.emplace(name, 0);
          }));
    }
    for (const auto& sh : headers_.sections) {
      if (sh.sh_type != SHT_SYMTAB || name_counts.empty()) continue;
      KEVIN_RETURN_IF_ERROR(for_each_symbol(image_, headers_.sections, sh,
                                            [&](const Elf64_Sym&, std::string_view name) {
                                              const auto it = name_counts.find(name);
                                              if (it != name_counts.end()) ++it->second;
                                            }));
    }
    for (auto& call : object_.load_time_calls) {
      call.unique = std::all_of(call.names.begin(), call.names.end(), [&](const std::string& n) {
        const auto it = name_counts.find(n);
        return it != name_counts.end() && it->second == 1;
      });
    }
    return Status::ok();
  }

  std::string_view image_;
  Headers headers_;
  std::vector<Elf64_Phdr> program_headers_;
  std::map<int64_t, uint64_t> dyn_;
  std::vector<Elf64_Dyn> string_entries_;
  std::vector<ArrayRange> ranges_;
  std::vector<uint64_t> slots_;  // address of each array slot, in load_time_calls order
  std::unordered_map<uint64_t, SlotRelocation> slot_relocations_;
  ElfObject object_;
};

}  // namespace

Result<ElfSymbols> read_elf_symbols(std::string_view image) {
  KEVIN_ASSIGN_OR_RETURN(Headers headers, read_headers(image));
  ElfSymbols result;
  for (const auto& sh : headers.sections) {
    // Saturating sums: sizes come from the file, and a wrapped sum would pass any limit.
    if ((sh.sh_flags & SHF_ALLOC) && (sh.sh_flags & SHF_WRITE))
      result.writable_bytes = saturating_add(result.writable_bytes, sh.sh_size);
    if (sh.sh_flags & SHF_TLS) result.tls_bytes = saturating_add(result.tls_bytes, sh.sh_size);
    if (sh.sh_type != SHT_DYNSYM) continue;
    KEVIN_RETURN_IF_ERROR(for_each_symbol(
        image, headers.sections, sh, [&](const Elf64_Sym& sym, std::string_view name) {
          if (name.empty()) return;
          const unsigned bind = ELF64_ST_BIND(sym.st_info);
          if (sym.st_shndx == SHN_UNDEF) {
            result.imports.emplace_back(name);
          } else if (bind == STB_GLOBAL || bind == STB_WEAK || bind == STB_GNU_UNIQUE) {
            result.exports.emplace_back(name);
          }
        }));
  }
  return result;
}

Result<ElfObject> read_elf_object(std::string_view image) { return ObjectReader(image).read(); }

Result<ElfRelocatableSymbols> read_elf_relocatable_symbols(std::string_view image) {
  KEVIN_ASSIGN_OR_RETURN(Headers headers, read_headers(image));
  if (headers.eh.e_machine != EM_X86_64 || headers.eh.e_type != ET_REL) {
    return invalid_argument("not an x86-64 relocatable object");
  }
  ElfRelocatableSymbols result;
  for (const auto& sh : headers.sections) {
    if (sh.sh_type != SHT_SYMTAB) continue;
    KEVIN_RETURN_IF_ERROR(for_each_symbol(
        image, headers.sections, sh, [&](const Elf64_Sym& sym, std::string_view name) {
          if (name.empty() || sym.st_shndx == SHN_UNDEF) return;
          const unsigned bind = ELF64_ST_BIND(sym.st_info);
          if (bind == STB_GLOBAL || bind == STB_WEAK || bind == STB_GNU_UNIQUE)
            result.globals.emplace_back(name);
          if (ELF64_ST_TYPE(sym.st_info) == STT_FUNC) result.functions.emplace_back(name);
        }));
  }
  return result;
}

}  // namespace kevin::engine
