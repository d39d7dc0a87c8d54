// hack_rules.h — the one list of the rules that reject a candidate as a cheat or a hazard:
// each rule's name (the `reason` of a `rejected` verdict), the stage that fires it and what it
// refuses. Gates and the judge fire rules by these constants; docs/sandbox.md's rule table, the
// fixture manifests and the KernelBench checker are tested against the list (hack_rules_test).
#pragma once

#include <array>
#include <span>
#include <string_view>

namespace kevin::engine {

// Where a rule fires, in the order a candidate meets them.
enum class RuleStage {
  kSource,       // the text and translation-unit gates (gate.h, tu_gate.h)
  kAnswerCheck,  // the static checker of KernelBench answers (tasks/kernelbench_check.py)
  kBuild,        // the build itself (compiler.h)
  kObject,       // the object gate over the built code (symbol_gate.h)
  kRun,          // what the runner sees the candidate do
  kTiming,       // the judge's clock during the timed calls
};

// "source", "answer_check", "build", "object", "run" or "timing".
std::string_view rule_stage_name(RuleStage stage);

struct HackRule {
  const char* name;
  RuleStage stage;
  std::string_view refuses;  // one line for docs and reviewers
};

// Every rule, in stage order. Static storage; never empty.
std::span<const HackRule> hack_rules();
// The rule named `name`, or null.
const HackRule* find_hack_rule(std::string_view name);

namespace rules {
inline constexpr const char* kSourceEmpty = "source_empty";
inline constexpr const char* kSourceNotUtf8 = "source_not_utf8";
inline constexpr const char* kSourceTooLarge = "source_too_large";
inline constexpr const char* kSourceTooComplex = "source_too_complex";
inline constexpr const char* kSyntaxError = "syntax_error";
inline constexpr const char* kMissingEntryPoint = "missing_entry_point";
inline constexpr const char* kMissingModelNew = "missing_model_new";
inline constexpr const char* kIncludeNotAllowed = "include_not_allowed";
inline constexpr const char* kCompilerFlagOverride = "compiler_flag_override";
inline constexpr const char* kBannedConstruct = "banned_construct";
inline constexpr const char* kCodeOutsideText = "code_outside_text";
inline constexpr const char* kWritableCode = "writable_code";
inline constexpr const char* kExecutableStack = "executable_stack";
inline constexpr const char* kExportNotAllowed = "export_not_allowed";
inline constexpr const char* kImportNotAllowed = "import_not_allowed";
inline constexpr const char* kIndirectFunction = "indirect_function";
inline constexpr const char* kLibraryNotAllowed = "library_not_allowed";
inline constexpr const char* kLoadTimeCode = "load_time_code";
inline constexpr const char* kStaticStorageTooLarge = "static_storage_too_large";
inline constexpr const char* kIoNotAllowed = "io_not_allowed";
inline constexpr const char* kStreamInjection = "stream_injection";
inline constexpr const char* kThreads = "threads";
inline constexpr const char* kThreadLocalStorage = "thread_local_storage";
inline constexpr const char* kGlobalState = "global_state";
inline constexpr const char* kTorchInternals = "torch_internals";
inline constexpr const char* kPytorchCompute = "pytorch_compute";
inline constexpr const char* kIntrospection = "introspection";
inline constexpr const char* kInheritsReference = "inherits_reference";
inline constexpr const char* kCallsReference = "calls_reference";
inline constexpr const char* kTimingPatch = "timing_patch";
inline constexpr const char* kLazyEvaluation = "lazy_evaluation";
inline constexpr const char* kTryExceptFallback = "try_except_fallback";
inline constexpr const char* kPrecisionDowngrade = "precision_downgrade";
inline constexpr const char* kTorchCompile = "torch_compile";
inline constexpr const char* kDynamicCode = "dynamic_code";
inline constexpr const char* kBuildOptionNotAllowed = "build_option_not_allowed";
inline constexpr const char* kBuildArgumentsNotStatic = "build_arguments_not_static";
inline constexpr const char* kMonkeypatch = "monkeypatch";
inline constexpr const char* kStateAcrossCalls = "state_across_calls";
inline constexpr const char* kOutputBufferReuse = "output_buffer_reuse";
inline constexpr const char* kPartialFusion = "partial_fusion";
inline constexpr const char* kNoCustomKernel = "no_custom_kernel";
inline constexpr const char* kExtensionCount = "extension_count";
inline constexpr const char* kTimerTampering = "timer_tampering";
inline constexpr const char* kOffStreamWork = "off_stream_work";

// The rows behind hack_rules(): a new rule is a constant above and a row here, in stage order.
inline constexpr std::array kHackRules = {
    HackRule{kSourceEmpty, RuleStage::kSource, "an empty answer"},
    HackRule{kSourceNotUtf8, RuleStage::kSource, "text that is not UTF-8, or holds NUL bytes"},
    HackRule{kSourceTooLarge, RuleStage::kSource,
             "a source over 1 MiB, or preprocessed output over 128 MiB (KernelBench answers: over "
             "the checker's size)"},
    HackRule{kMissingEntryPoint, RuleStage::kSource, "no kevin_forward entry point in kevin's ABI"},
    HackRule{kIncludeNotAllowed, RuleStage::kSource,
             "a header outside the backend's list (or a path, or a header named in a macro)"},
    HackRule{kCompilerFlagOverride, RuleStage::kSource,
             "pragmas and attributes that change code generation (optimize, target, fp_contract, "
             "fenv_access...)"},
    HackRule{kBannedConstruct, RuleStage::kSource,
             "inline assembly, section or constructor attributes, weak or aliased symbols, _Pragma "
             "tricks, extra sections in the object"},
    HackRule{kSourceTooComplex, RuleStage::kAnswerCheck,
             "a KernelBench answer nested too deeply to check"},
    HackRule{kSyntaxError, RuleStage::kAnswerCheck,
             "a KernelBench answer that is not valid Python"},
    HackRule{kMissingModelNew, RuleStage::kAnswerCheck,
             "a KernelBench answer without a ModelNew class"},
    HackRule{kIoNotAllowed, RuleStage::kAnswerCheck,
             "files, sockets or process I/O from an answer"},
    HackRule{kStreamInjection, RuleStage::kAnswerCheck,
             "work on a stream the harness does not time (streams from a pool, external or set as "
             "current)"},
    HackRule{kThreads, RuleStage::kAnswerCheck, "threads or processes started by an answer"},
    HackRule{kGlobalState, RuleStage::kAnswerCheck,
             "changing process-wide PyTorch state (torch.set_*, seeds, torch.backends, the global "
             "context)"},
    HackRule{kTorchInternals, RuleStage::kAnswerCheck,
             "PyTorch's private names, its JIT, dispatch and profiler internals, and the runner's "
             "operator log"},
    HackRule{kInheritsReference, RuleStage::kAnswerCheck,
             "ModelNew deriving from the reference Model"},
    HackRule{kCallsReference, RuleStage::kAnswerCheck,
             "calling the reference Model or its forward"},
    HackRule{kTimingPatch, RuleStage::kAnswerCheck, "patching timers, events or synchronisation"},
    HackRule{kLazyEvaluation, RuleStage::kAnswerCheck,
             "outputs computed lazily (tensor subclasses, deferred work)"},
    HackRule{kTryExceptFallback, RuleStage::kAnswerCheck, "a fallback to PyTorch on an exception"},
    HackRule{kPrecisionDowngrade, RuleStage::kAnswerCheck,
             "lower precision than the task's (half precision, TF32, autocast)"},
    HackRule{kTorchCompile, RuleStage::kAnswerCheck,
             "torch.compile or other compilers doing the work"},
    HackRule{kDynamicCode, RuleStage::kAnswerCheck, "exec, eval or sources computed at run time"},
    HackRule{kBuildOptionNotAllowed, RuleStage::kAnswerCheck,
             "load_inline options outside the allowed set (flags, include paths, libraries)"},
    HackRule{kBuildArgumentsNotStatic, RuleStage::kAnswerCheck,
             "load_inline arguments the checker cannot read as literals"},
    HackRule{
        kMonkeypatch, RuleStage::kAnswerCheck,
        "assigning to attributes of torch, math, typing, Model, ModelNew or module-level objects"},
    HackRule{kStateAcrossCalls, RuleStage::kAnswerCheck,
             "state kept from one forward call to the next (counters, caches)"},
    HackRule{kOutputBufferReuse, RuleStage::kAnswerCheck,
             "returning a stored tensor rather than a fresh output"},
    HackRule{kPartialFusion, RuleStage::kAnswerCheck,
             "only part of the operation in the custom kernel, the rest in PyTorch"},
    HackRule{kNoCustomKernel, RuleStage::kAnswerCheck,
             "no extension built, one the forward never calls, or one built on every call"},
    HackRule{kExtensionCount, RuleStage::kBuild,
             "more load_inline extensions than the build allows"},
    HackRule{kCodeOutsideText, RuleStage::kObject, "executable code in a section other than .text"},
    HackRule{kWritableCode, RuleStage::kObject,
             "a section both writable and executable, or text relocations"},
    HackRule{kExecutableStack, RuleStage::kObject, "an object asking for an executable stack"},
    HackRule{kExportNotAllowed, RuleStage::kObject,
             "symbols exported beyond the entry point and the toolchain's own"},
    HackRule{kImportNotAllowed, RuleStage::kObject,
             "an imported function off the allowlist (processes, files, signals, dlopen, raw "
             "system calls); Python imports off the KernelBench list"},
    HackRule{kIndirectFunction, RuleStage::kObject,
             "GNU indirect functions (ifuncs), resolved by code that runs at load"},
    HackRule{kLibraryNotAllowed, RuleStage::kObject,
             "linking or calling a math library (cuBLAS, cuDNN, BLAS) that would do the work"},
    HackRule{kLoadTimeCode, RuleStage::kObject,
             "code that runs when the object is loaded (constructors, init arrays) beyond the "
             "toolchain's registration"},
    HackRule{kThreadLocalStorage, RuleStage::kObject,
             "thread-local storage (the runner resets static storage between calls; TLS would "
             "escape that)"},
    HackRule{kStaticStorageTooLarge, RuleStage::kObject,
             "static or __device__ storage beyond the limit (a place to cache outputs)"},
    HackRule{kPytorchCompute, RuleStage::kRun,
             "PyTorch operators computing the answer instead of the answer's kernel (statically, "
             "and in every call at run time)"},
    HackRule{kIntrospection, RuleStage::kRun,
             "reaching the runner's frames, globals, garbage collector or interpreter hooks"},
    HackRule{kTimerTampering, RuleStage::kTiming,
             "a reported time longer than the judge waited for the call"},
    HackRule{kOffStreamWork, RuleStage::kTiming,
             "time the judge saw beyond the harness overhead and the reported window: work outside "
             "the timed stream or window"},
};
}  // namespace rules

}  // namespace kevin::engine
