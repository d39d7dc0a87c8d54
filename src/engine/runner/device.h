// device.h — what the candidate runner needs from a backend (CPU memory and clocks, or a
// CUDA device): memory, fills, integrity hashes, output fingerprints, cache flushing and
// timing. The runner's protocol logic is written once against this interface.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace kevin::runner {

// Weighted sum and non-finite count of one output tensor (see harness_math.h).
struct Fingerprint {
  double weighted_sum = 0;
  double abs_sum = 0;
  uint64_t nonfinite = 0;
};

class Device {
 public:
  virtual ~Device() = default;

  // Called once before anything else (CUDA: selects the device, creates the stream).
  virtual Status init() = 0;
  virtual std::string name() const = 0;
  // Memory the candidate sees (device memory on CUDA). Owned by the Device; freed with it.
  virtual Result<void*> alloc(size_t bytes) = 0;
  virtual Status upload(void* dst, const void* src, size_t bytes) = 0;
  virtual Status download(void* dst, const void* src, size_t bytes) = 0;
  // Page-locks host memory the harness downloads into many times, so those copies run at
  // DMA speed. Best effort: on failure (or on CPU) copies stay pageable and correct.
  virtual void pin_host(void* host, size_t bytes) = 0;
  // Queues a device-to-host copy on the harness stream (ordered after work on that stream
  // only); complete after synchronize().
  virtual Status download_async(void* dst, const void* src, size_t bytes) = 0;
  // Fills `bytes` (a multiple of 4) at dst with a repeated 32-bit word, on the stream.
  virtual void fill32(void* dst, uint32_t word, size_t bytes) = 0;
  // Evicts the last-level cache (writes a buffer of twice its size), on the stream.
  virtual void flush_cache() = 0;
  // Integrity hash of a buffer (harness::hash_term summed over 8-byte words, zero padded).
  virtual uint64_t hash(const void* data, size_t bytes) = 0;
  // Queues the fingerprint of `count` elements of `dtype` whose global element index starts
  // at `index_offset`, accumulating into result slot `slot` (read with fingerprints()).
  virtual void fingerprint(const void* data, int32_t dtype, uint64_t count, uint64_t seed,
                           uint64_t index_offset, size_t slot) = 0;
  // Prepares `slots` zeroed fingerprint accumulators.
  virtual Status reset_fingerprints(size_t slots) = 0;
  virtual Result<std::vector<Fingerprint>> fingerprints(size_t slots) = 0;

  // The stream handed to the candidate (NULL on CPU).
  virtual void* stream() = 0;
  // Waits for all device work; returns the device's error (sticky CUDA errors included).
  virtual Status synchronize() = 0;
  // Timing of one call: mark_start right before it, mark_end right after it returns.
  virtual void mark_start() = 0;
  virtual void mark_end() = 0;
  // Milliseconds between the last marks (after synchronize()).
  virtual double elapsed_ms() = 0;
  // Workspace size handed to candidates on this backend.
  virtual size_t workspace_bytes() const = 0;
};

std::unique_ptr<Device> make_cpu_device();
#if defined(KEVIN_RUNNER_CUDA)
// `ordinal` is the CUDA device index within the runner's visible devices.
std::unique_ptr<Device> make_cuda_device(int ordinal);
#endif

}  // namespace kevin::runner
