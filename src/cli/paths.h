// paths.h — where the kevin binary finds its companions (runner, ABI header, worker script)
// and its cache, so every command resolves them the same way.
#pragma once

#include <filesystem>
#include <string>

namespace kevin::cli {

// <prefix>/bin/kevin-runner next to the running kevin.
std::filesystem::path runner_path();
// <prefix>/share/kevin: kevin_abi.h and reference_worker.py.
std::filesystem::path share_dir();
// --cache-dir if given, else $KEVIN_CACHE_DIR, else $XDG_CACHE_HOME/kevin, else ~/.cache/kevin.
std::filesystem::path cache_dir(const std::string& flag);

// --tasks if given, else $KEVIN_TASKS_DIR, else the tasks/ folder of the source tree.
std::filesystem::path tasks_dir(const std::string& flag);

}  // namespace kevin::cli
