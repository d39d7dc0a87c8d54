// gpu_bench.h — what the GPU benchmarks (train_32b, generation_bench) share: `MODE [ARG]
// --flag N ...` command lines, a wall clock, and the CUDA allocator's peak. Needs the CUDA
// build of libtorch (libc10_cuda).
#pragma once

#include <c10/cuda/CUDACachingAllocator.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <string>

namespace kevin::bench {

inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// argv[1] the mode; then `--name N` integer flags, `--from DIR` or a bare DIR.
struct Args {
  std::string mode, dir;
  std::map<std::string, int64_t> flags;
  int64_t get(const std::string& name, int64_t fallback) const {
    const auto it = flags.find(name);
    return it == flags.end() ? fallback : it->second;
  }
};

// std::stoll throws on a flag value that is not a number: a usage error of a benchmark.
inline Args parse_args(int argc, char** argv) {
  Args a;
  a.mode = argc > 1 ? argv[1] : "";
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--from" && i + 1 < argc) {
      a.dir = argv[++i];
    } else if (arg.rfind("--", 0) == 0 && i + 1 < argc) {
      a.flags[arg.substr(2)] = std::stoll(argv[++i]);
    } else {
      a.dir = arg;
    }
  }
  return a;
}

inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Peak bytes allocated on GPU 0 since the start or the last reset, in GiB.
inline double peak_gpu_gib() {
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(0);
  return static_cast<double>(stats.allocated_bytes[0].peak) / kGiB;
}

inline void reset_gpu_peak() { c10::cuda::CUDACachingAllocator::resetPeakStats(0); }

}  // namespace kevin::bench
