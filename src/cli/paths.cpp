// paths.cpp — companion-file and cache resolution.
#include "cli/paths.h"

#include <cstdlib>

#include "sys/process.h"

namespace kevin::cli {
namespace fs = std::filesystem;

fs::path runner_path() { return sys::executable_dir() / "kevin-runner"; }

fs::path share_dir() { return sys::executable_dir().parent_path() / "share" / "kevin"; }

fs::path cache_dir(const std::string& flag) {
  if (!flag.empty()) return fs::absolute(flag);
  if (const char* env = std::getenv("KEVIN_CACHE_DIR"); env && *env) return fs::absolute(env);
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return fs::path(xdg) / "kevin";
  if (const char* home = std::getenv("HOME"); home && *home)
    return fs::path(home) / ".cache" / "kevin";
  return fs::temp_directory_path() / "kevin-cache";
}

fs::path tasks_dir(const std::string& flag) {
  if (!flag.empty()) return fs::absolute(flag);
  if (const char* env = std::getenv("KEVIN_TASKS_DIR"); env && *env) return fs::absolute(env);
  return KEVIN_DEFAULT_TASKS_DIR;
}

}  // namespace kevin::cli
