// worker_test_support.h — shared by the tests that run the real reference worker
// (python3-torch, CPU backend): the script, fixture tasks, tiny task files, seed lists.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/file.h"
#include "tasks/reference_worker.h"

namespace kevin::tasks::testing {

inline std::filesystem::path worker_script() {
  return std::filesystem::path(KEVIN_SOURCE_DIR) / "src/tasks/reference_worker.py";
}

inline std::filesystem::path fixture_task(const std::string& name) {
  return std::filesystem::path(KEVIN_SOURCE_DIR) / "tests/fixtures/tasks" / name;
}

inline WorkerOptions worker_options() {
  WorkerOptions o;
  o.script = worker_script();
  return o;
}

// `count` distinct seeds from `first` on.
inline std::vector<uint64_t> seed_range(uint64_t first, int count) {
  std::vector<uint64_t> s;
  for (int i = 0; i < count; ++i) s.push_back(first + static_cast<uint64_t>(i));
  return s;
}

// A task whose get_inputs() never returns (a pure-Python loop, as a broken task would have).
inline std::filesystem::path write_endless_task(const std::filesystem::path& dir) {
  const std::filesystem::path path = dir / "endless.py";
  const std::string source =
      "import torch\nimport torch.nn as nn\n\n"
      "class Model(nn.Module):\n    def forward(self, x):\n        return x + 1\n\n"
      "def get_inputs():\n    while True:\n        pass\n\n"
      "def get_init_inputs():\n    return []\n";
  EXPECT_TRUE(write_file_atomic(path, source).is_ok());
  return path;
}

}  // namespace kevin::tasks::testing
