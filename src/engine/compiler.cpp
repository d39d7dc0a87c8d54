// compiler.cpp — compiler invocation (sandboxed), the gates over what it produced, cache
// layout, leases and eviction, and log shaping.
#include <cstdint>
#include "engine/compiler.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <numeric>
#include <optional>
#include <set>

#include "core/mutex.h"
#include "engine/abi/kevin_abi.h"
#include "engine/hack_rules.h"
#include "core/file.h"
#include "core/json.h"
#include "core/log.h"
#include "core/long_wait.h"
#include "core/parallel.h"
#include "core/sha256.h"
#include "engine/symbol_gate.h"
#include "sys/cache_dir.h"
#include "sys/confine.h"
#include "sys/jail.h"
#include "sys/process.h"
#include "sys/tempdir.h"

namespace kevin::engine {
namespace fs = std::filesystem;

namespace {

// v2: compiled in the sandbox; translation-unit and object gates inside the build; gate
// refusals and timeouts cached as results; entries carry a lock file for leases.
constexpr const char* kCacheFormat = "kevin-build-v2";
constexpr const char* kObjectName = "candidate.so";
// A torch extension's files carry load_inline's names, so diagnostics read as KernelBench's do.
constexpr const char* kHostSource = "main.cpp";
constexpr const char* kDeviceSource = "cuda.cu";
constexpr const char* kKeptDir = "kept";  // nvcc --keep-dir: its preprocessed units
// Several extensions in one object: the statics of inline functions and templates become
// weak rather than STB_GNU_UNIQUE, which objcopy cannot make local (isolate_extensions).
constexpr const char* kNoGnuUnique = "-fno-gnu-unique";
constexpr uint64_t kMaxObjectBytes = uint64_t{256} << 20;
// The toolchain's extras (a precompiled host header of a few hundred MiB, the lite bridge),
// one folder per toolchain under the cache folder.
constexpr const char* kHeadersDir = "headers";
constexpr const char* kHostHeaderName = "kevin_torch_host.h";
constexpr const char* kLiteDir = "torch_lite";  // under the ABI folder
constexpr const char* kLiteBridgeSource = "kevin_torch_lite_bridge.cpp";
constexpr const char* kLiteBridgeObject = "kevin_torch_lite_bridge.o";
constexpr const char* kFailedSuffix = ".failed";  // beside an extra that could not be made: why
constexpr uint64_t kMaxHeaderBytes = uint64_t{4} << 30;
// One build's compiler processes at once, by default (at most the machine's hardware threads,
// beyond which more only contend). Four at once share 8 GiB as 2 GiB each: three times what the
// forms every unit tries first take (0.65 GiB: g++ with the precompiled header), above the
// heaviest honest process measured (1.66 GiB: cicc on a device unit with PyTorch's headers),
// and the units retried in that form run in smaller batches, with larger shares.
constexpr size_t kDefaultMaxProcesses = 4;
// nvcc's threads (-t): a device unit's host and device front ends run at once, and so count as
// two of the build's processes.
constexpr size_t kDeviceThreads = 2;
constexpr int kRescanEvery =
    32;  // stores between full scans of the cache (other processes store too)

Result<fs::path> resolve(const fs::path& program, const std::vector<fs::path>& fallbacks) {
  if (program.is_absolute()) {
    if (::access(program.c_str(), X_OK) == 0) return program;
    return not_found("compiler not found: " + program.string());
  }
  if (auto on_path = sys::find_program(program.string())) return *on_path;
  for (const auto& f : fallbacks) {
    if (::access(f.c_str(), X_OK) == 0) return f;
  }
  return not_found(program.string() + " not found on PATH");
}

std::string first_nonempty_line_with(const std::string& text, const std::string& needle) {
  size_t start = 0;
  std::string fallback;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    if (fallback.empty() && !line.empty()) fallback = line;
    if (line.find(needle) != std::string::npos) return line;
    start = end + 1;
  }
  return fallback;
}

// Whole GiB or MiB where they are; a share of a budget divided by three reads in MiB, rounded
// down.
std::string human_bytes(uint64_t n) {
  if (n >= (uint64_t{1} << 30) && n % (uint64_t{1} << 30) == 0)
    return std::to_string(n >> 30) + " GiB";
  if (n >= (uint64_t{1} << 20)) return std::to_string(n >> 20) + " MiB";
  return std::to_string(n) + " bytes";
}

// `path` with its parent folders resolved, its last component kept (kevin-sandbox binds a
// path whose last component is a symlink as that symlink; parents must be real folders).
fs::path bindable(const fs::path& path) {
  std::error_code ec;
  const fs::path parent = fs::canonical(path.parent_path(), ec);
  return ec ? path : parent / path.filename();
}

// What the compiler needs to run: the system's program and library trees as they exist
// here, the dynamic loader's cache, and the toolchain root the compiler lives in (the
// path it was found at and its resolved location, e.g. /usr/local/cuda → cuda-13.0).
std::vector<fs::path> toolchain_paths(const fs::path& compiler,
                                      const std::vector<fs::path>& extra) {
  std::vector<fs::path> paths;
  const auto add = [&](const fs::path& p) {
    std::error_code ec;
    if (!fs::exists(fs::symlink_status(p, ec))) return;
    const fs::path b = bindable(p);
    if (std::find(paths.begin(), paths.end(), b) == paths.end()) paths.push_back(b);
  };
  for (const char* p :
       {"/usr", "/lib", "/lib64", "/bin", "/sbin", "/etc/ld.so.cache", "/etc/alternatives"})
    add(p);
  add(compiler.parent_path().parent_path());
  std::error_code ec;
  const fs::path real = fs::canonical(compiler, ec);
  if (!ec) add(real.parent_path().parent_path());
  for (const auto& p : extra) add(p);
  return paths;
}

// The compiler's whole environment inside the sandbox.
std::vector<std::string> sandbox_environment(const fs::path& compiler) {
  return {"PATH=" + compiler.parent_path().string() +
              ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
          "LC_ALL=C", "LANG=C", "TMPDIR=/tmp", "HOME=/tmp"};
}

// Diagnostics that mean the compiler ran out of address space (g++, cc1plus, cicc, ptxas).
bool reports_memory_exhaustion(const std::string& output) {
  for (const char* needle : {"virtual memory exhausted", "out of memory", "Out of memory",
                             "Cannot allocate memory", "std::bad_alloc", "memory exhausted"}) {
    if (output.find(needle) != std::string::npos) return true;
  }
  return false;
}

bool is_identifier(std::string_view name) {
  const auto word = [](char c) { return c == '_' || std::isalnum(static_cast<unsigned char>(c)); };
  return !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
         std::all_of(name.begin(), name.end(), word);
}

bool regular_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(fs::symlink_status(p, ec));
}

Result<BuildResult> load_entry(const fs::path& dir, const std::string& key) {
  KEVIN_ASSIGN_OR_RETURN(std::string text, read_file(dir / "build.json"));
  KEVIN_ASSIGN_OR_RETURN(Json meta, parse_json(text));
  BuildResult r;
  r.key = key;
  KEVIN_ASSIGN_OR_RETURN(r.ok, json_get<bool>(meta, "ok"));
  KEVIN_ASSIGN_OR_RETURN(r.log, json_get<std::string>(meta, "log"));
  KEVIN_ASSIGN_OR_RETURN(r.compile_ms, json_get<double>(meta, "compile_ms"));
  KEVIN_ASSIGN_OR_RETURN(r.device_global_bytes, json_get<uint64_t>(meta, "device_global_bytes"));
  KEVIN_ASSIGN_OR_RETURN(r.timed_out, json_get<bool>(meta, "timed_out"));
  KEVIN_ASSIGN_OR_RETURN(Json rejection, json_get_or<Json>(meta, "rejection", Json()));
  if (!rejection.is_null()) {
    Rejection rej;
    KEVIN_ASSIGN_OR_RETURN(rej.rule, json_get<std::string>(rejection, "rule"));
    KEVIN_ASSIGN_OR_RETURN(rej.detail, json_get<std::string>(rejection, "detail"));
    r.rejection = std::move(rej);
  }
  if (r.ok) {
    r.object = dir / kObjectName;
    if (!regular_file(r.object)) return not_found("cache entry lacks its object");
  }
  return r;
}

