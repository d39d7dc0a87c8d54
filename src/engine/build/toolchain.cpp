// toolchain.cpp — what the compile driver needs of the toolchain: the folders a sandboxed
// compiler must see, the CUDA toolkit's include folder, and the extras built once per toolchain
// (the precompiled PyTorch header and the lite bridge of KernelBench answers).
#include "engine/build/compiler.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "core/file.h"
#include "core/log.h"
#include "core/long_wait.h"
#include "core/mutex.h"
#include "core/sha256.h"
#include "engine/build/compiler_internal.h"
#include "engine/build/kernelbench.h"
#include "sys/process.h"
#include "sys/tempdir.h"

namespace kevin::engine {
namespace fs = std::filesystem;

namespace {

// `path` with its parent folders resolved, its last component kept (kevin-sandbox binds a
// path whose last component is a symlink as that symlink; parents must be real folders).
fs::path bindable(const fs::path& path) {
  std::error_code ec;
  const fs::path parent = fs::canonical(path.parent_path(), ec);
  return ec ? path : parent / path.filename();
}
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
