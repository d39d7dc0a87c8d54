// static_guard.h — resets a loaded candidate's writable static storage (.data, .bss, minus
// the read-only-after-relocation part) to its state right after loading, before every call,
// so no host-side state (caches, call counters) survives from one call to the next.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/status.h"

namespace kevin::runner {

class StaticGuard {
 public:
  // Snapshots the writable segments of the already-loaded object whose path is `path` into
  // pages of their own that are then made read-only: a candidate that writes into the
  // snapshot (to have a takeover restored after every call) faults, and once the runner is
  // sealed it cannot make them writable again (no mprotect). Call it before seal(). Errors:
  // the object is not loaded, or the pages cannot be mapped or protected.
  static Result<StaticGuard> snapshot(const std::string& path);
  StaticGuard(StaticGuard&& other) noexcept;
  StaticGuard& operator=(StaticGuard&&) = delete;
  StaticGuard(const StaticGuard&) = delete;
  ~StaticGuard();

  // Copies the snapshot back.
  void restore() const;
  uint64_t bytes() const;

 private:
  StaticGuard() = default;
  // One writable range of the object; the snapshot image starts with these, its bytes follow.
  struct Range {
    uint8_t* start;
    uint64_t bytes;
  };
  const Range* ranges() const { return static_cast<const Range*>(image_); }

  void* image_ = nullptr;  // the read-only snapshot: ranges, then their saved bytes
  size_t image_bytes_ = 0;
  size_t count_ = 0;
};

}  // namespace kevin::runner
