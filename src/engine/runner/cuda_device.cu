// cuda_device.cu — the CUDA backend of the runner: device memory, one blocking harness
// stream, CUDA events for timing, an L2 flush of twice the L2 size (persisting lines reset),
// and harness kernels for fills, integrity hashes and fingerprints.
#include <cstdint>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
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

__device__ double load_element(const void* data, int32_t dtype, uint64_t i) {
  switch (dtype) {
    case 0: return static_cast<const float*>(data)[i];
    case 1: return __half2float(reinterpret_cast<const __half*>(data)[i]);
    case 2: return __bfloat162float(reinterpret_cast<const __nv_bfloat16*>(data)[i]);
    case 3: return static_cast<const double*>(data)[i];
    case 4: return static_cast<const int8_t*>(data)[i];
    case 5: return static_cast<const uint8_t*>(data)[i];
    case 6: return static_cast<const int16_t*>(data)[i];
    case 7: return static_cast<const int32_t*>(data)[i];
    case 8: return static_cast<double>(static_cast<const long long*>(data)[i]);
    case 9: return static_cast<const uint8_t*>(data)[i];
    default: return nan("");
  }
}

struct DeviceFingerprint {
  double weighted_sum;
  double abs_sum;
  unsigned long long nonfinite;
};

__global__ void fingerprint_kernel(const void* data, int32_t dtype, uint64_t count,
                                   uint64_t seed, uint64_t offset, DeviceFingerprint* out) {
  double weighted = 0, abs_sum = 0;
  unsigned long long bad = 0;
  for (uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; i < count;
       i += uint64_t{gridDim.x} * blockDim.x) {
    const double v = load_element(data, dtype, i);
    if (!isfinite(v)) {
      ++bad;
    } else {
      weighted += harness::fingerprint_weight(seed, offset + i) * v;
      abs_sum += fabs(v);
    }
  }
  atomicAdd(&out->weighted_sum, weighted);
  atomicAdd(&out->abs_sum, abs_sum);
  atomicAdd(&out->nonfinite, bad);
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
    KEVIN_RETURN_IF_ERROR(cuda_status(cudaGetDeviceProperties(&prop, ordinal_), "cudaGetDeviceProperties"));
    name_ = prop.name;
    // Bound what device-side printf and malloc can take before any candidate code runs.
    cudaDeviceSetLimit(cudaLimitPrintfFifoSize, 1 << 20);
    cudaDeviceSetLimit(cudaLimitMallocHeapSize, 1 << 20);
    // A non-blocking stream: work a candidate puts on any other stream (the legacy default
    // stream included) is not ordered with it, so it escapes the events and is caught by the
    // judge's device-wide clock check and by stream-ordered output checks.
    KEVIN_RETURN_IF_ERROR(cuda_status(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate"));
    KEVIN_RETURN_IF_ERROR(cuda_status(cudaEventCreate(&start_), "cudaEventCreate"));
    KEVIN_RETURN_IF_ERROR(cuda_status(cudaEventCreate(&end_), "cudaEventCreate"));
    flush_bytes_ = 2 * static_cast<size_t>(prop.l2CacheSize > 0 ? prop.l2CacheSize : 64 << 20);
    KEVIN_ASSIGN_OR_RETURN(flush_, alloc(flush_bytes_));
    KEVIN_ASSIGN_OR_RETURN(void* scratch, alloc(sizeof(unsigned long long)));
    hash_out_ = static_cast<unsigned long long*>(scratch);
    // Warm every harness kernel now so lazy module loading never happens under the sandbox.
    fill32(flush_, 0, 256);
    (void)hash(flush_, 64);
    KEVIN_RETURN_IF_ERROR(reset_fingerprints(1));
    fingerprint(flush_, 0, 16, 1, 0, 0);
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
    KEVIN_RETURN_IF_ERROR(cuda_status(cudaMalloc(&p, bytes < 256 ? 256 : (bytes + 255) / 256 * 256), "cudaMalloc"));
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
    return cuda_status(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_), "download");
  }
  void fill32(void* dst, uint32_t word, size_t bytes) override {
    const size_t words = bytes / 4;
    fill32_kernel<<<grid_for(words), kThreads, 0, stream_>>>(static_cast<uint32_t*>(dst), word, words);
  }
  void flush_cache() override {
    cudaCtxResetPersistingL2Cache();
    cudaMemsetAsync(flush_, static_cast<int>(++flush_round_ & 0xff), flush_bytes_, stream_);
  }
  uint64_t hash(const void* data, size_t bytes) override {
    unsigned long long h = 0;
    cudaMemsetAsync(hash_out_, 0, sizeof h, stream_);
    hash_kernel<<<grid_for((bytes + 7) / 8), kThreads, 0, stream_>>>(static_cast<const uint8_t*>(data), bytes, hash_out_);
    cudaMemcpyAsync(&h, hash_out_, sizeof h, cudaMemcpyDeviceToHost, stream_);
    cudaStreamSynchronize(stream_);
    return h;
  }
  Status reset_fingerprints(size_t slots) override {
    if (slots > print_slots_) {
      KEVIN_ASSIGN_OR_RETURN(void* p, alloc(slots * sizeof(DeviceFingerprint)));
      prints_ = static_cast<DeviceFingerprint*>(p);
      print_slots_ = slots;
    }
    return cuda_status(cudaMemsetAsync(prints_, 0, slots * sizeof(DeviceFingerprint), stream_), "memset");
  }
  void fingerprint(const void* data, int32_t dtype, uint64_t count, uint64_t seed,
                   uint64_t index_offset, size_t slot) override {
    fingerprint_kernel<<<grid_for(count), kThreads, 0, stream_>>>(data, dtype, count, seed, index_offset, prints_ + slot);
  }
  Result<std::vector<Fingerprint>> fingerprints(size_t slots) override {
    std::vector<DeviceFingerprint> raw(slots);
    KEVIN_RETURN_IF_ERROR(cuda_status(cudaMemcpy(raw.data(), prints_, slots * sizeof(DeviceFingerprint), cudaMemcpyDeviceToHost), "fingerprints"));
    std::vector<Fingerprint> out(slots);
    for (size_t i = 0; i < slots; ++i) out[i] = {raw[i].weighted_sum, raw[i].abs_sum, raw[i].nonfinite};
    return out;
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
  DeviceFingerprint* prints_ = nullptr;
  size_t print_slots_ = 0;
};

}  // namespace

std::unique_ptr<Device> make_cuda_device(int ordinal) { return std::make_unique<CudaDevice>(ordinal); }

}  // namespace kevin::runner
