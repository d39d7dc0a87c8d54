// compiler.h — the compile driver: builds one candidate source (or a KernelBench answer's
// extension) into a shared object with harness-fixed flags (nvcc for CUDA, g++ for CPU)
// behind a content-addressed cache.
// The compiler runs inside kevin-sandbox (sys/jail.h): it sees the toolchain, the ABI header
// and its own work folder only (extensions: also PyTorch's folders and <cache_dir>/headers,
// read-only), as nobody, with memory, CPU, file-size and output limits. The memory and CPU
// limits are one build's, shared by all its compiler processes (build_budget.h): a build runs
// at most max_processes of them at once, whatever its number of units.
// Every preprocessed translation unit it compiled goes through the translation-unit gate and
// the object through the object gate before the build counts as ok.
// The cache key hashes (format, sources, ABI version, compiler version, flags, arch); entries
// are prepared in a private folder and renamed into place (sys/cache_dir.h), so concurrent
// builders of the same source are safe and readers never see half an entry; the cache is
// kept under a size cap by evicting least recently used entries that nobody holds.
// Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "engine/gates/backend.h"
#include "engine/build/build_budget.h"
#include "engine/gates/gate.h"
#include "engine/build/kernelbench.h"
#include "sys/file_lock.h"
#include "sys/process.h"
#include "sys/tempdir.h"

namespace kevin::engine {

struct CompilerConfig {
  Backend backend = Backend::kCuda;
  std::filesystem::path cache_dir;        // entries go under <cache_dir>/builds
  std::filesystem::path abi_include_dir;  // folder holding kevin_abi.h
  std::string cuda_arch = "sm_90a";
  std::filesystem::path nvcc = "nvcc";  // resolved on PATH or /usr/local/cuda/bin if relative
  std::filesystem::path gxx = "g++";
  // Wall clock of one build (all its steps), and the most CPU time one compiler process may use.
  std::chrono::seconds timeout{180};
  size_t max_log_bytes = 6000;  // compiler diagnostics kept for feedback

  // The compiler sandbox. With `sandbox` false the compiler runs unconfined (only its
  // environment is scrubbed): the --no-sandbox debugging path.
  bool sandbox = true;
  std::filesystem::path sandbox_path;  // kevin-sandbox; empty: beside the running executable
  // One build's limits, all its compiler processes together (BuildLimits): the most running at
  // once (0: min(4, hardware threads), set by create()), the address space of those running at
  // once, and the CPU time of all of them.
  size_t max_processes = 0;
  uint64_t memory_limit_bytes = uint64_t{8} << 30;
  std::chrono::seconds cpu_budget{360};
  uint64_t file_size_limit_bytes = uint64_t{512} << 20;  // largest file the compiler may write
  uint64_t tmp_bytes = uint64_t{512} << 20;              // the sandbox's private /tmp
  size_t max_output_bytes = size_t{4} << 20;           // diagnostics beyond this stop the compiler
  std::vector<std::filesystem::path> extra_read_only;  // more paths the toolchain needs

  // Cap on the bytes under <cache_dir>/builds; least recently used entries that no
  // BuildResult holds are evicted after a store that goes over it.
  uint64_t max_cache_bytes = uint64_t{8} << 30;

  // Set: this driver builds PyTorch extensions from KernelBench answers (build_extension)
  // against this installation, with the torch-extension profile of the gates
  // (Profile::kTorchExtension); its folders are added to the sandbox's read-only paths.
  // On the CUDA backend it also needs `gxx` for the host unit.
  std::optional<TorchToolchain> torch;
};

struct BuildResult {
  bool ok = false;               // true: `object` is built and passed both gates
  std::string log;               // compiler diagnostics, truncated, paths scrubbed
  std::filesystem::path object;  // the shared object when ok
  std::string key;               // cache key (hex SHA-256)
  double compile_ms = 0;         // time spent now: the build, or the cache lookup on a hit
  bool cache_hit = false;
  uint64_t device_global_bytes = 0;  // __device__ storage reported by ptxas
  // Set when a gate refused the preprocessed source or the built object: ok is false and
  // there is no object (the judge's verdict is `rejected` with this rule).
  std::optional<Rejection> rejection;
  bool timed_out = false;  // the compiler ran out of time (ok is false)
  // Keeps the cache entry, and so `object`, from being evicted (by any process) while this
  // result is alive; held only when ok. Drop the result (or reset the lease) when done.
  sys::FileLock lease;
};

class CompileDriver {
 public:
  // Resolves the compiler and reads its version, through the sandbox when it is on (so a
  // sandbox that cannot work here fails now, with its one-line reason). kNotFound if the
  // compiler or kevin-sandbox is missing; kUnavailable if the sandbox cannot be set up.
  static Result<CompileDriver> create(CompilerConfig config);

