// suite.cpp — suite discovery and stratified splits.
#include "tasks/suite.h"

#include <algorithm>
#include <cmath>
#include <string_view>

#include "core/suggest.h"
#include "core/file.h"
#include "core/sha256.h"

namespace kevin::tasks {
namespace fs = std::filesystem;

namespace {

bool is_task_file(const fs::directory_entry& e) {
  const std::string name = e.path().filename().string();
  return e.is_regular_file() && e.path().extension() == ".py" && !name.empty() && name[0] != '_';
}

std::vector<fs::path> task_files(const fs::path& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (is_task_file(e)) files.push_back(e.path());
  }
  return files;
}

Result<TaskInfo> describe_file(const fs::path& file, const std::string& suite) {
  KEVIN_ASSIGN_OR_RETURN(std::string source, read_file(file, size_t{4} << 20));
  return TaskInfo{suite + "/" + file.stem().string(), suite, task_family(source), file};
}

}  // namespace

std::string task_family(const std::string& source) {
  // Every search stays within the line of a line-start occurrence: searching the rest of the
  // text from each occurrence took quadratic time (100 s for a 1 MiB line of them), and
  // server and queue clients send task sources.
  constexpr std::string_view kName = "KEVIN_FAMILY";
  constexpr size_t npos = std::string_view::npos;
  size_t pos = 0;
  while ((pos = source.find(kName, pos)) != npos) {
    if (pos != 0 && source[pos - 1] != '\n') {
      pos += kName.size();
      continue;
    }
    const size_t eol = std::min(source.find('\n', pos), source.size());
    const std::string_view line = std::string_view(source).substr(pos, eol - pos);
    const size_t eq = line.find('=');
    const size_t q1 = eq == npos ? npos : line.find_first_of("\"'", eq);
    const size_t q2 = q1 == npos ? npos : line.find(line[q1], q1 + 1);
    if (q2 != npos) return std::string(line.substr(q1 + 1, q2 - q1 - 1));
    pos = eol;
  }
  return "unknown";
}

// A KernelBench checkout's root (KernelBench/level1 … beside src/, scripts/): its problems are
// in the inner KernelBench folder, and the root's own Python files are not tasks.
bool is_kernelbench_checkout(const fs::path& root) {
  std::error_code ec;
  return task_files(root).empty() && fs::is_directory(root / "KernelBench" / "level1", ec);
}

Result<std::vector<TaskInfo>> discover_tasks(const fs::path& given) {
  std::error_code ec;
  if (!fs::is_directory(given, ec)) return not_found("no task folder " + given.string());
  const fs::path root = is_kernelbench_checkout(given) ? given / "KernelBench" : given;
  std::vector<TaskInfo> tasks;
  const auto add_suite = [&tasks](const fs::path& dir) -> Status {
    for (const auto& file : task_files(dir)) {
      KEVIN_ASSIGN_OR_RETURN(TaskInfo t, describe_file(file, dir.filename().string()));
      tasks.push_back(std::move(t));
    }
    return Status::ok();
  };
  KEVIN_RETURN_IF_ERROR(add_suite(fs::absolute(root).lexically_normal()));
  for (const auto& e : fs::directory_iterator(root, ec)) {
    if (e.is_directory() && e.path().filename().string()[0] != '_' &&
        e.path().filename().string()[0] != '.') {
      KEVIN_RETURN_IF_ERROR(add_suite(e.path()));
    }
  }
  if (tasks.empty())
    return not_found("no task files (*.py) in " + root.string() + " or its sub-folders");
  std::sort(tasks.begin(), tasks.end(),
            [](const TaskInfo& a, const TaskInfo& b) { return a.id < b.id; });
  return tasks;
}

namespace {

// Whether `path` ends with every component of `tail` ("tasks/level1/028_gelu.py" ends
// /src/kevin/tasks/level1/028_gelu.py): a task file named from another folder than the suite's.
bool ends_with_components(const fs::path& path, const fs::path& tail) {
  auto p = path.end(), t = tail.end();
  while (t != tail.begin()) {
    if (p == path.begin() || *--p != *--t) return false;
  }
  return true;
}

}  // namespace

Result<TaskInfo> resolve_task(const std::vector<TaskInfo>& tasks, const std::string& name) {
  std::vector<const TaskInfo*> matches;
  const fs::path as_path = fs::path(name).lexically_normal();
  for (const auto& t : tasks) {
    if (t.id == name || t.path.stem().string() == name) matches.push_back(&t);
  }
  std::error_code ec;
  if (matches.empty() && !fs::is_regular_file(name, ec) && as_path.extension() == ".py" &&
      as_path.is_relative()) {
    for (const auto& t : tasks) {
      if (ends_with_components(t.path, as_path)) matches.push_back(&t);
    }
  }
  if (matches.size() == 1) return *matches[0];
  if (matches.size() > 1) {
    std::string ids;
    for (const auto* m : matches) ids += (ids.empty() ? "" : ", ") + m->id;
    return invalid_argument("task name '" + name + "' is ambiguous: " + ids);
  }
  if (fs::is_regular_file(name, ec))
    return describe_file(fs::absolute(name), fs::absolute(name).parent_path().filename().string());
  std::vector<std::string> ids;
  for (const auto& t : tasks) ids.push_back(t.id);
  return not_found("no task '" + name + "'" + did_you_mean(name, ids) +
                   " (kevin tasks list shows the ids)");
}

std::string Splits::split_of(const std::string& id) const {
  if (std::find(train.begin(), train.end(), id) != train.end()) return "train";
  if (std::find(holdout.begin(), holdout.end(), id) != holdout.end()) return "holdout";
  return "";
}

Splits make_splits(const std::vector<TaskInfo>& tasks, double holdout_fraction) {
  std::map<std::pair<std::string, std::string>, std::vector<std::string>> groups;
  for (const auto& t : tasks) groups[{t.suite, t.family}].push_back(t.id);
  Splits s;
  for (auto& [key, ids] : groups) {
    std::sort(ids.begin(), ids.end(), [](const std::string& a, const std::string& b) {
      return sha256_hex("kevin-split-v1:" + a) < sha256_hex("kevin-split-v1:" + b);
    });
    const auto holdout =
        static_cast<size_t>(std::floor(static_cast<double>(ids.size()) * holdout_fraction + 0.5));
    for (size_t i = 0; i < ids.size(); ++i) (i < holdout ? s.holdout : s.train).push_back(ids[i]);
  }
  std::sort(s.train.begin(), s.train.end());
  std::sort(s.holdout.begin(), s.holdout.end());
  return s;
}

Json to_json(const Splits& s) {
  return {{"version", 1},
          {"stratified_by", {"suite", "family"}},
          {"train", s.train},
          {"holdout", s.holdout}};
}

Result<Splits> splits_from_json(const Json& j) {
  Splits s;
  KEVIN_ASSIGN_OR_RETURN(s.train, json_get<std::vector<std::string>>(j, "train"));
  KEVIN_ASSIGN_OR_RETURN(s.holdout, json_get<std::vector<std::string>>(j, "holdout"));
  return s;
}

Result<Splits> load_splits(const fs::path& root) {
  const fs::path file = root / "splits.json";
  if (!fs::exists(file)) return Splits{};
  KEVIN_ASSIGN_OR_RETURN(std::string text, read_file(file));
  KEVIN_ASSIGN_OR_RETURN(Json j, parse_json(text));
  auto s = splits_from_json(j);
  if (!s.is_ok()) return s.status().with_context(file.string());
  return s;
}

}  // namespace kevin::tasks
