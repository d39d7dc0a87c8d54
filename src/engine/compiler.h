// compiler.h — the compile driver: builds one candidate source into a shared object with
// harness-fixed flags (nvcc for CUDA, g++ for CPU) behind a content-addressed cache.
// The cache key hashes (source, ABI version, compiler version, flags, arch); entries are
// written to a private temporary directory and renamed into place, so concurrent builders
// of the same source are safe and readers never see half an entry. Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "engine/backend.h"

namespace kevin::engine {

struct CompilerConfig {
  Backend backend = Backend::kCuda;
  std::filesystem::path cache_dir;        // entries go under <cache_dir>/builds
  std::filesystem::path abi_include_dir;  // folder holding kevin_abi.h
  std::string cuda_arch = "sm_90a";
  std::filesystem::path nvcc = "nvcc";    // resolved on PATH or /usr/local/cuda/bin if relative
  std::filesystem::path gxx = "g++";
  std::chrono::seconds timeout{180};
  size_t max_log_bytes = 6000;            // compiler diagnostics kept for feedback
};

struct BuildResult {
  bool ok = false;                        // false: the source did not compile (see log)
  std::string log;                        // compiler diagnostics, truncated, paths scrubbed
  std::filesystem::path object;           // the shared object when ok
  std::string key;                        // cache key (hex SHA-256)
  double compile_ms = 0;                  // time spent now: the build, or the cache lookup on a hit
  bool cache_hit = false;
  uint64_t device_global_bytes = 0;       // __device__ storage reported by ptxas
};

class CompileDriver {
 public:
  // Resolves the compiler and reads its version. kNotFound if the compiler is missing.
  static Result<CompileDriver> create(CompilerConfig config);

  // Builds `source` (or returns the cached build). A compile failure is a BuildResult with
  // ok = false; an error Status means our side failed (cache not writable, compiler crashed
  // to start, timeout of the compiler → reported as a failed build with a log).
  Result<BuildResult> build(std::string_view source) const;

  const CompilerConfig& config() const { return config_; }
  const std::string& compiler_version() const { return compiler_version_; }
  // The full flag list, as part of the cache key and for docs.
  std::vector<std::string> flags() const;

 private:
  CompileDriver(CompilerConfig config, std::string version)
      : config_(std::move(config)), compiler_version_(std::move(version)) {}
  std::string cache_key(std::string_view source) const;

  CompilerConfig config_;
  std::string compiler_version_;
};

// Keeps the start of a compiler log (the first errors are the useful ones), at most
// `max_bytes`, cut at a line boundary, noting how much was dropped. Also replaces
// `build_dir` paths with nothing so the model sees "candidate.cu:12:3: error ...".
std::string truncate_compiler_log(std::string log, const std::string& build_dir,
                                  size_t max_bytes);

// The "N bytes gmem" figure from ptxas -v output (sum over kernels' module lines).
uint64_t parse_ptxas_gmem(std::string_view log);

}  // namespace kevin::engine