  // Builds `source`, a candidate of kevin's ABI (or returns the cached build). A compile
  // failure, a compiler timeout or a gate's refusal is a BuildResult with ok = false (and
  // cached); an error Status means our side failed and nothing was cached: cache not
  // writable, sandbox or compiler unusable. kFailedPrecondition on a torch driver.
  Result<BuildResult> build(std::string_view source) const;

  // Builds a KernelBench answer's extensions (one per load_inline call) as load_inline builds
  // each, into one shared object: every host unit with g++ and every device unit with nvcc, as
  // many at once as the build's one budget allows (build_budget.h),
  // each in the fastest of its forms that compiles (host: the light header
  // precompiled; device: kevin_torch_lite.h where lite_torch_header_applies; last, as written),
  // each preprocessed unit through the translation-unit gate, then the link and the object
  // gate. Several extensions are first partially linked one by one, each with
  // every name it defines made local but its module's entry point (PyInit_<name>), so one
  // extension's names never meet another's (isolate_extensions); the runner loads each module
  // from the one object by its name. Results, caching and errors as build().
  // kFailedPrecondition unless config().torch is set; kInvalidArgument for no extensions or
  // more than kMaxExtensions, a name that is not an identifier or is used twice, or a device
  // unit on the CPU backend.
  Result<BuildResult> build_extensions(const std::vector<ExtensionUnits>& extensions) const;

  // Evicts least recently used, unheld cache entries until <cache_dir>/builds holds at most
  // `max_bytes` (build() does this itself with config().max_cache_bytes when needed).
  Status enforce_cache_cap(uint64_t max_bytes) const;

  const CompilerConfig& config() const { return config_; }
  const std::string& compiler_version() const { return compiler_version_; }
  Profile profile() const { return config_.torch ? Profile::kTorchExtension : Profile::kKevinAbi; }
  // The compile flags, part of the cache key and for docs: of kevin's ABI unit, or on a torch
  // driver of the extension's compiler (the device unit's nvcc; g++ on the CPU backend).
  std::vector<std::string> flags() const;
  // Torch drivers: the host unit's g++ flags, the link's flags, and the libraries linked
  // after the objects (all empty for kevin's ABI).
  std::vector<std::string> host_flags() const;
  std::vector<std::string> link_flags() const;
  std::vector<std::string> libraries() const;

 private:
  struct Accounting;     // what the cache holds, as far as this driver knows; shared by copies
  struct Run;            // one compiler run, classified
  struct ExtensionUnit;  // one translation unit of an extension build
  // What an extension builds faster with, made once per toolchain (toolchain_extras): each
  // empty when not available.
  struct Extras {
    std::string host_header;  // the light host header, precompiled beside it (g++ -include)
    std::string lite_bridge;  // kevin_torch_lite_bridge.o, linked where a device unit is lite
  };
  struct ExtrasCache;  // the Extras once looked up, shared by copies
  struct Job {         // one compiler run to make
    std::vector<std::string> argv;
    uint64_t file_size_limit = 0;  // 0: the configured one
    size_t processes = 1;          // the most processes it runs at once (nvcc -t 2: two)
    // Preprocessing alone (g++ -E): quick, so started after the batch's compiles, which then
    // do not wait behind it.
    bool preprocessing = false;
  };
  enum class Step { kPreprocess, kCompile };
  // What a fresh build does in its work folder: writes its sources and runs its pipeline.
  using Pipeline =
      std::function<Status(const std::filesystem::path& work, BuildResult*, std::string* log)>;

