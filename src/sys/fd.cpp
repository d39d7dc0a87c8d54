// fd.cpp — descriptor helpers over poll/read/write/memfd.
#include <cstdint>
#include "sys/fd.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace kevin::sys {

Fd& Fd::operator=(Fd&& other) noexcept {
  if (this != &other) reset(other.release());
  return *this;
}

void Fd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

Result<Pipe> make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return io_error(std::string("pipe2: ") + std::strerror(errno));
  return Pipe{Fd(fds[0]), Fd(fds[1])};
}

namespace {

// Waits until `fd` is ready for `events`; kDeadlineExceeded on timeout.
Status wait_ready(int fd, short events, Deadline deadline) {
  while (true) {
    pollfd p{fd, events, 0};
    const int r = ::poll(&p, 1, deadline.poll_timeout_ms());
    if (r > 0) return Status::ok();
    if (r == 0) return deadline_exceeded("timed out waiting for peer");
    if (errno != EINTR) return io_error(std::string("poll: ") + std::strerror(errno));
  }
}

}  // namespace

Status write_all(int fd, const void* data, size_t size, Deadline deadline) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (size > 0) {
    KEVIN_RETURN_IF_ERROR(wait_ready(fd, POLLOUT, deadline));
    const ssize_t n = ::write(fd, p, size);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      if (errno == EPIPE) return unavailable("peer closed the channel");
      return io_error(std::string("write: ") + std::strerror(errno));
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
  return Status::ok();
}

Status read_exact(int fd, void* data, size_t size, Deadline deadline) {
  auto* p = static_cast<uint8_t*>(data);
  while (size > 0) {
    KEVIN_RETURN_IF_ERROR(wait_ready(fd, POLLIN, deadline));
    const ssize_t n = ::read(fd, p, size);
    if (n == 0) return unavailable("peer closed the channel");
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return io_error(std::string("read: ") + std::strerror(errno));
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
  return Status::ok();
}

Status read_until_eof(int fd, size_t max_keep, Deadline deadline, std::string* out) {
  bool stopped = false;
  return read_until_eof_or_limit(fd, max_keep, SIZE_MAX, deadline, out, &stopped);
}

Status read_until_eof_or_limit(int fd, size_t max_keep, size_t stop_after, Deadline deadline,
                               std::string* out, bool* stopped) {
  char buf[65536];
  size_t seen = 0;
  *stopped = false;
  while (true) {
    KEVIN_RETURN_IF_ERROR(wait_ready(fd, POLLIN, deadline));
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n == 0) return Status::ok();
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return io_error(std::string("read: ") + std::strerror(errno));
    }
    const size_t room = max_keep > out->size() ? max_keep - out->size() : 0;
    out->append(buf, std::min(room, static_cast<size_t>(n)));
    seen += static_cast<size_t>(n);
    if (seen > stop_after) {
      *stopped = true;
      return Status::ok();
    }
  }
}

Status write_frame(int fd, std::string_view payload, Deadline deadline) {
  if (payload.size() > kMaxFrame) return invalid_argument("frame too large");
  const auto n = static_cast<uint32_t>(payload.size());
  const uint8_t header[4] = {static_cast<uint8_t>(n), static_cast<uint8_t>(n >> 8),
                             static_cast<uint8_t>(n >> 16), static_cast<uint8_t>(n >> 24)};
  KEVIN_RETURN_IF_ERROR(write_all(fd, header, 4, deadline));
  return write_all(fd, payload.data(), payload.size(), deadline);
}

Result<std::string> read_frame(int fd, Deadline deadline) {
  return read_frame(fd, deadline, kMaxFrame);
}

Result<std::string> read_frame(int fd, Deadline deadline, uint32_t max_bytes) {
  uint8_t header[4];
  KEVIN_RETURN_IF_ERROR(read_exact(fd, header, 4, deadline));
  const uint32_t n = uint32_t{header[0]} | (uint32_t{header[1]} << 8) |
                     (uint32_t{header[2]} << 16) | (uint32_t{header[3]} << 24);
  if (n > max_bytes || n > kMaxFrame)
    return invalid_argument("frame of " + std::to_string(n) + " bytes refused");
  std::string payload(n, '\0');
  KEVIN_RETURN_IF_ERROR(read_exact(fd, payload.data(), n, deadline));
  return payload;
}

SharedMemory::SharedMemory(SharedMemory&& other) noexcept
    : fd_(std::move(other.fd_)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      mapped_(std::exchange(other.mapped_, 0)) {}

SharedMemory& SharedMemory::operator=(SharedMemory&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) ::munmap(data_, mapped_);
    fd_ = std::move(other.fd_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    mapped_ = std::exchange(other.mapped_, 0);
  }
  return *this;
}

SharedMemory::~SharedMemory() {
  if (data_ != nullptr) ::munmap(data_, mapped_);
}

Result<SharedMemory> SharedMemory::create(const std::string& name, size_t size) {
  const int fd = ::memfd_create(name.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return io_error(std::string("memfd_create: ") + std::strerror(errno));
  Fd owned(fd);
  if (::ftruncate(fd, static_cast<off_t>(size)) != 0) {
    return io_error("cannot size shared memory to " + std::to_string(size) +
                    " bytes: " + std::strerror(errno));
  }
  if (::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    return io_error(std::string("cannot seal shared memory: ") + std::strerror(errno));
  }
  return map_fd(owned.release(), size, true);
}

Result<SharedMemory> SharedMemory::map_fd(int fd, size_t size, bool writable) {
  SharedMemory shm;
  shm.fd_.reset(fd);
  shm.size_ = size;
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  shm.mapped_ = std::max(page, (size + page - 1) / page * page);
  const int prot = PROT_READ | (writable ? PROT_WRITE : 0);
  void* p = ::mmap(nullptr, shm.mapped_, prot, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    shm.mapped_ = 0;
    return io_error("mmap of " + std::to_string(size) + " bytes failed: " + std::strerror(errno));
  }
  shm.data_ = static_cast<uint8_t*>(p);
  return shm;
}

}  // namespace kevin::sys
