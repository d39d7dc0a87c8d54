// cpu_device.cpp — the CPU backend of the runner: host memory, steady-clock timing and a
// cache-flush buffer twice the last-level cache.
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

// Twice the last-level cache a core can use, capped: virtual machines often report the
// whole host's L3 (hundreds of MiB), which would make every flush cost more than the call.
size_t flush_bytes() {
  constexpr size_t kCap = size_t{64} << 20;
  long llc = ::sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (llc <= 0) llc = ::sysconf(_SC_LEVEL2_CACHE_SIZE);
  const size_t bytes = llc > 0 ? 2 * static_cast<size_t>(llc) : kCap;
  return std::min(bytes, kCap);
}

class CpuDevice final : public Device {
 public:
  ~CpuDevice() override {
    for (void* p : blocks_) std::free(p);
  }
  Status init() override {
    flush_.assign(flush_bytes() / sizeof(uint64_t), 0);
    return Status::ok();
  }
  std::string name() const override { return "cpu"; }
  Result<void*> alloc(size_t bytes) override {
    void* p = std::aligned_alloc(256, (std::max<size_t>(bytes, 1) + 255) / 256 * 256);
    if (p == nullptr) return unavailable("host allocation of " + std::to_string(bytes) + " bytes failed");
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
  void flush_cache() override {
    ++flush_round_;
    for (auto& v : flush_) v += flush_round_;
  }
  uint64_t hash(const void* data, size_t bytes) override { return host_hash(data, bytes); }
  Status reset_fingerprints(size_t slots) override {
    prints_.assign(slots, Fingerprint{});
    return Status::ok();
  }
  void fingerprint(const void* data, int32_t dtype, uint64_t count, uint64_t seed,
                   uint64_t index_offset, size_t slot) override {
    const Fingerprint f = host_fingerprint(data, dtype, count, seed, index_offset);
    prints_[slot].weighted_sum += f.weighted_sum;
    prints_[slot].abs_sum += f.abs_sum;
    prints_[slot].nonfinite += f.nonfinite;
  }
  Result<std::vector<Fingerprint>> fingerprints(size_t slots) override {
    if (slots > prints_.size()) return internal_error("fingerprint slots out of range");
    return std::vector<Fingerprint>(prints_.begin(), prints_.begin() + static_cast<long>(slots));
  }
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
  std::vector<uint64_t> flush_;
  uint64_t flush_round_ = 0;
  std::vector<Fingerprint> prints_;
  std::chrono::steady_clock::time_point start_, end_;
};

}  // namespace

std::unique_ptr<Device> make_cpu_device() { return std::make_unique<CpuDevice>(); }

}  // namespace kevin::runner
