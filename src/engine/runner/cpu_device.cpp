// cpu_device.cpp — the CPU backend of the runner: host memory, steady-clock timing, and cache
// flushes of exactly the call's buffers (a sweep of a buffer the size of the last-level cache
// would cost milliseconds per call, with a variance that would blur the judge's clock).
#include <cstdint>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <vector>

#include "engine/harness_math.h"
#include "engine/runner/device.h"
#include "engine/runner/host_kernels.h"

namespace kevin::runner {
namespace {

class CpuDevice final : public Device {
 public:
  ~CpuDevice() override {
    for (void* p : blocks_) std::free(p);
  }
  Status init() override { return Status::ok(); }
  std::string name() const override { return "cpu"; }
  Result<void*> alloc(size_t bytes) override {
    void* p = std::aligned_alloc(256, (std::max<size_t>(bytes, 1) + 255) / 256 * 256);
    if (p == nullptr)
      return unavailable("host allocation of " + std::to_string(bytes) + " bytes failed");
    blocks_.push_back(p);
    return p;
  }
  Status upload(void* dst, const void* src, size_t bytes) override {
    std::memcpy(dst, src, bytes);
    return Status::ok();
  }
  Status download(void* dst, const void* src, size_t bytes) override {
    std::memcpy(dst, src, bytes);
    return Status::ok();
  }
  void pin_host(void*, size_t) override {}  // host memory is the device's own
  Status download_async(void* dst, const void* src, size_t bytes) override {
    return download(dst, src, bytes);
  }
  void fill32(void* dst, uint32_t word, size_t bytes) override { host_fill32(dst, word, bytes); }
  void flush_cache(const std::vector<std::pair<const void*, size_t>>& regions) override {
    for (const auto& [start, bytes] : regions) host_evict(start, bytes);
  }
  uint64_t hash(const void* data, size_t bytes) override { return host_hash(data, bytes); }
  // Host statics are the StaticGuard's; a CPU candidate has no device-side globals.
  Status snapshot_candidate_globals(const std::vector<const void*>&) override {
    return Status::ok();
  }
  void restore_candidate_globals() override {}
  void* stream() override { return nullptr; }
  Status synchronize() override { return Status::ok(); }
  void mark_start() override { start_ = std::chrono::steady_clock::now(); }
  void mark_end() override { end_ = std::chrono::steady_clock::now(); }
  double elapsed_ms() override {
    return std::chrono::duration<double, std::milli>(end_ - start_).count();
  }
  size_t workspace_bytes() const override { return size_t{16} << 20; }

 private:
  std::vector<void*> blocks_;
  std::chrono::steady_clock::time_point start_, end_;
};

}  // namespace

std::unique_ptr<Device> make_cpu_device() { return std::make_unique<CpuDevice>(); }

}  // namespace kevin::runner
