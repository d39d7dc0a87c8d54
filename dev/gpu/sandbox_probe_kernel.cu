// sandbox_probe_kernel.cu — the stand-in "candidate" that dev/gpu/sandbox_probe.cu loads
// under its sandbox: a kernel reading a __device__ and a __constant__ global, and one that
// calls device-side malloc. Not part of the product; see sandbox_probe.sh.
#include <cuda_runtime.h>

__device__ float g_table[256];
__constant__ float c_scale[4];

__global__ void probe_add(const float* a, float* out, long n) {
  const long i = blockIdx.x * 256L + threadIdx.x;
  if (i < n) out[i] = a[i] + g_table[i % 256] + c_scale[0];
}

__global__ void probe_device_malloc(int* got_memory) {
  void* p = malloc(64);
  *got_memory = p != nullptr;
  if (p != nullptr) free(p);
}

extern "C" int probe_entry(void* stream, const float* a, float* out, long n, int* flag) {
  const auto s = static_cast<cudaStream_t>(stream);
  probe_add<<<(n + 255) / 256, 256, 0, s>>>(a, out, n);
  probe_device_malloc<<<1, 1, 0, s>>>(flag);
  return static_cast<int>(cudaGetLastError());
}
