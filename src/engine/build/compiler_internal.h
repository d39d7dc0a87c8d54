// compiler_internal.h — what the compile driver's four files share (compiler.cpp,
// build_cache.cpp, toolchain.cpp, kernelbench_build.cpp): the cache's and the toolchain's
// constants, the driver's private types and a few helpers. Included by those files only.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/mutex.h"
#include "engine/build/compiler.h"

namespace kevin::engine {

// v2: compiled in the sandbox; translation-unit and object gates inside the build; gate
// refusals and timeouts cached as results; entries carry a lock file for leases.
inline constexpr const char* kCacheFormat = "kevin-build-v2";
inline constexpr const char* kObjectName = "candidate.so";
// A torch extension's files carry load_inline's names, so diagnostics read as KernelBench's do.
inline constexpr const char* kHostSource = "main.cpp";
inline constexpr const char* kDeviceSource = "cuda.cu";
inline constexpr const char* kKeptDir = "kept";  // nvcc --keep-dir: its preprocessed units
// Several extensions in one object: the statics of inline functions and templates become
// weak rather than STB_GNU_UNIQUE, which objcopy cannot make local (isolate_extensions).
inline constexpr const char* kNoGnuUnique = "-fno-gnu-unique";
inline constexpr uint64_t kMaxObjectBytes = uint64_t{256} << 20;
// The toolchain's extras (a precompiled host header of a few hundred MiB, the lite bridge),
// one folder per toolchain under the cache folder.
inline constexpr const char* kHeadersDir = "headers";
inline constexpr const char* kHostHeaderName = "kevin_torch_host.h";
inline constexpr const char* kLiteDir = "torch_lite";  // under the ABI folder
inline constexpr const char* kLiteBridgeSource = "kevin_torch_lite_bridge.cpp";
inline constexpr const char* kLiteBridgeObject = "kevin_torch_lite_bridge.o";
inline constexpr const char* kFailedSuffix =
    ".failed";  // beside an extra that could not be made: why
inline constexpr uint64_t kMaxHeaderBytes = uint64_t{4} << 30;
// One build's compiler processes at once, by default (at most the machine's hardware threads,
// beyond which more only contend). Four at once share 8 GiB as 2 GiB each: three times what the
// forms every unit tries first take (0.65 GiB: g++ with the precompiled header), above the
// heaviest honest process measured (1.66 GiB: cicc on a device unit with PyTorch's headers),
// and the units retried in that form run in smaller batches, with larger shares.
inline constexpr size_t kDefaultMaxProcesses = 4;
// nvcc's threads (-t): a device unit's host and device front ends run at once, and so count as
// two of the build's processes.
inline constexpr size_t kDeviceThreads = 2;
inline constexpr int kRescanEvery =
    32;  // stores between full scans of the cache (other processes store too)

// One compiler run, its outcome, and our explanation when a limit ended it.
struct CompileDriver::Run {
  bool ok = false;  // exited 0
  bool timed_out = false;
  bool file_too_large = false;  // stopped by the file size limit
  // Ended on a limit of the build's (time, CPU time, memory), or never started because the
  // build had reached one: the build starts nothing more, and the unit is not built again.
  bool limit = false;
  bool started = true;
  std::string output;  // stdout + stderr, at most max_output_bytes
  std::string
      notes;  // lines we put before the output: "the compiler exceeded its memory limit (8 GiB)"
  double wall_ms = 0;
};
struct CompileDriver::Accounting {
  Mutex mu;
  bool scanned GUARDED_BY(mu) = false;  // a scan has measured the cache
  uint64_t bytes GUARDED_BY(mu) = 0;    // at the last scan, plus what this driver stored since
  int stores_since_scan GUARDED_BY(mu) = 0;
};
struct CompileDriver::ExtrasCache {
  Mutex mu;
  bool looked_up GUARDED_BY(mu) = false;
  Extras extras GUARDED_BY(mu);
};

// The first line of `text` that contains `needle`, else its first non-empty line.
std::string first_nonempty_line_with(const std::string& text, const std::string& needle);
// What a sandboxed compiler must see of the filesystem to run `compiler` (toolchain.cpp).
std::vector<std::filesystem::path> toolchain_paths(const std::filesystem::path& compiler,
                                                   const std::vector<std::filesystem::path>& extra);
// A regular file, not a link to one (build_cache.cpp).
bool regular_file(const std::filesystem::path& p);
// The rejection of a unit whose preprocessed text exceeds kMaxPreprocessedBytes (compiler.cpp).
Rejection preprocessed_too_large();

}  // namespace kevin::engine
