// cuda_device.cu — the CUDA backend of the runner: device memory, one non-blocking harness
// stream, CUDA events for timing, an L2 flush of twice the L2 size (persisting lines reset),
// harness kernels for fills and integrity hashes, and the reset of the candidate's
// __device__/__constant__ variables, whose host shadows the judge names (from the object's
// symbol table): the CUDA runtime says which of them are device variables, and where.
#include <cstdint>
#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "engine/harness_math.h"
#include "engine/runner/device.h"

namespace kevin::runner {
namespace {

constexpr int kThreads = 256;

__global__ void fill32_kernel(uint32_t* p, uint32_t word, size_t words) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < words;
       i += size_t{gridDim.x} * blockDim.x) {
    p[i] = word;
  }
}

__global__ void hash_kernel(const uint8_t* p, size_t bytes, unsigned long long* out) {
  const size_t words = (bytes + 7) / 8;
  uint64_t local = 0;
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < words;
       i += size_t{gridDim.x} * blockDim.x) {
    uint64_t w = 0;
    if (8 * i + 8 <= bytes && (reinterpret_cast<uintptr_t>(p) % 8) == 0) {
      w = reinterpret_cast<const uint64_t*>(p)[i];
    } else {
      for (size_t b = 0; b < 8 && 8 * i + b < bytes; ++b) w |= uint64_t{p[8 * i + b]} << (8 * b);
    }
    local += harness::hash_term(w, i);
  }
  atomicAdd(out, static_cast<unsigned long long>(local));
}

unsigned grid_for(size_t items) {
  const size_t blocks = (items + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 4096 ? (blocks == 0 ? 1 : blocks) : 4096);
}

