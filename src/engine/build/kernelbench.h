// kernelbench.h — KernelBench's solution format as the engine sees it (docs/kernelbench.md):
// which format an answer is in, the extensions its load_inline calls build, the translation
// units kevin compiles for one, and the PyTorch facts it is built against. Plain data and pure
// functions: running the checker and probing PyTorch is the tasks module's job.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.h"
#include "core/status.h"

namespace kevin::engine {

enum class CandidateFormat { kKevin, kKernelBench };

// "kevin" / "kernelbench".
const char* format_name(CandidateFormat format);
// "kevin", "kernelbench" (nullopt otherwise; "auto" is the caller's to resolve).
std::optional<CandidateFormat> format_from_name(std::string_view name);
// What `auto` means for one answer: KernelBench when the text defines a top-level
// `class ModelNew` (Python), kevin's C ABI otherwise.
CandidateFormat detect_format(std::string_view source);

// One load_inline call as the answer wrote it (the checker resolved every argument).
struct ExtensionSpec {
  std::string name;                       // the module name (an identifier)
  std::string cpp_sources, cuda_sources;  // each load_inline list joined with newlines
  std::vector<std::string> functions;     // bound with pybind11; empty: the sources bind themselves
};

struct AnswerFinding {
  std::string rule, detail;
  int line = 0;
};

// The checker's verdict on one answer: findings (first = the verdict's rule) and extensions.
struct AnswerCheck {
  std::vector<AnswerFinding> findings;
  std::vector<ExtensionSpec> extensions;
};
// Parses kernelbench_check.py --extract's JSON. kInvalidArgument naming what is malformed.
Result<AnswerCheck> answer_check_from_json(const Json& j);

// The most load_inline extensions one answer may build (each is two or three compiler runs,
// which share the one budget of the answer's build: build_budget.h).
inline constexpr size_t kMaxExtensions = 8;

// The two translation units kevin builds for `ext`, laid out as load_inline lays out its files.
// Each starts with `#define TORCH_EXTENSION_NAME <name>`, the macro load_inline passes with -D
// (sources that bind themselves name their module with it).
struct ExtensionUnits {
  std::string name;    // the module: its entry point is PyInit_<name>
  std::string host;    // main.cpp: <torch/extension.h>, the C++ sources, a PYBIND11_MODULE binding
                       // `functions` when the answer named them; built with g++
  std::string device;  // cuda.cu: <torch/types.h>, <cuda_runtime.h> and the CUDA sources;
                       // built with nvcc. Empty when the answer has none.
};
ExtensionUnits extension_units(const ExtensionSpec& ext);

enum class UnitKind { kHost, kDevice };
// `unit` with every line that is only `#include <torch/extension.h>` (or with quotes) turned
// into `#include <torch/types.h>` (the host unit adds <torch/csrc/utils/pybind.h> for its
// bindings): the same tensor API without PyTorch's C++ frontend, which the extension's sources
// do not use and the compilers spend most of their time parsing. The compile driver builds
// the light units first and a unit as written when its light form does not compile.
std::string with_light_torch_header(std::string_view unit, UnitKind kind);
// The lines that replace the extension include in a unit of `kind`'s light form.
const char* light_torch_includes(UnitKind kind);

// Whether a device unit may be built in its lite form: as written, with PyTorch's headers
// replaced by kevin_torch_lite.h (share/kevin/torch_lite, where PyTorch's header names lead to
// it), which the compile driver tries first. The lite header declares a slice of PyTorch's
// tensor API exactly; a unit that uses more fails to compile and is built with PyTorch's
// headers. So the form is offered only where nothing could tell the two apart without failing
// to compile: no conditional directive (#if and its kin could test PyTorch's macros), no #define
// or #undef before the unit's last #include (it could reach into PyTorch's headers), no
// directive but #include, #define, #undef and #pragma, and no mention of the lite header's own
// names (kevin_lite). Line splices and comments are seen as the preprocessor sees them.
bool lite_torch_header_applies(std::string_view unit);

// What building a PyTorch extension needs of the Python installation that will load it.
struct TorchToolchain {
  std::string torch_version;
  std::vector<std::string> include_dirs;  // torch's, then Python's (absolute)
  std::vector<std::string> library_dirs;  // where libtorch* and libc10* lie
  std::vector<std::string> defines;  // -D values: ABI and pybind11 settings torch was built with
  bool cuda = false;                 // torch was built with CUDA
};
// Parses the probe's JSON (tasks/kernelbench_tools.h). kInvalidArgument naming the field.
Result<TorchToolchain> torch_toolchain_from_json(const Json& j);

}  // namespace kevin::engine
