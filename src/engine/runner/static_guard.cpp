// static_guard.cpp — writable PT_LOAD segments via dl_iterate_phdr, RELRO excluded.
#include <cstdint>
#include "engine/runner/static_guard.h"

#include <link.h>
#include <unistd.h>

#include <cstring>

namespace kevin::runner {
namespace {

struct Search {
  const std::string* path = nullptr;
  bool found = false;
  std::vector<std::pair<uintptr_t, uintptr_t>> writable;
  std::pair<uintptr_t, uintptr_t> relro{0, 0};
};

int visit(dl_phdr_info* info, size_t, void* data) {
  auto* s = static_cast<Search*>(data);
  if (info->dlpi_name == nullptr || *s->path != info->dlpi_name) return 0;
  s->found = true;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    const uintptr_t start = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD && (ph.p_flags & PF_W))
      s->writable.emplace_back(start, start + ph.p_memsz);
    if (ph.p_type == PT_GNU_RELRO) s->relro = {start, start + ph.p_memsz};
  }
  return 1;
}

}  // namespace

Result<StaticGuard> StaticGuard::snapshot(const std::string& path) {
  Search search;
  search.path = &path;
  dl_iterate_phdr(visit, &search);
  if (!search.found) return not_found("loaded object " + path + " not found");
  StaticGuard guard;
  for (auto [lo, hi] : search.writable) {
    // RELRO pages (whole pages, rounded down like the loader does) are read-only after
    // relocation; the writable rest follows them.
    const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    const uintptr_t relro_end = search.relro.second & ~(page - 1);
    if (relro_end > lo && search.relro.first <= lo) lo = std::min(hi, relro_end);
    if (hi <= lo) continue;
    Range r;
    r.start = reinterpret_cast<uint8_t*>(lo);
    r.saved.assign(r.start, r.start + (hi - lo));
    guard.ranges_.push_back(std::move(r));
  }
  return guard;
}

void StaticGuard::restore() const {
  for (const auto& r : ranges_) std::memcpy(r.start, r.saved.data(), r.saved.size());
}

uint64_t StaticGuard::bytes() const {
  uint64_t n = 0;
  for (const auto& r : ranges_) n += r.saved.size();
  return n;
}

}  // namespace kevin::runner
