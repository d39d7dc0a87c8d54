// harness_math.h — the arithmetic the runner and the judge must agree on bit for bit:
// poison patterns and the input-integrity hash. Header-only
// and usable from CUDA device code (nvcc) and host C++ alike.
#pragma once

#include <stdint.h>

#if defined(__CUDACC__)
#define KEVIN_HD __host__ __device__ __forceinline__
#else
#define KEVIN_HD inline
#endif

namespace kevin::harness {

// SplitMix64 finaliser: a bijective 64-bit mixer.
KEVIN_HD uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

// Contribution of the i-th 8-byte word to a buffer's hash. The hash is the wrapping sum of
// all contributions, so any order (parallel reduction) gives the same value; the index is
// mixed in so swapped words change it.
KEVIN_HD uint64_t hash_term(uint64_t word, uint64_t index) {
  return mix64(word ^ (index * 0x9e3779b97f4a7c15ull) ^ 0x6b657669ull);
}

// A 32-bit fill word that reads as NaN in every lane for floating dtypes (numbering as in
// kevin_abi.h), and as an unusual value for integers (0xA5-style bytes for bool, never 0/1).
KEVIN_HD uint32_t poison_word(int32_t dtype, uint32_t seed) {
  switch (dtype) {
    case 0:
      return 0x7fc00000u | (seed & 0x3fffffu) | 1u;  // f32
    case 1: {
      uint32_t h = 0x7e00u | (seed & 0x1ffu) | 1u;
      return h | (h << 16);
    }  // f16
    case 2: {
      uint32_t h = 0x7fc0u | (seed & 0x3fu) | 1u;
      return h | (h << 16);
    }  // bf16
    case 3:
      return 0x7ff80000u | (seed & 0x7ffffu) | 1u;  // f64 (both halves NaN)
    case 9: {
      uint32_t b = 2u + (seed % 250u);
      return b * 0x01010101u;
    }  // bool
    default:
      return seed | 0x80000001u;  // integers
  }
}

}  // namespace kevin::harness
