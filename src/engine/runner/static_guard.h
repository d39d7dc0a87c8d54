// static_guard.h — resets a loaded candidate's writable static storage (.data, .bss, minus
// the read-only-after-relocation part) to its state right after loading, before every call,
// so no host-side state (caches, call counters) survives from one call to the next.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace kevin::runner {

class StaticGuard {
 public:
  // Snapshots the writable segments of the already-loaded object whose path is `path`.
  static Result<StaticGuard> snapshot(const std::string& path);
  // Copies the snapshot back.
  void restore() const;
  uint64_t bytes() const;

 private:
  struct Range {
    uint8_t* start;
    std::vector<uint8_t> saved;
  };
  std::vector<Range> ranges_;
};

}  // namespace kevin::runner
