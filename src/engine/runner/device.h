// device.h — what the candidate runner needs from a backend (CPU memory and clocks, or a
// CUDA device): memory, fills, integrity hashes, cache flushing, timing and the reset of a
// loaded candidate's device-side globals. The runner's protocol logic is written once
// against this interface.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace kevin::runner {

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
  // Makes the next call start cold: the call's own buffers (`regions`) out of every cache
  // level the harness can reach (CPU: flushed line by line), or the whole last-level cache
  // (CUDA: a buffer of twice its size written on the stream, persisting lines reset).
  virtual void flush_cache(const std::vector<std::pair<const void*, size_t>>& regions) = 0;
  // Integrity hash of a buffer (harness::hash_term summed over 8-byte words, zero padded).
  virtual uint64_t hash(const void* data, size_t bytes) = 0;
  // After the candidate is loaded: copies its device-side globals (CUDA __device__ and
  // __constant__ variables) aside. `host_shadows` are candidate data addresses, some of them
  // such variables' host shadows (the others are skipped). Errors: the device fails.
  virtual Status snapshot_candidate_globals(const std::vector<const void*>& host_shadows) = 0;
  // Before every call: queues the copy of those globals back, so no device-side state
  // survives from one call to the next.
  virtual void restore_candidate_globals() = 0;

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
