// symbol_gate.cpp — the object gate: allowlists for imports and exports of built candidates,
// and the structural rules over sections, segments, dynamic entries and load-time code.
#include "engine/gates/symbol_gate.h"

#include <cxxabi.h>

#include <elf.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <set>
#include <span>

#include "engine/gates/hack_rules.h"

namespace kevin::engine {
namespace {

// Toolchain boilerplate every shared object carries, C++ runtime support and plain memory
// routines. No allocation, I/O, threads, processes, time or dynamic loading.
const std::set<std::string> kCommon = {"_ITM_deregisterTMCloneTable",
                                       "_ITM_registerTMCloneTable",
                                       "__gmon_start__",
                                       "__cxa_finalize",
                                       "__cxa_atexit",
                                       "__cxa_guard_acquire",
                                       "__cxa_guard_release",
                                       "__cxa_guard_abort",
                                       "__gxx_personality_v0",
                                       "_Unwind_Resume",
                                       "__stack_chk_fail",
                                       "__cxa_pure_virtual",
                                       "__cxa_begin_catch",
                                       "__cxa_end_catch",
                                       "__cxa_rethrow",
                                       "_ZSt9terminatev",
                                       "memcpy",
                                       "memmove",
                                       "memset",
                                       "memcmp",
                                       "strlen",
                                       "abort",
                                       "__assert_fail",
                                       "__memcpy_chk",
                                       "__memset_chk",
                                       "__memmove_chk"};

// CUDA runtime entry points that nvcc-generated code or a well-behaved candidate needs.
const std::set<std::string> kCuda = {
    "__cudaRegisterFatBinary", "__cudaRegisterFatBinaryEnd", "__cudaUnregisterFatBinary",
    "__cudaRegisterFunction", "__cudaRegisterVar", "__cudaPushCallConfiguration",
    "__cudaPopCallConfiguration", "__cudaLaunchKernel", "__cudaGetKernel", "__cudaInitModule",
    "cudaLaunchKernel", "cudaLaunchKernelExC", "cudaLaunchCooperativeKernel", "cudaGetLastError",
    "cudaPeekAtLastError", "cudaGetErrorString", "cudaGetErrorName", "cudaFuncSetAttribute",
    "cudaFuncGetAttributes", "cudaFuncSetCacheConfig",
    "cudaOccupancyMaxActiveBlocksPerMultiprocessor",
    "cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags",
    "cudaOccupancyAvailableDynamicSMemPerBlock", "cudaDeviceGetAttribute", "cudaGetDevice",
    "cudaGetDeviceProperties", "cudaGetDeviceProperties_v2", "cudaMemsetAsync", "cudaMemcpyAsync",
    "cudaMemcpy2DAsync", "cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaRuntimeGetVersion",
    "cudaDriverGetVersion",
    // nvcc's host stub for every non-inline __device__ function calls exit(); a candidate
    // that calls it itself only ends its runner, which the judge reports as a runtime error.
    "exit"};

// libm base names; the float (f) and long double (l) variants are allowed too.
const std::set<std::string> kMath = {
    "sin",   "cos",       "tan",    "asin",      "acos",      "atan",    "atan2", "sinh",
    "cosh",  "tanh",      "asinh",  "acosh",     "atanh",     "exp",     "exp2",  "exp10",
    "expm1", "log",       "log2",   "log10",     "log1p",     "logb",    "pow",   "sqrt",
    "cbrt",  "hypot",     "erf",    "erfc",      "tgamma",    "lgamma",  "floor", "ceil",
    "round", "trunc",     "rint",   "nearbyint", "lround",    "llround", "lrint", "llrint",
    "fmod",  "remainder", "remquo", "fma",       "fmax",      "fmin",    "fabs",  "copysign",
    "frexp", "ldexp",     "scalbn", "modf",      "nextafter", "sincos",  "fdim",  "ilogb",
    "nan"};

bool is_math(const std::string& s) {
  if (kMath.count(s)) return true;
  if (s.size() > 1 && (s.back() == 'f' || s.back() == 'l'))
    return kMath.count(s.substr(0, s.size() - 1)) > 0;
  return false;
}

// std::__throw_* helpers (length_error, out_of_range...) used by inline library code.
bool is_std_throw_helper(const std::string& s) {
  return s.rfind("_ZSt", 0) == 0 && s.find("__throw_") != std::string::npos;
}

const std::set<std::string> kLinkerExports = {"_init", "_fini",       "_edata",
                                              "_end",  "__bss_start", "kevin_forward"};

// Torch profile: C-level names PyTorch's and pybind11's inline code needs beyond kCommon.
const std::set<std::string> kTorchRuntime = {"__cxa_allocate_exception",
                                             "__cxa_free_exception",
                                             "__cxa_throw",
                                             "__dynamic_cast",
                                             "__cxa_demangle",
                                             "__cxa_thread_atexit_impl",
                                             "__libc_single_threaded",
                                             "__tls_get_addr",
                                             "malloc",
                                             "calloc",
                                             "realloc",
                                             "free",
                                             "posix_memalign",
                                             "aligned_alloc",
                                             "strcmp",
                                             "strncmp",
                                             "strdup",
                                             "strchr",
                                             "strrchr",
                                             "strstr",
                                             "snprintf",
                                             "__snprintf_chk",
                                             "__sprintf_chk",
                                             "vsnprintf",
                                             "__vsnprintf_chk",
                                             "printf",
                                             "__printf_chk",
                                             "puts",
                                             "putchar",
                                             "fputs",
                                             "fwrite",
                                             "fflush",
                                             "stdout",
                                             "stderr",
                                             "fprintf",
                                             "__fprintf_chk"};

// Python C API entries that import modules, compile or run code, or reach the interpreter's
// process-wide state: the answer's Python is what the static checks read; its C++ may not
// run more of it.
constexpr std::array<std::string_view, 14> kPythonDenied = {
    "PyImport_", "PyRun_",  "Py_Compile",    "PyEval_EvalCode", "PyEval_EvalFrame",
    "PyOS_",     "PySys_",  "Py_Exit",       "PyThread_start",  "PyMarshal_",
    "PyFile_",   "Py_Main", "Py_Initialize", "PyCode_New"};
// ... and entries that read other frames' variables, or watch or trace the interpreter (the
// runner's protocol lives in the same interpreter, docs/sandbox.md). pybind11's own code needs
// the frame walk (PyThreadState_GetFrame, PyFrame_GetBack, PyFrame_GetCode,
// PyFrame_FastToLocals, PyEval_GetLocals), which stays allowed: a known gap.
constexpr std::array<std::string_view, 10> kPythonIntrospection = {"PyEval_GetFrame",
                                                                   "PyFrame_GetLocals",
                                                                   "PyFrame_GetGlobals",
                                                                   "PyFrame_GetBuiltins",
                                                                   "PyEval_SetProfile",
                                                                   "PyEval_SetTrace",
                                                                   "PyGen_",
                                                                   "PyTraceBack_",
                                                                   "PyGC_",
                                                                   "PyCoro_"};

// Families of PyTorch's and the C++ library's API a kernel has no business with (mangled
// fragments): threads, clocks, files, side streams, vendor libraries, global numeric switches,
// the JIT, ATen's native implementations, and what would blind the runner's operator log.
constexpr std::array<std::pair<std::string_view, std::string_view>, 23> kTorchDenied = {
    {{"St6thread", rules::kThreads},
     {"St6chrono", rules::kTimingPatch},
     {"St13basic_filebuf", rules::kIoNotAllowed},
     {"St14basic_ifstream", rules::kIoNotAllowed},
     {"St14basic_ofstream", rules::kIoNotAllowed},
     {"St13basic_fstream", rules::kIoNotAllowed},
     {"St10filesystem", rules::kIoNotAllowed},
     {"getStreamFromPool", rules::kStreamInjection},
     {"getStreamFromExternal", rules::kStreamInjection},
     {"setCurrentCUDAStream", rules::kStreamInjection},
     {"CUDAStreamGuard", rules::kStreamInjection},
     {"BlasHandle", rules::kLibraryNotAllowed},
     {"cublas", rules::kLibraryNotAllowed},
     {"cudnn", rules::kLibraryNotAllowed},
     {"13globalContext", rules::kGlobalState},
     {"N5torch3jit", rules::kTorchInternals},
     // The runner's operator log is a RecordFunction callback; its fallback a dispatch mode.
     {"_ZN2at14removeCallback", rules::kTorchInternals},
     {"_ZN2at15disableCallback", rules::kTorchInternals},
     {"_ZN2at14clearCallbacks", rules::kTorchInternals},
     {"_ZN2at20clearGlobalCallbacks", rules::kTorchInternals},
     {"_ZN2at20enableRecordFunction", rules::kTorchInternals},
     {"TorchDispatchModeTLS", rules::kTorchInternals},
     {"N2at6native", rules::kPytorchCompute}}};

// ATen operators (at::_ops::<name>) an extension may call: allocation, views, copies and
// descriptions. Any other operator is PyTorch computing the answer.
const std::set<std::string, std::less<>> kTorchPlumbingOps = {"empty_memory_format",
                                                              "empty_like",
                                                              "empty_strided",
                                                              "zeros",
                                                              "zeros_like",
                                                              "ones",
                                                              "ones_like",
                                                              "full",
                                                              "full_like",
                                                              "new_empty",
                                                              "new_empty_strided",
                                                              "new_zeros",
                                                              "new_ones",
                                                              "new_full",
                                                              "fill_",
                                                              "fill__Scalar",
                                                              "zero_",
                                                              "view",
                                                              "view_dtype",
                                                              "_unsafe_view",
                                                              "reshape",
                                                              "_reshape_alias",
                                                              "as_strided",
                                                              "contiguous",
                                                              "clone",
                                                              "copy_",
                                                              "to",
                                                              "to_dtype",
                                                              "to_device",
                                                              "to_dtype_layout",
                                                              "to_other",
                                                              "_to_copy",
                                                              "detach",
                                                              "alias",
                                                              "t",
                                                              "transpose_int",
                                                              "permute",
                                                              "expand",
                                                              "squeeze",
                                                              "squeeze_dim",
                                                              "unsqueeze",
                                                              "select_int",
                                                              "slice_Tensor",
                                                              "narrow",
                                                              "flatten_using_ints",
                                                              "split_Tensor",
                                                              "chunk",
                                                              "unbind_int",
                                                              "resize_",
                                                              "set_",
                                                              "item",
                                                              "_local_scalar_dense",
                                                              "lift_fresh",
                                                              "empty_names",
                                                              "zeros_names",
                                                              "view_as",
                                                              "reshape_as",
                                                              "expand_as",
                                                              "is_contiguous",
                                                              "size_int",
                                                              "stride_int"};

bool starts_with_any(std::string_view s, std::span<const std::string_view> prefixes) {
  return std::any_of(prefixes.begin(), prefixes.end(),
                     [&](std::string_view p) { return s.substr(0, p.size()) == p; });
}

// The operator an at::_ops import names (_ZN2at4_ops<len><name>...), or empty.
std::string_view aten_op(std::string_view symbol) {
  constexpr std::string_view kOps = "_ZN2at4_ops";
  if (symbol.substr(0, kOps.size()) != kOps) return {};
  size_t i = kOps.size(), len = 0;
  while (i < symbol.size() && std::isdigit(static_cast<unsigned char>(symbol[i])))
    len = len * 10 + static_cast<size_t>(symbol[i++] - '0');
  if (len == 0 || i + len > symbol.size()) return {};
  return symbol.substr(i, len);
}

// Why the torch profile refuses `symbol` (a rule), or nullopt when it may be imported.
std::optional<std::string> torch_import_refusal(const std::string& symbol) {
  if (kTorchRuntime.count(symbol)) return std::nullopt;
  if (symbol.rfind("Py", 0) == 0 || symbol.rfind("_Py", 0) == 0) {
    const std::string_view bare =
        symbol[0] == '_' ? std::string_view(symbol).substr(1) : std::string_view(symbol);
    if (starts_with_any(bare, kPythonDenied)) return rules::kDynamicCode;
    if (starts_with_any(bare, kPythonIntrospection)) return rules::kIntrospection;
    return std::nullopt;
  }
  if (symbol.rfind("_Z", 0) != 0) return rules::kImportNotAllowed;
  for (const auto& [fragment, rule] : kTorchDenied) {
    if (symbol.find(fragment) != std::string::npos) return std::string(rule);
  }
  const std::string_view op = aten_op(symbol);
  if (!op.empty() && kTorchPlumbingOps.find(op) == kTorchPlumbingOps.end())
    return rules::kPytorchCompute;
  return std::nullopt;
}

}  // namespace

namespace {

// "at::clearCallbacks() ('_ZN2at14clearCallbacksEv')" for a C++ name, "'malloc'" for a C one:
// what a refusal names, so a model can tell which of its calls it was.
std::string readable_symbol(const std::string& symbol) {
  int status = -1;
  std::unique_ptr<char, void (*)(void*)> plain(
      abi::__cxa_demangle(symbol.c_str(), nullptr, nullptr, &status), std::free);
  if (status != 0 || plain == nullptr) return "'" + symbol + "'";
  return std::string(plain.get()) + " ('" + symbol + "')";
}

}  // namespace

bool import_allowed(const std::string& symbol, Backend backend, Profile profile) {
  if (kCommon.count(symbol) || is_math(symbol) || is_std_throw_helper(symbol)) return true;
  if (backend == Backend::kCuda && kCuda.count(symbol) > 0) return true;
  return profile == Profile::kTorchExtension && !torch_import_refusal(symbol);
}

std::optional<Rejection> check_symbols(const ElfSymbols& symbols, Backend backend,
                                       uint64_t device_global_bytes, Profile profile) {
  const bool torch = profile == Profile::kTorchExtension;
  for (const auto& name : symbols.imports) {
    if (import_allowed(name, backend, profile)) continue;
    if (torch) {
      const std::string rule = torch_import_refusal(name).value_or(rules::kImportNotAllowed);
      return Rejection{rule, "the built extension uses " + readable_symbol(name) +
                                 ", which KernelBench answers may not call (" +
                                 (rule == rules::kPytorchCompute
                                      ? "PyTorch may allocate, view and copy tensors, not compute"
                                      : "no threads, clocks, files, side streams, vendor "
                                        "libraries, global switches or running Python") +
                                 ")"};
    }
    return Rejection{rules::kImportNotAllowed,
                     "the built kernel uses " + readable_symbol(name) +
                         ", which candidates may not call (no allocation, threads, streams, "
                         "I/O, processes, timers or libraries)"};
  }
  for (const auto& name : symbols.exports) {
    // C++ inline and template instantiations are exported as weak _Z symbols; any other
    // C-level name could shadow a library function.
    if (kLinkerExports.count(name) == 0 && name.rfind("_Z", 0) != 0 &&
        !(torch && name.rfind("PyInit_", 0) == 0)) {
      return Rejection{rules::kExportNotAllowed,
                       "the candidate defines the global symbol '" + name +
                           "'; only kevin_forward may be exported (make helpers static)"};
    }
  }
  if (symbols.tls_bytes > 0 && !torch) {
    return Rejection{
        rules::kThreadLocalStorage,
        "the candidate declares thread_local variables; state may not be kept between calls"};
  }
  if (symbols.writable_bytes > kMaxWritableStaticBytes) {
    return Rejection{rules::kStaticStorageTooLarge, "writable static host storage of " +
                                                        std::to_string(symbols.writable_bytes) +
                                                        " bytes exceeds the 64 MiB limit"};
  }
  if (device_global_bytes > kMaxDeviceGlobalBytes) {
    return Rejection{rules::kStaticStorageTooLarge,
                     "__device__ global storage of " + std::to_string(device_global_bytes) +
                         " bytes exceeds the 1 MiB limit (use args->workspace for scratch space)"};
  }
  return std::nullopt;
}

namespace {

// What g++ 12 and nvcc 13 put in a candidate built with our flags (plus debug sections).
constexpr std::array<std::string_view, 25> kAllowedSections = {".init",         ".fini",
                                                               ".plt",          ".plt.got",
                                                               ".plt.sec",      ".init_array",
                                                               ".fini_array",   ".eh_frame",
                                                               ".eh_frame_hdr", ".gcc_except_table",
                                                               ".dynamic",      ".got",
                                                               ".got.plt",      ".dynsym",
                                                               ".dynstr",       ".gnu.hash",
                                                               ".hash",         ".comment",
                                                               ".symtab",       ".strtab",
                                                               ".shstrtab",     ".tm_clone_table",
                                                               ".nv_fatbin",    ".nvFatBinSegment",
                                                               "__nv_module_id"};
// Families: a name equal to one of these without its trailing '.', or starting with it.
constexpr std::array<std::string_view, 10> kAllowedSectionFamilies = {
    ".text.", ".rodata.", ".data.",  ".bss.",        ".rela.",
    ".note.", ".nv.",     ".debug_", ".gnu.version", ".gnu_debuglink"};
constexpr std::array<std::string_view, 5> kCodeSections = {".init", ".fini", ".plt", ".plt.got",
                                                           ".plt.sec"};

constexpr std::array<std::string_view, 5> kSystemLibraries = {
    "libc.so.6", "libm.so.6", "libstdc++.so.6", "libgcc_s.so.1", "ld-linux-x86-64.so.2"};
constexpr std::string_view kCudaRuntimePrefix = "libcudart.so.";
// What a PyTorch extension links (already loaded by `import torch` when the runner loads it).
constexpr std::array<std::string_view, 6> kTorchLibraryPrefixes = {
    "libc10.so",       "libc10_cuda.so",   "libtorch.so",
    "libtorch_cpu.so", "libtorch_cuda.so", "libtorch_python.so"};

// glibc's crti.o + crtn.o make .init 23 bytes and .fini 9 on x86-64 (4 more each when they
// start with endbr64). Anything longer is code someone added to run at load or unload.
constexpr size_t kCrtInitBytes = 23;
constexpr size_t kCrtFiniBytes = 9;
constexpr std::string_view kEndbr64 = "\xf3\x0f\x1e\xfa";

constexpr std::string_view kCudaRegistration = "_ZL24__sti____cudaRegisterAllv";
constexpr std::string_view kDynamicInitialiserPrefix = "_GLOBAL__sub_I_";
constexpr std::string_view kExtensionSuffix = ".ext";

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// `name` less a `.ext<digits>` suffix, if it has one.
std::string_view without_extension_suffix(std::string_view name) {
  const size_t at = name.rfind(kExtensionSuffix);
  if (at == std::string_view::npos) return name;
  const std::string_view digits = name.substr(at + kExtensionSuffix.size());
  const bool all_digits = !digits.empty() && std::all_of(digits.begin(), digits.end(), [](char c) {
    return c >= '0' && c <= '9';
  });
  return all_digits ? name.substr(0, at) : name;
}

template <size_t N>
bool contains(const std::array<std::string_view, N>& list, std::string_view s) {
  return std::find(list.begin(), list.end(), s) != list.end();
}

bool section_allowed(std::string_view name) {
  if (contains(kAllowedSections, name)) return true;
  return std::any_of(kAllowedSectionFamilies.begin(), kAllowedSectionFamilies.end(),
                     [&](std::string_view family) {
                       const std::string_view bare =
                           family.back() == '.' ? family.substr(0, family.size() - 1) : family;
                       return name == bare || starts_with(name, family);
                     });
}

bool code_section(std::string_view name) {
  return contains(kCodeSections, name) || name == ".text" || starts_with(name, ".text.");
}

std::optional<Rejection> check_sections(const ElfObject& object, Profile profile) {
  for (const auto& section : object.sections) {
    if (section.type == SHT_NULL && section.name.empty()) continue;  // index 0
    // PyTorch's and pybind11's headers keep thread-local state of their own.
    const bool torch_tls = profile == Profile::kTorchExtension &&
                           (section.name == ".tbss" || section.name == ".tdata");
    if (!section_allowed(section.name) && !torch_tls) {
      return Rejection{rules::kBannedConstruct,
                       "the built object has a section '" + section.name +
                           "' that the compiler does not make by itself (section attributes "
                           "or assembler directives are not allowed)"};
    }
    const bool exec = (section.flags & SHF_EXECINSTR) != 0;
    if (exec && (section.flags & SHF_WRITE) != 0) {
      return Rejection{rules::kWritableCode,
                       "section '" + section.name + "' is both writable and executable"};
    }
    if (exec && !code_section(section.name)) {
      return Rejection{rules::kCodeOutsideText,
                       "section '" + section.name + "' is executable; only compiled code may be"};
    }
  }
  return std::nullopt;
}

// Sections overlapping an executable segment must be code sections: data mapped executable
// is machine code by another name.
std::optional<Rejection> check_executable_segment(const ElfObject& object,
                                                  const ElfSegment& segment) {
  for (const auto& section : object.sections) {
    if ((section.flags & SHF_ALLOC) == 0 || (section.flags & SHF_TLS) != 0 || section.size == 0)
      continue;
    const bool overlaps =
        section.addr < segment.vaddr + segment.memsz && segment.vaddr < section.addr + section.size;
    if (overlaps && !code_section(section.name)) {
      return Rejection{rules::kCodeOutsideText,
                       "section '" + section.name + "' is mapped executable"};
    }
  }
  return std::nullopt;
}

std::optional<Rejection> check_segments(const ElfObject& object) {
  bool stack_seen = false;
  for (const auto& segment : object.segments) {
    const bool exec = (segment.flags & PF_X) != 0;
    if (segment.type == PT_GNU_STACK) {
      stack_seen = true;
      if (exec)
        return Rejection{rules::kExecutableStack, "the built object asks for an executable stack"};
    }
    if (segment.type != PT_LOAD || !exec) continue;
    if ((segment.flags & PF_W) != 0)
      return Rejection{rules::kWritableCode,
                       "the built object has a writable and executable segment"};
    if (auto r = check_executable_segment(object, segment)) return r;
  }
  if (!stack_seen)
    return Rejection{rules::kExecutableStack,
                     "the built object has no PT_GNU_STACK (the stack would be executable)"};
  if (object.text_relocations)
    return Rejection{rules::kWritableCode,
                     "the built object has text relocations (code patched at load time)"};
  return std::nullopt;
}

std::optional<Rejection> check_libraries(const ElfObject& object, Backend backend,
                                         Profile profile) {
  for (const auto& library : object.needed) {
    const bool cuda_runtime = backend == Backend::kCuda && starts_with(library, kCudaRuntimePrefix);
    const bool torch = profile == Profile::kTorchExtension &&
                       std::any_of(kTorchLibraryPrefixes.begin(), kTorchLibraryPrefixes.end(),
                                   [&](std::string_view p) { return starts_with(library, p); });
    if (!contains(kSystemLibraries, library) && !cuda_runtime && !torch) {
      return Rejection{rules::kLibraryNotAllowed,
                       "the built object needs '" + library +
                           "'; candidates link nothing but the "
                           "C/C++ runtime" +
                           std::string(backend == Backend::kCuda ? " and cudart" : "")};
    }
  }
  if (!object.loader_directives.empty()) {
    return Rejection{rules::kLibraryNotAllowed, "the built object carries " +
                                                    object.loader_directives.front() +
                                                    ", which changes what the loader loads"};
  }
  return std::nullopt;
}

std::optional<Rejection> check_ifuncs(const ElfObject& object) {
  if (object.ifuncs.empty()) return std::nullopt;
  return Rejection{rules::kIndirectFunction,
                   "'" + object.ifuncs.front() +
                       "' is an indirect function (ifunc): its resolver would "
                       "run inside the loader"};
}

// True if the loader may call the function `name` through `kind` on `backend`.
bool expected_call(ElfCallKind kind, Backend backend, Profile profile, std::string_view name) {
  switch (kind) {
    case ElfCallKind::kDtInit:
      return name == "_init";
    case ElfCallKind::kDtFini:
      return name == "_fini";
    case ElfCallKind::kInitArray: {
      // An extension's own copies carry `.ext<i>` (extension_load_time_name).
      const bool torch = profile == Profile::kTorchExtension;
      const std::string_view base = torch ? without_extension_suffix(name) : name;
      if (torch && starts_with(base, kDynamicInitialiserPrefix)) return true;
      return name == "frame_dummy" || (backend == Backend::kCuda && base == kCudaRegistration);
    }
    case ElfCallKind::kFiniArray:
      return name == "__do_global_dtors_aux";
    case ElfCallKind::kPreinitArray:
      return false;
  }
  return false;
}

Rejection load_time_rejection(const ElfLoadTimeCall& call) {
  const auto dynamic_init =
      std::find_if(call.names.begin(), call.names.end(),
                   [](const std::string& n) { return starts_with(n, "_GLOBAL__"); });
  if (dynamic_init != call.names.end()) {
    return Rejection{rules::kLoadTimeCode,
                     "a global or static object has a dynamic initialiser (a constructor, or a "
                     "value computed at run "
                     "time), which would run code when the kernel is loaded; avoid globals with "
                     "constructors: make "
                     "them constexpr/constant-initialised, or keep them inside kevin_forward"};
  }
  if (!call.resolved || call.names.empty()) {
    return Rejection{rules::kLoadTimeCode,
                     call.source + " makes the loader run code that is not a known function"};
  }
  return Rejection{rules::kLoadTimeCode,
                   "'" + call.names.front() + "' (" + call.source +
                       ") would run when the kernel is loaded or unloaded; no code may run outside "
                       "kevin_forward (no constructor attributes or hand-made init entries)"};
}

bool crt_sized(const std::string& code, uint64_t size, size_t crt_bytes) {
  const size_t expected = crt_bytes + (starts_with(code, kEndbr64) ? kEndbr64.size() : 0);
  return size <= expected;
}

std::optional<Rejection> check_load_time_code(const ElfObject& object, Backend backend,
                                              Profile profile) {
  if (!object.has_symtab) {
    return Rejection{
        rules::kLoadTimeCode,
        "the built object has no symbol table, so the code it runs at load time cannot be checked"};
  }
  if (object.unverified_relocations) {
    return Rejection{rules::kLoadTimeCode,
                     "the built object uses relocation formats the gate does not follow"};
  }
  for (const auto& section : object.sections) {
    const bool init_ok =
        section.name != ".init" || crt_sized(object.init_code, section.size, kCrtInitBytes);
    const bool fini_ok =
        section.name != ".fini" || crt_sized(object.fini_code, section.size, kCrtFiniBytes);
    if (!init_ok || !fini_ok) {
      return Rejection{rules::kLoadTimeCode,
                       "code was added to " + section.name + ", which the loader runs by itself"};
    }
  }
  for (const auto& call : object.load_time_calls) {
    const bool ok = call.resolved && call.unique &&
                    std::any_of(call.names.begin(), call.names.end(), [&](const std::string& n) {
                      return expected_call(call.kind, backend, profile, n);
                    });
    if (!ok) return load_time_rejection(call);
  }
  return std::nullopt;
}

}  // namespace

bool is_load_time_function(std::string_view name) {
  return name == kCudaRegistration || starts_with(name, kDynamicInitialiserPrefix);
}

std::string extension_load_time_name(std::string_view name, size_t extension) {
  return std::string(name) + std::string(kExtensionSuffix) + std::to_string(extension);
}

std::optional<Rejection> check_object_structure(const ElfObject& object, Backend backend,
                                                Profile profile) {
  if (auto r = check_sections(object, profile)) return r;
  if (auto r = check_segments(object)) return r;
  if (auto r = check_ifuncs(object)) return r;
  if (auto r = check_libraries(object, backend, profile)) return r;
  return check_load_time_code(object, backend, profile);
}

std::optional<Rejection> check_object(std::string_view image, Backend backend,
                                      uint64_t device_global_bytes, Profile profile) {
  auto object = read_elf_object(image);
  if (!object.is_ok()) {
    return Rejection{rules::kImportNotAllowed,
                     "the built object is unreadable: " + object.status().message()};
  }
  if (auto r = check_symbols(object->symbols, backend, device_global_bytes, profile)) return r;
  return check_object_structure(*object, backend, profile);
}

}  // namespace kevin::engine
