// hack_rules.cpp — the rule table (hack_rules.h).
#include "engine/hack_rules.h"

#include <array>

namespace kevin::engine {
namespace {

using enum RuleStage;

constexpr std::array kRules = {
    HackRule{rules::kSourceEmpty, kSource, "an empty answer"},
    HackRule{rules::kSourceNotUtf8, kSource, "text that is not UTF-8, or holds NUL bytes"},
    HackRule{rules::kSourceTooLarge, kSource,
             "a source over 1 MiB, or preprocessed output over 128 MiB (KernelBench answers: over "
             "the checker's size)"},
    HackRule{rules::kMissingEntryPoint, kSource, "no kevin_forward entry point in kevin's ABI"},
    HackRule{rules::kIncludeNotAllowed, kSource,
             "a header outside the backend's list (or a path, or a header named in a macro)"},
    HackRule{rules::kCompilerFlagOverride, kSource,
             "pragmas and attributes that change code generation (optimize, target, fp_contract, "
             "fenv_access...)"},
    HackRule{rules::kBannedConstruct, kSource,
             "inline assembly, section or constructor attributes, weak or aliased symbols, _Pragma "
             "tricks, extra sections in the object"},
    HackRule{rules::kSourceTooComplex, kAnswerCheck,
             "a KernelBench answer nested too deeply to check"},
    HackRule{rules::kSyntaxError, kAnswerCheck, "a KernelBench answer that is not valid Python"},
    HackRule{rules::kMissingModelNew, kAnswerCheck,
             "a KernelBench answer without a ModelNew class"},
    HackRule{rules::kIoNotAllowed, kAnswerCheck, "files, sockets or process I/O from an answer"},
    HackRule{rules::kStreamInjection, kAnswerCheck,
             "work on a stream the harness does not time (streams from a pool, external or set as "
             "current)"},
    HackRule{rules::kThreads, kAnswerCheck, "threads or processes started by an answer"},
    HackRule{rules::kGlobalState, kAnswerCheck,
             "changing process-wide PyTorch state (torch.set_*, seeds, torch.backends, the global "
             "context)"},
    HackRule{rules::kTorchInternals, kAnswerCheck,
             "PyTorch's private names, its JIT, dispatch and profiler internals, and the runner's "
             "operator log"},
    HackRule{rules::kInheritsReference, kAnswerCheck, "ModelNew deriving from the reference Model"},
    HackRule{rules::kCallsReference, kAnswerCheck, "calling the reference Model or its forward"},
    HackRule{rules::kTimingPatch, kAnswerCheck, "patching timers, events or synchronisation"},
    HackRule{rules::kLazyEvaluation, kAnswerCheck,
             "outputs computed lazily (tensor subclasses, deferred work)"},
    HackRule{rules::kTryExceptFallback, kAnswerCheck, "a fallback to PyTorch on an exception"},
    HackRule{rules::kPrecisionDowngrade, kAnswerCheck,
             "lower precision than the task's (half precision, TF32, autocast)"},
    HackRule{rules::kTorchCompile, kAnswerCheck, "torch.compile or other compilers doing the work"},
    HackRule{rules::kDynamicCode, kAnswerCheck, "exec, eval or sources computed at run time"},
    HackRule{rules::kBuildOptionNotAllowed, kAnswerCheck,
             "load_inline options outside the allowed set (flags, include paths, libraries)"},
    HackRule{rules::kBuildArgumentsNotStatic, kAnswerCheck,
             "load_inline arguments the checker cannot read as literals"},
    HackRule{
        rules::kMonkeypatch, kAnswerCheck,
        "assigning to attributes of torch, math, typing, Model, ModelNew or module-level objects"},
    HackRule{rules::kStateAcrossCalls, kAnswerCheck,
             "state kept from one forward call to the next (counters, caches)"},
    HackRule{rules::kOutputBufferReuse, kAnswerCheck,
             "returning a stored tensor rather than a fresh output"},
    HackRule{rules::kPartialFusion, kAnswerCheck,
             "only part of the operation in the custom kernel, the rest in PyTorch"},
    HackRule{rules::kNoCustomKernel, kAnswerCheck,
             "no extension built, one the forward never calls, or one built on every call"},
    HackRule{rules::kExtensionCount, kBuild, "more load_inline extensions than the build allows"},
    HackRule{rules::kCodeOutsideText, kObject, "executable code in a section other than .text"},
    HackRule{rules::kWritableCode, kObject,
             "a section both writable and executable, or text relocations"},
    HackRule{rules::kExecutableStack, kObject, "an object asking for an executable stack"},
    HackRule{rules::kExportNotAllowed, kObject,
             "symbols exported beyond the entry point and the toolchain's own"},
    HackRule{rules::kImportNotAllowed, kObject,
             "an imported function off the allowlist (processes, files, signals, dlopen, raw "
             "system calls); Python imports off the KernelBench list"},
    HackRule{rules::kIndirectFunction, kObject,
             "GNU indirect functions (ifuncs), resolved by code that runs at load"},
    HackRule{rules::kLibraryNotAllowed, kObject,
             "linking or calling a math library (cuBLAS, cuDNN, BLAS) that would do the work"},
    HackRule{rules::kLoadTimeCode, kObject,
             "code that runs when the object is loaded (constructors, init arrays) beyond the "
             "toolchain's registration"},
    HackRule{rules::kThreadLocalStorage, kObject,
             "thread-local storage (the runner resets static storage between calls; TLS would "
             "escape that)"},
    HackRule{rules::kStaticStorageTooLarge, kObject,
             "static or __device__ storage beyond the limit (a place to cache outputs)"},
    HackRule{rules::kPytorchCompute, kRun,
             "PyTorch operators computing the answer instead of the answer's kernel (statically, "
             "and in every call at run time)"},
    HackRule{rules::kIntrospection, kRun,
             "reaching the runner's frames, globals, garbage collector or interpreter hooks"},
    HackRule{rules::kTimerTampering, kTiming,
             "a reported time longer than the judge waited for the call"},
    HackRule{rules::kOffStreamWork, kTiming,
             "time the judge saw beyond the harness overhead and the reported window: work outside "
             "the timed stream or window"},
};

}  // namespace

std::string_view rule_stage_name(RuleStage stage) {
  switch (stage) {
    case RuleStage::kSource:
      return "source";
    case RuleStage::kAnswerCheck:
      return "answer_check";
    case RuleStage::kBuild:
      return "build";
    case RuleStage::kObject:
      return "object";
    case RuleStage::kRun:
      return "run";
    case RuleStage::kTiming:
      return "timing";
  }
  return "unknown";
}

std::span<const HackRule> hack_rules() { return kRules; }

const HackRule* find_hack_rule(std::string_view name) {
  for (const HackRule& rule : kRules) {
    if (name == rule.name) return &rule;
  }
  return nullptr;
}

}  // namespace kevin::engine
