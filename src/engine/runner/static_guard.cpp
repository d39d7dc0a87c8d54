// static_guard.cpp — writable PT_LOAD segments via dl_iterate_phdr, RELRO excluded, saved in
// a private mapping that is made read-only once written.
#include "engine/runner/static_guard.h"

#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

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

// The writable ranges the loader left writable: RELRO pages (whole pages, rounded down like
// the loader does) are read-only after relocation; the writable rest follows them.
std::vector<std::pair<uintptr_t, uintptr_t>> guarded_ranges(const Search& search) {
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t relro_end = search.relro.second & ~(page - 1);
  std::vector<std::pair<uintptr_t, uintptr_t>> out;
  for (auto [lo, hi] : search.writable) {
    if (relro_end > lo && search.relro.first <= lo) lo = std::min(hi, relro_end);
    if (hi > lo) out.emplace_back(lo, hi);
  }
  return out;
}

}  // namespace

Result<StaticGuard> StaticGuard::snapshot(const std::string& path) {
  Search search;
  search.path = &path;
  dl_iterate_phdr(visit, &search);
  if (!search.found) return not_found("loaded object " + path + " not found");
  const auto ranges = guarded_ranges(search);
  size_t bytes = ranges.size() * sizeof(Range);
  for (auto [lo, hi] : ranges) bytes += hi - lo;
  StaticGuard guard;
  guard.image_bytes_ = std::max<size_t>(bytes, 1);
  void* image = ::mmap(nullptr, guard.image_bytes_, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (image == MAP_FAILED)
    return unavailable(std::string("cannot map the static snapshot: ") + std::strerror(errno));
  guard.image_ = image;
  guard.count_ = ranges.size();
  auto* table = static_cast<Range*>(image);
  auto* saved = static_cast<uint8_t*>(image) + ranges.size() * sizeof(Range);
  for (size_t i = 0; i < ranges.size(); ++i) {
    const auto [lo, hi] = ranges[i];
    table[i] = {reinterpret_cast<uint8_t*>(lo), hi - lo};
    std::memcpy(saved, table[i].start, table[i].bytes);
    saved += table[i].bytes;
  }
  if (::mprotect(image, guard.image_bytes_, PROT_READ) != 0)
    return unavailable(std::string("cannot protect the static snapshot: ") + std::strerror(errno));
  return guard;
}

StaticGuard::StaticGuard(StaticGuard&& other) noexcept
    : image_(std::exchange(other.image_, nullptr)),
      image_bytes_(std::exchange(other.image_bytes_, 0)),
      count_(std::exchange(other.count_, 0)) {}

StaticGuard::~StaticGuard() {
  if (image_ != nullptr) ::munmap(image_, image_bytes_);
}

void StaticGuard::restore() const {
  const auto* saved = reinterpret_cast<const uint8_t*>(ranges() + count_);
  for (size_t i = 0; i < count_; ++i) {
    std::memcpy(ranges()[i].start, saved, ranges()[i].bytes);
    saved += ranges()[i].bytes;
  }
}

uint64_t StaticGuard::bytes() const {
  uint64_t n = 0;
  for (size_t i = 0; i < count_; ++i) n += ranges()[i].bytes;
  return n;
}

}  // namespace kevin::runner
