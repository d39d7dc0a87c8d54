// hack_rules.h — the one list of the rules that reject a candidate as a cheat or a hazard:
// each rule's name (the `reason` of a `rejected` verdict), the stage that fires it and what it
// refuses. Gates and the judge fire rules by these constants; docs/sandbox.md's rule table, the
// fixture manifests and the KernelBench checker are tested against the list (hack_rules_test).
#pragma once

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
}  // namespace rules

}  // namespace kevin::engine
