// file.cpp — file helpers over POSIX calls (for fsync and O_EXCL temp names).
#include "core/file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <system_error>

namespace kevin {
namespace fs = std::filesystem;

Result<std::string> read_file(const fs::path& path, size_t max_bytes) {
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (ec || !fs::exists(status)) return not_found("no such file: " + path.string());
  if (fs::is_directory(status)) return io_error("is a directory: " + path.string());
  const auto size = fs::file_size(path, ec);
  if (ec) return io_error("cannot stat " + path.string() + ": " + ec.message());
  if (size > max_bytes) {
    return invalid_argument(path.string() + " is " + std::to_string(size) + " bytes (limit " +
                            std::to_string(max_bytes) + ")");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return io_error("cannot open " + path.string() + ": " + std::strerror(errno));
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) return io_error("cannot read " + path.string());
  return buf.str();
}

namespace {

std::string random_suffix() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return std::to_string(rng());
}

Status write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return io_error(std::string("write failed: ") + std::strerror(errno));
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Status::ok();
}

}  // namespace

Status write_file_atomic(const fs::path& path, std::string_view data) {
  std::error_code ec;
  if (path.has_parent_path()) {
    fs::create_directories(path.parent_path(), ec);
    if (ec) return io_error("cannot create " + path.parent_path().string() + ": " + ec.message());
  }
  const fs::path tmp = path.string() + ".tmp." + random_suffix();
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return io_error("cannot create " + tmp.string() + ": " + std::strerror(errno));
  Status status = write_all(fd, data);
  if (status.is_ok() && ::fsync(fd) != 0)
    status = io_error("fsync failed: " + std::string(std::strerror(errno)));
  ::close(fd);
  if (status.is_ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    status = io_error("cannot rename to " + path.string() + ": " + std::strerror(errno));
  }
  if (!status.is_ok()) ::unlink(tmp.c_str());
  return status.with_context(path.string());
}

}  // namespace kevin
