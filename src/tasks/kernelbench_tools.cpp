// kernelbench_tools.cpp — probing PyTorch's extension toolchain and running the answer
// checker, each as a short-lived trusted Python process.
#include "tasks/kernelbench_tools.h"

#include "core/file.h"
#include "core/json.h"
#include "sys/process.h"
#include "sys/tempdir.h"
#include "tasks/reference_worker.h"

namespace kevin::tasks {
namespace {

constexpr std::string_view kMarker = "KEVIN_JSON ";

// torch.utils.cpp_extension's include and library folders (its signature changed in 2.6),
// Python's headers, and the ABI settings torch was built with.
constexpr const char* kProbe = R"PY(
import json, sysconfig
import torch
import torch.utils.cpp_extension as ext
def folders(fn):
    try:
        return list(fn(device_type="cpu"))
    except TypeError:
        return list(fn(cuda=False))
defines = ["_GLIBCXX_USE_CXX11_ABI=%d" % int(torch._C._GLIBCXX_USE_CXX11_ABI)]
for key in ("COMPILER_TYPE", "STDLIB", "BUILD_ABI"):
    value = getattr(torch._C, "_PYBIND11_" + key, None)
    if value is not None:
        defines.append('PYBIND11_%s="%s"' % (key, value))
print("KEVIN_JSON " + json.dumps({
    "torch_version": torch.__version__,
    "include_dirs": folders(ext.include_paths) + [sysconfig.get_paths()["include"]],
    "library_dirs": folders(ext.library_paths),
    "defines": defines,
    "cuda": torch.version.cuda is not None}))
)PY";

// The JSON after the marker line in a process's output (torch may print warnings first).
Result<Json> marked_json(const std::string& output) {
  const size_t at = output.rfind(kMarker);
  if (at == std::string::npos) return internal_error("no result in: " + output.substr(0, 2000));
  const size_t end = output.find('\n', at);
  return parse_json(output.substr(at + kMarker.size(), end == std::string::npos
                                                           ? std::string::npos
                                                           : end - at - kMarker.size()));
}

}  // namespace

Result<TorchInstallation> probe_torch(const std::optional<std::string>& python_override,
                                      std::chrono::seconds limit) {
  std::string tried;
  for (const auto& python : python_candidates(python_override)) {
    auto run = sys::run_command({python, "-c", kProbe}, sys::Deadline::after(limit));
    std::string why;
    if (run.is_ok() && run->exit.exited && run->exit.code == 0) {
      auto json = marked_json(run->output);
      auto toolchain = json.is_ok() ? engine::torch_toolchain_from_json(*json)
                                    : Result<engine::TorchToolchain>(json.status());
      if (toolchain.is_ok()) return TorchInstallation{python, std::move(toolchain).value()};
      why = toolchain.status().message();
    } else {
      why = run.is_ok() ? run->exit.describe() : run.status().message();
    }
    tried += (tried.empty() ? "" : "; ") + python + " (" + why.substr(0, 300) + ")";
  }
  return failed_precondition(
      "KernelBench answers need a Python with PyTorch and its C++ extension headers; none "
      "was found (tried: " +
      tried + "). Name one with --python or KEVIN_PYTHON");
}

Result<engine::AnswerCheck> check_kernelbench_answer(const std::string& python,
                                                     const std::filesystem::path& checker,
                                                     std::string_view answer,
                                                     std::chrono::seconds limit) {
  KEVIN_ASSIGN_OR_RETURN(sys::TempDir dir, sys::TempDir::create("kevin-kbcheck-"));
  const auto path = dir.path() / "answer.py";
  KEVIN_RETURN_IF_ERROR(write_file_atomic(path, answer));
  // -I: the user's site packages and environment stay out of the checker's imports.
  KEVIN_ASSIGN_OR_RETURN(
      auto run, sys::run_command({python, "-I", checker.string(), "--extract", path.string()},
                                 sys::Deadline::after(limit), size_t{8} << 20));
  if (!run.exit.exited || run.exit.code != 0) {
    return internal_error("the KernelBench checker failed (" + run.exit.describe() +
                          "): " + run.output.substr(0, 2000));
  }
  KEVIN_ASSIGN_OR_RETURN(Json j, parse_json(run.output));
  return engine::answer_check_from_json(j);
}

}  // namespace kevin::tasks
