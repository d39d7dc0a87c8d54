// run_setup.cpp — task selection and engine settings shared by `kevin run` and `kevin train`.
#include "cli/run_setup.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <iomanip>
#include <set>
#include <sstream>

#include "cli/paths.h"
#include "core/file.h"
#include "core/log.h"
#include "env/fake_evaluator.h"
#include "policy/scripted_policy.h"
#include "sys/cuda_probe.h"
#if defined(KEVIN_HAVE_CURL)
#include "policy/openai_client.h"
#endif
#if defined(KEVIN_HAVE_TRAIN)
#include "train/sampling/local_policy.h"
#endif
#if defined(KEVIN_HAVE_QUEUE)
#include "queue/remote_evaluator.h"
#endif

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

Result<std::vector<tasks::TaskInfo>> select_tasks(const std::vector<std::string>& specs,
                                                  const std::string& tasks_dir_flag,
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

Result<fs::path> task_file(const std::string& given) {
  const std::string ext = fs::path(given).extension().string();
  if (ext == ".cu" || ext == ".cpp" || ext == ".cc") {
    return invalid_argument("'" + given +
                            "' looks like a kernel: --candidate takes the kernel, --task the task "
                            "(an id such as level1/028_gelu, or a .py file)");
  }
  std::error_code ec;
  if (fs::is_regular_file(given, ec)) return fs::absolute(given);
  const fs::path root = tasks_dir("");
  auto all = tasks::discover_tasks(root);
  if (!all.is_ok()) {
    return not_found("no task file '" + given + "', and no tasks folder to find it in (" +
                     all.status().message() + ")");
  }
  auto task = tasks::resolve_task(*all, given);
  if (!task.is_ok()) {
    return Status(task.status().code(),
                  task.status().message() + "; --task takes a task id such as " + all->front().id +
                      ", a path ending like " + all->front().id +
                      ".py, or a .py file (tasks folder: " + root.string() + ")");
  }
  return task->path;
}

Result<std::vector<int>> parse_devices(const std::string& text) {
  if (text == "all") return std::vector<int>{};
  std::vector<int> out;
  for (std::string item : split_list({text})) {
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    int ordinal = -1;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), ordinal);
    if (ec != std::errc() || end != item.data() + item.size() || ordinal < 0) {
      return invalid_argument("devices: \"" + text +
                              "\" is not \"all\" or a list of GPU ordinals like 0,2");
    }
    out.push_back(ordinal);
  }
  if (out.empty())
    return invalid_argument("devices: empty list (use \"all\" or ordinals like 0,2)");
  return out;
}

void add_device_options(CLI::App* command, std::string* devices) {
  auto* list = command->add_option("--devices", *devices,
                                   "GPUs to evaluate on: all, or ordinals like 0,2 (default: all)");
  command->add_option("--device", *devices, "one GPU to evaluate on (the same as --devices N)")
      ->check(CLI::NonNegativeNumber)
      ->excludes(list);
}

namespace {

// The "devices" setting as a list of ordinals ({} = all).
Result<std::vector<int>> devices_of(const Json& value) {
  if (value.is_string()) return parse_devices(value.get<std::string>());
  if (value.is_number_integer() && value.get<int64_t>() >= 0)
    return std::vector<int>{value.get<int>()};
  if (value.is_array()) {
    std::vector<int> out;
    for (const Json& d : value) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0)
        return invalid_argument("devices: list entries must be GPU ordinals");
      out.push_back(d.get<int>());
    }
    if (!out.empty()) return out;
  }
  return invalid_argument("devices: expected \"all\", a GPU ordinal or a list of them");
}

// "CPU", "cpu": the stream of CPU workers (queue::model_key of their device name).
bool queue_model_is_cpu(const std::string& model) {
  std::string lower;
  for (const char c : model)
    lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  return lower == "cpu";
}

