// symbol_gate.cpp — allowlists for imports and exports of built candidates.
#include <cstdint>
#include "engine/symbol_gate.h"

#include <algorithm>
#include <array>
#include <set>

namespace kevin::engine {
namespace {

// Toolchain boilerplate every shared object carries, C++ runtime support and plain memory
// routines. No allocation, I/O, threads, processes, time or dynamic loading.
const std::set<std::string> kCommon = {
    "_ITM_deregisterTMCloneTable", "_ITM_registerTMCloneTable", "__gmon_start__",
    "__cxa_finalize", "__cxa_atexit", "__cxa_guard_acquire", "__cxa_guard_release",
    "__cxa_guard_abort", "__gxx_personality_v0", "_Unwind_Resume", "__stack_chk_fail",
    "__cxa_pure_virtual", "__cxa_begin_catch", "__cxa_end_catch", "__cxa_rethrow",
    "_ZSt9terminatev", "memcpy", "memmove", "memset", "memcmp", "strlen", "abort",
    "__assert_fail", "__memcpy_chk", "__memset_chk", "__memmove_chk"};

// CUDA runtime entry points that nvcc-generated code or a well-behaved candidate needs.
const std::set<std::string> kCuda = {
    "__cudaRegisterFatBinary", "__cudaRegisterFatBinaryEnd", "__cudaUnregisterFatBinary",
    "__cudaRegisterFunction", "__cudaRegisterVar", "__cudaPushCallConfiguration",
    "__cudaPopCallConfiguration", "__cudaLaunchKernel", "__cudaGetKernel", "__cudaInitModule",
    "cudaLaunchKernel", "cudaLaunchKernelExC", "cudaLaunchCooperativeKernel",
    "cudaGetLastError", "cudaPeekAtLastError", "cudaGetErrorString", "cudaGetErrorName",
    "cudaFuncSetAttribute", "cudaFuncGetAttributes", "cudaFuncSetCacheConfig",
    "cudaOccupancyMaxActiveBlocksPerMultiprocessor",
    "cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags",
    "cudaOccupancyAvailableDynamicSMemPerBlock", "cudaDeviceGetAttribute", "cudaGetDevice",
    "cudaGetDeviceProperties", "cudaGetDeviceProperties_v2", "cudaMemsetAsync",
    "cudaMemcpyAsync", "cudaMemcpy2DAsync", "cudaStreamSynchronize", "cudaDeviceSynchronize",
    "cudaRuntimeGetVersion", "cudaDriverGetVersion",
    // nvcc's host stub for every non-inline __device__ function calls exit(); a candidate
    // that calls it itself only ends its runner, which the judge reports as a runtime error.
    "exit"};

// libm base names; the float (f) and long double (l) variants are allowed too.
const std::set<std::string> kMath = {
    "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh",
    "acosh", "atanh", "exp", "exp2", "exp10", "expm1", "log", "log2", "log10", "log1p", "logb",
    "pow", "sqrt", "cbrt", "hypot", "erf", "erfc", "tgamma", "lgamma", "floor", "ceil",
    "round", "trunc", "rint", "nearbyint", "lround", "llround", "lrint", "llrint", "fmod",
    "remainder", "remquo", "fma", "fmax", "fmin", "fabs", "copysign", "frexp", "ldexp",
    "scalbn", "modf", "nextafter", "sincos", "fdim", "ilogb", "nan"};

bool is_math(const std::string& s) {
  if (kMath.count(s)) return true;
  if (s.size() > 1 && (s.back() == 'f' || s.back() == 'l')) return kMath.count(s.substr(0, s.size() - 1)) > 0;
  return false;
}

// std::__throw_* helpers (length_error, out_of_range...) used by inline library code.
bool is_std_throw_helper(const std::string& s) {
  return s.rfind("_ZSt", 0) == 0 && s.find("__throw_") != std::string::npos;
}

const std::set<std::string> kLinkerExports = {"_init", "_fini", "_edata", "_end",
                                              "__bss_start", "kevin_forward"};

}  // namespace

bool import_allowed(const std::string& symbol, Backend backend) {
  if (kCommon.count(symbol) || is_math(symbol) || is_std_throw_helper(symbol)) return true;
  return backend == Backend::kCuda && kCuda.count(symbol) > 0;
}

std::optional<Rejection> check_symbols(const ElfSymbols& symbols, Backend backend,
                                       uint64_t device_global_bytes) {
  for (const auto& name : symbols.imports) {
    if (!import_allowed(name, backend)) {
      return Rejection{"import_not_allowed",
                       "the built kernel uses '" + name +
                           "', which candidates may not call (no allocation, threads, streams, "
                           "I/O, processes, timers or libraries)"};
    }
  }
  for (const auto& name : symbols.exports) {
    // C++ inline and template instantiations are exported as weak _Z symbols; any other
    // C-level name could shadow a library function.
    if (kLinkerExports.count(name) == 0 && name.rfind("_Z", 0) != 0) {
      return Rejection{"export_not_allowed",
                       "the candidate defines the global symbol '" + name +
                           "'; only kevin_forward may be exported (make helpers static)"};
    }
  }
  if (symbols.tls_bytes > 0) {
    return Rejection{"thread_local_storage",
                     "the candidate declares thread_local variables; state may not be kept between calls"};
  }
  if (symbols.writable_bytes > kMaxWritableStaticBytes) {
    return Rejection{"static_storage_too_large",
                     "writable static host storage of " + std::to_string(symbols.writable_bytes) +
                         " bytes exceeds the 64 MiB limit"};
  }
  if (device_global_bytes > kMaxDeviceGlobalBytes) {
    return Rejection{"static_storage_too_large",
                     "__device__ global storage of " + std::to_string(device_global_bytes) +
                         " bytes exceeds the 1 MiB limit (use args->workspace for scratch space)"};
  }
  return std::nullopt;
}

}  // namespace kevin::engine
