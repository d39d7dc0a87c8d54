// file.h — whole-file reads and atomic whole-file writes, errors as values.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

#include "core/status.h"

namespace kevin {

// Reads a whole file. Missing → kNotFound; a directory or unreadable file → kIoError; larger
// than max_bytes → kInvalidArgument (the file is not read).
Result<std::string> read_file(const std::filesystem::path& path,
                              size_t max_bytes = size_t{1} << 30);

// Writes `data` to `path` atomically: a unique temporary file in the same directory, flushed,
// then renamed over `path`, so readers see the old or the new contents, never a mix, and
// concurrent writers of the same content are safe. Creates missing parent directories.
Status write_file_atomic(const std::filesystem::path& path, std::string_view data);

}  // namespace kevin