// The backend the live workers behind the queue at `url` judge on (queue::choose_backend),
// said in one line of the log. Errors: the URL's, and Redis's when it cannot be reached.
Result<std::string> follow_live_workers(const std::string& url) {
#if defined(KEVIN_HAVE_QUEUE)
  KEVIN_ASSIGN_OR_RETURN(queue::RedisAddress address, queue::parse_redis_url(url));
  KEVIN_ASSIGN_OR_RETURN(auto c, queue::RedisConnection::connect(address));
  KEVIN_ASSIGN_OR_RETURN(auto live, queue::live_workers(*c, queue::Keys{address.prefix}));
  const queue::BackendChoice choice = queue::choose_backend(live);
  KEVIN_LOG(info) << "queue: judging on " << choice.backend << ": " << choice.why;
  return choice.backend;
#else
  (void)url;
  return std::string("cuda");  // make_evaluator says this kevin has no queue
#endif
}

// Workers on other machines behind the queue at engine["queue"] (docs/distributed.md).
Result<std::unique_ptr<env::Evaluator>> make_remote_evaluator(const Json& e) {
#if defined(KEVIN_HAVE_QUEUE)
  queue::RemoteOptions o;
  KEVIN_ASSIGN_OR_RETURN(std::string url, json_get<std::string>(e, "queue"));
  KEVIN_ASSIGN_OR_RETURN(o.address, queue::parse_redis_url(url));
  KEVIN_ASSIGN_OR_RETURN(o.backend, json_get<std::string>(e, "backend"));
  KEVIN_ASSIGN_OR_RETURN(std::string model, json_get_or<std::string>(e, "queue_model", ""));
  o.model = model.empty() ? "" : queue::model_key(model);
  KEVIN_ASSIGN_OR_RETURN(o.judging, judging_of(e));
  KEVIN_ASSIGN_OR_RETURN(o.format, json_get_or<std::string>(e, "format", "kevin"));
  KEVIN_ASSIGN_OR_RETURN(double wait_s,
                         json_get_or<double>(e, "queue_worker_wait_s", kQueueWorkerWaitS));
  o.worker_wait = std::chrono::milliseconds(static_cast<int64_t>(wait_s * 1000));
  KEVIN_ASSIGN_OR_RETURN(auto remote, queue::RemoteEvaluator::create(o));
  return std::unique_ptr<env::Evaluator>(std::move(remote));
#else
  (void)e;
  return failed_precondition(
      "this kevin was built without hiredis: no --queue (install libhiredis-dev and rebuild)");
#endif
}

}  // namespace