Json entry_json(const BuildResult& r, const std::string& compiler) {
  Json rejection;  // null
  if (r.rejection) rejection = {{"rule", r.rejection->rule}, {"detail", r.rejection->detail}};
  return {{"ok", r.ok},
          {"log", r.log},
          {"compile_ms", r.compile_ms},
          {"device_global_bytes", r.device_global_bytes},
          {"timed_out", r.timed_out},
          {"rejection", rejection},
          {"compiler", compiler}};
}

// Everything in `work` except the object of an ok build: sources, preprocessed units and
// intermediates do not go into the cache.
void keep_only_object(const fs::path& work, bool keep_object) {
  std::error_code ec;
  std::vector<fs::path> doomed;
  for (const auto& e : fs::directory_iterator(work, ec)) {
    if (!(keep_object && e.path().filename() == kObjectName)) doomed.push_back(e.path());
  }
  for (const auto& p : doomed) fs::remove_all(p, ec);
}

// The preprocessed translation units the compiler left in `dir` (sorted, for a stable
// first rule).
std::vector<fs::path> translation_units(const fs::path& dir) {
  std::vector<fs::path> units;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() == ".ii" && regular_file(e.path())) units.push_back(e.path());
  }
  std::sort(units.begin(), units.end());
  return units;
}

}  // namespace

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

uint64_t parse_ptxas_gmem(std::string_view log) {
  // Only ptxas's own lines count (candidate text can reach the log through #warning), and
  // the sum saturates instead of overflowing.
  constexpr uint64_t kMax = uint64_t{1} << 62;
  uint64_t total = 0;
  size_t start = 0;
  while (start < log.size()) {
    size_t end = log.find('\n', start);
    if (end == std::string_view::npos) end = log.size();
    const std::string_view line = log.substr(start, end - start);
    const size_t at = line.find(" bytes gmem");
    if (line.rfind("ptxas info", 0) == 0 && at != std::string_view::npos) {
      size_t digits = at;
      while (digits > 0 && line[digits - 1] >= '0' && line[digits - 1] <= '9') --digits;
      uint64_t value = 0;
      for (size_t i = digits; i < at; ++i)
        value = std::min(kMax, value * 10 + static_cast<uint64_t>(line[i] - '0'));
      total = std::min(kMax, total + value);
    }
    start = end + 1;
  }
  return total;
}

std::string truncate_compiler_log(std::string log, const std::string& build_dir, size_t max_bytes) {
  if (!build_dir.empty()) {
    const std::string prefix = build_dir + "/";
    for (size_t p = log.find(prefix); p != std::string::npos; p = log.find(prefix, p)) {
      log.erase(p, prefix.size());
    }
  }
  // ptxas resource reports are noise in feedback.
  std::string kept;
  size_t start = 0;
  while (start < log.size()) {
    size_t end = log.find('\n', start);
    if (end == std::string::npos) end = log.size();
    const std::string_view line(log.data() + start, end - start);
    const bool noise = line.rfind("ptxas info", 0) == 0 ||
                       line.find("bytes stack frame") != std::string_view::npos;
    if (!noise) {
      kept.append(line);
      kept += '\n';
    }
    start = end + 1;
  }
  if (kept.size() <= max_bytes) return kept;
  size_t cut = kept.rfind('\n', max_bytes);
  if (cut == std::string::npos || cut == 0) cut = max_bytes;
  const size_t dropped = kept.size() - cut;
  kept.resize(cut);
  kept += "\n[... " + std::to_string(dropped) + " more bytes of compiler output omitted]\n";
  return kept;
}

CompileDriver::CompileDriver(CompilerConfig config, std::string version,
                             std::vector<fs::path> toolchain)
    : config_(std::move(config)),
      compiler_version_(std::move(version)),
      toolchain_(std::move(toolchain)),
      accounting_(std::make_shared<Accounting>()),
      extras_(std::make_shared<ExtrasCache>()) {}

Result<CompileDriver> CompileDriver::create(CompilerConfig config) {
  const bool cuda = config.backend == Backend::kCuda;
  KEVIN_ASSIGN_OR_RETURN(fs::path compiler, cuda
                                                ? resolve(config.nvcc, {"/usr/local/cuda/bin/nvcc"})
                                                : resolve(config.gxx, {}));
  (cuda ? config.nvcc : config.gxx) = compiler;
  if (config.abi_include_dir.empty() || !fs::exists(config.abi_include_dir / "kevin_abi.h")) {
    return not_found("kevin_abi.h not found in " + config.abi_include_dir.string());
  }
  // Real paths throughout: the sandbox binds them at the same place, and the log scrubbing
  // looks for the same spelling the compiler prints.
  config.abi_include_dir = fs::canonical(config.abi_include_dir);
  config.cache_dir = fs::weakly_canonical(config.cache_dir);
  if (config.max_processes == 0)
    config.max_processes = std::min<size_t>(kDefaultMaxProcesses, hardware_threads());
  if (config.sandbox) {
    if (config.sandbox_path.empty()) config.sandbox_path = sys::executable_dir() / "kevin-sandbox";
    if (::access(config.sandbox_path.c_str(), X_OK) != 0) {
      return not_found("kevin-sandbox not found at " + config.sandbox_path.string() +
                       " (build it, or compile without the sandbox: --no-sandbox)");
    }
  }
  if (config.torch) {
    for (const auto& dirs : {config.torch->include_dirs, config.torch->library_dirs}) {
      config.extra_read_only.insert(config.extra_read_only.end(), dirs.begin(), dirs.end());
    }
  }
  std::string cuda_include;
  if (cuda && config.torch) {
    // A torch extension's host unit is built with g++, which needs the toolkit's headers.
    KEVIN_ASSIGN_OR_RETURN(config.gxx, resolve(config.gxx, {}));
    cuda_include = toolkit_include_dir(compiler);
    // nvcc may be a script that runs the toolkit's from elsewhere: the jail needs its headers.
    if (!cuda_include.empty()) config.extra_read_only.push_back(cuda_include);
  }
  fs::path objcopy;
  if (config.torch) {
    // Several extensions of one answer are linked into one object with its help.
    KEVIN_ASSIGN_OR_RETURN(objcopy, resolve("objcopy", {"/usr/bin/objcopy"}));
    config.extra_read_only.push_back(objcopy.parent_path());
    // Host units read the precompiled torch header from here, and the lite bridge is linked
    // from here (toolchain_extras).
    std::error_code ec;
    fs::create_directories(config.cache_dir / kHeadersDir, ec);
    if (ec)
      return internal_error("cannot create " + (config.cache_dir / kHeadersDir).string() + ": " +
                            ec.message());
    config.extra_read_only.push_back(config.cache_dir / kHeadersDir);
  }
  std::vector<fs::path> toolchain = toolchain_paths(compiler, config.extra_read_only);
  CompileDriver driver(std::move(config), "", std::move(toolchain));
  driver.cuda_include_dir_ = cuda_include;
  driver.objcopy_ = objcopy;
  std::vector<std::pair<fs::path, const char*>> versions = {{compiler, cuda ? "Build" : "g++"}};
  if (cuda && driver.config_.torch) versions.emplace_back(driver.config_.gxx, "g++");
  for (const auto& [program, needle] : versions) {
    // Through the sandbox when it is on: a sandbox that cannot work here fails now, once.
    BuildBudget probe(driver.build_limits(), sys::Deadline::after(driver.config_.timeout));
    KEVIN_ASSIGN_OR_RETURN(Run version,
                           driver.run_compiler({program.string(), "--version"}, {}, 0, probe));
    if (!version.ok)
      return unavailable(program.string() + " --version failed: " + version.output + version.notes);
    const std::string line = first_nonempty_line_with(version.output, needle);
    driver.compiler_version_ += driver.compiler_version_.empty() ? line : " + " + line;
  }
  KEVIN_RETURN_IF_ERROR(driver.find_include_roots());
  if (!cuda_include.empty()) driver.include_roots_.push_back(cuda_include);
  if (driver.config_.torch) {
    driver.include_roots_.push_back((driver.config_.cache_dir / kHeadersDir).string());
    // Read once here, not at every build's cache key.
    driver.wants_lite_ =
        cuda && regular_file(driver.config_.abi_include_dir / kLiteDir / kLiteBridgeSource);
    driver.extras_digest_ = driver.compute_extras_digest();
  }
  return driver;
}

