// compiler.cpp — compiler invocation, cache layout and log shaping.
#include <cstdint>
#include "engine/compiler.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <random>

#include "engine/abi/kevin_abi.h"
#include "core/file.h"
#include "core/json.h"
#include "core/sha256.h"
#include "sys/process.h"
#include "sys/tempdir.h"

namespace kevin::engine {
namespace fs = std::filesystem;

namespace {

constexpr const char* kCacheFormat = "kevin-build-v1";

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

std::string unique_name() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  char buf[32];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(rng()));
  return buf;
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
  if (r.ok) {
    r.object = dir / "candidate.so";
    if (!fs::exists(r.object)) return not_found("cache entry lacks its object");
  }
  return r;
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
      for (size_t i = digits; i < at; ++i) value = std::min(kMax, value * 10 + static_cast<uint64_t>(line[i] - '0'));
      total = std::min(kMax, total + value);
    }
    start = end + 1;
  }
  return total;
}

std::string truncate_compiler_log(std::string log, const std::string& build_dir,
                                  size_t max_bytes) {
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

Result<CompileDriver> CompileDriver::create(CompilerConfig config) {
  const bool cuda = config.backend == Backend::kCuda;
  KEVIN_ASSIGN_OR_RETURN(
      fs::path compiler,
      cuda ? resolve(config.nvcc, {"/usr/local/cuda/bin/nvcc"}) : resolve(config.gxx, {}));
  (cuda ? config.nvcc : config.gxx) = compiler;
  KEVIN_ASSIGN_OR_RETURN(auto version,
                         sys::run_command({compiler.string(), "--version"},
                                          sys::Deadline::after(std::chrono::seconds(30))));
  if (!version.exit.exited || version.exit.code != 0) {
    return unavailable(compiler.string() + " --version failed: " + version.output);
  }
  std::string line = first_nonempty_line_with(version.output, cuda ? "Build" : "g++");
  if (config.abi_include_dir.empty() || !fs::exists(config.abi_include_dir / "kevin_abi.h")) {
    return not_found("kevin_abi.h not found in " + config.abi_include_dir.string());
  }
  return CompileDriver(std::move(config), std::move(line));
}

std::vector<std::string> CompileDriver::flags() const {
  if (config_.backend == Backend::kCuda) {
    return {"-O3", "-std=c++17", "-arch=" + config_.cuda_arch, "-shared", "-Xcompiler",
            "-fPIC", "-cudart", "shared", "--expt-relaxed-constexpr", "-Xptxas", "-v",
            "-Xlinker", "-z,relro,-z,now"};
  }
  return {"-O3", "-std=c++17", "-march=x86-64-v2", "-shared", "-fPIC", "-fno-fast-math",
          "-Wl,-z,relro,-z,now"};
}

std::string CompileDriver::cache_key(std::string_view source) const {
  Sha256 h;
  h.update_field(kCacheFormat).update_field(source);
  h.update_field(std::to_string(KEVIN_ABI_VERSION)).update_field(compiler_version_);
  for (const auto& f : flags()) h.update_field(f);
  h.update_field(config_.backend == Backend::kCuda ? config_.cuda_arch : "host");
  return h.hex_digest();
}

Result<BuildResult> CompileDriver::build(std::string_view source) const {
  const auto start = std::chrono::steady_clock::now();
  const std::string key = cache_key(source);
  const fs::path entry = config_.cache_dir / "builds" / key.substr(0, 2) / key;
  if (fs::exists(entry / "build.json")) {
    if (auto hit = load_entry(entry, key); hit.is_ok()) {
      hit->cache_hit = true;
      hit->compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      return hit;
    }
  }
  std::error_code ec;
  const fs::path staging_root = config_.cache_dir / "staging";
  fs::create_directories(staging_root, ec);
  KEVIN_ASSIGN_OR_RETURN(sys::TempDir work, sys::TempDir::create("build-", staging_root));
  ::chmod(work.path().c_str(), 0755);  // runners read objects under another uid
  const bool cuda = config_.backend == Backend::kCuda;
  const fs::path src = work.path() / (cuda ? "candidate.cu" : "candidate.cpp");
  KEVIN_RETURN_IF_ERROR(write_file_atomic(src, source));

  std::vector<std::string> argv = {(cuda ? config_.nvcc : config_.gxx).string()};
  for (const auto& f : flags()) argv.push_back(f);
  argv.insert(argv.end(), {"-I", config_.abi_include_dir.string(), src.filename().string(), "-o",
                           "candidate.so"});
  // The compiler sees untrusted source (an #include of /proc/self/environ would echo its
  // environment into the feedback), so it gets only what it needs: no keys, no tokens.
  const std::vector<std::string> env = sys::current_environment({"PATH", "LANG", "LC_ALL", "TMPDIR", "HOME", "CUDA_HOME", "CUDA_PATH"});
  KEVIN_ASSIGN_OR_RETURN(auto run, sys::run_command(argv, sys::Deadline::after(config_.timeout),
                                                    1 << 20, work.path(), env));
  BuildResult result;
  result.key = key;
  result.compile_ms = run.wall_ms;
  result.ok = run.exit.exited && run.exit.code == 0 && fs::exists(work.path() / "candidate.so");
  result.device_global_bytes = cuda ? parse_ptxas_gmem(run.output) : 0;
  std::string log = run.output;
  if (run.timed_out) {
    log += "\ncompilation timed out after " + std::to_string(config_.timeout.count()) + " s\n";
  } else if (!run.exit.exited) {
    log += "\ncompiler " + run.exit.describe() + "\n";
  }
  result.log = truncate_compiler_log(log, work.path().string(), config_.max_log_bytes);
  if (run.timed_out) return result;  // not cached: a loaded machine may finish next time

  const Json meta = {{"ok", result.ok},
                     {"log", result.log},
                     {"compile_ms", result.compile_ms},
                     {"device_global_bytes", result.device_global_bytes},
                     {"compiler", compiler_version_}};
  KEVIN_RETURN_IF_ERROR(write_file_atomic(work.path() / "build.json", dump_json(meta, 1)));
  fs::remove(src, ec);
  fs::create_directories(entry.parent_path(), ec);
  const fs::path staged = staging_root / ("done-" + unique_name());
  fs::rename(work.path(), staged, ec);
  if (!ec) {
    fs::rename(staged, entry, ec);
    if (ec) fs::remove_all(staged, ec);  // another builder won the race; theirs is identical
  }
  if (auto stored = load_entry(entry, key); stored.is_ok()) {
    stored->compile_ms = result.compile_ms;
    return stored;
  }
  return internal_error("build cache entry " + entry.string() + " unreadable after store");
}

}  // namespace kevin::engine
