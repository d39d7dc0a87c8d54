// compiler.cpp — the compile driver: the toolchain's flags and command lines, compiler runs in
// the sandbox under the build's limits, the gates over what they produced, and the build of a
// kevin-ABI candidate. The cache is build_cache.cpp, the toolchain's extras toolchain.cpp, and
// KernelBench extensions kernelbench_build.cpp.
#include "engine/build/compiler.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <optional>

#include "core/file.h"
#include "core/json.h"
#include "core/log.h"
#include "core/mutex.h"
#include "core/parallel.h"
#include "engine/build/compiler_internal.h"
#include "engine/gates/hack_rules.h"
#include "engine/gates/symbol_gate.h"
#include "sys/confine.h"
#include "sys/jail.h"
#include "sys/process.h"
#include "sys/tempdir.h"

namespace kevin::engine {
namespace fs = std::filesystem;

namespace {

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
// Whole GiB or MiB where they are; a share of a budget divided by three reads in MiB, rounded
// down.
std::string human_bytes(uint64_t n) {
  if (n >= (uint64_t{1} << 30) && n % (uint64_t{1} << 30) == 0)
    return std::to_string(n >> 30) + " GiB";
  if (n >= (uint64_t{1} << 20)) return std::to_string(n >> 20) + " MiB";
  return std::to_string(n) + " bytes";
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
Rejection preprocessed_too_large() {
  return {rules::kSourceTooLarge,
          "the preprocessed candidate is larger than " + human_bytes(kMaxPreprocessedBytes)};
}
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

}  // namespace kevin::engine