Status CompileDriver::find_include_roots() {
  // The preprocessor's own list (-v), as the build's flags make it, plus the ABI folder.
  std::vector<std::string> argv = {compiler().string()};
  for (const auto& f : flags()) argv.push_back(f);
  if (config_.backend == Backend::kCuda) {
    argv.insert(argv.end(), {"-E", "-Xcompiler", "-v", "-x", "cu"});
  } else {
    argv.insert(argv.end(), {"-E", "-v", "-x", "c++"});
  }
  argv.insert(argv.end(), {"-I", config_.abi_include_dir.string(), "/dev/null", "-o", "/dev/null"});
  BuildBudget probe(build_limits(), sys::Deadline::after(config_.timeout));
  KEVIN_ASSIGN_OR_RETURN(Run run, run_compiler(argv, {}, 0, probe));
  include_roots_ = include_search_dirs(run.output);
  if (!run.ok || include_roots_.empty()) {
    return unavailable("cannot read the include search directories of " + compiler().string() +
                       ": " + run.output + run.notes);
  }
  include_roots_.push_back(config_.abi_include_dir.string());
  return Status::ok();
}

std::vector<std::string> CompileDriver::flags() const {
  const bool cuda = config_.backend == Backend::kCuda;
  if (config_.torch && !cuda) return host_flags();
  if (config_.torch) return device_flags(false);
  return cuda ? std::vector<std::string>{"-O3",
                                         "-std=c++17",
                                         "-arch=" + config_.cuda_arch,
                                         "-shared",
                                         "-Xcompiler",
                                         "-fPIC",
                                         "-cudart",
                                         "shared",
                                         "--expt-relaxed-constexpr",
                                         "-Xptxas",
                                         "-v",
                                         "-Xlinker",
                                         "-z,relro,-z,now"}
              : std::vector<std::string>{"-O3",   "-std=c++17",     "-march=x86-64-v2",   "-shared",
                                         "-fPIC", "-fno-fast-math", "-Wl,-z,relro,-z,now"};
}

std::vector<std::string> CompileDriver::device_flags(bool lite) const {
  // One device code (no PTX for other GPUs: only this one runs it), so nvcc runs the device
  // front end once; -t 2 runs it beside the host front end.
  const std::string& arch = config_.cuda_arch;
  const std::string virtual_arch = arch.rfind("sm_", 0) == 0 ? "compute_" + arch.substr(3) : arch;
  std::vector<std::string> flags = {"-O3",
                                    "-std=c++17",
                                    "-gencode",
                                    "arch=" + virtual_arch + ",code=" + arch,
                                    "-Xcompiler",
                                    "-fPIC",
                                    "--expt-relaxed-constexpr",
                                    "-Xptxas",
                                    "-v",
                                    "-t",
                                    std::to_string(kDeviceThreads)};
  for (auto& f : torch_unit_flags(true, lite)) flags.push_back(std::move(f));
  return flags;
}

std::vector<std::string> CompileDriver::torch_unit_flags(bool device_unit, bool lite) const {
  // What torch.utils.cpp_extension passes, fixed: the answer's extra_cflags are not used.
  std::vector<std::string> flags = {"-DTORCH_API_INCLUDE_EXTENSION_H"};
  for (const auto& d : config_.torch->defines) flags.push_back("-D" + d);
  if (device_unit) {
    for (const char* d : {"__CUDA_NO_HALF_OPERATORS__", "__CUDA_NO_HALF_CONVERSIONS__",
                          "__CUDA_NO_BFLOAT16_CONVERSIONS__", "__CUDA_NO_HALF2_OPERATORS__"}) {
      flags.push_back(std::string("-D") + d);
    }
  }
  if (lite) {
    flags.insert(flags.end(), {"-isystem", (config_.abi_include_dir / kLiteDir).string()});
  } else {
    for (const auto& dir : config_.torch->include_dirs)
      flags.insert(flags.end(), {"-isystem", dir});
  }
  if (!device_unit && !cuda_include_dir_.empty())
    flags.insert(flags.end(), {"-isystem", cuda_include_dir_});
  return flags;
}

std::vector<std::string> CompileDriver::host_flags() const {
  if (!config_.torch) return {};
  std::vector<std::string> flags = {"-O3", "-std=c++17", "-march=x86-64-v2", "-fPIC",
                                    "-fno-fast-math"};
  for (auto& f : torch_unit_flags(false, false)) flags.push_back(std::move(f));
  return flags;
}

std::vector<std::string> CompileDriver::link_flags() const {
  if (!config_.torch) return {};
  std::vector<std::string> flags =
      config_.backend == Backend::kCuda
          ? std::vector<std::string>{"-shared", "-cudart", "shared", "-Xlinker", "-z,relro,-z,now"}
          : std::vector<std::string>{"-shared", "-Wl,-z,relro,-z,now"};
  for (const auto& dir : config_.torch->library_dirs) flags.push_back("-L" + dir);
  return flags;
}

std::vector<std::string> CompileDriver::libraries() const {
  if (!config_.torch) return {};
  // After the source: a linker that drops libraries nothing before them needs (--as-needed)
  // must see the object's references first.
  std::vector<std::string> libs = {"-lc10", "-ltorch", "-ltorch_cpu", "-ltorch_python"};
  if (config_.backend == Backend::kCuda) libs.insert(libs.end(), {"-lc10_cuda", "-ltorch_cuda"});
  return libs;
}

std::string CompileDriver::cache_key(const std::vector<std::string_view>& sources) const {
  Sha256 h;
  h.update_field(kCacheFormat);
  for (const auto source : sources) h.update_field(source);
  h.update_field(std::to_string(KEVIN_ABI_VERSION)).update_field(compiler_version_);
  for (const auto& list : {flags(), host_flags(), link_flags(), libraries()}) {
    for (const auto& f : list) h.update_field(f);
  }
  h.update_field(config_.backend == Backend::kCuda ? config_.cuda_arch : "host");
  // How an extension is built (two units, each in its forms, with these extras) is part of
  // what it is.
  if (config_.torch) {
    h.update_field("torch " + config_.torch->torch_version + ", two units in forms, extras " +
                   extras_digest_);
  }
  return h.hex_digest();
}

fs::path CompileDriver::compiler() const {
  return config_.backend == Backend::kCuda ? config_.nvcc : config_.gxx;
}

std::vector<std::string> CompileDriver::compiler_argv(const fs::path& source, Step step) const {
  std::vector<std::string> argv = {compiler().string()};
  for (const auto& f : flags()) argv.push_back(f);
  if (step == Step::kPreprocess) argv.push_back("-E");
  if (step == Step::kCompile && config_.backend == Backend::kCuda) {
    argv.insert(argv.end(), {"--keep", "--keep-dir", kKeptDir});
  }
  argv.insert(argv.end(), {"-I", config_.abi_include_dir.string(), source.filename().string(), "-o",
                           step == Step::kPreprocess ? "candidate.ii" : kObjectName});
  return argv;
}