  CompileDriver(CompilerConfig config, std::string version,
                std::vector<std::filesystem::path> toolchain);
  std::string cache_key(const std::vector<std::string_view>& sources) const;
  std::filesystem::path compiler() const;
  std::vector<std::string> compiler_argv(const std::filesystem::path& source, Step step) const;
  std::vector<std::string> torch_unit_flags(bool device_unit, bool lite) const;
  // An extension's units in folder `dir` of the work folder ("" or "ext<i>/"); `several`: one
  // of several extensions linked into one object; `header`: g++ reads it first (-include),
  // none when empty.
  std::vector<std::string> host_argv(Step step, const std::string& dir, bool several,
                                     const std::string& header) const;
  std::vector<std::string> device_argv(const std::string& dir, bool several, bool lite) const;
  // nvcc's flags for a device unit, in its lite form (kevin_torch_lite.h for PyTorch's headers)
  // or with PyTorch's headers.
  std::vector<std::string> device_flags(bool lite) const;
  // The compiler runs that build `unit` in its current form (a host unit: preprocess, compile).
  std::vector<Job> unit_jobs(const ExtensionUnit& unit, bool several, const Extras& extras) const;
  // The units of `extensions` with the forms each may be built in, fastest first.
  static std::vector<ExtensionUnit> extension_units_of(
      const std::vector<ExtensionUnits>& extensions, const Extras& extras);
  // What the link takes from `unit` in its current form: its object (and the lite bridge).
  static std::vector<std::string> link_inputs(const ExtensionUnit& unit, const Extras& extras);
  std::vector<std::string> link_argv(const std::vector<std::string>& objects) const;
  // kevin-sandbox's command line that runs `argv` confined, with `work` writable, each of its
  // processes under `grant`.
  std::vector<std::string> sandboxed(const std::vector<std::string>& argv,
                                     const std::filesystem::path& work, uint64_t file_size_limit,
                                     const Grant& grant) const;
  // The limits of one build (or of a probe, or of the toolchain's extras), from the config.
  BuildLimits build_limits() const;
  // Runs `argv` in `work` (empty: no work folder) as a job of `budget`'s build, until its
  // deadline, sandboxed unless configured otherwise; `file_size_limit` 0 means the configured
  // one. An error only when the sandbox failed (or the work folder could not be lent and taken
  // back).
  Result<Run> run_compiler(const std::vector<std::string>& argv, const std::filesystem::path& work,
                           uint64_t file_size_limit, BuildBudget& budget) const;
  // Runs `jobs` in `work` (lent to the sandbox's user once for all of them), as many at once as
  // `budget` allows: the widest first, the preprocessing last, in order otherwise; their runs
  // in the jobs' order (a job the budget did not start is a run that says why). Errors as
  // run_compiler.
  Result<std::vector<Run>> run_compilers(const std::vector<Job>& jobs,
                                         const std::filesystem::path& work,
                                         BuildBudget& budget) const;
  Result<Run> classify(const sys::CommandResult& r, uint64_t file_size_limit,
                       const Grant& grant) const;
  // The run of a job that `budget` did not start.
  Run not_started(const Admission& admission) const;
  // Preprocess (CPU) → translation-unit gate → compile → (CUDA: unit gate) → object gate,
  // filling `result` (ok, rejection, timed_out, device_global_bytes) and the raw `log`.
  Status run_pipeline(const std::filesystem::path& work, const std::filesystem::path& source,
                      BuildResult* result, std::string* log) const;
  // build_extensions': writes the units, runs g++ -E and g++ -c of each main.cpp and nvcc -c
  // of each cuda.cu under one budget (first with the light torch header; a unit whose light
  // form fails is built again as written, unless it ended on a limit: a build that reached one
  // starts nothing more) → gates → (several: isolate_extensions) → link → object gate.
  Status run_extension_pipeline(const std::filesystem::path& work,
                                const std::vector<ExtensionUnits>& extensions, BuildResult* result,
                                std::string* log) const;
  // Writes `text` as `unit`'s source (a device unit's kept folder emptied first).
  Status write_unit(const std::filesystem::path& work, const ExtensionUnit& unit,
                    const std::string& text) const;
  // Adds `runs`' output to `log` and their timeouts to `result`; true when every run succeeded.
  static bool record_runs(const std::vector<Run>& runs, BuildResult* result, std::string* log);
  // Several extensions' compiled units → one relocatable object per extension (ext<i>/part.o)
  // with only PyInit_<name> global and its load-time functions renamed its own: their paths,
  // or none when a step failed (its output in `log`) or the object was unreadable (a
  // rejection in `result`). An error only when our side failed.
  Result<std::vector<std::string>> isolate_extensions(const std::filesystem::path& work,
                                                      const std::vector<ExtensionUnits>& extensions,
                                                      const std::vector<ExtensionUnit>& units,
                                                      const Extras& extras, BuildBudget& budget,
                                                      BuildResult* result, std::string* log) const;
  // The extras of this driver's toolchain, made once per compiler, flags, PyTorch and lite
  // header under <cache_dir>/headers/<hash>/ and kept there for every process (built in a
  // private folder and renamed into place; an extra that could not be made is recorded there
  // with the reason, logged once per driver, and its builds go without it). Looked up once per
  // driver and its copies; never an error: without them extensions build as before, slower.
  Extras toolchain_extras() const;
  // What names the extras: compiler, host flags, the light header, and (wants_lite_) the lite
  // header's and its bridge's text. Computed once, by create().
  std::string compute_extras_digest() const;
  // The extras published in `dir`, made first (build_extras) when it is not there yet.
  Result<Extras> find_or_build_extras(const std::filesystem::path& dir, bool want_lite) const;
  // Makes the precompiled header (and with `want_lite` the bridge) in a private folder, each
  // or its `.failed` reason, and renames the folder to `dir` (another process's may win).
  Status build_extras(const std::filesystem::path& dir, bool want_lite) const;
  Status find_include_roots();
  Status gate_translation_units(const std::filesystem::path& dir, BuildResult* result) const;
  Status gate_object(const std::filesystem::path& work, BuildResult* result) const;
  // A new private folder under <cache_dir>/staging, removed unless released.
  Result<sys::TempDir> staging_folder(const std::string& prefix) const;
  Result<BuildResult> cached_or_built(const std::string& key, const Pipeline& pipeline) const;
  Result<BuildResult> build_fresh(const std::string& key, const std::filesystem::path& entry,
                                  const Pipeline& pipeline) const;
  void account_store(uint64_t bytes) const;

