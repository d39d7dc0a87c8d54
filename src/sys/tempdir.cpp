// tempdir.cpp — mkdtemp-based temporary directories.
#include "sys/tempdir.h"

#include <stdlib.h>

#include <cerrno>
#include <cstring>

namespace kevin::sys {
namespace fs = std::filesystem;

TempDir& TempDir::operator=(TempDir&& other) noexcept {
  if (this != &other) {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
    path_ = std::move(other.path_);
    other.path_.clear();
  }
  return *this;
}

TempDir::~TempDir() {
  std::error_code ec;
  if (!path_.empty()) fs::remove_all(path_, ec);
}

Result<TempDir> TempDir::create(const std::string& prefix, const fs::path& parent) {
  fs::path base = parent;
  if (base.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    base = tmp != nullptr ? tmp : "/tmp";
  }
  std::error_code ec;
  fs::create_directories(base, ec);
  std::string pattern = (base / (prefix + "XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    return io_error("mkdtemp in " + base.string() + ": " + std::strerror(errno));
  }
  TempDir dir;
  dir.path_ = pattern;
  return dir;
}

}  // namespace kevin::sys