std::vector<std::string> CompileDriver::host_argv(Step step, const std::string& dir, bool several,
                                                  const std::string& header) const {
  std::vector<std::string> argv = {config_.gxx.string()};
  for (auto& f : host_flags()) argv.push_back(std::move(f));
  if (several) argv.push_back(kNoGnuUnique);
  if (!header.empty()) argv.insert(argv.end(), {"-include", header});
  argv.insert(argv.end(), {step == Step::kPreprocess ? "-E" : "-c", dir + kHostSource, "-o",
                           dir + (step == Step::kPreprocess ? "main.ii" : "main.o")});
  return argv;
}

std::vector<std::string> CompileDriver::device_argv(const std::string& dir, bool several,
                                                    bool lite) const {
  std::vector<std::string> argv = {config_.nvcc.string()};
  for (auto& f : device_flags(lite)) argv.push_back(std::move(f));
  if (several) argv.push_back(std::string("-Xcompiler=") + kNoGnuUnique);
  argv.insert(argv.end(), {"--keep", "--keep-dir", dir + kKeptDir, "-c", dir + kDeviceSource, "-o",
                           dir + "cuda.o"});
  return argv;
}

std::vector<std::string> CompileDriver::link_argv(const std::vector<std::string>& objects) const {
  std::vector<std::string> argv = {compiler().string()};
  for (auto& f : link_flags()) argv.push_back(std::move(f));
  argv.insert(argv.end(), objects.begin(), objects.end());
  argv.insert(argv.end(), {"-o", kObjectName});
  for (auto& lib : libraries()) argv.push_back(std::move(lib));
  return argv;
}

std::vector<std::string> CompileDriver::sandboxed(const std::vector<std::string>& argv,
                                                  const fs::path& work, uint64_t file_size_limit,
                                                  const Grant& grant) const {
  sys::JailOptions jail;
  jail.read_only = toolchain_;
  jail.read_only.push_back(config_.abi_include_dir);
  if (!work.empty()) jail.read_write.push_back(work);
  jail.chdir = work.empty() ? fs::path("/") : work;
  jail.tmp_bytes = config_.tmp_bytes;
  jail.parent_pid = ::getpid();
  jail.limits.address_space_bytes = grant.address_space_bytes;
  jail.limits.cpu_seconds = grant.cpu_seconds;
  jail.limits.file_size_bytes = file_size_limit;
  jail.env = sandbox_environment(compiler());
  jail.command = argv;
  std::vector<std::string> command = {config_.sandbox_path.string()};
  for (auto& a : sys::jail_args(jail)) command.push_back(std::move(a));
  return command;
}

BuildLimits CompileDriver::build_limits() const {
  BuildLimits limits;
  limits.max_processes = config_.max_processes;
  limits.memory_bytes = config_.memory_limit_bytes;
  limits.cpu = config_.cpu_budget;
  limits.process_cpu = config_.timeout;
  return limits;
}

Result<CompileDriver::Run> CompileDriver::run_compiler(const std::vector<std::string>& argv,
                                                       const fs::path& work,
                                                       uint64_t file_size_limit,
                                                       BuildBudget& budget) const {
  KEVIN_ASSIGN_OR_RETURN(std::vector<Run> runs,
                         run_compilers({Job{argv, file_size_limit}}, work, budget));
  return std::move(runs.front());
}

Result<std::vector<CompileDriver::Run>> CompileDriver::run_compilers(const std::vector<Job>& jobs,
                                                                     const fs::path& work,
                                                                     BuildBudget& budget) const {
  const auto limit_of = [&](const Job& job) {
    return job.file_size_limit == 0 ? config_.file_size_limit_bytes : job.file_size_limit;
  };
  sys::CommandOptions options;
  options.max_output = config_.max_output_bytes;  // all of it: ptxas's reports must not be cut off
  options.kill_after_output = config_.max_output_bytes;
  if (config_.sandbox) {
    options.env = std::vector<std::string>{};
  } else {
    // Unconfined, the compiler at least gets no secrets: an #include of /proc/self/environ
    // would echo its environment into the feedback.
    options.env = sys::current_environment(
        {"PATH", "LANG", "LC_ALL", "TMPDIR", "HOME", "CUDA_HOME", "CUDA_PATH"});
    if (!work.empty()) options.cwd = work;
  }
  const bool lend = config_.sandbox && ::geteuid() == 0 && !work.empty();
  // As root the compiler runs as nobody: the work folder is lent to it for the runs.
  if (lend) KEVIN_RETURN_IF_ERROR(sys::chown_tree(work, sys::kNobodyUid, sys::kNobodyGid, false));
  // The widest compiles first (a wide job waits for as many free processes, which the narrow
  // ones would keep taking), the quick preprocessing last.
  std::vector<size_t> order(jobs.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (jobs[a].preprocessing != jobs[b].preprocessing) return jobs[b].preprocessing;
    return jobs[a].processes > jobs[b].processes;
  });
  std::vector<size_t> widths;
  for (const size_t i : order) widths.push_back(jobs[i].processes);
  std::vector<std::optional<Result<Run>>> results(jobs.size());
  const auto run = [&](size_t k, const Grant& grant) {
    const size_t i = order[k];
    const auto command =
        config_.sandbox ? sandboxed(jobs[i].argv, work, limit_of(jobs[i]), grant) : jobs[i].argv;
    auto ran = sys::run_command(command, budget.deadline(), options);
    if (!ran.is_ok()) {
      results[i].emplace(ran.status());
      return JobUsage{std::chrono::microseconds(0), true};  // our side failed: nothing more
    }
    results[i].emplace(classify(*ran, limit_of(jobs[i]), grant));
    return JobUsage{ran->exit.cpu_time, !results[i]->is_ok() || results[i]->value().limit};
  };
  const std::vector<Admission> admitted = budget.run(widths, run);
  std::vector<Admission> admissions(jobs.size());
  for (size_t k = 0; k < order.size(); ++k) admissions[order[k]] = admitted[k];
  // Back to us, minus anything that is not a plain file or folder (a planted symlink would
  // redirect our reads of the object or the preprocessed units).
  if (lend) KEVIN_RETURN_IF_ERROR(sys::chown_tree(work, ::geteuid(), ::getegid(), true));
  std::vector<Run> runs;
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (!admissions[i].ran) {
      runs.push_back(not_started(admissions[i]));
      continue;
    }
    KEVIN_ASSIGN_OR_RETURN(Run r, std::move(*results[i]));
    runs.push_back(std::move(r));
  }
  return runs;
}

CompileDriver::Run CompileDriver::not_started(const Admission& admission) const {
  Run run;
  run.started = false;
  run.limit = true;
  run.timed_out = admission.cpu_spent;
  run.notes = admission.cpu_spent ? "not started: the build's CPU time budget (" +
                                        std::to_string(config_.cpu_budget.count()) +
                                        " s, all its compiler processes together) was spent\n"
                                  : "not started: the build had stopped at a limit\n";
  return run;
}

