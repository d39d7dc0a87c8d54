// host_kernels.cpp — scalar host versions of the harness kernels; must match the CUDA ones.
#include <cstdint>
#include "engine/runner/host_kernels.h"

#include <immintrin.h>

#include <cmath>
#include <cstring>

#include "engine/harness_math.h"

namespace kevin::runner {

void host_fill32(void* dst, uint32_t word, size_t bytes) {
  auto* p = static_cast<uint8_t*>(dst);
  size_t i = 0;
  for (; i + 4 <= bytes; i += 4) std::memcpy(p + i, &word, 4);
  for (size_t k = 0; i < bytes; ++i, ++k) p[i] = static_cast<uint8_t>(word >> (8 * k));
}

namespace {

constexpr size_t kLine = 64;

__attribute__((target("clflushopt"))) void evict_in_parallel(const char* p, size_t bytes) {
  for (size_t at = 0; at < bytes; at += kLine) _mm_clflushopt(const_cast<char*>(p + at));
}

}  // namespace

void host_evict(const void* data, size_t bytes) {
  static const bool parallel = __builtin_cpu_supports("clflushopt");
  const auto* p = static_cast<const char*>(data);
  if (parallel) {
    evict_in_parallel(p, bytes);
  } else {
    for (size_t at = 0; at < bytes; at += kLine) _mm_clflush(p + at);
  }
  _mm_mfence();
}

uint64_t host_hash(const void* data, size_t bytes) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint64_t h = 0;
  const size_t words = bytes / 8;
  for (size_t i = 0; i < words; ++i) {
    uint64_t w;
    std::memcpy(&w, p + 8 * i, 8);
    h += harness::hash_term(w, i);
  }
  if (bytes % 8 != 0) {
    uint64_t w = 0;
    std::memcpy(&w, p + 8 * words, bytes % 8);
    h += harness::hash_term(w, words);
  }
  return h;
}

namespace {

float half_to_float(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {
    exp = 113;
    while ((mant & 0x400u) == 0) {
      mant <<= 1;
      --exp;
    }
    bits = sign | (exp << 23) | ((mant & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

float bf16_to_float(uint16_t b) {
  const uint32_t bits = uint32_t{b} << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

template <typename T>
T load(const void* data, uint64_t i) {
  T v;
  std::memcpy(&v, static_cast<const uint8_t*>(data) + i * sizeof(T), sizeof(T));
  return v;
}

}  // namespace

double load_as_double(const void* data, int32_t dtype, uint64_t i) {
  switch (dtype) {
    case 0:
      return static_cast<double>(load<float>(data, i));
    case 1:
      return static_cast<double>(half_to_float(load<uint16_t>(data, i)));
    case 2:
      return static_cast<double>(bf16_to_float(load<uint16_t>(data, i)));
    case 3:
      return load<double>(data, i);
    case 4:
      return load<int8_t>(data, i);
    case 5:
      return load<uint8_t>(data, i);
    case 6:
      return load<int16_t>(data, i);
    case 7:
      return load<int32_t>(data, i);
    case 8:
      return static_cast<double>(load<int64_t>(data, i));
    case 9:
      return load<uint8_t>(data, i);
    default:
      return std::nan("");
  }
}

}  // namespace kevin::runner
