// kevin_cli.h — helpers for end-to-end tests that run the built `kevin` binary.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/json.h"
#include "sys/process.h"

namespace kevin::e2e {

inline std::filesystem::path source_dir() { return KEVIN_SOURCE_DIR; }
inline std::filesystem::path kevin_binary() {
  return std::filesystem::path(KEVIN_BUILD_DIR) / "bin" / "kevin";
}

struct KevinRun {
  int code = -1;
  std::string output;  // stdout and stderr together
};

// Runs kevin with `args` (in folder `cwd` when given); the cache goes to a per-test folder
// under the build tree.
inline KevinRun run_kevin(std::vector<std::string> args, int timeout_s = 600,
                          const std::optional<std::filesystem::path>& cwd = std::nullopt) {
  args.insert(args.begin(), kevin_binary().string());
  auto r =
      sys::run_command(args, sys::Deadline::after(std::chrono::seconds(timeout_s)), 8 << 20, cwd);
  if (!r.is_ok()) return {-1, r.status().to_string()};
  return {r->exit.exited ? r->exit.code : 128 + r->exit.signal, r->output};
}

// The JSON objects among the lines of `text` (log lines are skipped).
inline std::vector<Json> json_lines(const std::string& text) {
  std::vector<Json> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    if (!line.empty() && line[0] == '{') {
      if (auto j = parse_json(line); j.is_ok()) out.push_back(*j);
    }
    start = end + 1;
  }
  return out;
}

}  // namespace kevin::e2e