Result<CompileDriver::Run> CompileDriver::classify(const sys::CommandResult& r,
                                                   uint64_t file_size_limit,
                                                   const Grant& grant) const {
  const bool sandbox_failed =
      config_.sandbox && r.exit.exited &&
      (r.exit.code == sys::kJailSetupFailedExit || r.exit.code == sys::kJailUsageExit) &&
      r.output.find(sys::kJailMessagePrefix) != std::string::npos;
  if (sandbox_failed) {
    const size_t at = r.output.rfind(sys::kJailMessagePrefix);
    const std::string line = r.output.substr(at, r.output.find('\n', at) - at);
    return unavailable("compiler sandbox failed: " + line);
  }
  Run run;
  run.ok = !r.timed_out && !r.output_exceeded && r.exit.exited && r.exit.code == 0;
  run.timed_out = r.timed_out;
  run.output = r.output;
  run.wall_ms = r.wall_ms;
  if (run.ok) return run;
  // Our explanation goes first: the log is cut from the end when it is long.
  const auto note = [&](const std::string& line) { run.notes += line + "\n"; };
  if (r.timed_out) {
    run.limit = true;
    note("compilation timed out after " + std::to_string(config_.timeout.count()) + " s");
  } else if (r.output_exceeded) {
    note("the compiler printed more than " + human_bytes(config_.max_output_bytes) +
         " of diagnostics and was stopped");
  } else if ((!r.exit.exited && r.exit.signal == SIGXFSZ) ||
             r.output.find("File size limit exceeded") != std::string::npos) {
    run.file_too_large = true;
    note("the compiler exceeded its output file size limit (" + human_bytes(file_size_limit) + ")");
  } else if ((!r.exit.exited && r.exit.signal == SIGXCPU) ||
             r.output.find("CPU time limit exceeded") != std::string::npos) {
    run.timed_out = true;  // its CPU time limit is the timeout, or its share of the budget
    run.limit = true;
    const bool share = grant.cpu_seconds < static_cast<uint64_t>(config_.timeout.count());
    note(share ? "the compiler used up its share of the build's CPU time budget (" +
                     std::to_string(grant.cpu_seconds) + " s of " +
                     std::to_string(config_.cpu_budget.count()) +
                     " s, all its compiler processes together)"
               : "compilation timed out after " + std::to_string(config_.timeout.count()) +
                     " s (CPU time limit)");
  } else if (config_.sandbox && reports_memory_exhaustion(r.output)) {
    run.limit = true;
    const bool share = grant.address_space_bytes < config_.memory_limit_bytes;
    note("the compiler exceeded its memory limit (" + human_bytes(grant.address_space_bytes) +
         (share ? ", its share of the build's " + human_bytes(config_.memory_limit_bytes) +
                      " for the compiler processes running at once"
                : "") +
         ")");
  } else if (!r.exit.exited) {
    note("compiler " + r.exit.describe());
  }
  return run;
}

namespace {

Rejection preprocessed_too_large() {
  return {rules::kSourceTooLarge,
          "the preprocessed candidate is larger than " + human_bytes(kMaxPreprocessedBytes)};
}

}  // namespace

Status CompileDriver::gate_translation_units(const fs::path& dir, BuildResult* result) const {
  for (const auto& unit : translation_units(dir)) {
    auto text = read_file(unit, kMaxPreprocessedBytes);
    if (!text.is_ok() && text.status().code() == StatusCode::kInvalidArgument) {
      result->rejection = preprocessed_too_large();
      return Status::ok();
    }
    KEVIN_RETURN_IF_ERROR(text.status());
    if (auto r = check_translation_unit(*text, config_.backend, include_roots_, profile())) {
      result->rejection = std::move(r);
      return Status::ok();
    }
  }
  return Status::ok();
}

Status CompileDriver::gate_object(const fs::path& work, BuildResult* result) const {
  const fs::path object = work / kObjectName;
  std::error_code ec;
  if (fs::file_size(object, ec) > kMaxObjectBytes && !ec) {
    result->rejection = Rejection{rules::kStaticStorageTooLarge,
                                  "the built kernel is larger than 256 MiB (large static data)"};
    return Status::ok();
  }
  KEVIN_ASSIGN_OR_RETURN(std::string image, read_file(object, kMaxObjectBytes));
  result->rejection = check_object(image, config_.backend, result->device_global_bytes, profile());
  return Status::ok();
}

Status CompileDriver::run_pipeline(const fs::path& work, const fs::path& source,
                                   BuildResult* result, std::string* log) const {
  const bool cuda = config_.backend == Backend::kCuda;
  BuildBudget budget(build_limits(), sys::Deadline::after(config_.timeout));
  if (!cuda) {
    // g++ -E with the compile's own flags is exactly what the compile sees, and keeps the
    // compile's diagnostics intact (-save-temps would lose macro-expansion notes).
    KEVIN_ASSIGN_OR_RETURN(Run pre, run_compiler(compiler_argv(source, Step::kPreprocess), work,
                                                 kMaxPreprocessedBytes + 1, budget));
    result->timed_out = pre.timed_out;
    if (pre.file_too_large) result->rejection = preprocessed_too_large();
    if (!pre.ok) {
      *log = pre.notes + pre.output;
      return Status::ok();
    }
    KEVIN_RETURN_IF_ERROR(gate_translation_units(work, result));
    if (result->rejection) return Status::ok();
  } else {
    // nvcc keeps every unit it preprocessed (host, and each device architecture with its
    // own macros): exactly what it compiled, where `nvcc -E` would show one device view.
    fs::create_directories(work / kKeptDir);
  }
  KEVIN_ASSIGN_OR_RETURN(Run run,
                         run_compiler(compiler_argv(source, Step::kCompile), work, 0, budget));
  *log = run.notes + run.output;
  result->timed_out = run.timed_out;
  result->device_global_bytes = cuda ? parse_ptxas_gmem(run.output) : 0;
  if (!run.ok || !regular_file(work / kObjectName)) return Status::ok();
  if (cuda) KEVIN_RETURN_IF_ERROR(gate_translation_units(work / kKeptDir, result));
  if (!result->rejection) KEVIN_RETURN_IF_ERROR(gate_object(work, result));
  result->ok = !result->rejection;
  return Status::ok();
}

namespace {

// Where one extension's files lie in a build's work folder: the folder itself for a lone
// extension (diagnostics read "main.cpp:3:"), ext<i>/ for each of several ("ext1/main.cpp:3:").
std::string extension_dir(size_t i, size_t count) {
  return count == 1 ? std::string() : "ext" + std::to_string(i) + "/";
}

}  // namespace

// One translation unit of an extension build: its folder, the forms it may be built in
// (fastest first; the last is the unit as written with PyTorch's headers), the one built last,
// and its compile among the build's jobs (a host unit's preprocessing is the job before it).
struct CompileDriver::ExtensionUnit {
  struct Form {
    std::string text;
    bool precompiled = false;  // host: g++ reads the precompiled light header first
    bool lite = false;         // device: kevin_torch_lite.h for PyTorch's headers
  };
  std::string dir;
  bool device = false;
  std::vector<Form> forms;
  size_t form = 0;
  size_t compile_job = 0;

  const Form& current() const { return forms[form]; }
  std::string source() const { return dir + (device ? kDeviceSource : kHostSource); }
  std::string object() const { return dir + (device ? "cuda.o" : "main.o"); }
  // Where its preprocessed units lie (nvcc keeps its own in --keep-dir).
  std::string preprocessed_dir() const { return device ? dir + kKeptDir : dir; }
};

Status CompileDriver::write_unit(const fs::path& work, const ExtensionUnit& unit,
                                 const std::string& text) const {
  if (unit.device) {
    std::error_code ec;
    fs::remove_all(work / (unit.dir + kKeptDir), ec);
    fs::create_directories(work / (unit.dir + kKeptDir));
  }
  return write_file_atomic(work / unit.source(), text);
}

std::vector<CompileDriver::Job> CompileDriver::unit_jobs(const ExtensionUnit& unit, bool several,
                                                         const Extras& extras) const {
  if (unit.device)
    return {{device_argv(unit.dir, several, unit.current().lite), 0, kDeviceThreads}};
  // The host unit is preprocessed beside its compile (the gate reads what g++ -E makes with
  // the compile's own flags); nothing built runs before every gate has passed.
  const std::string header = unit.current().precompiled ? extras.host_header : "";
  return {
      {host_argv(Step::kPreprocess, unit.dir, several, header), kMaxPreprocessedBytes + 1, 1, true},
      {host_argv(Step::kCompile, unit.dir, several, header), 0}};
}

