// tempdir.h — a private temporary directory removed with everything in it on destruction.
#pragma once

#include <filesystem>
#include <string>
#include <utility>

#include "core/status.h"

namespace kevin::sys {

class TempDir {
 public:
  TempDir() = default;
  TempDir(TempDir&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }
  TempDir& operator=(TempDir&& other) noexcept;
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir();

  // Creates <parent>/<prefix>XXXXXX with mode 0700 (parent defaults to $TMPDIR or /tmp).
  static Result<TempDir> create(const std::string& prefix,
                                const std::filesystem::path& parent = {});
  const std::filesystem::path& path() const { return path_; }
  // Stops owning the directory (it is no longer removed) and returns its path, e.g. before
  // renaming it somewhere permanent.
  std::filesystem::path release() { return std::exchange(path_, {}); }

 private:
  std::filesystem::path path_;
};

}  // namespace kevin::sys