Status cuda_status(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return Status::ok();
  return unavailable(std::string(what) + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}

class CudaDevice final : public Device {
 public:
  explicit CudaDevice(int ordinal) : ordinal_(ordinal) {}
  ~CudaDevice() override {
    for (void* p : pinned_) cudaHostUnregister(p);
    for (void* p : blocks_) cudaFree(p);
  }

  Status init() override {
    KEVIN_RETURN_IF_ERROR(cuda_status(cudaSetDevice(ordinal_), "cudaSetDevice"));
    cudaDeviceProp prop{};
    KEVIN_RETURN_IF_ERROR(
        cuda_status(cudaGetDeviceProperties(&prop, ordinal_), "cudaGetDeviceProperties"));
    name_ = prop.name;
    // Bound what device-side printf and malloc can take before any candidate code runs.
    cudaDeviceSetLimit(cudaLimitPrintfFifoSize, 1 << 20);
    cudaDeviceSetLimit(cudaLimitMallocHeapSize, 1 << 20);
    // A non-blocking stream: work a candidate puts on any other stream (the legacy default
    // stream included) is not ordered with it, so it escapes the events and is caught by the
    // judge's device-wide clock check and by stream-ordered output checks.
    KEVIN_RETURN_IF_ERROR(cuda_status(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking),
                                      "cudaStreamCreate"));
    KEVIN_RETURN_IF_ERROR(cuda_status(cudaEventCreate(&start_), "cudaEventCreate"));
    KEVIN_RETURN_IF_ERROR(cuda_status(cudaEventCreate(&end_), "cudaEventCreate"));
    flush_bytes_ = 2 * static_cast<size_t>(prop.l2CacheSize > 0 ? prop.l2CacheSize : 64 << 20);
    KEVIN_ASSIGN_OR_RETURN(flush_, alloc(flush_bytes_));
    KEVIN_ASSIGN_OR_RETURN(void* scratch, alloc(sizeof(unsigned long long)));
    hash_out_ = static_cast<unsigned long long*>(scratch);
    // Warm every harness kernel now so lazy module loading never happens under the sandbox;
    // the flush buffer starts zeroed, whatever an earlier process left in that memory.
    fill32(flush_, 0, flush_bytes_);
    (void)hash(flush_, 64);
    mark_start();
    mark_end();
    // The implicit streams are created on first use; create them now, outside the sandbox,
    // so a candidate that launches there gets its off-stream verdict rather than a driver
    // stuck on a refused system call.
    fill32_kernel<<<1, 1, 0, cudaStreamLegacy>>>(static_cast<uint32_t*>(flush_), 0, 1);
    fill32_kernel<<<1, 1, 0, cudaStreamPerThread>>>(static_cast<uint32_t*>(flush_), 0, 1);
    return synchronize();
  }

  std::string name() const override { return name_; }

  Result<void*> alloc(size_t bytes) override {
    void* p = nullptr;
    KEVIN_RETURN_IF_ERROR(
        cuda_status(cudaMalloc(&p, bytes < 256 ? 256 : (bytes + 255) / 256 * 256), "cudaMalloc"));
    blocks_.push_back(p);
    return p;
  }
  Status upload(void* dst, const void* src, size_t bytes) override {
    return cuda_status(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "upload");
  }
  Status download(void* dst, const void* src, size_t bytes) override {
    return cuda_status(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "download");
  }
  void pin_host(void* host, size_t bytes) override {
    if (bytes > 0 && cudaHostRegister(host, bytes, cudaHostRegisterDefault) == cudaSuccess) {
      pinned_.push_back(host);
    } else {
      cudaGetLastError();  // not sticky; clear it so the next check does not see it
    }
  }
  Status download_async(void* dst, const void* src, size_t bytes) override {
    return cuda_status(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_),
                       "download");
  }
  void fill32(void* dst, uint32_t word, size_t bytes) override {
    const size_t words = bytes / 4;
    fill32_kernel<<<grid_for(words), kThreads, 0, stream_>>>(static_cast<uint32_t*>(dst), word,
                                                             words);
  }
  void flush_cache(const std::vector<std::pair<const void*, size_t>>&) override {
    cudaCtxResetPersistingL2Cache();
    cudaMemsetAsync(flush_, static_cast<int>(++flush_round_ & 0xff), flush_bytes_, stream_);
  }
  uint64_t hash(const void* data, size_t bytes) override {
    unsigned long long h = 0;
    cudaMemsetAsync(hash_out_, 0, sizeof h, stream_);
    hash_kernel<<<grid_for((bytes + 7) / 8), kThreads, 0, stream_>>>(
        static_cast<const uint8_t*>(data), bytes, hash_out_);
    cudaMemcpyAsync(&h, hash_out_, sizeof h, cudaMemcpyDeviceToHost, stream_);
    cudaStreamSynchronize(stream_);
    return h;
  }
  Status snapshot_candidate_globals(const std::vector<const void*>& host_shadows) override {
    uint64_t total = 0;
    for (const void* shadow : host_shadows) {
      void* where = nullptr;
      size_t bytes = 0;
      if (cudaGetSymbolAddress(&where, shadow) != cudaSuccess ||
          cudaGetSymbolSize(&bytes, shadow) != cudaSuccess) {
        cudaGetLastError();  // an ordinary host variable: not an error, and not sticky
        continue;
      }
      globals_.push_back({where, total, bytes});
      total += (bytes + 255) / 256 * 256;
    }
    if (total == 0) return Status::ok();
    KEVIN_ASSIGN_OR_RETURN(void* saved, alloc(total));
    saved_globals_ = static_cast<uint8_t*>(saved);
    for (const auto& g : globals_) {
      KEVIN_RETURN_IF_ERROR(cuda_status(cudaMemcpyAsync(saved_globals_ + g.offset, g.device,
                                                        g.bytes, cudaMemcpyDeviceToDevice, stream_),
                                        "snapshot of globals"));
    }
    return synchronize();
  }
  void restore_candidate_globals() override {
    for (const auto& g : globals_) {
      cudaMemcpyAsync(g.device, saved_globals_ + g.offset, g.bytes, cudaMemcpyDeviceToDevice,
                      stream_);
    }
  }
  void* stream() override { return stream_; }
  Status synchronize() override {
    KEVIN_RETURN_IF_ERROR(cuda_status(cudaDeviceSynchronize(), "CUDA error"));
    return cuda_status(cudaGetLastError(), "CUDA error");
  }
  void mark_start() override { cudaEventRecord(start_, stream_); }
  void mark_end() override { cudaEventRecord(end_, stream_); }
  double elapsed_ms() override {
    float ms = 0;
    if (cudaEventElapsedTime(&ms, start_, end_) != cudaSuccess) return -1;
    return ms;
  }
  size_t workspace_bytes() const override { return size_t{256} << 20; }

 private:
  int ordinal_;
  std::string name_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, end_ = nullptr;
  std::vector<void*> blocks_, pinned_;
  void* flush_ = nullptr;
  size_t flush_bytes_ = 0;
  unsigned flush_round_ = 0;
  unsigned long long* hash_out_ = nullptr;
  struct Global {
    void* device;     // the variable in the candidate's module
    uint64_t offset;  // its saved copy in saved_globals_
    size_t bytes;
  };
  std::vector<Global> globals_;
  uint8_t* saved_globals_ = nullptr;
};

}  // namespace

std::unique_ptr<Device> make_cuda_device(int ordinal) {
  return std::make_unique<CudaDevice>(ordinal);
}

}  // namespace kevin::runner