std::vector<CompileDriver::ExtensionUnit> CompileDriver::extension_units_of(
    const std::vector<ExtensionUnits>& extensions, const Extras& extras) {
  std::vector<ExtensionUnit> units;
  for (size_t i = 0; i < extensions.size(); ++i) {
    const ExtensionUnits& ext = extensions[i];
    ExtensionUnit host{extension_dir(i, extensions.size()), false, {}, 0, 0};
    host.forms.push_back(
        {with_light_torch_header(ext.host, UnitKind::kHost), !extras.host_header.empty(), false});
    host.forms.push_back({ext.host, false, false});
    units.push_back(host);
    if (ext.device.empty()) continue;
    ExtensionUnit device{host.dir, true, {}, 0, 0};
    if (!extras.lite_bridge.empty() && lite_torch_header_applies(ext.device))
      device.forms.push_back({ext.device, false, true});
    device.forms.push_back({with_light_torch_header(ext.device, UnitKind::kDevice), false, false});
    device.forms.push_back({ext.device, false, false});
    units.push_back(std::move(device));
  }
  // A plain form followed by the same text would only repeat its build.
  for (auto& unit : units) {
    std::vector<ExtensionUnit::Form> distinct;
    for (auto& form : unit.forms) {
      const bool repeats = !distinct.empty() && distinct.back().text == form.text &&
                           !distinct.back().precompiled && !distinct.back().lite;
      if (repeats) distinct.pop_back();
      distinct.push_back(std::move(form));
    }
    unit.forms = std::move(distinct);
  }
  return units;
}

std::vector<std::string> CompileDriver::link_inputs(const ExtensionUnit& unit,
                                                    const Extras& extras) {
  std::vector<std::string> inputs = {unit.object()};
  if (unit.current().lite) inputs.push_back(extras.lite_bridge);
  return inputs;
}

Status CompileDriver::run_extension_pipeline(const fs::path& work,
                                             const std::vector<ExtensionUnits>& extensions,
                                             BuildResult* result, std::string* log) const {
  const Extras extras = toolchain_extras();
  // Every step of the build, all its units, retries and links, under one budget.
  BuildBudget budget(build_limits(), sys::Deadline::after(config_.timeout));
  const bool several = extensions.size() > 1;
  std::vector<ExtensionUnit> units = extension_units_of(extensions, extras);
  std::vector<Job> jobs;
  for (auto& unit : units) {
    if (!unit.dir.empty()) fs::create_directories(work / unit.dir);
    for (auto& job : unit_jobs(unit, several, extras)) jobs.push_back(std::move(job));
    unit.compile_job = jobs.size() - 1;
    KEVIN_RETURN_IF_ERROR(write_unit(work, unit, unit.current().text));
  }
  KEVIN_ASSIGN_OR_RETURN(std::vector<Run> runs, run_compilers(jobs, work, budget));
  // A unit that did not compile in one form is built in the next: the last (as written, with
  // PyTorch's headers) decides, and its diagnostics are the ones the model sees. One that ended
  // on a limit is not: its heavier forms would only spend more.
  for (;;) {
    std::vector<size_t> again;
    for (auto& unit : units) {
      const Run& run = runs[unit.compile_job];
      if (run.ok || run.limit || unit.form + 1 == unit.forms.size()) continue;
      ++unit.form;
      KEVIN_RETURN_IF_ERROR(write_unit(work, unit, unit.current().text));
      std::vector<Job> unit_runs = unit_jobs(unit, several, extras);
      const size_t first = unit.compile_job + 1 - unit_runs.size();
      for (size_t k = 0; k < unit_runs.size(); ++k) {
        jobs[first + k] = std::move(unit_runs[k]);
        again.push_back(first + k);
      }
    }
    if (again.empty()) break;
    std::vector<Job> retry;
    for (size_t i : again) retry.push_back(jobs[i]);
    KEVIN_ASSIGN_OR_RETURN(std::vector<Run> reruns, run_compilers(retry, work, budget));
    for (size_t k = 0; k < again.size(); ++k) runs[again[k]] = std::move(reruns[k]);
  }
  bool all_ok = true;
  for (const auto& run : runs) {
    result->timed_out = result->timed_out || run.timed_out;
    all_ok = all_ok && run.ok;
  }
  for (const auto& unit : units) {
    // The compiles' diagnostics; the preprocessor's would repeat the host compile's.
    const Run& compile = runs[unit.compile_job];
    *log += (compile.limit ? unit.source() + ": " : "") + compile.notes + compile.output;
    if (!unit.device && runs[unit.compile_job - 1].file_too_large)
      result->rejection = preprocessed_too_large();
    if (unit.device) result->device_global_bytes += parse_ptxas_gmem(runs[unit.compile_job].output);
  }
  if (!all_ok) return Status::ok();
  for (const auto& unit : units) {
    KEVIN_RETURN_IF_ERROR(gate_translation_units(work / unit.preprocessed_dir(), result));
    if (result->rejection) return Status::ok();
  }
  std::vector<std::string> objects;
  for (const auto& unit : units) {
    for (auto& input : link_inputs(unit, extras)) objects.push_back(std::move(input));
  }
  if (several) {
    KEVIN_ASSIGN_OR_RETURN(
        objects, isolate_extensions(work, extensions, units, extras, budget, result, log));
    if (objects.empty()) return Status::ok();  // the log or the rejection says why
  }
  KEVIN_ASSIGN_OR_RETURN(Run link, run_compiler(link_argv(objects), work, 0, budget));
  *log += link.notes + link.output;
  result->timed_out = link.timed_out;
  if (!link.ok || !regular_file(work / kObjectName)) return Status::ok();
  KEVIN_RETURN_IF_ERROR(gate_object(work, result));
  result->ok = !result->rejection;
  return Status::ok();
}

bool CompileDriver::record_runs(const std::vector<Run>& runs, BuildResult* result,
                                std::string* log) {
  bool all_ok = true;
  for (const auto& run : runs) {
    *log += run.notes + run.output;
    result->timed_out = result->timed_out || run.timed_out;
    all_ok = all_ok && run.ok;
  }
  return all_ok;
}

Result<std::vector<std::string>> CompileDriver::isolate_extensions(
    const fs::path& work, const std::vector<ExtensionUnits>& extensions,
    const std::vector<ExtensionUnit>& units, const Extras& extras, BuildBudget& budget,
    BuildResult* result, std::string* log) const {
  // Each extension's objects partially linked into one, with its section groups (inline
  // functions, template instances) resolved inside it rather than across extensions.
  std::vector<Job> jobs;
  std::vector<std::string> parts;
  for (size_t i = 0; i < extensions.size(); ++i) {
    const std::string dir = extension_dir(i, extensions.size());
    std::vector<std::string> argv = {config_.gxx.string(), "-r", "-nostdlib",
                                     "-Wl,--force-group-allocation"};
    for (const auto& unit : units) {
      if (unit.dir != dir) continue;
      for (auto& input : link_inputs(unit, extras)) argv.push_back(std::move(input));
    }
    parts.push_back(dir + "part.o");
    argv.insert(argv.end(), {"-o", parts.back()});
    jobs.push_back({std::move(argv), 0});
  }
  KEVIN_ASSIGN_OR_RETURN(std::vector<Run> runs, run_compilers(jobs, work, budget));
  if (!record_runs(runs, result, log)) return std::vector<std::string>{};
  // Then every name each defines made local but its module's entry point, and its load-time
  // functions renamed to be its own (symbol_gate.h).
  jobs.clear();
  for (size_t i = 0; i < extensions.size(); ++i) {
    KEVIN_ASSIGN_OR_RETURN(std::string image, read_file(work / parts[i], kMaxObjectBytes));
    auto symbols = read_elf_relocatable_symbols(image);
    if (!symbols.is_ok()) {
      result->rejection = Rejection{rules::kImportNotAllowed,
                                    "the partially linked extension is "
                                    "unreadable: " +
                                        symbols.status().message()};
      return std::vector<std::string>{};
    }
    const std::string entry = "PyInit_" + extensions[i].name;
    std::string localize, rename;
    for (const auto& name : symbols->globals) {
      if (name != entry) localize += name + "\n";
    }
    for (const auto& name : symbols->functions) {
      if (!is_load_time_function(name)) continue;
      const std::string own = extension_load_time_name(name, i);
      rename += name + " " + own + "\n";
      localize += own + "\n";
    }
    const std::string dir = extension_dir(i, extensions.size());
    KEVIN_RETURN_IF_ERROR(write_file_atomic(work / (dir + "localize.txt"), localize));
    KEVIN_RETURN_IF_ERROR(write_file_atomic(work / (dir + "rename.txt"), rename));
    jobs.push_back({{objcopy_.string(), "--redefine-syms=" + dir + "rename.txt",
                     "--localize-symbols=" + dir + "localize.txt", parts[i]},
                    0});
  }
  KEVIN_ASSIGN_OR_RETURN(runs, run_compilers(jobs, work, budget));
  if (!record_runs(runs, result, log)) return std::vector<std::string>{};
  return parts;
}

