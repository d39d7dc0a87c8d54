// kernelbench_build.cpp — the compile driver's build of a KernelBench answer's extensions: each
// unit in its fastest form that compiles, the extensions linked into one object and isolated
// from each other, through the same sandbox, limits and gates as a kevin-ABI build.
#include "engine/build/compiler.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <string>
#include <vector>

#include "core/file.h"
#include "core/log.h"
#include "engine/build/compiler_internal.h"
#include "engine/gates/hack_rules.h"
#include "engine/build/kernelbench.h"
#include "engine/gates/symbol_gate.h"
#include "sys/process.h"

namespace kevin::engine {
namespace fs = std::filesystem;

namespace {

bool is_identifier(std::string_view name) {
  const auto word = [](char c) { return c == '_' || std::isalnum(static_cast<unsigned char>(c)); };
  return !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
         std::all_of(name.begin(), name.end(), word);
}
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

}  // namespace kevin::engine
