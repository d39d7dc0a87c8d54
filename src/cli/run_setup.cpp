// run_setup.cpp — task selection and engine settings shared by `kevin run` and `kevin train`.
#include "cli/run_setup.h"

#include <set>
#include <sstream>

#include "cli/paths.h"
#include "env/fake_evaluator.h"
#include "sys/cuda_probe.h"

namespace kevin::cli {
namespace fs = std::filesystem;

std::vector<std::string> split_list(const std::vector<std::string>& values) {
  std::vector<std::string> out;
  for (const auto& v : values) {
    std::stringstream in(v);
    for (std::string item; std::getline(in, item, ',');) {
      if (!item.empty()) out.push_back(item);
    }
  }
  return out;
}

Result<std::vector<tasks::TaskInfo>> select_tasks(const std::vector<std::string>& specs, const std::string& tasks_dir_flag,
                                                  const std::string& split) {
  const fs::path root = tasks_dir(tasks_dir_flag);
  std::vector<tasks::TaskInfo> out;
  std::set<std::string> seen;
  const auto add = [&](const tasks::TaskInfo& t) {
    if (seen.insert(t.path.string()).second) out.push_back(t);
  };
  std::optional<std::vector<tasks::TaskInfo>> all;
  for (const auto& spec : split_list(specs)) {
    if (fs::is_directory(spec)) {
      KEVIN_ASSIGN_OR_RETURN(auto found, tasks::discover_tasks(spec));
      for (const auto& t : found) add(t);
      continue;
    }
    if (!all) {
      KEVIN_ASSIGN_OR_RETURN(auto found, tasks::discover_tasks(root));
      all = std::move(found);
    }
    bool suite = false;
    for (const auto& t : *all) {
      if (t.suite == spec) {
        add(t);
        suite = true;
      }
    }
    if (suite) continue;
    KEVIN_ASSIGN_OR_RETURN(tasks::TaskInfo t, tasks::resolve_task(*all, spec));
    add(t);
  }
  if (!split.empty()) {
    KEVIN_ASSIGN_OR_RETURN(tasks::Splits splits, tasks::load_splits(root));
    std::vector<tasks::TaskInfo> kept;
    for (const auto& t : out) {
      if (splits.split_of(t.id) == split) kept.push_back(t);
    }
    out = std::move(kept);
  }
  if (out.empty()) return not_found("the task selection holds no task");
  return out;
}

Result<Json> resolve_engine_json(const Json& given) {
  if (!given.is_object()) return invalid_argument("engine settings must be an object");
  if (given.value("fake", false)) return Json{{"fake", true}};
  Json e = {{"backend", "auto"}, {"device", 0},          {"seeds", 5},         {"tolerance", "default"}, {"jobs", 0},
            {"python", ""},      {"cache_dir", ""},      {"sandbox", true},    {"call_timeout_s", 20.0}};
  for (const auto& item : given.items()) {
    if (!e.contains(item.key())) return invalid_argument("unknown engine setting \"" + item.key() + "\"");
    e[item.key()] = item.value();
  }
  KEVIN_ASSIGN_OR_RETURN(std::string backend, json_get<std::string>(e, "backend"));
  if (backend == "auto") e["backend"] = sys::cuda_device_count() > 0 ? "cuda" : "cpu";
  if (!engine::backend_from_name(e["backend"].get<std::string>())) return invalid_argument("engine backend must be auto, cuda or cpu");
  KEVIN_ASSIGN_OR_RETURN(std::string cache, json_get<std::string>(e, "cache_dir"));
  e["cache_dir"] = cache_dir(cache).string();
  return e;
}

Result<std::unique_ptr<env::Evaluator>> make_evaluator(const Json& e) {
  if (e.value("fake", false)) return std::unique_ptr<env::Evaluator>(std::make_unique<env::FakeEvaluator>("cpu", "Fake CPU"));
  env::EngineOptions o;
  KEVIN_ASSIGN_OR_RETURN(std::string backend, json_get<std::string>(e, "backend"));
  o.backend = *engine::backend_from_name(backend);
  KEVIN_ASSIGN_OR_RETURN(o.device, json_get<int>(e, "device"));
  KEVIN_ASSIGN_OR_RETURN(o.seeds, json_get<int>(e, "seeds"));
  KEVIN_ASSIGN_OR_RETURN(o.tolerance, json_get<std::string>(e, "tolerance"));
  KEVIN_ASSIGN_OR_RETURN(o.jobs, json_get<int>(e, "jobs"));
  KEVIN_ASSIGN_OR_RETURN(o.python, json_get<std::string>(e, "python"));
  KEVIN_ASSIGN_OR_RETURN(std::string cache, json_get<std::string>(e, "cache_dir"));
  KEVIN_ASSIGN_OR_RETURN(o.sandbox, json_get<bool>(e, "sandbox"));
  KEVIN_ASSIGN_OR_RETURN(o.call_timeout_s, json_get<double>(e, "call_timeout_s"));
  o.cache_dir = cache;
  o.share_dir = share_dir();
  o.runner_path = runner_path();
  KEVIN_ASSIGN_OR_RETURN(auto evaluator, env::EngineEvaluator::create(o));
  return std::unique_ptr<env::Evaluator>(std::move(evaluator));
}

}  // namespace kevin::cli