std::string CompileDriver::compute_extras_digest() const {
  Sha256 h;
  h.update_field("kevin-toolchain-extras-v1").update_field(compiler_version_);
  for (const auto& f : host_flags()) h.update_field(f);
  h.update_field(light_torch_includes(UnitKind::kHost));
  if (wants_lite_) {
    for (const char* name : {kLiteBridgeSource, "kevin_torch_lite.h"}) {
      auto text = read_file(config_.abi_include_dir / kLiteDir / name);
      h.update_field(text.is_ok() ? *text : std::string());
    }
  }
  return h.hex_digest();
}

CompileDriver::Extras CompileDriver::toolchain_extras() const {
  MutexLock lock(extras_->mu);
  if (extras_->looked_up) return extras_->extras;
  extras_->looked_up = true;
  auto extras = find_or_build_extras(config_.cache_dir / kHeadersDir / extras_digest_, wants_lite_);
  if (!extras.is_ok()) {
    KEVIN_LOG(warn) << "extensions are built without kevin's precompiled header and lite bridge: "
                    << extras.status().message();
    return extras_->extras;
  }
  extras_->extras = std::move(extras).value();
  return extras_->extras;
}

namespace {

// An extra of a published folder: its path, or empty with the reason it was not made logged.
std::string published_extra(const fs::path& dir, const std::string& name, const char* what) {
  if (regular_file(dir / name)) return (dir / name).string();
  auto why = read_file(dir / (name + kFailedSuffix), 4096);
  if (why.is_ok()) {
    // The reason's first line, and the compiler's first error where that is only the trail
    // of includes leading to it.
    const std::string first = why->substr(0, why->find('\n'));
    const std::string error = first_nonempty_line_with(*why, "error");
    KEVIN_LOG(warn) << "extensions are built without " << what << ": " << first
                    << (error == first ? "" : " ... " + error);
  }
  return {};
}

}  // namespace

Result<CompileDriver::Extras> CompileDriver::find_or_build_extras(const fs::path& dir,
                                                                  bool want_lite) const {
  const std::string precompiled = std::string(kHostHeaderName) + ".gch";
  if (!fs::exists(dir)) KEVIN_RETURN_IF_ERROR(build_extras(dir, want_lite));
  Extras extras;
  extras.host_header = published_extra(dir, precompiled, "a precompiled torch header");
  if (!extras.host_header.empty()) extras.host_header = (dir / kHostHeaderName).string();
  if (want_lite) extras.lite_bridge = published_extra(dir, kLiteBridgeObject, "the lite header");
  return extras;
}

Status CompileDriver::build_extras(const fs::path& dir, bool want_lite) const {
  // The first KernelBench answer waits for this (tens of seconds): say so, with the last
  // build's time, kept beside the toolchains' folders.
  const std::string what = "building the precompiled PyTorch header for KernelBench answers";
  const LongWait wait(what, config_.cache_dir / kHeadersDir / "build_seconds");
  const auto last = wait.last_time();
  KEVIN_LOG(info) << what << " (once per toolchain"
                  << (last ? "; last time " + std::to_string(last->count()) + " s" : "") << ")";
  KEVIN_ASSIGN_OR_RETURN(sys::TempDir work, staging_folder("extras-"));
  const std::string precompiled = std::string(kHostHeaderName) + ".gch";
  KEVIN_RETURN_IF_ERROR(write_file_atomic(
      work.path() / kHostHeaderName, std::string(light_torch_includes(UnitKind::kHost)) + "\n"));
  KEVIN_RETURN_IF_ERROR(write_file_atomic(work.path() / "check.cpp", ""));
  // The harness's own text, made once per toolchain: a budget of its own (the same limits), not
  // charged to the build that happens to need it first.
  BuildBudget budget(build_limits(), sys::Deadline::after(config_.timeout));
  std::vector<std::string> host = {config_.gxx.string()};
  for (auto& f : host_flags()) host.push_back(std::move(f));
  std::vector<Job> jobs = {{host, kMaxHeaderBytes}};
  jobs[0].argv.insert(jobs[0].argv.end(), {"-x", "c++-header", kHostHeaderName, "-o", precompiled});
  if (want_lite) {
    // Without unique statics: each of several extensions links its own copy, made local.
    jobs.push_back({host, 0});
    jobs[1].argv.insert(jobs[1].argv.end(),
                        {"-DKEVIN_LITE_CUDA=1", kNoGnuUnique, "-c",
                         (config_.abi_include_dir / kLiteDir / kLiteBridgeSource).string(), "-o",
                         kLiteBridgeObject});
  }
  KEVIN_ASSIGN_OR_RETURN(std::vector<Run> runs, run_compilers(jobs, work.path(), budget));
  const auto failed = [&](const std::string& name, const std::string& why) {
    std::error_code ec;
    fs::remove(work.path() / name, ec);
    return write_file_atomic(work.path() / (name + kFailedSuffix), why.substr(0, 4096));
  };
  if (runs[0].ok) {
    // g++ reads the header itself, silently, when it finds its precompiled form unusable: only
    // -Winvalid-pch tells, so a unit with the host flags must compile with that made an error.
    std::vector<std::string> check = host;
    check.insert(check.end(), {"-Winvalid-pch", "-Werror=invalid-pch", "-include", kHostHeaderName,
                               "-fsyntax-only", "check.cpp"});
    // A budget of its own: the bridge's running out of its share says nothing of the header.
    BuildBudget checking(build_limits(), budget.deadline());
    KEVIN_ASSIGN_OR_RETURN(Run checked, run_compiler(check, work.path(), 0, checking));
    if (!checked.ok)
      KEVIN_RETURN_IF_ERROR(failed(precompiled, "g++ does not use it: " + checked.output));
  } else {
    KEVIN_RETURN_IF_ERROR(
        failed(precompiled, "g++ could not precompile it: " + runs[0].notes + runs[0].output));
  }
  if (want_lite && !runs[1].ok) {
    KEVIN_RETURN_IF_ERROR(failed(kLiteBridgeObject,
                                 "its bridge does not build against this "
                                 "PyTorch: " +
                                     runs[1].notes + runs[1].output));
  }
  // Readable by nobody (the sandboxed compiler); published whole, or another process's is.
  ::chmod(work.path().c_str(), 0755);
  for (const auto& e : fs::directory_iterator(work.path())) ::chmod(e.path().c_str(), 0644);
  const fs::path staged = work.release();
  std::error_code ec;
  fs::rename(staged, dir, ec);
  if (ec) {
    fs::remove_all(staged, ec);
    if (!fs::exists(dir)) return internal_error("cannot publish " + dir.string());
  }
  if (Status s = wait.finish(); !s.is_ok()) {
    KEVIN_LOG(warn) << "how long the header took was not kept: " << s.message();
  }
  return Status::ok();
}

