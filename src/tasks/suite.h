// suite.h — task suites: folders of KernelBench-format .py files (`level1/`, ...), task ids
// ("level1/001_square_matmul"), families (KEVIN_FAMILY) and the train/holdout split.
// Any KernelBench checkout's level folders work as suites as they stand.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/status.h"

namespace kevin::tasks {

struct TaskInfo {
  std::string id;      // "<suite>/<file stem>"
  std::string suite;   // folder name, e.g. "level1"
  std::string family;  // KEVIN_FAMILY, or "unknown"
  std::filesystem::path path;
};

// Tasks under `root`: either a folder of suites (each a folder of .py files) or one suite
// folder; a KernelBench checkout's root stands for its KernelBench/ folder (levels as
// suites). Files whose names start with '_' are skipped. Sorted by id. kNotFound when `root`
// holds no task.
Result<std::vector<TaskInfo>> discover_tasks(const std::filesystem::path& root);

// Finds a task by id ("level1/001_x"), by unique file stem ("001_x"), by the end of its path
// ("level1/001_x.py", "tasks/level1/001_x.py": a path written for the repository's root, used
// from another folder), or by path to a .py file. kNotFound (with the nearest id) /
// kInvalidArgument (ambiguous) otherwise.
Result<TaskInfo> resolve_task(const std::vector<TaskInfo>& tasks, const std::string& name);

// KEVIN_FAMILY = "..." from a task's source, or "unknown".
std::string task_family(const std::string& source);

struct Splits {
  std::vector<std::string> train, holdout;
  // "train", "holdout", or "" for a task in neither.
  std::string split_of(const std::string& id) const;
};

// A deterministic split stratified by (suite, family): in each group, round(n * fraction)
// tasks go to holdout, chosen by hashing their ids, so adding a task moves few others.
Splits make_splits(const std::vector<TaskInfo>& tasks, double holdout_fraction);
Json to_json(const Splits& s);
Result<Splits> splits_from_json(const Json& j);
// <root>/splits.json if present; an empty Splits when absent.
Result<Splits> load_splits(const std::filesystem::path& root);

}  // namespace kevin::tasks