Result<Json> resolve_engine_json(const Json& given) {
  if (!given.is_object()) return invalid_argument("engine settings must be an object");
  if (given.value("fake", false)) return Json{{"fake", true}};
  Json e = {{"backend", "auto"},
            {"devices", "all"},
            {"seeds", 5},
            {"tolerance", "default"},
            {"jobs", 0},
            {"reference_workers", 4},
            {"python", ""},
            {"cache_dir", ""},
            {"sandbox", true},
            {"call_timeout_s", 20.0},
            {"max_timed_calls", 100},
            {"timing_ci", 0.0},
            {"baseline", "eager"},
            {"fresh_seeds", false},
            {"fresh_baseline", false},
            {"allow_degenerate_tasks", false},
            {"queue", ""},
            {"queue_model", ""},
            {"queue_worker_wait_s", kQueueWorkerWaitS},
            {"format", "kevin"}};
  if (given.contains("device") && given.contains("devices"))
    return invalid_argument("engine settings: give \"devices\" or \"device\", not both");
  for (const auto& item : given.items()) {
    const std::string key = item.key() == "device" ? "devices" : item.key();
    if (!e.contains(key)) return invalid_argument("unknown engine setting \"" + item.key() + "\"");
    e[key] = item.value();
  }
  KEVIN_RETURN_IF_ERROR(devices_of(e["devices"]).status());
  KEVIN_ASSIGN_OR_RETURN(std::string backend, json_get<std::string>(e, "backend"));
  KEVIN_ASSIGN_OR_RETURN(std::string queue, json_get<std::string>(e, "queue"));
  KEVIN_ASSIGN_OR_RETURN(std::string queue_model, json_get<std::string>(e, "queue_model"));
  if (queue.empty() && !queue_model.empty())
    return invalid_argument("queue_model needs queue (--queue-model needs --queue)");
  const bool cpu_model = !queue_model.empty() && queue_model_is_cpu(queue_model);
  if ((backend == "cpu" && !queue_model.empty() && !cpu_model) ||
      (backend == "cuda" && cpu_model)) {
    return invalid_argument("backend " + backend + " does not match queue_model \"" + queue_model +
                            "\"");
  }
  KEVIN_ASSIGN_OR_RETURN(double worker_wait_s, json_get<double>(e, "queue_worker_wait_s"));
  if (!(worker_wait_s > 0))
    return invalid_argument("queue_worker_wait_s must be a positive number of seconds");
  if (backend == "auto" && !queue.empty()) {
    // The workers judge, not this machine: its own GPUs do not decide the backend.
    if (!queue_model.empty()) {
      e["backend"] = cpu_model ? "cpu" : "cuda";
    } else {
      KEVIN_ASSIGN_OR_RETURN(e["backend"], follow_live_workers(queue));
    }
  } else if (backend == "auto") {
    e["backend"] = sys::cuda_device_count() > 0 ? "cuda" : "cpu";
  }
  if (!engine::backend_from_name(e["backend"].get<std::string>()))
    return invalid_argument("engine backend must be auto, cuda or cpu");
  KEVIN_ASSIGN_OR_RETURN(std::string format, json_get<std::string>(e, "format"));
  if (format != "auto" && !engine::format_from_name(format)) {
    return invalid_argument("engine format must be kevin, kernelbench or auto (got \"" + format +
                            "\")");
  }
  KEVIN_ASSIGN_OR_RETURN(std::string baseline, json_get<std::string>(e, "baseline"));
  if (!engine::baseline_kind_from_name(baseline))
    return invalid_argument("engine baseline must be eager or compile (got \"" + baseline + "\")");
  KEVIN_ASSIGN_OR_RETURN(std::string cache, json_get<std::string>(e, "cache_dir"));
  e["cache_dir"] = cache_dir(cache).string();
  return e;
}

namespace {

std::string listed(const std::vector<std::string>& models) {
  std::string out;
  for (const auto& m : models) out += (out.empty() ? "" : ", ") + m;
  return out.empty() ? "none" : out;
}

}  // namespace

Result<std::string> check_served_model(const std::string& url, const std::string& model,
                                       const std::string& api_key_env) {
#if defined(KEVIN_HAVE_CURL)
  policy::OpenAIConfig c;
  c.base_url = url;
  c.model = model;
  c.api_key_env = api_key_env;
  auto served = policy::OpenAIClient(c).served_models();
  if (served.status().code() == StatusCode::kNotFound && !model.empty()) {
    KEVIN_LOG(warn) << served.status().message() << "; using --model " << model << " as given";
    return model;
  }
  if (!served.is_ok()) {
    if (served.status().code() == StatusCode::kUnavailable) {
      return unavailable(served.status().message() + " (is the server running? check --llm)");
    }
    return invalid_argument(served.status().message() +
                            (model.empty() ? "; give --model NAME" : ""));
  }
  if (model.empty()) {
    if (served->size() == 1) {
      KEVIN_LOG(info) << "model: " << served->front() << " (the only one " << url << " serves)";
      return served->front();
    }
    return invalid_argument(url + " serves " + listed(*served) + ": choose one with --model");
  }
  if (std::find(served->begin(), served->end(), model) == served->end()) {
    return invalid_argument(url + " does not serve model '" + model + "'; it serves " +
                            listed(*served));
  }
  return model;
#else
  (void)url;
  (void)api_key_env;
  return model;
#endif
}

