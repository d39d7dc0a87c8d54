// fd.h — file descriptors and byte channels: an owning Fd, close-on-exec pipes, reads and
// writes bounded by deadlines, length-prefixed frames, and shared memory (memfd) regions
// that a parent and a child map at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "core/status.h"
#include "sys/process.h"

namespace kevin::sys {

// Owns one descriptor; closes it on destruction.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void reset(int fd = -1);
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_ = -1;
};

struct Pipe {
  Fd read;
  Fd write;
};

// A close-on-exec pipe.
Result<Pipe> make_pipe();

// Writes all bytes; kDeadlineExceeded if the reader stalls past the deadline, kUnavailable if
// it has gone (EPIPE).
Status write_all(int fd, const void* data, size_t size, Deadline deadline);
// Reads exactly `size` bytes. End of stream first → kUnavailable ("closed").
Status read_exact(int fd, void* data, size_t size, Deadline deadline);
// Reads until end of stream, keeping at most `max_keep` bytes in *out (the rest is read and
// dropped so a flooding writer cannot block itself or grow our memory).
Status read_until_eof(int fd, size_t max_keep, Deadline deadline, std::string* out);
// The same, but stops reading once more than `stop_after` bytes have arrived and sets
// *stopped (the caller then ends the writer, which may be flooding on purpose).
Status read_until_eof_or_limit(int fd, size_t max_keep, size_t stop_after, Deadline deadline,
                               std::string* out, bool* stopped);

// Frames: a 4-byte little-endian length, then the payload (at most kMaxFrame bytes).
inline constexpr uint32_t kMaxFrame = 64u << 20;
Status write_frame(int fd, std::string_view payload, Deadline deadline);
Result<std::string> read_frame(int fd, Deadline deadline);
// read_frame for an untrusted writer: a frame announced larger than `max_bytes` is refused
// (kInvalidArgument) before anything is allocated for it.
Result<std::string> read_frame(int fd, Deadline deadline, uint32_t max_bytes);

// An anonymous shared-memory file (memfd) of a fixed size, mapped read-write here. Its fd can
// be handed to a child, which maps the same pages.
class SharedMemory {
 public:
  SharedMemory() = default;
  SharedMemory(SharedMemory&& other) noexcept;
  SharedMemory& operator=(SharedMemory&& other) noexcept;
  SharedMemory(const SharedMemory&) = delete;
  SharedMemory& operator=(const SharedMemory&) = delete;
  ~SharedMemory();

  // Creates a region of `size` bytes (rounded up to a page; size 0 allowed). Its size is
  // sealed: whoever else holds the descriptor cannot shrink or grow it (which would make
  // our mapping fault).
  static Result<SharedMemory> create(const std::string& name, size_t size);
  // Maps an existing memfd/file descriptor (taking ownership) of `size` bytes; read-only
  // when `writable` is false.
  static Result<SharedMemory> map_fd(int fd, size_t size, bool writable);

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  int fd() const { return fd_.get(); }

 private:
  Fd fd_;
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  size_t mapped_ = 0;
};

}  // namespace kevin::sys