  CompilerConfig config_;
  std::string compiler_version_;
  std::vector<std::filesystem::path> toolchain_;  // read-only binds of the sandbox
  std::vector<std::string> include_roots_;        // where included files may come from
  std::string cuda_include_dir_;   // torch drivers on CUDA: the toolkit's headers, for g++
  std::filesystem::path objcopy_;  // torch drivers: binutils' objcopy (isolate_extensions)
  std::shared_ptr<Accounting> accounting_;
  std::shared_ptr<ExtrasCache> extras_;
  // Torch drivers: the lite form is for CUDA drivers whose ABI folder ships the lite header's
  // bridge; the extras' digest (compute_extras_digest), part of every extension's cache key.
  bool wants_lite_ = false;
  std::string extras_digest_;
};

// Keeps the start of a compiler log (the first errors are the useful ones), at most
// `max_bytes`, cut at a line boundary, noting how much was dropped. Also replaces
// `build_dir` paths with nothing so the model sees "candidate.cu:12:3: error ...".
std::string truncate_compiler_log(std::string log, const std::string& build_dir, size_t max_bytes);

// The "N bytes gmem" figure from ptxas -v output (sum over kernels' module lines).
uint64_t parse_ptxas_gmem(std::string_view log);

// The include folders in `nvcc --dryrun`'s output (its INCLUDES line: -I words, quotes
// dropped), in order; none where it has no such line. Never fails.
std::vector<std::string> nvcc_include_dirs(std::string_view dryrun);

// The CUDA toolkit's header folder (the first of nvcc_include_dirs with cuda_runtime_api.h,
// canonical) of the nvcc at `nvcc`, which may be a link or a wrapper script in another folder
// (/usr/local/bin/nvcc). Runs nvcc once; empty when it fails or names no such folder.
std::string toolkit_include_dir(const std::filesystem::path& nvcc);

}  // namespace kevin::engine