CpuSizeVerdict cpu_size_verdict(const std::string& file_name, uint64_t call_bytes,
                                bool reduced_for_cpu, int seeds, bool full_size) {
  using Kind = CpuSizeVerdict::Kind;
  if (reduced_for_cpu || call_bytes <= kCpuNoticeBytes) return {};
  constexpr double kGiB = double(uint64_t{1} << 30);
  const double call = static_cast<double>(call_bytes) / kGiB;
  const double sets = call * (seeds + tasks::kDefaultMinTimingSets);
  std::ostringstream o;
  o << std::fixed << std::setprecision(2) << file_name
    << " has no reduced CPU sizes (KEVIN_CPU_SIZES), so the CPU backend runs it at full size: one "
       "call moves "
    << call << " GiB (inputs, parameters and outputs), reference preparation writes about " << sets
    << " GiB of sets, and every reference, baseline and candidate call computes at that "
       "size";
  if (call_bytes <= kCpuFullSizeBytes) return {Kind::kNotice, o.str() + " (seconds per call)"};
  o << " (minutes each for a large GPU problem)";
  if (full_size) return {Kind::kWarning, o.str()};
  return {Kind::kRefusal,
          o.str() + "; pass --full-size to run it anyway, or run it on a GPU machine"};
}

Status check_cpu_call_size(env::Evaluator* evaluator, const std::filesystem::path& task, int seeds,
                           bool full_size) {
  auto* engine = dynamic_cast<env::EngineEvaluator*>(evaluator);
  if (engine == nullptr || engine->backend() != "cpu") return Status::ok();
  auto measured = engine->call_size(task);
  if (!measured.is_ok())
    return Status::ok();  // the task's own error surfaces, with its exit code, when it is prepared
  const CpuSizeVerdict verdict =
      cpu_size_verdict(task.filename().string(), measured->input_bytes + measured->output_bytes,
                       measured->reduced_for_cpu, seeds, full_size);
  switch (verdict.kind) {
    case CpuSizeVerdict::Kind::kRefusal:
      return invalid_argument(verdict.text);
    case CpuSizeVerdict::Kind::kWarning:
    case CpuSizeVerdict::Kind::kNotice:
      KEVIN_LOG(warn) << verdict.text;
      break;
    case CpuSizeVerdict::Kind::kQuiet:
      break;
  }
  return Status::ok();
}

Result<std::string> judging_of(const Json& e) {
#if defined(KEVIN_HAVE_QUEUE)
  if (e.value("fake", false)) return std::string();
  KEVIN_ASSIGN_OR_RETURN(int seeds, json_get<int>(e, "seeds"));
  KEVIN_ASSIGN_OR_RETURN(std::string tolerance, json_get<std::string>(e, "tolerance"));
  KEVIN_ASSIGN_OR_RETURN(double timeout_s, json_get<double>(e, "call_timeout_s"));
  KEVIN_ASSIGN_OR_RETURN(bool degenerate, json_get_or<bool>(e, "allow_degenerate_tasks", false));
  KEVIN_ASSIGN_OR_RETURN(std::string baseline, json_get_or<std::string>(e, "baseline", "eager"));
  return queue::judging_key(seeds, tolerance, timeout_s, degenerate, baseline);
#else
  (void)e;
  return std::string();
#endif
}