Result<sys::TempDir> CompileDriver::staging_folder(const std::string& prefix) const {
  std::error_code ec;
  const fs::path staging_root = config_.cache_dir / "staging";
  fs::create_directories(staging_root, ec);
  // Work folders are lent to nobody during a compile; no other process of nobody's (a
  // candidate runner) needs to reach them. The sandbox binds them directly.
  ::chmod(staging_root.c_str(), 0700);
  return sys::TempDir::create(prefix, staging_root);
}

Result<BuildResult> CompileDriver::build_fresh(const std::string& key, const fs::path& entry,
                                               const Pipeline& pipeline) const {
  const auto start = std::chrono::steady_clock::now();
  std::error_code ec;
  KEVIN_ASSIGN_OR_RETURN(sys::TempDir work, staging_folder("build-"));

  BuildResult result;
  result.key = key;
  std::string log;
  KEVIN_RETURN_IF_ERROR(pipeline(work.path(), &result, &log));
  result.log = truncate_compiler_log(log, work.path().string(), config_.max_log_bytes);
  result.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();

  keep_only_object(work.path(), result.ok);
  KEVIN_RETURN_IF_ERROR(write_file_atomic(work.path() / "build.json",
                                          dump_json(entry_json(result, compiler_version_), 1)));
  ::chmod(work.path().c_str(), 0755);  // runners read objects under another uid
  if (result.ok) ::chmod((work.path() / kObjectName).c_str(), 0755);
  const fs::path staged = work.release();
  auto lease = sys::publish_entry(staged, entry);
  if (!lease.is_ok()) {
    fs::remove_all(staged, ec);
    return lease.status();
  }
  KEVIN_ASSIGN_OR_RETURN(BuildResult stored, load_entry(entry, key));
  stored.compile_ms = result.compile_ms;
  if (stored.ok) stored.lease = std::move(lease).value();
  account_store(sys::entry_bytes(entry));
  return stored;
}

Result<BuildResult> CompileDriver::cached_or_built(const std::string& key,
                                                   const Pipeline& pipeline) const {
  const auto start = std::chrono::steady_clock::now();
  const fs::path entry = config_.cache_dir / "builds" / key.substr(0, 2) / key;
  if (fs::exists(entry / "build.json")) {
    // Leased before it is read, so it cannot be evicted between the read and the use.
    auto lease = sys::lease_entry(entry);
    auto hit = lease.is_ok() ? load_entry(entry, key) : Result<BuildResult>(lease.status());
    if (hit.is_ok()) {
      sys::touch_entry(entry);
      if (hit->ok) hit->lease = std::move(lease).value();
      hit->cache_hit = true;
      hit->compile_ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count();
      return hit;
    }
  }
  return build_fresh(key, entry, pipeline);
}

Result<BuildResult> CompileDriver::build(std::string_view source) const {
  if (config_.torch)
    return failed_precondition("this compile driver builds PyTorch extensions (build_extension)");
  return cached_or_built(
      cache_key({source}), [&](const fs::path& work, BuildResult* result, std::string* log) {
        const fs::path src =
            work / (config_.backend == Backend::kCuda ? "candidate.cu" : "candidate.cpp");
        KEVIN_RETURN_IF_ERROR(write_file_atomic(src, source));
        return run_pipeline(work, src, result, log);
      });
}

Result<BuildResult> CompileDriver::build_extensions(
    const std::vector<ExtensionUnits>& extensions) const {
  if (!config_.torch)
    return failed_precondition("this compile driver builds kevin's ABI, not PyTorch extensions");
  if (extensions.empty() || extensions.size() > kMaxExtensions) {
    return invalid_argument("an answer builds 1 to " + std::to_string(kMaxExtensions) +
                            " extensions, not " + std::to_string(extensions.size()));
  }
  std::vector<std::string_view> key_fields;
  std::set<std::string_view> names;
  for (const auto& ext : extensions) {
    if (!is_identifier(ext.name))
      return invalid_argument("extension name '" + ext.name + "' is not an identifier");
    if (!names.insert(ext.name).second)
      return invalid_argument("two extensions are named '" + ext.name + "'");
    if (!ext.device.empty() && config_.backend != Backend::kCuda) {
      return invalid_argument("an extension with CUDA sources cannot be built for the CPU backend");
    }
    key_fields.insert(key_fields.end(), {ext.name, ext.host, ext.device});
  }
  return cached_or_built(cache_key(key_fields),
                         [&](const fs::path& work, BuildResult* result, std::string* log) {
                           return run_extension_pipeline(work, extensions, result, log);
                         });
}

void CompileDriver::account_store(uint64_t bytes) const {
  bool scan = false;
  {
    MutexLock lock(accounting_->mu);
    accounting_->bytes += bytes;
    ++accounting_->stores_since_scan;
    scan = !accounting_->scanned || accounting_->bytes > config_.max_cache_bytes ||
           accounting_->stores_since_scan >= kRescanEvery;
  }
  if (!scan) return;
  if (Status s = enforce_cache_cap(config_.max_cache_bytes); !s.is_ok()) {
    KEVIN_LOG(warn) << "build cache eviction failed: " << s.to_string();
  }
}

Status CompileDriver::enforce_cache_cap(uint64_t max_bytes) const {
  KEVIN_ASSIGN_OR_RETURN(sys::EvictionStats stats,
                         sys::evict_to_cap(config_.cache_dir / "builds", max_bytes));
  if (stats.skipped) return Status::ok();  // another process is evicting right now
  MutexLock lock(accounting_->mu);
  accounting_->scanned = true;
  accounting_->bytes = stats.bytes_after;
  accounting_->stores_since_scan = 0;
  if (stats.evicted > 0) {
    KEVIN_LOG(debug) << "build cache: evicted " << stats.evicted << " entries, "
                     << stats.bytes_after << " bytes left (" << stats.in_use << " in use)";
  }
  return Status::ok();
}

std::vector<std::string> nvcc_include_dirs(std::string_view dryrun) {
  constexpr std::string_view kLine = "#$ INCLUDES=";
  std::vector<std::string> dirs;
  while (!dryrun.empty()) {
    const size_t end = std::min(dryrun.find('\n'), dryrun.size());
    std::string_view line = dryrun.substr(0, end);
    dryrun.remove_prefix(std::min(end + 1, dryrun.size()));
    if (!line.starts_with(kLine)) continue;
    line.remove_prefix(kLine.size());
    // Words split at spaces, the shell's quotes dropped: "-I/a"  "-I/b c" gives /a and /b c.
    std::string word;
    bool quoted = false;
    const auto flush = [&] {
      if (word.starts_with("-I") && word.size() > 2) dirs.push_back(word.substr(2));
      word.clear();
    };
    for (const char c : line) {
      if (c == '"') {
        quoted = !quoted;
      } else if ((c == ' ' || c == '\t' || c == '\r') && !quoted) {
        flush();
      } else {
        word += c;
      }
    }
    flush();
  }
  return dirs;
}

std::string toolkit_include_dir(const fs::path& nvcc) {
  // nvcc knows where its toolkit is, wherever it was reached from (a link or a wrapper script
  // in /usr/local/bin): its dry run prints the include folders it passes to its own steps.
  auto run = sys::run_command(
      {nvcc.string(), "--dryrun", "-x", "cu", "-c", "/dev/null", "-o", "/dev/null"},
      sys::Deadline::after(std::chrono::seconds(30)));
  if (!run.is_ok() || !run->exit.exited || run->exit.code != 0) return {};
  for (const auto& dir : nvcc_include_dirs(run->output)) {
    std::error_code ec;
    const fs::path include = fs::canonical(dir, ec);
    if (!ec && fs::exists(include / "cuda_runtime_api.h", ec)) return include.string();
  }
  return {};
}

}  // namespace kevin::engine
