// kernelbench_tools.h — the trusted Python side of judging KernelBench answers: the facts of
// the PyTorch installation extensions are built against (probed once), and the static
// checker run on one answer (kernelbench_check.py --extract, docs/kernelbench.md). Neither
// imports or runs the answer.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"
#include "engine/build/kernelbench.h"

namespace kevin::tasks {

struct TorchInstallation {
  std::string python;  // the interpreter that imports torch (runs the answers)
  engine::TorchToolchain toolchain;
};

// Tries the interpreters python_candidates() lists (the override, $KEVIN_PYTHON, python3...)
// and describes the first that imports torch with its C++ extension support.
// kFailedPrecondition listing what was tried and why each failed.
Result<TorchInstallation> probe_torch(const std::optional<std::string>& python_override,
                                      std::chrono::seconds limit = std::chrono::seconds(120));

// Runs `checker` (kernelbench_check.py) with `python` on `answer` and parses its findings and
// extensions. Errors: the checker could not run or printed no JSON (kInternal, with its output).
Result<engine::AnswerCheck> check_kernelbench_answer(
    const std::string& python, const std::filesystem::path& checker, std::string_view answer,
    std::chrono::seconds limit = std::chrono::seconds(60));

}  // namespace kevin::tasks