Result<env::EngineOptions> engine_options(const Json& e, const std::atomic<bool>* cancel) {
  env::EngineOptions o;
  KEVIN_ASSIGN_OR_RETURN(std::string backend, json_get<std::string>(e, "backend"));
  const auto parsed = engine::backend_from_name(backend);
  if (!parsed) return invalid_argument("engine backend must be cuda or cpu once resolved");
  o.backend = *parsed;
  KEVIN_ASSIGN_OR_RETURN(o.devices, devices_of(e.value("devices", Json("all"))));
  KEVIN_ASSIGN_OR_RETURN(o.seeds, json_get<int>(e, "seeds"));
  KEVIN_ASSIGN_OR_RETURN(o.tolerance, json_get<std::string>(e, "tolerance"));
  KEVIN_ASSIGN_OR_RETURN(o.jobs, json_get<int>(e, "jobs"));
  KEVIN_ASSIGN_OR_RETURN(o.reference_workers, json_get_or<int>(e, "reference_workers", 4));
  if (o.reference_workers < 1 || o.reference_workers > 64)
    return invalid_argument("engine setting \"reference_workers\" must be in [1, 64]");
  KEVIN_ASSIGN_OR_RETURN(o.python, json_get<std::string>(e, "python"));
  KEVIN_ASSIGN_OR_RETURN(std::string cache, json_get<std::string>(e, "cache_dir"));
  KEVIN_ASSIGN_OR_RETURN(o.sandbox, json_get<bool>(e, "sandbox"));
  KEVIN_ASSIGN_OR_RETURN(o.allow_degenerate_tasks,
                         json_get_or<bool>(e, "allow_degenerate_tasks", false));
  KEVIN_ASSIGN_OR_RETURN(o.call_timeout_s, json_get<double>(e, "call_timeout_s"));
  KEVIN_ASSIGN_OR_RETURN(o.max_timed_calls, json_get_or<int>(e, "max_timed_calls", 100));
  if (o.max_timed_calls < 1)
    return invalid_argument("engine setting \"max_timed_calls\" must be >= 1");
  KEVIN_ASSIGN_OR_RETURN(o.timing_ci, json_get_or<double>(e, "timing_ci", 0.0));
  if (!(o.timing_ci >= 0 && o.timing_ci < 1))
    return invalid_argument("engine setting \"timing_ci\" must be in [0, 1)");
  KEVIN_ASSIGN_OR_RETURN(o.format, json_get_or<std::string>(e, "format", "kevin"));
  KEVIN_ASSIGN_OR_RETURN(std::string baseline, json_get_or<std::string>(e, "baseline", "eager"));
  const auto baseline_kind = engine::baseline_kind_from_name(baseline);
  if (!baseline_kind)
    return invalid_argument("engine baseline must be eager or compile (got \"" + baseline + "\")");
  o.baseline = *baseline_kind;
  KEVIN_ASSIGN_OR_RETURN(o.fresh_seeds, json_get_or<bool>(e, "fresh_seeds", false));
  KEVIN_ASSIGN_OR_RETURN(const bool fresh_baseline, json_get_or<bool>(e, "fresh_baseline", false));
  if (fresh_baseline) o.baseline_ttl = std::chrono::seconds(0);
  o.cache_dir = cache;
  o.share_dir = share_dir();
  o.runner_path = runner_path();
  o.cancel = cancel;
  return o;
}

Result<std::unique_ptr<env::Evaluator>> make_evaluator(const Json& e,
                                                       const std::atomic<bool>* cancel) {
  if (e.value("fake", false))
    return std::unique_ptr<env::Evaluator>(std::make_unique<env::FakeEvaluator>("cpu", "CPU"));
  if (!e.value("queue", "").empty()) return make_remote_evaluator(e);
  KEVIN_ASSIGN_OR_RETURN(const env::EngineOptions o, engine_options(e, cancel));
  KEVIN_ASSIGN_OR_RETURN(auto evaluator, env::EngineEvaluator::create(o));
  return std::unique_ptr<env::Evaluator>(std::move(evaluator));
}

