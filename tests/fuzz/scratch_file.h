// scratch_file.h — a fuzz target's private scratch folder, for parsers that read a path (an
// mmap, a folder of files) rather than bytes: the target writes each input there first.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include "sys/tempdir.h"

namespace kevin::fuzz {

// Writes `bytes` to `name` in this process's scratch folder (removed at exit) and returns its
// path. A new file each time, never synced: ext4 starts writing back a file truncated and
// rewritten in place as it is closed, and thousands of inputs a second must not wait on the
// disk. A failure here is the harness's, not the parser's, so it aborts.
inline std::filesystem::path write_scratch_file(const std::string& name, std::string_view bytes) {
  static const sys::TempDir dir = [] {
    auto created = sys::TempDir::create("kevin-fuzz-");
    if (!created.is_ok()) {
      std::fprintf(stderr, "fuzz scratch folder: %s\n", created.status().message().c_str());
      std::abort();
    }
    return std::move(created).value();
  }();
  const std::filesystem::path path = dir.path() / name;
  std::error_code ignored;
  std::filesystem::remove(path, ignored);
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) {
    std::fprintf(stderr, "fuzz scratch file %s could not be written\n", path.c_str());
    std::abort();
  }
  return path;
}

}  // namespace kevin::fuzz
