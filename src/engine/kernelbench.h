// kernelbench.h — KernelBench's solution format as the engine sees it (docs/kernelbench.md):
// which format an answer is in, the extensions its load_inline calls build, the translation
// unit kevin compiles for one, and the PyTorch facts it is built against. Plain data and pure
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
  std::string name;                    // the module name (an identifier)
  std::string cpp_sources, cuda_sources;  // each load_inline list joined with newlines
  std::vector<std::string> functions;  // bound with pybind11; empty: the sources bind themselves
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

// The one translation unit kevin builds for `ext`: <torch/extension.h>, the C++ sources, the
// CUDA sources (on the CPU backend there must be none), and a PYBIND11_MODULE binding
// `functions` when the answer named them (load_inline's layout, in one file).
std::string extension_unit(const ExtensionSpec& ext);

// What building a PyTorch extension needs of the Python installation that will load it.
struct TorchToolchain {
  std::string torch_version;
  std::vector<std::string> include_dirs;   // torch's, then Python's (absolute)
  std::vector<std::string> library_dirs;   // where libtorch* and libc10* lie
  std::vector<std::string> defines;        // -D values: ABI and pybind11 settings torch was built with
  bool cuda = false;                       // torch was built with CUDA
};
// Parses the probe's JSON (tasks/kernelbench_tools.h). kInvalidArgument naming the field.
Result<TorchToolchain> torch_toolchain_from_json(const Json& j);

}  // namespace kevin::engine