Result<Json> policy_spec_json(const std::string& spec, const std::string& backend,
                              bool open_think) {
  const auto colon = spec.find(':');
  const std::string kind = spec.substr(0, colon);
  if (colon == std::string::npos || (kind != "scripted" && kind != "local")) {
    return invalid_argument("--policy: expected scripted:FILE or local:MODEL_DIR");
  }
  const std::filesystem::path target = spec.substr(colon + 1);
  if (!std::filesystem::exists(target))
    return not_found("--policy: no such " + std::string(kind == "local" ? "folder" : "file") +
                     ": " + target.string());
  const std::string path = std::filesystem::absolute(target).string();
  if (kind == "scripted") return Json{{"kind", "scripted"}, {"file", path}};
  const bool cuda = backend == "cuda" || (backend == "auto" && sys::cuda_device_count() > 0);
  return Json{{"kind", "local"}, {"dir", path}, {"cuda", cuda}, {"open_think", open_think}};
}

Result<std::unique_ptr<policy::Policy>> make_policy(const Json& p) {
  KEVIN_ASSIGN_OR_RETURN(std::string kind, json_get<std::string>(p, "kind"));
  if (kind == "scripted") {
    KEVIN_ASSIGN_OR_RETURN(std::string file, json_get<std::string>(p, "file"));
    KEVIN_ASSIGN_OR_RETURN(auto scripted, policy::ScriptedPolicy::load(file));
    return std::unique_ptr<policy::Policy>(std::move(scripted));
  }
  if (kind == "local") {
#if defined(KEVIN_HAVE_TRAIN)
    train::LocalPolicyOptions o;
    KEVIN_ASSIGN_OR_RETURN(std::string dir, json_get<std::string>(p, "dir"));
    o.model_dir = dir;
    KEVIN_ASSIGN_OR_RETURN(o.cuda, json_get<bool>(p, "cuda"));
    KEVIN_ASSIGN_OR_RETURN(o.open_think, json_get<bool>(p, "open_think"));
    KEVIN_ASSIGN_OR_RETURN(const int max_batch, json_get_or<int>(p, "max_batch", 16));
    if (max_batch < 1) return invalid_argument("max_batch must be at least 1");
    o.max_batch = static_cast<size_t>(max_batch);
    KEVIN_ASSIGN_OR_RETURN(auto local, train::LocalPolicy::load(o));
    return std::unique_ptr<policy::Policy>(std::move(local));
#else
    return failed_precondition(
        "this kevin was built without libtorch: no local model (`make build` in kevin's "
        "source folder installs libtorch-dev and rebuilds)");
#endif
  }
#if defined(KEVIN_HAVE_CURL)
  policy::OpenAIConfig c;
  KEVIN_ASSIGN_OR_RETURN(c.base_url, json_get<std::string>(p, "url"));
  KEVIN_ASSIGN_OR_RETURN(c.model, json_get<std::string>(p, "model"));
  KEVIN_ASSIGN_OR_RETURN(c.api_key_env, json_get<std::string>(p, "api_key_env"));
  KEVIN_ASSIGN_OR_RETURN(double timeout_s, json_get<double>(p, "timeout_s"));
  KEVIN_ASSIGN_OR_RETURN(c.max_concurrency, json_get<int>(p, "max_concurrency"));
  c.timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  return std::unique_ptr<policy::Policy>(std::make_unique<policy::OpenAIClient>(c));
#else
  return failed_precondition("this kevin was built without libcurl: no OpenAI-compatible client");
#endif
}

void add_listen_options(CLI::App* command, std::string* host, int* port, std::string* token_file) {
  command
      ->add_option("--host", *host,
                   "address to listen on; anything but loopback needs --token-file")
      ->capture_default_str();
  command->add_option("--port", *port, "port (0: any free port, printed at start)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  command->add_option("--token-file", *token_file,
                      "file holding the bearer token every route but /health requires");
}

Result<std::string> read_token_file(const std::string& file) {
  if (file.empty()) return std::string();
  KEVIN_ASSIGN_OR_RETURN(std::string text, read_file(file));
  const size_t begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return invalid_argument("--token-file " + file + " is empty");
  const size_t end = text.find_last_not_of(" \t\r\n");
  return text.substr(begin, end - begin + 1);
}

}  // namespace kevin::cli
